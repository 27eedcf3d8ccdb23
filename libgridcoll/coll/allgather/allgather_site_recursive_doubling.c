/*
 * Recursive-doubling allgather inside a site: Thakur, Rabenseifner and
 * Gropp, "Optimization of Collective Communication Operations in MPICH"
 * (IJHPCA 2005), section 4.1, the scheme of MPICH's
 * allgather_intra_recursive_doubling.c, here on blocks of any size.  Kumar
 * & Kalé's hypercube (section 3.2) is the same exchange; the two differ
 * off powers of two (allgather_site_hypercube.c folds the extra ranks).
 *
 * Phases: for mask = 1, 2, 4, ... < P, rank me exchanges with
 * me XOR mask everything of its subtree (the ranks that agree with it
 * above bit log2(mask): a contiguous range of blocks, so one byte range)
 * for the partner's subtree.  When P is not a power of two the partner
 * may not exist; then the ranks of this subtree that did have a partner
 * (the first P - partner_root of them) pass the missing part on to those
 * that did not, by recursive halving inside the subtree (at most
 * log2(mask) more messages), before the next mask.
 *
 * Cost: P a power of two: log2(P) α + (P-1) m β, message i of size
 * 2^i m; otherwise at most 2 log2(P) α, still (P-1) m received per rank.
 *
 * When it wins: short to medium blocks on a power-of-two site (fewest
 * messages, all of them pairwise); the hypercube's direct last stages
 * trade one extra message for one fewer dependent round.
 */
#include "coll/allgather/allgather_site.h"

/*
 * After the exchange at `mask`, the ranks in my subtree whose partner
 * did not exist lack blocks partner_root..P-1; the first `have` ranks of
 * the subtree hold them and hand them on by recursive halving: in every
 * half-size piece the first `have` ranks hold them after each step.
 */
static int pass_on(const struct site_blocks *b, struct site_round *r, int mask,
                   int partner_root)
{
    int me = b->rank;
    int have = b->size - partner_root;
    int missing[2] = {partner_root, b->size};
    int status = MPI_SUCCESS;
    for (int half = mask >> 1; half > 0 && status == MPI_SUCCESS; half >>= 1) {
        /* The sub-subtree being split, and where its haves end. */
        int root = me & ~(2 * half - 1);
        int haves_end = root + have;
        int peer = me ^ half;
        if (peer > me && me < haves_end && peer >= haves_end)
            status = site_round_send(r, b, peer, missing, 1);
        else if (peer < me && peer < haves_end && me >= haves_end)
            status = site_round_recv(r, b, peer, missing, 1);
        status = site_round_wait(r, status);
    }
    return status;
}

int allgather_site_recursive_doubling(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    int p = b->size, me = b->rank;
    int status = MPI_SUCCESS;
    for (int mask = 1; mask < p && status == MPI_SUCCESS; mask <<= 1) {
        int peer = me ^ mask;
        int my_root = me & ~(mask - 1), peer_root = my_root ^ mask;
        int mine[2] = {my_root, my_root + mask < p ? my_root + mask : p};
        int theirs[2] = {peer_root,
                         peer_root + mask < p ? peer_root + mask : p};
        if (peer < p) {
            status = site_round_recv(&r, b, peer, theirs, 1);
            if (status == MPI_SUCCESS)
                status = site_round_send(&r, b, peer, mine, 1);
            status = site_round_wait(&r, status);
        }
        /* A partner subtree cut short by P: part of my subtree missed it. */
        if (status == MPI_SUCCESS && peer_root > my_root && peer_root < p &&
            peer_root + mask > p)
            status = pass_on(b, &r, mask, peer_root);
    }
    site_round_free(&r);
    return status;
}
