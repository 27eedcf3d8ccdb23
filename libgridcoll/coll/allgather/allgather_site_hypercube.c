/*
 * Hypercube (dimension exchange) allgather inside a site, with direct last
 * stages: Kumar & Kalé, "Scaling All-to-All Multicast on Fat-tree
 * Networks" (ICPADS 2004), section 3.2, eq. 4-6.
 *
 * Phases, P' the largest power of two <= P, d = log2 P':
 *   0. fold: rank P'+i (i < P-P') sends its block to rank i, which carries
 *      it from then on (the paper's imperfect hypercube);
 *   1. d - ζ combining stages: in stage j rank me exchanges everything it
 *      holds with me XOR 2^j (a range of 2^j cube blocks plus their folded
 *      partners: two byte ranges at most);
 *   2. direct stages: inside its ζ-dimensional subcube each rank sends
 *      what it holds to the 2^ζ - 1 others at once (the paper's hybrid);
 *   3. unfold: rank i sends rank P'+i every block but its own.
 * ζ = 2 (or d when smaller): one message more than the pure cube for one
 * dependent round less (section 3.2: "for ζ = 2 the number of messages
 * would only increase by 1"); on MPICH there is no NIC memory to send
 * from, so a larger ζ buys nothing that a message does not cost.
 *
 * Cost, m the block size: P a power of two (eq. 6 with β_em = β):
 *   T = (d - ζ + 2^ζ - 1) α + (P-1) m β,   d - ζ + 1 rounds;
 * otherwise (eq. 5) two more rounds and messages, and the cube's ranks
 * carry their folded partners' blocks too: up to 2 (P'-1) m per rank in
 * the cube stages, plus (P-1) m to each folded rank at the end.
 *
 * When it wins: short blocks on a site whose size is a power of two
 * (fewest messages of all); off powers of two its doubled data makes the
 * 2-D mesh (allgather_site_mesh.c) the better short-block choice.
 */
#include "coll/allgather/allgather_site.h"

enum { ZETA = 2 };

/* The blocks a cube rank holds after the stages below bit `bits`: its
 * 2^bits-aligned group of cube ranks and their folded partners. */
static void held(int rank, int bits, int cube, int p, int ranges[4])
{
    int lo = rank & ~((1 << bits) - 1), hi = lo + (1 << bits);
    ranges[0] = lo;
    ranges[1] = hi;
    ranges[2] = lo + cube < p ? lo + cube : p;
    ranges[3] = hi + cube < p ? hi + cube : p;
}

int allgather_site_hypercube(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    int p = b->size, me = b->rank;
    int d = 0;
    while ((2 << d) <= p)
        d++;
    int cube = 1 << d, zeta = d < ZETA ? d : ZETA;
    int status = MPI_SUCCESS;
    if (me >= cube) {
        /* Folded: hand over the block, get everything back at the end. */
        int own[2] = {me, me + 1}, rest[4] = {0, me, me + 1, p};
        status = site_round_recv(&r, b, me - cube, rest, 2);
        if (status == MPI_SUCCESS)
            status = site_round_send(&r, b, me - cube, own, 1);
        status = site_round_wait(&r, status);
        goto cleanup;
    }
    if (me + cube < p) {
        int folded[2] = {me + cube, me + cube + 1};
        status = site_round_recv(&r, b, me + cube, folded, 1);
        status = site_round_wait(&r, status);
    }
    int ranges[4], theirs[4];
    for (int j = 0; j < d - zeta && status == MPI_SUCCESS; j++) {
        int peer = me ^ (1 << j);
        held(me, j, cube, p, ranges);
        held(peer, j, cube, p, theirs);
        status = site_round_recv(&r, b, peer, theirs, 2);
        if (status == MPI_SUCCESS)
            status = site_round_send(&r, b, peer, ranges, 2);
        status = site_round_wait(&r, status);
    }
    held(me, d - zeta, cube, p, ranges);
    for (int x = 1; x < (1 << zeta) && status == MPI_SUCCESS; x++) {
        int peer = me ^ (x << (d - zeta));
        held(peer, d - zeta, cube, p, theirs);
        status = site_round_recv(&r, b, peer, theirs, 2);
        if (status == MPI_SUCCESS)
            status = site_round_send(&r, b, peer, ranges, 2);
    }
    status = site_round_wait(&r, status);
    if (status == MPI_SUCCESS && me + cube < p) {
        int all_but[4] = {0, me + cube, me + cube + 1, p};
        status = site_round_send(&r, b, me + cube, all_but, 2);
        status = site_round_wait(&r, status);
    }
cleanup:
    site_round_free(&r);
    return status;
}
