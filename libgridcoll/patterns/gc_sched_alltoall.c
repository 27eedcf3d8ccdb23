/*
 * Phase schedules for the personalized all-to-all inside a site.
 *
 * Source: Prisacari, Minkenberg, Rodriguez, Hoefler, "Bandwidth-optimal
 * all-to-all exchanges in fat tree networks", ICS'13: §2 (LIN and XOR),
 * §3.3 (permuted variable-base exchanges, eq. 2-4), §3.4 (the base
 * (ML, ..., M1) that is bandwidth-optimal), §5.2 (per-phase counts).
 *
 * Phases: n, numbered as in the paper.  In phase p rank s sends its block
 * for d(s, p) and receives the block from src(s, p), d(src(s, p), p) = s:
 *   LIN  d = (s + p) mod n                      (shift 0 of the paper)
 *   XOR  d = s XOR p                            (n a power of two)
 *   OPT  digit sigma(k) of d in base (M1..ML) =
 *        (digit k of s + digit k of p) mod Theta_k  in base
 *        Theta = (ML, ..., M1), sigma(k) = L + 1 - k            (eq. 4)
 * Every ordered pair occurs once, (s, s) included: that one is a local
 * copy.  LIN and XOR have all of them in phase 0; OPT spreads them (p = 0
 * maps s to its digit-reversed rank, not to s).
 *
 * XOR for n not a power of two (the library needs a schedule for any n):
 * the round-robin 1-factorisation of the complete graph, which keeps XOR's
 * defining property that every phase is a set of pairwise exchanges
 * (sendrecv with one partner):
 *   n odd:  in phase p, s and (p - s) mod n exchange; the one s with
 *           2s = p (mod n) copies locally;
 *   n even: phase 0 is the local copy; in phase p >= 1, with m = n - 1 and
 *           q = p - 1, s < m exchanges with (q - s) mod m, except the s with
 *           2s = q (mod m), which exchanges with n - 1.
 * It does not have XOR's aligned-subtree locality; for a site that is not
 * a power of two OPT or LIN is the better choice.
 *
 * OPT on a site whose rank count n differs from the leaves of the fat tree
 * it was given runs on gc_sched_fattree_fit(tree, n): the lower levels whose
 * subtrees divide n are kept, the rest is one top level.  With ranks on
 * leaves in order, those kept subtrees are the physical ones, so OPT still
 * meets B_min there; above, it balances the top level of the fitted tree
 * only.  With no level kept, OPT on FT(1; n) is LIN.
 *
 * Cost model (ideal fat tree, one m-byte block per pair): n - 1 message
 * phases of alpha + m*beta each when no link is overloaded.  A phase
 * whose heaviest level-l up-link carries u_l messages over capacity c_l
 * takes about max_l ceil(u_l / c_l) times as long.  OPT keeps
 * u_l = B_min(l) (eq. 1) in every phase; LIN and XOR reach u_l = Pi_l in
 * some phases, so they need full bisection bandwidth for the same time
 * (§5.2: on half bisection, half of their phases take twice as long).
 */
#include <string.h>

#include "patterns/gc_sched.h"
#include "patterns/gc_sched_util.h"

static int is_power_of_two(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

int gc_sched_alltoall_init(struct gc_sched_alltoall *s,
                           enum gc_sched_alltoall_pattern pattern, int ranks,
                           const struct gc_sched_fattree *tree, char *err,
                           size_t err_len)
{
    if (ranks < 1 || ranks > GC_SCHED_MAX_RANKS) {
        gc_sched_set_err(err, err_len, "rank count %d is not in 1..%d", ranks,
                         GC_SCHED_MAX_RANKS);
        return -1;
    }
    if (pattern != GC_SCHED_A2A_LIN && pattern != GC_SCHED_A2A_XOR &&
        pattern != GC_SCHED_A2A_OPT) {
        gc_sched_set_err(err, err_len, "unknown all-to-all pattern %d",
                         (int)pattern);
        return -1;
    }
    if (tree != NULL && gc_sched_fattree_check(tree, err, err_len) != 0)
        return -1;
    memset(s, 0, sizeof *s);
    s->pattern = pattern;
    s->ranks = ranks;
    if (tree != NULL && gc_sched_fattree_leaves(tree) == ranks)
        s->tree = *tree;
    else
        gc_sched_fattree_fit(tree, ranks, &s->tree);

    int levels = s->tree.levels;
    int theta_weight = 1;
    for (int k = 0; k < levels; k++) {
        /* sigma reverses the levels: theta digit k is alpha digit L-1-k */
        int level = levels - 1 - k;
        s->theta_base[k] = s->tree.arity[level];
        s->theta_weight[k] = theta_weight;
        s->alpha_weight[k] =
            (int)gc_sched_fattree_subtree_leaves(&s->tree, level);
        theta_weight *= s->theta_base[k];
    }
    return 0;
}

int gc_sched_alltoall_phases(const struct gc_sched_alltoall *s)
{
    return s->ranks;
}

static int opt_dst(const struct gc_sched_alltoall *s, int phase, int rank)
{
    int dst = 0;
    for (int k = 0; k < s->tree.levels; k++) {
        int base = s->theta_base[k];
        int digit = (rank / s->theta_weight[k] % base +
                     phase / s->theta_weight[k] % base) %
                    base;
        dst += digit * s->alpha_weight[k];
    }
    return dst;
}

static int opt_src(const struct gc_sched_alltoall *s, int phase, int rank)
{
    int src = 0;
    for (int k = 0; k < s->tree.levels; k++) {
        int base = s->theta_base[k];
        int digit = rank / s->alpha_weight[k] % base -
                    phase / s->theta_weight[k] % base;
        src += gc_sched_mod(digit, base) * s->theta_weight[k];
    }
    return src;
}

/* The round-robin pairing for n not a power of two; an involution. */
static int round_robin_partner(int n, int phase, int rank)
{
    if (n % 2 == 1)
        return gc_sched_mod((long)phase - rank, n);
    if (phase == 0)
        return rank;
    int m = n - 1;
    int q = phase - 1;
    if (rank == m) {
        /* the s < m with 2s = q (mod m); (m + 1) / 2 is 1/2 mod odd m */
        return (int)((long long)q * ((m + 1) / 2) % m);
    }
    int partner = gc_sched_mod((long)q - rank, m);
    return partner == rank ? m : partner;
}

int gc_sched_alltoall_dst(const struct gc_sched_alltoall *s, int phase,
                          int rank)
{
    int n = s->ranks;
    if (phase < 0 || phase >= n || rank < 0 || rank >= n)
        return -1;
    switch (s->pattern) {
    case GC_SCHED_A2A_LIN: return (int)(((long)rank + phase) % n);
    case GC_SCHED_A2A_XOR:
        if (is_power_of_two(n))
            return rank ^ phase;
        return round_robin_partner(n, phase, rank);
    case GC_SCHED_A2A_OPT: return opt_dst(s, phase, rank);
    }
    return -1;
}

int gc_sched_alltoall_src(const struct gc_sched_alltoall *s, int phase,
                          int rank)
{
    int n = s->ranks;
    if (phase < 0 || phase >= n || rank < 0 || rank >= n)
        return -1;
    switch (s->pattern) {
    case GC_SCHED_A2A_LIN: return gc_sched_mod((long)rank - phase, n);
    case GC_SCHED_A2A_XOR:
        /* pairwise exchanges: the partner is both source and destination */
        return gc_sched_alltoall_dst(s, phase, rank);
    case GC_SCHED_A2A_OPT: return opt_src(s, phase, rank);
    }
    return -1;
}

void gc_sched_alltoall_phase(const struct gc_sched_alltoall *s, int phase,
                             int *dst_of_rank)
{
    for (int r = 0; r < s->ranks; r++)
        dst_of_rank[r] = gc_sched_alltoall_dst(s, phase, r);
}

static const char *const pattern_names[] = {
    [GC_SCHED_A2A_LIN] = "lin",
    [GC_SCHED_A2A_XOR] = "xor",
    [GC_SCHED_A2A_OPT] = "opt",
};

const char *gc_sched_alltoall_pattern_name(enum gc_sched_alltoall_pattern p)
{
    if ((unsigned)p >= sizeof pattern_names / sizeof pattern_names[0])
        return "?";
    return pattern_names[p];
}

int gc_sched_alltoall_pattern_parse(const char *name,
                                    enum gc_sched_alltoall_pattern *out)
{
    for (size_t i = 0; i < sizeof pattern_names / sizeof pattern_names[0];
         i++) {
        if (strcmp(name, pattern_names[i]) == 0) {
            *out = (enum gc_sched_alltoall_pattern)i;
            return 0;
        }
    }
    return -1;
}
