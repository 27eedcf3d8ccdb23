/*
 * Unit test of the intra-site schedules (libgridcoll/patterns).
 *
 * Structural properties are checked exhaustively over many sizes: every
 * all-to-all phase is a permutation, every ordered pair occurs once, src
 * inverts dst; every allgather schedule delivers every block exactly once
 * and only forwards blocks the sender already holds.  The network figures
 * are the papers' own: Prisacari et al. eq. 1 and §5.2 (XOR and LIN counts
 * at the top level of their Table 1 trees, OPT's N/2), Fig. 3's FT(2;4,2)
 * formula, and Kumar & Kale's congestion-free lemmas 1, 4, 5, 6 and kShift
 * for K in {1,2,3,4,8}.  The hole cases pin counts that this model
 * produces; the paper gives only the qualitative result (§4.5, Table 1:
 * kShift loses least with missing nodes), which the assertions state too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_sched.h"

#define UNIT_CHECK_EXPR
#include "unit_check.h"

static struct gc_sched_fattree tree_of(const char *text)
{
    struct gc_sched_fattree tree;
    char err[128];
    if (gc_sched_fattree_parse(text, &tree, err, sizeof err) != 0) {
        fprintf(stderr, "test_sched: bad tree %s: %s\n", text, err);
        exit(1);
    }
    return tree;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        fprintf(stderr, "test_sched: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- fat tree helpers ------------------------------------------------ */

static void test_fattree(void)
{
    struct gc_sched_fattree t = tree_of("4,2");
    char err[128];
    CHECK(t.levels == 2 && t.arity[0] == 4 && t.arity[1] == 2);
    CHECK(gc_sched_fattree_leaves(&t) == 8);
    /* eq. 1; §3.2 works B_min(1) = M1 - floor(M1/M2) = 2 out for FT(2;4,2) */
    CHECK(gc_sched_fattree_bmin(&t, 0) == 1);
    CHECK(gc_sched_fattree_bmin(&t, 1) == 2);
    CHECK(gc_sched_fattree_bmin(&t, 2) == 0);
    t = tree_of("8,8,8,2");
    CHECK(gc_sched_fattree_bmin(&t, 1) == 8 - 8 / 128);
    CHECK(gc_sched_fattree_bmin(&t, 2) == 64 - 64 / 16);
    CHECK(gc_sched_fattree_bmin(&t, 3) == 512 - 512 / 2);

    char text[GC_SCHED_FATTREE_TEXT_MAX];
    gc_sched_fattree_format(&t, text, sizeof text);
    CHECKF(strcmp(text, "8,8,8,2") == 0, "formatted: %s", text);
    t = tree_of("268435456");
    gc_sched_fattree_format(&t, text, sizeof text);
    CHECKF(strcmp(text, "268435456") == 0, "formatted: %s", text);
    t = tree_of("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,268435456");
    gc_sched_fattree_format(&t, text, sizeof text);
    CHECKF(strcmp(text, "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,268435456") == 0,
           "formatted: %s", text);

    CHECK(gc_sched_fattree_parse("", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("4,,2", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("4,-2", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("4,0", &t, err, sizeof err) != 0);
    CHECKF(strstr(err, "M2") != NULL, "zero arity message: %s", err);
    CHECK(gc_sched_fattree_parse("4,2,", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("4x", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("65536,65536", &t, err, sizeof err) != 0);
    CHECK(gc_sched_fattree_parse("2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2", &t, err,
                                 sizeof err) != 0);

    int holes[4], count = 0;
    CHECK(gc_sched_parse_int_list("5,17,0", holes, 4, &count, 63, err,
                                  sizeof err) == 0 &&
          count == 3 && holes[0] == 5 && holes[1] == 17 && holes[2] == 0);
    CHECK(gc_sched_parse_int_list("64", holes, 4, &count, 63, err,
                                  sizeof err) != 0);
    CHECK(gc_sched_parse_int_list("1,2,3,4,5", holes, 4, &count, 63, err,
                                  sizeof err) != 0);
    CHECK(gc_sched_parse_int_list(" 1", holes, 4, &count, 63, err,
                                  sizeof err) != 0);
}

static int same_tree(const struct gc_sched_fattree *t, const char *text)
{
    struct gc_sched_fattree want = tree_of(text);
    if (t->levels != want.levels)
        return 0;
    for (int l = 0; l < t->levels; l++)
        if (t->arity[l] != want.arity[l])
            return 0;
    return 1;
}

static void test_fit(void)
{
    struct gc_sched_fattree t = tree_of("4,4,4"), fitted;
    gc_sched_fattree_fit(&t, 64, &fitted);
    CHECK(same_tree(&fitted, "4,4,4"));
    gc_sched_fattree_fit(&t, 40, &fitted); /* 4 | 40, 16 does not */
    CHECK(same_tree(&fitted, "4,10"));
    gc_sched_fattree_fit(&t, 48, &fitted);
    CHECK(same_tree(&fitted, "4,4,3"));
    gc_sched_fattree_fit(&t, 128, &fitted); /* more ranks than leaves */
    CHECK(same_tree(&fitted, "4,4,4,2"));
    gc_sched_fattree_fit(&t, 7, &fitted);
    CHECK(same_tree(&fitted, "7"));
    gc_sched_fattree_fit(&t, 1, &fitted);
    CHECK(same_tree(&fitted, "1"));
    gc_sched_fattree_fit(NULL, 12, &fitted);
    CHECK(same_tree(&fitted, "12"));
    t = tree_of("2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2");
    gc_sched_fattree_fit(&t, 1 << 17, &fitted); /* no room for a level */
    CHECK(fitted.levels == GC_SCHED_MAX_LEVELS &&
          gc_sched_fattree_leaves(&fitted) == 1 << 17);
}

/* ---- all-to-all ------------------------------------------------------ */

/*
 * Every phase a permutation, src the inverse of dst, every ordered pair
 * (self included) exactly once, local copies only as (r, r).  Returns the
 * number of failures so callers can stop early.
 */
static int check_alltoall(const struct gc_sched_alltoall *s, const char *what)
{
    int n = s->ranks, bad = 0;
    char *seen = xcalloc((size_t)n * (size_t)n, 1);
    char *hit = xcalloc((size_t)n, 1);
    if (gc_sched_alltoall_phases(s) != n)
        bad++;
    for (int p = 0; p < n && !bad; p++) {
        memset(hit, 0, (size_t)n);
        for (int r = 0; r < n && !bad; r++) {
            int d = gc_sched_alltoall_dst(s, p, r);
            if (d < 0 || d >= n || hit[d] ||
                gc_sched_alltoall_src(s, p, d) != r ||
                seen[(size_t)r * n + d]) {
                CHECKF(0, "%s n=%d phase %d rank %d -> %d", what, n, p, r, d);
                bad++;
                break;
            }
            hit[d] = 1;
            seen[(size_t)r * n + d] = 1;
        }
    }
    for (size_t i = 0; i < (size_t)n * n && !bad; i++)
        if (!seen[i]) {
            CHECKF(0, "%s n=%d: pair %zu->%zu never sent", what, n, i / n,
                   i % n);
            bad++;
        }
    CHECKF(gc_sched_alltoall_dst(s, -1, 0) == -1 &&
               gc_sched_alltoall_dst(s, n, 0) == -1 &&
               gc_sched_alltoall_src(s, 0, n) == -1,
           "%s n=%d accepts out-of-range arguments", what, n);
    if (!bad)
        passed++;
    free(seen);
    free(hit);
    return bad;
}

static void test_patterns_any_n(void)
{
    char err[128];
    struct gc_sched_alltoall s;
    for (int n = 1; n <= 70; n++) {
        for (int pat = GC_SCHED_A2A_LIN; pat <= GC_SCHED_A2A_OPT; pat++) {
            char what[32];
            snprintf(what, sizeof what, "%s",
                     gc_sched_alltoall_pattern_name(pat));
            CHECK(gc_sched_alltoall_init(&s, pat, n, NULL, err, sizeof err) ==
                  0);
            check_alltoall(&s, what);
        }
        /* the defining formulas and where the local copies are */
        gc_sched_alltoall_init(&s, GC_SCHED_A2A_LIN, n, NULL, NULL, 0);
        int ok = 1;
        for (int p = 0; p < n; p++)
            for (int r = 0; r < n; r++)
                ok &= gc_sched_alltoall_dst(&s, p, r) == (r + p) % n;
        CHECKF(ok, "lin n=%d is not (r + p) mod n", n);

        gc_sched_alltoall_init(&s, GC_SCHED_A2A_XOR, n, NULL, NULL, 0);
        int pow2 = (n & (n - 1)) == 0;
        ok = 1;
        for (int p = 0; p < n; p++) {
            int self = 0;
            for (int r = 0; r < n; r++) {
                int d = gc_sched_alltoall_dst(&s, p, r);
                ok &= gc_sched_alltoall_dst(&s, p, d) == r; /* exchange */
                if (pow2)
                    ok &= d == (r ^ p);
                self += d == r;
            }
            /* odd n: one local copy per phase; else all in phase 0 */
            if (n % 2 == 1)
                ok &= self == 1;
            else
                ok &= self == (p == 0 ? n : 0);
        }
        CHECKF(ok, "xor n=%d: not pairwise, or local copies misplaced", n);
    }
    CHECK(gc_sched_alltoall_init(&s, GC_SCHED_A2A_LIN, 0, NULL, err,
                                 sizeof err) != 0);
    CHECK(gc_sched_alltoall_init(&s, (enum gc_sched_alltoall_pattern)7, 4, NULL,
                                 err, sizeof err) != 0);
    enum gc_sched_alltoall_pattern p;
    CHECK(gc_sched_alltoall_pattern_parse("opt", &p) == 0 &&
          p == GC_SCHED_A2A_OPT);
    CHECK(gc_sched_alltoall_pattern_parse("OPT", &p) != 0);
}

/* Prisacari §3.2, Fig. 3: the FT(2;4,2) exchange written out by hand. */
static void test_opt_figure3(void)
{
    struct gc_sched_fattree t = tree_of("4,2");
    struct gc_sched_alltoall s;
    CHECK(gc_sched_alltoall_init(&s, GC_SCHED_A2A_OPT, 8, &t, NULL, 0) == 0);
    int ok = 1;
    for (int p = 0; p < 8; p++)
        for (int r = 0; r < 8; r++) {
            int d = ((r % 2 + p % 2) % 2) * 4 + (r / 2 + p / 2) % 4;
            ok &= gc_sched_alltoall_dst(&s, p, r) == d;
        }
    CHECK(ok);
}

/*
 * OPT meets B_min(l) in every phase at every level (Prisacari §3.4), and
 * the bound is tight: some phase reaches it.
 */
static void check_opt_bmin(const struct gc_sched_fattree *physical,
                           const struct gc_sched_alltoall *s, int levels,
                           const char *what)
{
    int n = s->ranks, ok = 1;
    int *dst = xcalloc((size_t)n, sizeof *dst);
    for (int l = 0; l < levels; l++) {
        long bmin = gc_sched_fattree_bmin(&s->tree, l), worst = 0;
        for (int p = 0; p < n; p++) {
            long crossing, load;
            gc_sched_alltoall_phase(s, p, dst);
            gc_sched_fattree_level_load(physical, n, dst, l, &crossing, &load);
            if (load > worst)
                worst = load;
        }
        ok &= worst == bmin;
        CHECKF(worst == bmin, "opt %s level %d: worst load %ld, B_min %ld",
               what, l, worst, bmin);
    }
    if (ok)
        passed++;
    free(dst);
}

static void test_opt_trees(void)
{
    static const char *const trees[] = {
        "4,2",         "4,4",     "2,2,2",   "8,2",     "4,3,2",   "3,5",
        "5,3",         "2,3,4",   "3,3,3",   "2,7",     "6",       "4,2,2",
        "4,4,2",       "8,4,2",   "8,8,2",   "8,4,4,2", "8,8,4,2", "8,8,8,2",
        "2,2,2,2,2,2", "3,2,2,3", "1,4,1,2",
    };
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        struct gc_sched_fattree t = tree_of(trees[i]);
        struct gc_sched_alltoall s;
        int n = (int)gc_sched_fattree_leaves(&t);
        CHECK(gc_sched_alltoall_init(&s, GC_SCHED_A2A_OPT, n, &t, NULL, 0) ==
              0);
        if (check_alltoall(&s, trees[i]) == 0)
            check_opt_bmin(&t, &s, t.levels, trees[i]);
    }
}

/*
 * The fallback: a site of n ranks on a bigger (or different) tree.  The
 * kept lower levels are physical subtrees, so OPT meets the physical
 * tree's per-phase bound for n ranks there.
 */
static void test_opt_fallback(void)
{
    static const struct {
        const char *tree;
        int ranks;
        const char *fitted;
        int kept;
    } cases[] = {
        {"4,4,4", 40, "4,10", 1}, {"4,4,4", 48, "4,4,3", 2},
        {"4,4,4", 7, "7", 0},     {"2,2,2", 24, "2,2,2,3", 3},
        {"8,2", 12, "12", 0},     {"4,2", 4, "4", 1},
        {"3,4", 33, "3,11", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gc_sched_fattree t = tree_of(cases[i].tree);
        struct gc_sched_alltoall s;
        CHECK(gc_sched_alltoall_init(&s, GC_SCHED_A2A_OPT, cases[i].ranks, &t,
                                     NULL, 0) == 0);
        CHECKF(same_tree(&s.tree, cases[i].fitted),
               "%s with %d ranks: not fitted to %s", cases[i].tree,
               cases[i].ranks, cases[i].fitted);
        if (check_alltoall(&s, cases[i].tree) == 0)
            check_opt_bmin(&t, &s, cases[i].kept + 1, cases[i].tree);
    }
}

/*
 * Prisacari §5.2 on the Table 1 trees (all with ML = 2): at the top level
 * (the two halves) XOR sends nothing across in phases p < N/2 and all N
 * messages in the others; LIN sends N - |2p - N|; OPT exactly N/2.  On
 * half bisection each half's up-link takes B_min(L-1) = N/4 messages, so
 * XOR and LIN reach contention 2 (a link load of N/2).
 */
static void test_section_5_2(void)
{
    static const char *const table1[] = {
        "4,2,2", "4,4,2", "8,4,2", "8,8,2", "8,4,4,2", "8,8,4,2", "8,8,8,2",
    };
    /* N = 16 written out: the LIN and XOR top-level counts per phase */
    static const long lin16[16] = {0,  2,  4,  6,  8, 10, 12, 14,
                                   16, 14, 12, 10, 8, 6,  4,  2};
    static const long xor16[16] = {0,  0,  0,  0,  0,  0,  0,  0,
                                   16, 16, 16, 16, 16, 16, 16, 16};
    for (size_t i = 0; i < sizeof table1 / sizeof table1[0]; i++) {
        struct gc_sched_fattree t = tree_of(table1[i]);
        int n = (int)gc_sched_fattree_leaves(&t), top = t.levels - 1;
        int *dst = xcalloc((size_t)n, sizeof *dst);
        CHECK(gc_sched_fattree_bmin(&t, top) == n / 4);
        for (int pat = GC_SCHED_A2A_LIN; pat <= GC_SCHED_A2A_OPT; pat++) {
            struct gc_sched_alltoall s;
            gc_sched_alltoall_init(&s, pat, n, &t, NULL, 0);
            int ok = 1, contended = 0;
            for (int p = 0; p < n; p++) {
                long crossing, load, want;
                gc_sched_alltoall_phase(&s, p, dst);
                gc_sched_fattree_level_load(&t, n, dst, top, &crossing, &load);
                if (pat == GC_SCHED_A2A_XOR)
                    want = n == 16 ? xor16[p] : (p < n / 2 ? 0 : n);
                else if (pat == GC_SCHED_A2A_LIN)
                    want = n == 16 ? lin16[p] : n - labs(2L * p - n);
                else
                    want = n / 2;
                ok &= crossing == want && load == crossing / 2;
                contended += load > n / 4;
            }
            CHECKF(ok, "%s on FT(%s): top-level counts differ from §5.2",
                   gc_sched_alltoall_pattern_name(pat), table1[i]);
            /*
             * XOR: contention 2 in exactly N/2 phases.  LIN: the paper says
             * N/2 too; exactly, the load N/2 - |p - N/2| exceeds N/4 for
             * N/4 < p < 3N/4 only, N/2 - 1 phases.  OPT: none.
             */
            int want_contended = pat == GC_SCHED_A2A_XOR   ? n / 2
                                 : pat == GC_SCHED_A2A_LIN ? n / 2 - 1
                                                           : 0;
            CHECKF(contended == want_contended,
                   "%s on FT(%s): %d phases over B_min, want %d",
                   gc_sched_alltoall_pattern_name(pat), table1[i], contended,
                   want_contended);
        }
        free(dst);
    }
}

/* ---- allgather ------------------------------------------------------- */

/*
 * Run the schedule on sets of blocks: each rank starts with its own; a
 * rank may only send a block it held before the phase; sender and
 * receiver agree on the block; nobody gets a block twice; in the end
 * everybody has all P.
 */
static int check_allgather(const struct gc_sched_allgather *s)
{
    int n = s->ranks, bad = 0;
    char *have = xcalloc((size_t)n * (size_t)n, 1);
    char *before = xcalloc((size_t)n * (size_t)n, 1);
    for (int r = 0; r < n; r++)
        have[(size_t)r * n + r] = 1;
    for (int p = 0; p < s->phase_count && !bad; p++) {
        memcpy(before, have, (size_t)n * n);
        for (int r = 0; r < n && !bad; r++) {
            struct gc_sched_allgather_step st, peer;
            gc_sched_allgather_step(s, p, r, &st);
            if (st.send_to < 0)
                continue;
            gc_sched_allgather_step(s, p, st.send_to, &peer);
            if (!before[(size_t)r * n + st.send_block] || peer.recv_from != r ||
                peer.recv_block != st.send_block ||
                have[(size_t)st.send_to * n + st.send_block])
                bad++;
            else
                have[(size_t)st.send_to * n + st.send_block] = 1;
        }
        CHECKF(!bad, "%s P=%d K=%d: phase %d moves a block wrongly",
               gc_sched_allgather_strategy_name(s->strategy), n, s->k, p);
    }
    for (size_t i = 0; i < (size_t)n * n && !bad; i++)
        if (!have[i]) {
            CHECKF(0, "%s P=%d K=%d: rank %zu never gets block %zu",
                   gc_sched_allgather_strategy_name(s->strategy), n, s->k,
                   i / n, i % n);
            bad++;
        }
    if (!bad)
        passed++;
    free(have);
    free(before);
    return bad;
}

static void test_allgather_delivery(void)
{
    char err[160];
    struct gc_sched_allgather s;
    for (int n = 1; n <= 70; n++) {
        for (int st = GC_SCHED_AG_RING; st <= GC_SCHED_AG_KPREFIX; st++) {
            for (int k = 1; k <= (st >= GC_SCHED_AG_KSHIFT ? n : 1); k++) {
                int kprefix_ok = (k & (k - 1)) == 0 && n % k == 0;
                int rc = gc_sched_allgather_init(&s, st, n, k, err, sizeof err);
                if (st == GC_SCHED_AG_KPREFIX && !kprefix_ok) {
                    CHECKF(rc != 0 && strstr(err, "kprefix") != NULL,
                           "kprefix P=%d K=%d accepted", n, k);
                    continue;
                }
                CHECKF(rc == 0, "%s P=%d K=%d: %s",
                       gc_sched_allgather_strategy_name(st), n, k, err);
                if (rc != 0)
                    continue;
                int pow2 = 1;
                while (pow2 < n)
                    pow2 *= 2;
                CHECK(s.phase_count ==
                      (st == GC_SCHED_AG_PREFIX ? pow2 - 1 : n - 1));
                check_allgather(&s);
                gc_sched_allgather_free(&s);
            }
        }
    }
    CHECK(gc_sched_allgather_init(&s, GC_SCHED_AG_KSHIFT, 8, 9, err,
                                  sizeof err) != 0);
    CHECK(gc_sched_allgather_init(&s, GC_SCHED_AG_KSHIFT, 8, 0, err,
                                  sizeof err) != 0);
    CHECK(gc_sched_allgather_init(&s, GC_SCHED_AG_RING, 0, 1, err,
                                  sizeof err) != 0);

    /* §4.5: node p sends to p-c..p-1, p+1..p+f and p+K, K=8: c=4, f=3 */
    static const int kshift8[8] = {-4, -3, -2, -1, 1, 2, 3, 8};
    gc_sched_allgather_init(&s, GC_SCHED_AG_KSHIFT, 64, 8, NULL, 0);
    int ok = 1;
    for (int p = 0; p < 16; p++)
        ok &= s.phases[p].op == GC_SCHED_OP_SHIFT &&
              s.phases[p].distance == kshift8[p % 8] &&
              s.phases[p].block_shift == 8 * (p / 8);
    CHECK(ok);
    gc_sched_allgather_free(&s);
    /* §4.4: phases p XOR 1..K-1, then p+K */
    gc_sched_allgather_init(&s, GC_SCHED_AG_KPREFIX, 16, 4, NULL, 0);
    CHECK(s.phases[0].op == GC_SCHED_OP_XOR && s.phases[2].distance == 3 &&
          s.phases[3].op == GC_SCHED_OP_SHIFT && s.phases[3].distance == 4 &&
          s.phases[4].block_shift == 4);
    gc_sched_allgather_free(&s);
}

/* ---- contention on k-ary n-trees ------------------------------------- */

/* Phases of `s` whose worst down-link load exceeds 1; *worst = the max. */
static int contended_phases(struct gc_sched_karytree *t,
                            const struct gc_sched_allgather *s, int *worst)
{
    int *dst = xcalloc((size_t)t->ranks, sizeof *dst);
    int count = 0;
    *worst = 0;
    for (int p = 0; p < s->phase_count; p++) {
        gc_sched_allgather_phase(s, p, dst);
        int load = gc_sched_karytree_max_downlink_load(t, dst);
        count += load > 1;
        if (load > *worst)
            *worst = load;
    }
    free(dst);
    return count;
}

static int contended(int arity, int levels, const int *holes, int hole_count,
                     enum gc_sched_allgather_strategy st, int k, int *worst)
{
    struct gc_sched_karytree t;
    struct gc_sched_allgather s;
    *worst = 0;
    if (gc_sched_karytree_init(&t, arity, levels, holes, hole_count, NULL, 0) !=
        0)
        return -1;
    if (gc_sched_allgather_init(&s, st, t.ranks, k, NULL, 0) != 0) {
        gc_sched_karytree_free(&t);
        return -1;
    }
    int count = contended_phases(&t, &s, worst);
    gc_sched_allgather_free(&s);
    gc_sched_karytree_free(&t);
    return count;
}

/* Worst down-link load of the single permutation r -> r + shift. */
static int shift_load(struct gc_sched_karytree *t, int shift)
{
    int *dst = xcalloc((size_t)t->ranks, sizeof *dst);
    for (int r = 0; r < t->ranks; r++)
        dst[r] = (r + shift) % t->ranks;
    int load = gc_sched_karytree_max_downlink_load(t, dst);
    free(dst);
    return load;
}

/* Every phase of `st` on the full k-ary n-tree has down-link load 1. */
static void check_congestion_free(int arity, int levels,
                                  enum gc_sched_allgather_strategy st, int k,
                                  const char *why)
{
    int worst;
    int count = contended(arity, levels, NULL, 0, st, k, &worst);
    CHECKF(count == 0 && worst == 1,
           "%s: %s K=%d on the %d-ary %d-tree: %d contended phases, worst %d",
           why, gc_sched_allgather_strategy_name(st), k, arity, levels, count,
           worst);
}

static void test_lemmas(void)
{
    static const struct {
        int arity, levels;
    } trees[] = {{4, 3}, {4, 2}, {2, 6}, {8, 2}, {2, 4}, {4, 4}};
    static const int kshift_k[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        int a = trees[i].arity, n = trees[i].levels, leaves = 1;
        for (int l = 0; l < n; l++)
            leaves *= a;
        check_congestion_free(a, n, GC_SCHED_AG_RING, 1, "lemma 1");
        check_congestion_free(a, n, GC_SCHED_AG_PREFIX, 1, "lemmas 4, 5");
        for (size_t j = 0; j < sizeof kshift_k / sizeof kshift_k[0]; j++)
            if (kshift_k[j] <= leaves)
                check_congestion_free(a, n, GC_SCHED_AG_KSHIFT, kshift_k[j],
                                      "kShift (4.5)");
        for (int k = 2; k <= 8 && k <= leaves; k *= 2)
            check_congestion_free(a, n, GC_SCHED_AG_KPREFIX, k,
                                  "kPrefix (4.4, lemmas 5, 6)");
    }
    /* lemma 6: shifts by +-a * 4^j, a in {1,2,3}, on a 4-ary tree */
    struct gc_sched_karytree t;
    CHECK(gc_sched_karytree_init(&t, 4, 4, NULL, 0, NULL, 0) == 0);
    int ok = 1;
    for (int pow = 1; pow < t.ranks; pow *= 4)
        for (int a = 1; a <= 3; a++)
            if (a * pow < t.ranks) {
                ok &= shift_load(&t, a * pow) == 1;
                ok &= shift_load(&t, t.ranks - a * pow) == 1;
            }
    CHECK(ok);
    gc_sched_karytree_free(&t);
}

static void test_holes(void)
{
    /* §4.5: "prefix-send and kPrefix are very sensitive to missing nodes",
     * kShift has contention "only in some (not all) phases", ring none. */
    int worst, hole5[] = {5}, holes4[] = {5, 6, 7, 40};
    int ring = contended(4, 3, hole5, 1, GC_SCHED_AG_RING, 1, &worst);
    CHECK(ring == 0 && worst == 1);
    int prefix = contended(4, 3, hole5, 1, GC_SCHED_AG_PREFIX, 1, &worst);
    CHECKF(prefix == 60 && worst == 2, "prefix, hole 5: %d phases", prefix);
    int kshift = contended(4, 3, hole5, 1, GC_SCHED_AG_KSHIFT, 8, &worst);
    CHECKF(kshift == 15 && worst == 2, "kshift 8, hole 5: %d phases", kshift);
    CHECK(kshift > 0 && 2 * kshift < 62 && kshift < prefix);
    /* kPrefix needs K | P: four holes leave 60 ranks */
    int kprefix = contended(4, 3, holes4, 4, GC_SCHED_AG_KPREFIX, 4, &worst);
    int kshift4 = contended(4, 3, holes4, 4, GC_SCHED_AG_KSHIFT, 4, &worst);
    CHECKF(kprefix == 44 && kshift4 == 29,
           "holes 5,6,7,40: kprefix %d, kshift %d phases", kprefix, kshift4);
    CHECK(kprefix > kshift4);
    /* where: only the -4 and +8 phases, the shifts whose links the
     * renumbering behind the hole makes two messages share */
    struct gc_sched_karytree t;
    struct gc_sched_allgather s;
    gc_sched_karytree_init(&t, 4, 3, hole5, 1, NULL, 0);
    gc_sched_allgather_init(&s, GC_SCHED_AG_KSHIFT, t.ranks, 8, NULL, 0);
    int *dst = xcalloc((size_t)t.ranks, sizeof *dst);
    int ok = 1;
    for (int p = 0; p < s.phase_count; p++) {
        gc_sched_allgather_phase(&s, p, dst);
        int load = gc_sched_karytree_max_downlink_load(&t, dst);
        int d = s.phases[p].distance;
        ok &= load == (d == -4 || d == 8 ? 2 : 1);
    }
    CHECKF(ok, "kshift 8 with hole 5: contention not exactly in the -4 and "
               "+8 phases");
    free(dst);
    gc_sched_allgather_free(&s);
    /* a hole after the last rank moves no rank: still congestion free */
    int last[] = {63};
    CHECK(contended(4, 3, last, 1, GC_SCHED_AG_PREFIX, 1, &worst) == 0);
    gc_sched_karytree_free(&t);

    char err[128];
    int dup[] = {3, 3}, out[] = {64};
    CHECK(gc_sched_karytree_init(&t, 4, 3, dup, 2, err, sizeof err) != 0);
    CHECKF(strstr(err, "twice") != NULL, "duplicate hole: %s", err);
    CHECK(gc_sched_karytree_init(&t, 4, 3, out, 1, err, sizeof err) != 0);
    CHECK(gc_sched_karytree_init(&t, 1, 3, NULL, 0, err, sizeof err) != 0);
    CHECK(gc_sched_karytree_init(&t, 2, 17, NULL, 0, err, sizeof err) != 0);
}

int main(void)
{
    test_fattree();
    test_fit();
    test_patterns_any_n();
    test_opt_figure3();
    test_opt_trees();
    test_opt_fallback();
    test_section_5_2();
    test_allgather_delivery();
    test_lemmas();
    test_holes();
    return unit_check_report("test_sched: ");
}
