/*
 * Gather and Gatherv: MagPIe hierarchy, one message per site to the root.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3: a flat
 * tree between sites (the root talks to one coordinator per site), so
 * each datum crosses one WAN link once and the call costs one WAN
 * latency.  Also coll_gatherv, the fixed Gatherv other collectives call
 * (gc_coll.h).
 *
 * Phases, S sites with members, n_s members on site s, m_r the packed
 * bytes of member r's block:
 *  1. The root posts one receive per other site, for that site's packed
 *     blocks in site-rank order.
 *  2. The root's site gathers locally (PMPI_Gatherv) straight into the
 *     root's buffer with the user's datatypes.  Every other site packs
 *     its blocks and gathers the bytes at its leader (first member; the
 *     leader first gathers the members' sizes unless the call is the
 *     uniform MPI_Gather), which sends them to the root in one message.
 *  3. The root unpacks every site's bytes into place.
 *
 * Cost, L and B the WAN latency and bandwidth:
 *   T = T_gather(n_s) + L + Σ_{s ≠ root's} Σ_{r ∈ s} m_r / B_root
 *   where B_root is what the root's relay session takes in: every byte
 *   ends there.  WAN per site: the root's site sends nothing; every other
 *   site sends 1 message of Σ_{r ∈ s} m_r bytes (also when that is 0, so
 *   the root knows the site is done): S-1 messages in all.
 *
 * When it wins: always across sites; the data has one destination, so
 * the root's incoming link bounds every algorithm and this one adds a
 * single WAN latency to it.
 */
#include "gc_coll.h"
#include "gc_coll_algo.h"

/* The root's part of Gatherv; see coll_gatherv. */
static int gather_root(struct gc_comm *c, const void *sbuf, int scount,
                       MPI_Datatype stype, void *rbuf, const int *rcounts,
                       const int *rdispls, MPI_Datatype rtype)
{
    struct coll_rooted x = {0};
    struct gc_xfer *reqs[GC_MAX_SITES];
    int n = 0, local_status = MPI_SUCCESS;
    int status = coll_rooted_make(c, rcounts, rdispls, rtype, &x);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* Receives first, so leaders' blocks land during the local phase. */
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++)
        if (x.blocks[s] != NULL)
            status = coll_irecv(c, c->leader[s], TAG_GATHER, x.blocks[s],
                                x.bytes[s], reqs, &n);
    if (status == MPI_SUCCESS)
        local_status = PMPI_Gatherv(sbuf, scount, stype, rbuf, x.lcounts,
                                    x.ldispls, rtype, c->local_rank, c->local);
    status = coll_wait(c, n, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++)
        if (x.blocks[s] != NULL)
            status =
                coll_rooted_copy(c, &x, s, rcounts, rdispls, rtype, rbuf, 1);
cleanup:
    coll_rooted_free(&x);
    return status;
}

int coll_gatherv(struct gc_comm *c, const void *sbuf, int scount,
                 MPI_Datatype stype, void *rbuf, const int *rcounts,
                 const int *rdispls, MPI_Datatype rtype, int root, int uniform)
{
    if (c->site[c->rank] != c->site[root])
        return coll_rooted_remote(c, (void *)sbuf, scount, stype, root, uniform,
                                  1);
    if (c->rank == root)
        return gather_root(c, sbuf, scount, stype, rbuf, rcounts, rdispls,
                           rtype);
    return PMPI_Gatherv(sbuf, scount, stype, rbuf, NULL, NULL, rtype,
                        c->site_rank[root], c->local);
}

int gather_grid_hier(const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    return coll_gatherv(a->comm, r->sbuf, r->block_count, r->block_type,
                        r->rbuf, r->counts, r->displs, r->many_type, r->root,
                        r->uniform);
}
