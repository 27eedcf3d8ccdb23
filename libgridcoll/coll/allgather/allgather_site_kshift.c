/*
 * kShift allgather inside a site: Kumar & Kalé, "Scaling All-to-All
 * Multicast on Fat-tree Networks" (ICPADS 2004), section 4.5, eq. 10.
 *
 * Every rank p sends the block it currently forwards to k ranks at once:
 * p-a, ..., p-1, p+1, ..., p+c (a = ceil((k-1)/2), c = floor((k-1)/2))
 * and p+k.  Round t forwards block p - t k, which came from p - k in round
 * t-1 (its own block in round 0): the shifts by +k form a chain that
 * carries each block round the ring k ranks at a time, and each link of
 * the chain hands it to the k-1 ranks around it.  k = min(K, P), K from
 * GRIDCOLL_ALLGATHER_K (default 8, as in the paper).
 *
 * Generalized to any P (the paper needs P a multiple of k): block b must
 * reach the offsets -a .. P-1-a around b except 0, each exactly once.
 * Round t sends b to the offsets t k + d (d in -a..c, d != 0) and, on the
 * chain, (t+1) k, keeping only those inside that window, for t while
 * t k <= P-1.  A chain link that would fall outside the window lands on a
 * rank that received b directly in round 0, so it is dropped and that rank
 * forwards its copy.  With P a multiple of k this is the paper's schedule;
 * k = P gives one round of direct sends, k = 1 the ring.
 *
 * Cost (eq. 10 with β_em = β, no NIC copy): T = (P-1)(α + m β) + L over
 * ceil(P/k) rounds, each rank sending and receiving P-1 blocks in all,
 * at most k per round.  Congestion free on a fat tree when P is a multiple
 * of k and k is 1, 2, 3, 4 or 8 (Lemma 6); a missing node disturbs only
 * some rounds (section 4.5).
 *
 * When it wins: long blocks, P a multiple of k: the same bytes as the
 * ring in about P/k dependent rounds instead of P-1.
 */
#include "coll/allgather/allgather_site.h"

int allgather_site_kshift(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    int p = b->size, me = b->rank;
    int k = b->k < p ? b->k : p;
    int a = k / 2, c = k - 1 - a;
    int window_end = p - 1 - a; /* offsets -a .. window_end */
    int status = MPI_SUCCESS;
    for (int t = 0; t * k <= p - 1 && status == MPI_SUCCESS; t++) {
        int start = t * k;
        int forward = ((me - start) % p + p) % p;
        int out[2] = {forward, forward + 1};
        /* Offsets of round t from the forwarded block's owner: the
         * neighbours of the chain link, then the next link. */
        for (int d = -a; d <= c + 1 && status == MPI_SUCCESS; d++) {
            int offset = d == c + 1 ? start + k : start + d;
            if (d == 0 || offset > window_end)
                continue;
            /* I send to the rank at `offset` from my forwarded block's
             * owner; I receive, from the rank at `start` from its owner,
             * the block whose owner I am at `offset` from. */
            int to = ((forward + offset) % p + p) % p;
            int owner = ((me - offset) % p + p) % p;
            int from = (owner + start) % p;
            int in[2] = {owner, owner + 1};
            status = site_round_recv(&r, b, from, in, 1);
            if (status == MPI_SUCCESS)
                status = site_round_send(&r, b, to, out, 1);
        }
        status = site_round_wait(&r, status);
    }
    site_round_free(&r);
    return status;
}
