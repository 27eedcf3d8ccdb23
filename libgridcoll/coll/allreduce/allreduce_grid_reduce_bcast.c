/*
 * Allreduce across sites as a Reduce to rank 0 and a Bcast from it, the
 * definition of MPI-4.0 section 6.9.6 composed of the MagPIe phases
 * (Kielmann et al., "MagPIe: MPI's collective communication operations
 * for clustered wide area systems", PPoPP 1999, section 3): the issue-3
 * fallback.
 *
 * Phases:
 *  1. phase_reduce to rank 0 (in place, rank 0 reduces in place and the
 *     others' input is rbuf), in the reduce table's default segments;
 *  2. phase_bcast of the result from rank 0.
 *
 * Cost: reduce hier to rank 0's site plus bcast hier from it (below);
 * two WAN latencies, S - 1 messages each way per segment.
 */
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"

int allreduce_grid_reduce_bcast(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    int done;
    /* In place, rank 0 reduces in place and the others' input is rbuf. */
    const void *sbuf = r->sbuf;
    if (sbuf == MPI_IN_PLACE && a->comm->rank != 0)
        sbuf = r->rbuf;
    int status =
        phase_reduce(s, sbuf, r->rbuf, r->count, r->type, r->op, 0,
                     coll_table_of(GC_COLL_REDUCE)->default_segsize, -1, &done);
    if (status != MPI_SUCCESS)
        return status;
    return phase_bcast(s, r->rbuf, r->count, r->type, 0, done, &done);
}

/* Reduce hier to rank 0 (root_site is rank 0's site for an allreduce),
 * then bcast hier from it, both with the default segments phase_reduce
 * and phase_bcast get here. */
double allreduce_grid_reduce_bcast_cost(const struct coll_cost_args *c)
{
    struct coll_cost_args fixed = *c;
    fixed.segsize = coll_table_of(GC_COLL_BCAST)->default_segsize;
    return reduce_grid_hier_cost(&fixed) + bcast_grid_hier_cost(&fixed);
}
