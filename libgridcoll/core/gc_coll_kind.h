/*
 * The collectives the layer selects algorithms for, one table each
 * (coll/select/), and their names, which the settings of each table are
 * named by (GRIDCOLL_<COLL>, GRIDCOLL_<COLL>_SEGSIZE): the one list both
 * floors read.
 */
#ifndef GC_COLL_KIND_H
#define GC_COLL_KIND_H

enum gc_coll_kind {
    GC_COLL_BARRIER,
    GC_COLL_BCAST,
    GC_COLL_REDUCE,
    GC_COLL_ALLREDUCE,
    GC_COLL_REDUCE_SCATTER, /* and Reduce_scatter_block */
    GC_COLL_SCAN,           /* and Exscan */
    GC_COLL_GATHER,
    GC_COLL_GATHERV,
    GC_COLL_SCATTER,
    GC_COLL_SCATTERV,
    GC_COLL_ALLGATHER,
    GC_COLL_ALLGATHERV,
    GC_COLL_ALLTOALL,
    GC_COLL_ALLTOALLV,
    GC_COLL_ALLTOALLW,
    GC_COLL_NEIGHBOR, /* the five neighbourhood collectives */
    GC_COLL_KINDS
};

/* "barrier", "bcast", ...: lower case, as in GRIDCOLL_STATS' lines. */
const char *gc_coll_kind_name(enum gc_coll_kind kind);

#endif
