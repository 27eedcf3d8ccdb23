/*
 * Process topologies of grid communicators (gc_topo.c; MPI-4.0 chapter 8,
 * "Process Topologies").  A grid communicator with a topology carries a
 * struct gc_topo (gc_comm.topo); communicators whose members are all on
 * this site are MPICH's and carry MPICH's own topology.
 */
#ifndef GC_TOPO_H
#define GC_TOPO_H

#include "coll/neighbor/neighbor_plan.h"
#include "core/gc_comm.h"

struct gc_topo {
    int kind; /* MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH */
    /* MPI_CART: row-major numbering (MPI-4.0 §8.5.1) */
    int ndims;
    int *dims;    /* [ndims] */
    int *periods; /* [ndims] 0 or 1 */
    /* MPI_GRAPH: the whole graph, as given (MPI-4.0 §8.5.3) */
    int nnodes;
    int *index; /* [nnodes] */
    int *edges; /* [index[nnodes - 1]] */
    /* MPI_DIST_GRAPH: this process's adjacency (MPI-4.0 §8.5.4) */
    int indegree, outdegree;
    int weighted;
    int *sources, *sourceweights;    /* [indegree] */
    int *destinations, *destweights; /* [outdegree] */
    /* What the neighbourhood collectives use: c->neighborhood. */
    struct coll_neighborhood nbr;
};

/* Free a topology (NULL allowed); gc_comm_release's last reference. */
void gc_topo_free(struct gc_topo *t);

#endif
