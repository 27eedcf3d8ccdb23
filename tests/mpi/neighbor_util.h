/*
 * What nbc_check and topo_check expect of the neighbourhood collectives
 * on grid communicators (neighbor_util.c).
 */
#ifndef GRIDCOLL_TESTS_NEIGHBOR_UTIL_H
#define GRIDCOLL_TESTS_NEIGHBOR_UTIL_H

#include <mpi.h>

enum { NB_MAX = 16 }; /* neighbours at most */

/*
 * 1 when the members of one site of comm send those of another two or
 * more blocks (every member's destinations counted by pair of sites):
 * where the neighbor table's bundled algorithm may run.  Collective.
 */
int nb_bundles(MPI_Comm comm, int outdeg, const int *dests);

/*
 * Where duplicate neighbours' blocks land, from every member's
 * destinations (collective): receive slot j from peer p gets p's blocks
 * to this rank in order (MPI's definition by Isend/Irecv loops; also
 * MPICH 4.0.2's Neighbor_alltoallv and _alltoallw): in_order[j]; MPICH
 * 4.0.2's own Neighbor_alltoall matches them in reverse: reversed[j].
 * MPI_PROC_NULL slots are left alone.
 */
void nb_expect(MPI_Comm comm, int indeg, const int *srcs, int outdeg,
               const int *dests, int *in_order, int *reversed);

#endif
