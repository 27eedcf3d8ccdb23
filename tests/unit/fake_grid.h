/*
 * A grid faked on an MPICH singleton (MPI_Init without GRIDCOLL_SITES:
 * MPICH alone), for the unit tests of the layer's core (selection, the
 * schedule engine, the p2p engine): gc_world describes sites of the sizes
 * a test asks for, this process is grid rank 0, the first member of site
 * 0, and grid communicators are made by the library's own constructor
 * (gc_comm_build) on a duplicate of MPI_COMM_WORLD.  No relay session:
 * nothing may send to another site.
 */
#ifndef GRIDCOLL_TESTS_UNIT_FAKE_GRID_H
#define GRIDCOLL_TESTS_UNIT_FAKE_GRID_H

#include "core/gc_comm.h"

/* gc_world: `count` sites of sizes[], named "s0", "s1", ... */
void fake_grid_sites(int count, const int *sizes);

/*
 * A grid communicator of members[0..size) (grid ranks; 0 must be among
 * them) on relay context block `context`, registered, its handle
 * returning errors.  Exits when the constructor fails.
 */
struct gc_comm *fake_grid_comm(const int *members, int size, uint32_t context);
/* Release it (registry, node layer) and free its handle. */
void fake_grid_comm_free(struct gc_comm *c);

#endif
