/*
 * Names of the collective kinds (gc_coll_kind.h).
 */
#include "core/gc_coll_kind.h"

static const char *const names[GC_COLL_KINDS] = {
    [GC_COLL_BARRIER] = "barrier",
    [GC_COLL_BCAST] = "bcast",
    [GC_COLL_REDUCE] = "reduce",
    [GC_COLL_ALLREDUCE] = "allreduce",
    [GC_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [GC_COLL_SCAN] = "scan",
    [GC_COLL_GATHER] = "gather",
    [GC_COLL_GATHERV] = "gatherv",
    [GC_COLL_SCATTER] = "scatter",
    [GC_COLL_SCATTERV] = "scatterv",
    [GC_COLL_ALLGATHER] = "allgather",
    [GC_COLL_ALLGATHERV] = "allgatherv",
    [GC_COLL_ALLTOALL] = "alltoall",
    [GC_COLL_ALLTOALLV] = "alltoallv",
    [GC_COLL_ALLTOALLW] = "alltoallw",
    [GC_COLL_NEIGHBOR] = "neighbor",
};

const char *gc_coll_kind_name(enum gc_coll_kind kind)
{
    return names[kind];
}
