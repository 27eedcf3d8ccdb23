/*
 * WAN accounting: every transfer between sites (gc_xfer.c) counts for the
 * slot entered last, a collective algorithm's (coll/select/) or the
 * layer's own (communicator creation, MPI_Finalize's barrier), for
 * GRIDCOLL_STATS=1.
 */
#ifndef GC_WAN_STATS_H
#define GC_WAN_STATS_H

#include <stddef.h>
#include <stdint.h>

struct gc_wan_count {
    uint64_t bytes;
    uint64_t messages;
};

/* Count what follows for *slot (NULL: the layer's own) until the next
 * call, which is given the slot this one returned. */
struct gc_wan_count *gc_wan_enter(struct gc_wan_count *slot);
void gc_wan_account(size_t bytes);
/* What the layer sent outside the slots entered. */
const struct gc_wan_count *gc_wan_internal(void);

#endif
