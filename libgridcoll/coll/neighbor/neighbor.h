/*
 * What the neighbourhood algorithms share
 * (coll/neighbor/neighbor_grid_direct.c): one block moved straight between its
 * two ranks, as neighbor_grid_direct moves every block, which
 * neighbor_grid_bundled does for the blocks it does not bundle.
 */
#ifndef GC_COLL_NEIGHBOR_H
#define GC_COLL_NEIGHBOR_H

#include "coll/engine/coll_sched.h"
#include "coll/select/gc_coll_algo.h"

/*
 * The receive of slot j (sources[j]) and the send of block i
 * (destinations[i]): typed over MPICH on one site, packed over the relays
 * between sites; nothing for MPI_PROC_NULL or an empty block.  Blocks
 * with one peer must be added in MPI's order (the receives of a Cartesian
 * dimension +1 neighbour first: neighbor_grid_direct.c).
 */
int neighbor_direct_recv(struct coll_sched *s, const struct coll_args *a,
                         int j);
int neighbor_direct_send(struct coll_sched *s, const struct coll_args *a,
                         int i);

#endif
