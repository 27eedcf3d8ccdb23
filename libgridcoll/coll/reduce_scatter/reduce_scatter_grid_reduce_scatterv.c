/*
 * Reduce_scatter(_block) across sites as a Reduce of the whole vector to
 * rank 0 into a temporary, then a Scatterv of the pieces: the issue-3
 * fallback, composed of the MagPIe phases (Kielmann et al., "MagPIe:
 * MPI's collective communication operations for clustered wide area
 * systems", PPoPP 1999, section 3).  recvcounts[] are the pieces' sizes
 * (all equal, Reduce_scatter_block, when `bytes` is set).
 *
 * Phases:
 *  1. phase_reduce of the whole vector to rank 0, in the reduce table's
 *     default segments;
 *  2. phase_scatterv of the pieces from rank 0.
 *
 * Cost, S sites, n bytes the vector: two WAN latencies, n bytes from
 * every other site into rank 0's (per segment) and n - n_s bytes back.
 */
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

int reduce_scatter_grid_reduce_scatterv(struct coll_sched *s,
                                        const struct coll_args *a)
{
    const struct coll_reduce_scatter_args *args = &a->u.reduce_scatter;
    struct gc_comm *c = a->comm;
    const MPI_Count *recvcounts = args->rcounts;
    MPI_Count total = 0;
    int done;
    MPI_Aint *displs = coll_sched_alloc(s, (size_t)c->size * sizeof *displs);
    if (displs == NULL)
        return coll_no_mem(c);
    for (int r = 0; r < c->size; total += recvcounts[r++])
        displs[r] = total;
    void *temp = NULL;
    if (c->rank == 0) {
        int status = coll_sched_temp(s, total, args->type, &temp);
        if (status != MPI_SUCCESS)
            return status;
    }
    /* In place, the input is rbuf; the result goes to a temporary. */
    const void *input = args->sbuf == MPI_IN_PLACE ? args->rbuf : args->sbuf;
    int status =
        phase_reduce(s, input, temp, total, args->type, args->op, 0,
                     coll_table_of(GC_COLL_REDUCE)->default_segsize, -1, &done);
    if (status != MPI_SUCCESS)
        return status;
    return phase_scatterv(s, temp, recvcounts, displs, args->type, args->rbuf,
                          recvcounts[c->rank], args->type, 0, a->bytes > 0,
                          done, &done);
}
