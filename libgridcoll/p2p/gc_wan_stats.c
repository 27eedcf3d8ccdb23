/*
 * WAN accounting (gc_wan_stats.h).
 */
#include "p2p/gc_wan_stats.h"

static struct gc_wan_count internal;
static struct gc_wan_count *current = &internal;

struct gc_wan_count *gc_wan_enter(struct gc_wan_count *slot)
{
    struct gc_wan_count *outer = current;
    current = slot != NULL ? slot : &internal;
    return outer;
}

void gc_wan_account(size_t bytes)
{
    current->bytes += bytes;
    current->messages++;
}

const struct gc_wan_count *gc_wan_internal(void)
{
    return &internal;
}
