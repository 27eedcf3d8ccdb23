/*
 * Ring allgather inside a site: Kumar & Kalé, "Scaling All-to-All
 * Multicast on Fat-tree Networks" (ICPADS 2004), section 4.2.
 *
 * Phases: P-1 steps; in step i every rank sends block (me - i) to its
 * right neighbour and receives block (me - i - 1) from its left one, the
 * cyclic shift by 1 repeated, so every block travels once round the ring.
 * Works on any P and on blocks of different sizes.
 *
 * Cost (eq. 7): T = (P-1)(α + mβ) + L, m the block size; each rank sends
 * and receives P-1 messages, (P-1) m bytes.  Congestion free on a fat tree
 * for every P (Lemma 1).
 *
 * When it wins: long blocks where P is not a multiple of k (kShift's
 * contention-free case), or where one message in flight per rank is what
 * the network likes best; its P-1 α terms lose to the combining
 * strategies on short blocks.
 */
#include "coll/allgather/allgather_site.h"

int allgather_site_ring(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    int p = b->size, me = b->rank;
    int right = (me + 1) % p, left = (me + p - 1) % p;
    int status = MPI_SUCCESS;
    for (int step = 0; step < p - 1 && status == MPI_SUCCESS; step++) {
        int out = (me - step + p) % p, in = (me - step - 1 + 2 * p) % p;
        int out_range[2] = {out, out + 1}, in_range[2] = {in, in + 1};
        status = site_round_recv(&r, b, left, in_range, 1);
        if (status == MPI_SUCCESS)
            status = site_round_send(&r, b, right, out_range, 1);
        status = site_round_wait(&r, status);
    }
    site_round_free(&r);
    return status;
}
