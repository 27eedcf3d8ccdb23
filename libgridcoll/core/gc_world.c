/*
 * What every part of the layer knows about the job (gc_world.h); the
 * runtime (runtime/gc_runtime.c) fills it in when the grid starts.
 */
#include "core/gc_world.h"

struct gc_world gc_world = {.site_world = MPI_COMM_WORLD,
                            .site_self = MPI_COMM_SELF};

const struct gc_sched_fattree *gc_site_fattree(void)
{
    return gc_world.has_fattree ? &gc_world.fattree : NULL;
}
