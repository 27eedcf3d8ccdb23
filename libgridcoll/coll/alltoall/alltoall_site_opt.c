/*
 * Fat-tree optimal exchange inside a site (Prisacari et al., "Bandwidth-
 * optimal all-to-all exchanges in fat tree networks", ICS 2013, §3.3-3.4:
 * the permuted variable-base exchange OPT), run by the pairwise engine
 * (alltoall_site_pairwise.c) on the schedule of libgridcoll/patterns.
 *
 * The site's fat tree FT(L; M1..ML) comes from the machine file
 * (`fattree=`, GRIDCOLL_FATTREE, gc_site_fattree()); ranks are taken to sit
 * on consecutive leaves in site-rank order.  When the tree's leaf count is
 * not the site's rank count, the schedule keeps the lowest levels whose
 * product divides n and folds the rest into one top level
 * (gc_sched_fattree_fit); without a tree it is FT(1; n), which is LIN.
 *
 * Phases: n; in phase p every rank sends to the rank whose variable-base
 * digits are the digit-permuted sum of its own and p's, so every phase is
 * a permutation and every pair meets once.
 *
 * Cost for n ranks, m bytes a pair: (n-1)(alpha + m beta) like LIN, but in
 * every phase the messages leaving any level-l subtree are exactly
 * B_min(l) (Prisacari eq. 1): no phase oversubscribes an up-link, where
 * LIN and XOR need the full bisection in half of their phases (§5.2;
 * `gridcoll-sched alltoall --pattern opt|lin|xor --fattree ...` shows the
 * counts).  Wins for large blocks on a site whose fat tree is tapered or
 * shared, where bisection bandwidth, not latency, bounds the exchange.
 */
#include <stdlib.h>

#include "coll/alltoall/alltoall.h"
#include "core/gc_world.h"
#include "patterns/gc_sched.h"

static int opt_prepare(int n, void **state)
{
    struct gc_sched_alltoall *s = malloc(sizeof *s);
    char err[128];
    if (s == NULL ||
        gc_sched_alltoall_init(s, GC_SCHED_A2A_OPT, n, gc_site_fattree(), err,
                               sizeof err) != 0) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int opt_phases(const void *state, int n)
{
    (void)n;
    return gc_sched_alltoall_phases(state);
}

static int opt_dst(const void *state, int n, int phase, int rank)
{
    (void)n;
    return gc_sched_alltoall_dst(state, phase, rank);
}

static int opt_src(const void *state, int n, int phase, int rank)
{
    (void)n;
    return gc_sched_alltoall_src(state, phase, rank);
}

const struct alltoall_pattern alltoall_site_opt = {
    .prepare = opt_prepare,
    .phases = opt_phases,
    .dst = opt_dst,
    .src = opt_src,
};
