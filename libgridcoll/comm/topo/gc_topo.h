/*
 * Process topologies of grid communicators (gc_topo.c; MPI-4.0 chapter 8,
 * "Process Topologies").  A grid communicator with a topology carries a
 * struct gc_topo (gc_comm.topo); communicators whose members are all on
 * this site are MPICH's and carry MPICH's own topology.
 */
#ifndef GC_TOPO_H
#define GC_TOPO_H

#include "comm/topo/topo_plan.h"
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
    /* Neighbour lists in MPI's order, for gc_topo_neighbors. */
    int nbr_in, nbr_out;
    int *nbr_sources, *nbr_destinations;
    /* This member's part of the site-pair plan (topo_plan.h), made with
     * the communicator: for MPI_DIST_GRAPH only the constructor sees the
     * whole graph. */
    struct gc_plan plan;
};

/*
 * The neighbours of this process on grid communicator c in the order MPI
 * defines for neighbourhood collectives (MPI-4.0 §8.6): Cartesian, per
 * dimension the -1 then the +1 shift neighbour (MPI_PROC_NULL at a
 * non-periodic border), the same list for both; graph, the neighbours
 * listed for this rank, both lists the same; distributed graph, the
 * sources and destinations as MPI_Dist_graph_neighbors returns them.
 * The lists belong to the communicator.  MPI_ERR_TOPOLOGY (not reported)
 * when c has no topology.
 */
int gc_topo_neighbors(const struct gc_comm *c, int *indegree,
                      const int **sources, int *outdegree,
                      const int **destinations);

/* Free a topology (NULL allowed); gc_comm_release's last reference. */
void gc_topo_free(struct gc_topo *t);

/*
 * Give the grid communicator behind `newcomm`, a duplicate of c, a copy
 * of c's topology (MPI-4.0 §7.4.2: MPI_Comm_dup keeps the topology).
 * On failure the duplicate is freed, *newcomm set to MPI_COMM_NULL and
 * the error reported on c, naming `function`.
 */
int gc_topo_dup(struct gc_comm *c, MPI_Comm *newcomm, const char *function);

#endif
