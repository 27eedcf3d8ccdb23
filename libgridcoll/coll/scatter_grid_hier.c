/*
 * Scatter and Scatterv: MagPIe hierarchy, one message from the root per
 * site.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3: a flat
 * tree between sites (the root talks to one coordinator per site), so
 * each datum crosses one WAN link once and the call costs one WAN
 * latency.  Also coll_scatterv, the fixed Scatterv other collectives
 * call (gc_coll.h).
 *
 * Phases, S sites with members, n_s members on site s, m_r the packed
 * bytes of member r's block:
 *  1. The root packs each other site's blocks, in site-rank order, into
 *     one buffer per site and sends it to that site's leader (first
 *     member), to all leaders at once.
 *  2. Meanwhile the root's site scatters locally (PMPI_Scatterv) straight
 *     from the root's buffer with the user's datatypes.  Every other
 *     site's leader receives its bytes and scatters them locally (after
 *     gathering the members' sizes, unless the call is the uniform
 *     MPI_Scatter); every member unpacks its block.
 *
 * Cost, L and B the WAN latency and bandwidth:
 *   T = L + Σ_{s ≠ root's} Σ_{r ∈ s} m_r / B_root + T_scatter(n_s)
 *   where B_root is what the root's relay session sends out: every byte
 *   starts there.  WAN per site: the root's site sends S-1 messages, one
 *   per other site, of Σ_{r ∈ s} m_r bytes each (also when that is 0);
 *   the other sites send nothing.
 *
 * When it wins: always across sites; the data has one source, so the
 * root's outgoing link bounds every algorithm and this one adds a single
 * WAN latency to it.
 */
#include "gc_coll.h"
#include "gc_coll_algo.h"

/* The root's part of Scatterv; see coll_scatterv. */
static int scatter_root(struct gc_comm *c, const void *sbuf, const int *scounts,
                        const int *sdispls, MPI_Datatype stype, void *rbuf,
                        int rcount, MPI_Datatype rtype)
{
    struct coll_rooted x = {0};
    struct gc_xfer *reqs[GC_MAX_SITES];
    int n = 0, local_status = MPI_SUCCESS;
    int status = coll_rooted_make(c, scounts, sdispls, stype, &x);
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++)
        if (x.blocks[s] != NULL)
            status = coll_rooted_copy(c, &x, s, scounts, sdispls, stype,
                                      (void *)sbuf, 0);
    if (status != MPI_SUCCESS)
        goto cleanup;
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++)
        if (x.blocks[s] != NULL)
            status = coll_isend(c, c->leader[s], TAG_SCATTER, x.blocks[s],
                                x.bytes[s], reqs, &n);
    if (status == MPI_SUCCESS)
        local_status = PMPI_Scatterv(sbuf, x.lcounts, x.ldispls, stype, rbuf,
                                     rcount, rtype, c->local_rank, c->local);
    status = coll_wait(c, n, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
cleanup:
    coll_rooted_free(&x);
    return status;
}

int coll_scatterv(struct gc_comm *c, const void *sbuf, const int *scounts,
                  const int *sdispls, MPI_Datatype stype, void *rbuf,
                  int rcount, MPI_Datatype rtype, int root, int uniform)
{
    if (c->site[c->rank] != c->site[root])
        return coll_rooted_remote(c, rbuf, rcount, rtype, root, uniform, 0);
    if (c->rank == root)
        return scatter_root(c, sbuf, scounts, sdispls, stype, rbuf, rcount,
                            rtype);
    return PMPI_Scatterv(sbuf, NULL, NULL, stype, rbuf, rcount, rtype,
                         c->site_rank[root], c->local);
}

int scatter_grid_hier(const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    return coll_scatterv(a->comm, r->sbuf, r->counts, r->displs, r->many_type,
                         r->rbuf, r->block_count, r->block_type, r->root,
                         r->uniform);
}
