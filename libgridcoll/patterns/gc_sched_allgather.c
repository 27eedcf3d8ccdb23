/*
 * Phase schedules for the all-to-all multicast (allgather) of long
 * messages inside a site.
 *
 * Source: Kumar and Kale, "Scaling all-to-all multicast on fat-tree
 * networks" (ICPADS'04): §4.1 congestion-free permutations on k-ary n-trees
 * (lemmas 1-6), §4.2 ring, §4.3 prefix-send, §4.4 kPrefix, §4.5 kShift;
 * cost equations 7-10.
 *
 * Phases (P ranks; "block b" is rank b's contribution):
 *   ring     P-1 phases; in phase t rank p sends block p-t to p+1 (lemma 1).
 *   prefix   phases i = 1..P'-1, P' the power of two >= P; rank p
 *            exchanges its own block with p XOR i.  For P not a power of
 *            two, a rank whose partner p XOR i >= P sits the phase out: it
 *            still meets every other rank once, but lemma 5 no longer
 *            makes the phases congestion free.
 *   kshift   iterations t = 0, 1, ...: rank p sends block p-tK to
 *            p-c..p-1, p+1..p+f (c = ceil((K-1)/2), f = floor((K-1)/2)),
 *            then to p+K, which relays it in iteration t+1.  Rank q thus
 *            gets block q-x for the offsets x = tK+j; the windows
 *            [tK-c, tK+f] tile the integers, so the phases with
 *            x in [-c, P-c-1] give every block once.  Exactly P-1 phases
 *            for any P (the paper's P/K iterations when K divides P); when
 *            it does not, blocks that the +K relay would bring a second
 *            time are skipped, and the ranks that need them already got
 *            them from a p-j neighbour in iteration 0.
 *   kprefix  P/K iterations of: K-1 phases in which p exchanges block p-tK
 *            with p XOR i inside its aligned block of K ranks, then (not in
 *            the last iteration) the relay to p+K.  K a power of two that
 *            divides P, as the paper requires; P-1 phases.
 *
 * Cost model (Kumar & Kale eq. 7-10; alpha per message, beta per byte from
 * host memory, beta_em from NIC memory, delta per byte copied to the NIC):
 *   ring     (P-1)(alpha + m beta)
 *   prefix   (P-1)(alpha + m beta_em) + m delta
 *   kshift   (P-1)(alpha + m beta_em) + (P/K) m delta
 *   kprefix  (P-1)(alpha + m beta_em) + (P/K) m delta
 * each plus its contention term, which gc_sched_karytree.c evaluates.
 * Ring needs no copy but sends a different block every phase; the others
 * send each block K times (or P-1 times) from one buffer.  With holes in
 * the tree, kShift stays congestion free in more phases than prefix-send
 * and kPrefix (§4.5), which is why it is the choice for non-contiguous
 * allocations.
 */
#include <stdlib.h>
#include <string.h>

#include "patterns/gc_sched.h"
#include "patterns/gc_sched_util.h"

static int is_power_of_two(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

static int check_k(enum gc_sched_allgather_strategy strategy, int ranks, int k,
                   char *err, size_t err_len)
{
    const char *name = gc_sched_allgather_strategy_name(strategy);
    if (k < 1 || k > ranks) {
        gc_sched_set_err(err, err_len,
                         "%s needs 1 <= K <= the %d ranks; K = %d", name, ranks,
                         k);
        return -1;
    }
    if (strategy == GC_SCHED_AG_KPREFIX &&
        (!is_power_of_two(k) || ranks % k != 0)) {
        gc_sched_set_err(err, err_len,
                         "kprefix needs K a power of two that divides the "
                         "%d ranks; K = %d",
                         ranks, k);
        return -1;
    }
    return 0;
}

static int phase_count(enum gc_sched_allgather_strategy strategy, int ranks)
{
    if (strategy != GC_SCHED_AG_PREFIX)
        return ranks - 1;
    int pow2 = 1;
    while (pow2 < ranks)
        pow2 *= 2;
    return pow2 - 1;
}

static void add(struct gc_sched_allgather *s, enum gc_sched_allgather_op op,
                int distance, long block_shift)
{
    struct gc_sched_allgather_phase *ph = &s->phases[s->phase_count++];
    ph->op = op;
    ph->distance = distance;
    ph->block_shift = gc_sched_mod(block_shift, s->ranks);
}

static void fill_kshift(struct gc_sched_allgather *s)
{
    int ranks = s->ranks, k = s->k;
    int before = k / 2, after = (k - 1) / 2;
    long last = (long)ranks - before - 1; /* largest offset x still needed */
    for (long base = 0; base <= ranks - 1; base += k) {
        for (int j = -before; j <= after; j++) {
            if (j != 0 && base + j <= last)
                add(s, GC_SCHED_OP_SHIFT, j, base);
        }
        if (base + k <= last)
            add(s, GC_SCHED_OP_SHIFT, k, base);
    }
}

static void fill_kprefix(struct gc_sched_allgather *s)
{
    int iterations = s->ranks / s->k;
    for (int t = 0; t < iterations; t++) {
        long base = (long)t * s->k;
        for (int i = 1; i < s->k; i++)
            add(s, GC_SCHED_OP_XOR, i, base);
        if (t + 1 < iterations)
            add(s, GC_SCHED_OP_SHIFT, s->k, base);
    }
}

int gc_sched_allgather_init(struct gc_sched_allgather *s,
                            enum gc_sched_allgather_strategy strategy,
                            int ranks, int k, char *err, size_t err_len)
{
    int status = -1, expected = 0;
    memset(s, 0, sizeof *s);
    if (ranks < 1 || ranks > GC_SCHED_MAX_RANKS) {
        gc_sched_set_err(err, err_len, "rank count %d is not in 1..%d", ranks,
                         GC_SCHED_MAX_RANKS);
        goto cleanup;
    }
    switch (strategy) {
    case GC_SCHED_AG_RING:
    case GC_SCHED_AG_PREFIX: k = 1; break;
    case GC_SCHED_AG_KSHIFT:
    case GC_SCHED_AG_KPREFIX:
        if (check_k(strategy, ranks, k, err, err_len) != 0)
            goto cleanup;
        break;
    default:
        gc_sched_set_err(err, err_len, "unknown allgather strategy %d",
                         (int)strategy);
        goto cleanup;
    }
    s->strategy = strategy;
    s->ranks = ranks;
    s->k = k;
    expected = phase_count(strategy, ranks);
    /* one spare entry so that P = 1 (no phases) still gets a real buffer */
    s->phases = calloc((size_t)expected + 1, sizeof *s->phases);
    if (s->phases == NULL) {
        gc_sched_set_err(err, err_len, "out of memory for %d phases", expected);
        goto cleanup;
    }
    switch (strategy) {
    case GC_SCHED_AG_RING:
        for (int t = 0; t < expected; t++)
            add(s, GC_SCHED_OP_SHIFT, 1, t);
        break;
    case GC_SCHED_AG_PREFIX:
        for (int i = 1; i <= expected; i++)
            add(s, GC_SCHED_OP_XOR, i, 0);
        break;
    case GC_SCHED_AG_KSHIFT: fill_kshift(s); break;
    case GC_SCHED_AG_KPREFIX: fill_kprefix(s); break;
    }
    if (s->phase_count != expected) {
        gc_sched_set_err(err, err_len,
                         "internal error: %s built %d phases, not %d",
                         gc_sched_allgather_strategy_name(strategy),
                         s->phase_count, expected);
        goto cleanup;
    }
    status = 0;
cleanup:
    if (status != 0)
        gc_sched_allgather_free(s);
    return status;
}

void gc_sched_allgather_free(struct gc_sched_allgather *s)
{
    free(s->phases);
    s->phases = NULL;
    s->phase_count = 0;
}

int gc_sched_allgather_phases(const struct gc_sched_allgather *s)
{
    return s->phase_count;
}

int gc_sched_allgather_step(const struct gc_sched_allgather *s, int phase,
                            int rank, struct gc_sched_allgather_step *out)
{
    out->send_to = out->send_block = out->recv_from = out->recv_block = -1;
    if (phase < 0 || phase >= s->phase_count || rank < 0 || rank >= s->ranks)
        return -1;
    const struct gc_sched_allgather_phase *ph = &s->phases[phase];
    int n = s->ranks;
    int to, from;
    if (ph->op == GC_SCHED_OP_XOR) {
        to = from = rank ^ ph->distance;
        if (to >= n)
            return 0; /* no partner: this rank sits the phase out */
    } else {
        to = gc_sched_mod((long)rank + ph->distance, n);
        from = gc_sched_mod((long)rank - ph->distance, n);
    }
    out->send_to = to;
    out->send_block = gc_sched_mod((long)rank - ph->block_shift, n);
    out->recv_from = from;
    out->recv_block = gc_sched_mod((long)from - ph->block_shift, n);
    return 0;
}

void gc_sched_allgather_phase(const struct gc_sched_allgather *s, int phase,
                              int *dst_of_rank)
{
    struct gc_sched_allgather_step step;
    for (int r = 0; r < s->ranks; r++) {
        gc_sched_allgather_step(s, phase, r, &step);
        dst_of_rank[r] = step.send_to;
    }
}

static const char *const strategy_names[] = {
    [GC_SCHED_AG_RING] = "ring",
    [GC_SCHED_AG_PREFIX] = "prefix",
    [GC_SCHED_AG_KSHIFT] = "kshift",
    [GC_SCHED_AG_KPREFIX] = "kprefix",
};

const char *
gc_sched_allgather_strategy_name(enum gc_sched_allgather_strategy st)
{
    if ((unsigned)st >= sizeof strategy_names / sizeof strategy_names[0])
        return "?";
    return strategy_names[st];
}

int gc_sched_allgather_strategy_parse(const char *name,
                                      enum gc_sched_allgather_strategy *out)
{
    for (size_t i = 0; i < sizeof strategy_names / sizeof strategy_names[0];
         i++) {
        if (strcmp(name, strategy_names[i]) == 0) {
            *out = (enum gc_sched_allgather_strategy)i;
            return 0;
        }
    }
    return -1;
}
