/*
 * kPrefix allgather inside a site: Kumar & Kalé, "Scaling All-to-All
 * Multicast on Fat-tree Networks" (ICPADS 2004), section 4.4, eq. 9.
 *
 * The ranks form P/k groups of k consecutive ranks (k a power of two that
 * divides P).  Round t (t = 0 .. P/k - 1): every rank p sends the block it
 * currently forwards, p - t k (its own in round 0), to the k-1 others of
 * its group by prefix send (p XOR i, i = 1..k-1: the partners stay in the
 * group), and, but in the last round, to p + k: the ring between groups
 * that brings it p - (t+1) k for the next round.  After P/k rounds every
 * rank has received every group member's chain of blocks.
 *
 * k: the largest power of two that is at most K (GRIDCOLL_ALLGATHER_K,
 * default 8, as in the paper) and P and divides P, the paper's conditions
 * (it does not define kPrefix otherwise).  An odd P gives k = 1: the ring.
 * kShift (allgather_site_kshift.c) is the paper's answer for such P.
 *
 * Cost (eq. 9 with β_em = β): T = (P-1)(α + m β) + L in P/k rounds of k
 * messages.  Congestion free on a fat tree: prefix send inside a group
 * (Lemma 5) and the shift by k, a power of two (Lemma 6); k-1 of every k
 * messages stay within k ranks of the sender, which keeps long wires out
 * of most rounds.
 *
 * When it wins: long blocks on large sites whose size has a large
 * power-of-two factor (the best scaling in the paper's Table 1 without
 * missing nodes).
 */
#include "coll/allgather/allgather_site.h"

int allgather_site_kprefix(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    int p = b->size, me = b->rank;
    int k = 1;
    while (2 * k <= b->k && 2 * k <= p && p % (2 * k) == 0)
        k *= 2;
    int rounds = p / k;
    int status = MPI_SUCCESS;
    for (int t = 0; t < rounds && status == MPI_SUCCESS; t++) {
        int forward = ((me - t * k) % p + p) % p;
        int out[2] = {forward, forward + 1};
        for (int i = 1; i < k && status == MPI_SUCCESS; i++) {
            int peer = me ^ i;
            int theirs = ((peer - t * k) % p + p) % p;
            int in[2] = {theirs, theirs + 1};
            status = site_round_recv(&r, b, peer, in, 1);
            if (status == MPI_SUCCESS)
                status = site_round_send(&r, b, peer, out, 1);
        }
        if (t < rounds - 1 && status == MPI_SUCCESS) {
            int next = ((me - (t + 1) * k) % p + p) % p;
            int in[2] = {next, next + 1};
            status = site_round_recv(&r, b, (me - k + p) % p, in, 1);
            if (status == MPI_SUCCESS)
                status = site_round_send(&r, b, (me + k) % p, out, 1);
        }
        status = site_round_wait(&r, status);
    }
    site_round_free(&r);
    return status;
}
