/*
 * Scatter and Scatterv: MagPIe hierarchy, one message from the root per
 * site.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3: a flat
 * tree between sites (the root talks to one coordinator per site), so
 * each datum crosses one WAN link once and the call costs one WAN
 * latency.  Also phase_scatterv, the Scatterv phase other collectives'
 * schedules are built of (gc_coll.h).
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
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/rooted_common.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

int phase_scatterv(struct coll_sched *s, const void *sbuf,
                   const MPI_Count *scounts, const MPI_Aint *sdispls,
                   MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                   MPI_Datatype rtype, int root, int uniform, int after,
                   int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    rtype = coll_sched_type(s, rtype);
    if (c->site[c->rank] != c->site[root])
        return rooted_remote(s, rbuf, rcount, rtype, root, uniform, 0, after,
                             done);
    struct sched_local l = {.op = LOCAL_SCATTERV,
                            .sbuf = sbuf,
                            .type = coll_sched_type(s, stype),
                            .rbuf = rbuf,
                            .rcount = rcount,
                            .rtype = rtype,
                            .root = c->site_rank[root]};
    if (c->rank != root) {
        coll_sched_local(s, &l, after);
        *done = coll_sched_fence(s);
        return MPI_SUCCESS;
    }
    struct rooted_layout *x;
    int status = rooted_layout_make(s, scounts, sdispls, stype, &x);
    if (status != MPI_SUCCESS)
        return status;
    for (int t = 0; t < GC_MAX_SITES; t++)
        if (x->block[t] != NULL)
            coll_sched_send(s, c->leader[t], TAG_SCATTER, x->block[t],
                            (MPI_Count)x->bytes[t], MPI_BYTE,
                            rooted_copy_step(s, x, t, (void *)sbuf, 0, after));
    l.counts = x->lcounts;
    l.displs = x->ldispls;
    coll_sched_local(s, &l, after);
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}

int scatter_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    int done;
    return phase_scatterv(s, r->sbuf, r->counts, r->displs, r->many_type,
                          r->rbuf, r->block_count, r->block_type, r->root,
                          r->uniform, -1, &done);
}
