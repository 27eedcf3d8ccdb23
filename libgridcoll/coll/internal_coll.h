/*
 * Collectives the layer itself uses (internal_coll.c): communicator
 * creation, MPI_Finalize.
 */
#ifndef GC_INTERNAL_COLL_H
#define GC_INTERNAL_COLL_H

#include <stddef.h>

#include "core/gc_comm.h"

/* Barrier over every member of c, one WAN round between site leaders. */
int gc_coll_barrier(struct gc_comm *c);
/*
 * Every member contributes `len` bytes; `all` (c->size * len bytes)
 * receives them in comm-rank order on every member.
 */
int gc_coll_allgather_bytes(struct gc_comm *c, const void *mine, size_t len,
                            void *all);

#endif
