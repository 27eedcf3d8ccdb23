/*
 * The job as every part of the layer sees it: its sites, this process's
 * place in them, the relay session (gc_world.c; the runtime fills it in).
 */
#ifndef GC_WORLD_H
#define GC_WORLD_H

#include <mpi.h>

#include "core/gc_comm.h"
#include "gc_proto.h"
#include "patterns/gc_sched.h"

#define GC_MAX_SITES 64

struct gc_comm;
struct gc_rc;

struct gc_site {
    char name[GC_NAME_MAX + 1];
    int offset; /* grid rank of the site's local rank 0 */
    int size;
};

/* What every part of the layer knows about the job (gc_runtime.c). */
struct gc_world {
    int active; /* several sites: grid semantics on MPI_COMM_WORLD */
    int site_count;
    int site_index; /* our site */
    struct gc_site sites[GC_MAX_SITES];
    int size; /* grid world size */
    int grid_rank;
    int thread_level;
    /* MPICH's communicator of this site's processes: MPI_COMM_WORLD, or,
     * when a session started the layer, one of the layer's own session
     * (MPICH's MPI_COMM_WORLD is not valid without MPI_Init). */
    MPI_Comm site_world;
    /* MPI_COMM_SELF, or under sessions alone the same made from the
     * layer's session (for the layer's private self communicators). */
    MPI_Comm site_self;
    struct gc_rc *rc;
    /* Every grid rank, for the layer's own needs (the closing barrier,
     * the group constructors' agreement), on the layer's own site
     * communicator: MPI_COMM_WORLD is not valid under sessions alone, nor
     * after an MPI_Finalize that leaves sessions open.  NULL when the job
     * is not a grid job. */
    struct gc_comm *grid;
    /* Our site's network from GRIDCOLL_FATTREE (gridrun passes the machine
     * file's fattree= or --fattree). */
    int has_fattree;
    struct gc_sched_fattree fattree;
};
extern struct gc_world gc_world;

/*
 * The fat tree of this process's site, or NULL when none was given.  The
 * same on every rank of a site, but sites differ: only choices confined
 * to one site's members may depend on it.
 */
const struct gc_sched_fattree *gc_site_fattree(void);

#endif
