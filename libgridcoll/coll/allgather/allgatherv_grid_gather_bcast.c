/*
 * Allgather(v) across sites as a Gatherv to rank 0 and a Bcast of the
 * whole receive buffer from it, described as one indexed datatype: the
 * issue-3 fallback, composed of the MagPIe phases (Kielmann et al.,
 * "MagPIe: MPI's collective communication operations for clustered wide
 * area systems", PPoPP 1999, section 3: gather to the root's site
 * through one coordinator per site, bcast back the same way).
 *
 * Phases:
 *  1. phase_gatherv to rank 0 (in place, rank 0 gathers into rbuf and the
 *     others send from their own slot of it);
 *  2. phase_bcast of the whole buffer from rank 0, as the indexed type of
 *     every member's block.
 *
 * Cost, S sites, N ranks, m bytes a block: two WAN latencies (to rank 0's
 * site and back), S - 1 messages each way; the bcast leg moves N m bytes
 * to every other site.
 */
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

/* MPI_Type_indexed_c takes its displacements as MPI_Count. */
static int indexed_type(struct coll_sched *s, int n, const MPI_Count *counts,
                        const MPI_Aint *displs, MPI_Datatype type,
                        MPI_Datatype *out)
{
    MPI_Count *at = coll_sched_alloc(s, (size_t)n * sizeof *at);
    if (at == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++)
        at[i] = displs[i];
    return PMPI_Type_indexed_c(n, counts, at, type, out);
}

int allgatherv_grid_gather_bcast(struct coll_sched *s,
                                 const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    struct gc_comm *c = a->comm;
    const void *sbuf = r->sbuf;
    MPI_Count scount = r->block_count;
    int done;
    MPI_Datatype stype = r->block_type, all = MPI_DATATYPE_NULL;
    MPI_Aint lb, extent;
    int status = PMPI_Type_get_extent(r->many_type, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    if (sbuf == MPI_IN_PLACE && c->rank != 0) {
        /* Rank 0 gathers in place; the others send from their slot
         * (an empty one may have a NULL recvbuf: no offset then). */
        sbuf = r->rbuf;
        if (r->counts[c->rank] > 0)
            sbuf = (const char *)r->rbuf + r->displs[c->rank] * extent;
        scount = r->counts[c->rank];
        stype = r->many_type;
    }
    status = phase_gatherv(s, sbuf, scount, stype, r->rbuf, r->counts,
                           r->displs, r->many_type, 0, r->uniform, -1, &done);
    if (status == MPI_SUCCESS)
        status =
            indexed_type(s, c->size, r->counts, r->displs, r->many_type, &all);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_commit(&all);
    /* The schedule holds its own reference. */
    if (status == MPI_SUCCESS)
        status = phase_bcast(s, r->rbuf, 1, all, 0, done, &done);
    if (all != MPI_DATATYPE_NULL)
        PMPI_Type_free(&all);
    return status;
}
