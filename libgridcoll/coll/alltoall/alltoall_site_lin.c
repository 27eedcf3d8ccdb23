/*
 * Linear shift exchange inside a site (Prisacari et al., "Bandwidth-
 * optimal all-to-all exchanges in fat tree networks", ICS 2013, §3.1,
 * d_LIN = (s + p + shift) mod N with shift 0), run by the pairwise engine
 * (alltoall_site_pairwise.c).
 *
 * Phases: p = 0 .. n-1; in phase p rank i sends its block for (i+p) mod n
 * and receives the block of (i-p) mod n.  Phase 0 is every rank's own
 * block.
 *
 * Cost for n ranks, m bytes a pair: (n-1)(alpha + m beta), every rank
 * sending and receiving one message per phase, each to a different rank.
 * On a fat tree, N - |2p - N| of the messages of phase p cross the top
 * level (Prisacari §5.2), so half the phases need the full bisection.
 * Wins for large blocks on flat networks (one switch, shared memory),
 * where any order of the pairs is as good and one message in flight per
 * rank keeps contention low.
 */
#include "coll/alltoall/alltoall.h"

static int lin_phases(const void *state, int n)
{
    (void)state;
    return n;
}

static int lin_dst(const void *state, int n, int phase, int rank)
{
    (void)state;
    return (rank + phase) % n;
}

static int lin_src(const void *state, int n, int phase, int rank)
{
    (void)state;
    return (rank - phase + n) % n;
}

const struct alltoall_pattern alltoall_site_lin = {
    .prepare = NULL,
    .phases = lin_phases,
    .dst = lin_dst,
    .src = lin_src,
};
