/*
 * Gather and Gatherv: MagPIe hierarchy, one message per site to the root.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3: a flat
 * tree between sites (the root talks to one coordinator per site), so
 * each datum crosses one WAN link once and the call costs one WAN
 * latency.  Also phase_gatherv, the Gatherv phase other collectives'
 * schedules are built of (gc_coll.h).
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
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/rooted_common.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

int phase_gatherv(struct coll_sched *s, const void *sbuf, MPI_Count scount,
                  MPI_Datatype stype, void *rbuf, const MPI_Count *rcounts,
                  const MPI_Aint *rdispls, MPI_Datatype rtype, int root,
                  int uniform, int after, int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    stype = coll_sched_type(s, stype);
    if (c->site[c->rank] != c->site[root])
        return rooted_remote(s, (void *)sbuf, scount, stype, root, uniform, 1,
                             after, done);
    struct sched_local l = {.op = LOCAL_GATHERV,
                            .sbuf = sbuf,
                            .count = scount,
                            .type = stype,
                            .rbuf = rbuf,
                            .rtype = coll_sched_type(s, rtype),
                            .root = c->site_rank[root]};
    if (c->rank != root) {
        coll_sched_local(s, &l, after);
        *done = coll_sched_fence(s);
        return MPI_SUCCESS;
    }
    struct rooted_layout *x;
    int status = rooted_layout_make(s, rcounts, rdispls, rtype, &x);
    if (status != MPI_SUCCESS)
        return status;
    /* Receives first, so leaders' blocks land during the local phase. */
    for (int t = 0; t < GC_MAX_SITES; t++)
        if (x->block[t] != NULL)
            rooted_copy_step(
                s, x, t, rbuf, 1,
                coll_sched_recv(s, c->leader[t], TAG_GATHER, x->block[t],
                                (MPI_Count)x->bytes[t], MPI_BYTE, after));
    l.counts = x->lcounts;
    l.displs = x->ldispls;
    coll_sched_local(s, &l, after);
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}

int gather_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    int done;
    return phase_gatherv(s, r->sbuf, r->block_count, r->block_type, r->rbuf,
                         r->counts, r->displs, r->many_type, r->root,
                         r->uniform, -1, &done);
}
