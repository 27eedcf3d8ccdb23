/*
 * Binary XOR (pairwise) exchange inside a site (Prisacari et al.,
 * "Bandwidth-optimal all-to-all exchanges in fat tree networks", ICS
 * 2013, §3.1, d_XOR = s XOR p, and their Fig. 1), run by the pairwise
 * engine (alltoall_site_pairwise.c).
 *
 * Phases: p = 0 .. P-1 with P the smallest power of two >= n; in phase p
 * rank i exchanges blocks with i XOR p (both directions, one partner).
 * Phase 0 is every rank's own block.
 *
 * n not a power of two: the phases still run up to P-1 and a rank whose
 * partner i XOR p is >= n sits the phase out (no message, no wait).  Every
 * ordered pair still meets exactly once (p = i XOR j is unique), each rank
 * still exchanges with each other rank once, and every phase stays a set
 * of disjoint pairs within aligned blocks of the next power of two above
 * p, which is what makes XOR contention-free inside the subtrees of a fat
 * tree with ranks in leaf order.  A round-robin tournament would need
 * fewer phases but loses that locality; the linear shift is the other
 * pattern on offer.
 *
 * Cost for n ranks, m bytes a pair: (n-1)(alpha + m beta) per rank, each
 * phase a perfect matching in which partners send to each other (both
 * directions of a full-duplex link at once).  On a fat tree with n a
 * power of two the first half of the phases never leave the lower half of
 * the tree (Prisacari Fig. 1).  Wins for large blocks where the pairing
 * matters: full-duplex links and hierarchical (node, switch) sites.
 */
#include "coll/alltoall/alltoall.h"

static int xor_phases(const void *state, int n)
{
    (void)state;
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static int xor_peer(const void *state, int n, int phase, int rank)
{
    (void)state;
    int peer = rank ^ phase;
    return peer < n ? peer : -1;
}

const struct alltoall_pattern alltoall_site_xor = {
    .prepare = NULL,
    .phases = xor_phases,
    .dst = xor_peer,
    .src = xor_peer,
};
