/* The grid of fake_grid.h. */
#include "fake_grid.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/gc_world.h"

void fake_grid_sites(int count, const int *sizes)
{
    gc_world.site_count = count;
    gc_world.site_index = 0;
    gc_world.size = 0;
    for (int s = 0; s < count; s++) {
        snprintf(gc_world.sites[s].name, sizeof gc_world.sites[s].name, "s%d",
                 s);
        gc_world.sites[s].offset = gc_world.size;
        gc_world.sites[s].size = sizes[s];
        gc_world.size += sizes[s];
    }
    gc_world.grid_rank = 0;
    gc_world.site_world = MPI_COMM_WORLD;
    gc_world.site_self = MPI_COMM_SELF;
    gc_world.thread_level = MPI_THREAD_SINGLE;
}

struct gc_comm *fake_grid_comm(const int *members, int size, uint32_t context)
{
    MPI_Comm local;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &local) != MPI_SUCCESS) {
        fprintf(stderr, "PMPI_Comm_dup failed\n");
        exit(1);
    }
    PMPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
    struct gc_comm *c = gc_comm_build(members, size, local, context);
    if (c == NULL) {
        fprintf(stderr, "gc_comm_build failed\n");
        exit(1);
    }
    return c;
}

void fake_grid_comm_free(struct gc_comm *c)
{
    MPI_Comm local = c->local;
    gc_comm_release(c);
    PMPI_Comm_free(&local);
}
