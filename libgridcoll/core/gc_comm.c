/*
 * Grid communicators: the registry that maps an application's MPI_Comm
 * handle to what the layer knows about its members, the grid world, and
 * the public GridColl_* site queries (gridcoll.h).
 *
 * A grid communicator's handle is the MPICH communicator of its members
 * on this site (`local`), except MPI_COMM_WORLD, which keeps its
 * predefined value.  Handles are unique per process, so the registry is a
 * small array searched linearly: programs hold a handful of communicators,
 * and every lookup is one compare per entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "gridcoll.h"

static struct {
    struct gc_comm **comms;
    int count;
    int cap;
} registry;

struct gc_comm *gc_comm_find(MPI_Comm handle)
{
    if (!gc_world.active || handle == MPI_COMM_NULL)
        return NULL;
    for (int i = 0; i < registry.count; i++)
        if (registry.comms[i]->handle == handle)
            return registry.comms[i];
    return NULL;
}

struct gc_comm *gc_comm_find_or_leave(MPI_Comm handle, int *entered)
{
    struct gc_comm *c = gc_comm_find(handle);
    if (c == NULL)
        gc_lock_leave_early(entered);
    return c;
}

int gc_comm_is_grid(MPI_Comm comm)
{
    return gc_comm_find(comm) != NULL;
}

static int registry_add(struct gc_comm *c)
{
    if (registry.count == registry.cap) {
        int cap = registry.cap ? 2 * registry.cap : 16;
        struct gc_comm **grown =
            realloc(registry.comms, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        registry.comms = grown;
        registry.cap = cap;
    }
    registry.comms[registry.count++] = c;
    return 0;
}

static void comm_free_arrays(struct gc_comm *c)
{
    int finalized = 1;
    if (c->local_p2p != MPI_COMM_NULL &&
        PMPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        PMPI_Comm_free(&c->local_p2p);
    free(c->grid_rank);
    free(c->site);
    free(c->site_rank);
    free(c->local_to_comm);
    free(c->leader);
    free(c->comm_rank_of_grid);
    for (int i = c->part_count - 1; i >= 0; i--)
        if (c->parts[i]->destroy != NULL)
            c->parts[i]->destroy(c);
    free(c);
}

/* Site index of a grid rank (sites are contiguous grid-rank ranges). */
static int site_of_grid_rank(int grid_rank)
{
    for (int s = 0; s < gc_world.site_count; s++)
        if (grid_rank >= gc_world.sites[s].offset &&
            grid_rank < gc_world.sites[s].offset + gc_world.sites[s].size)
            return s;
    return -1;
}

struct gc_comm *gc_comm_build_p2p(const int *members, int size, MPI_Comm local,
                                  MPI_Comm local_p2p, uint32_t context)
{
    struct gc_comm *c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (local_p2p != MPI_COMM_NULL)
            PMPI_Comm_free(&local_p2p);
        return NULL;
    }
    c->refs = 1;
    c->handle = local;
    c->local = local;
    c->local_p2p = local_p2p;
    c->context = context;
    c->size = size;
    c->rank = -1;
    c->grid_rank = malloc((size_t)size * sizeof(int));
    c->site = malloc((size_t)size * sizeof(int));
    c->site_rank = malloc((size_t)size * sizeof(int));
    c->local_to_comm = malloc((size_t)size * sizeof(int));
    c->leader = malloc(GC_MAX_SITES * sizeof(int));
    c->comm_rank_of_grid = malloc((size_t)gc_world.size * sizeof(int));
    if (c->grid_rank == NULL || c->site == NULL || c->site_rank == NULL ||
        c->local_to_comm == NULL || c->leader == NULL ||
        c->comm_rank_of_grid == NULL)
        goto fail;

    int members_on_site[GC_MAX_SITES] = {0};
    for (int s = 0; s < GC_MAX_SITES; s++)
        c->leader[s] = -1;
    for (int g = 0; g < gc_world.size; g++)
        c->comm_rank_of_grid[g] = -1;
    for (int r = 0; r < size; r++) {
        int site = site_of_grid_rank(members[r]);
        if (site < 0)
            goto fail;
        c->grid_rank[r] = members[r];
        c->site[r] = site;
        c->site_rank[r] = members_on_site[site]++;
        c->comm_rank_of_grid[members[r]] = r;
        if (c->leader[site] < 0) {
            c->leader[site] = r;
            c->site_count++;
        }
        if (site == gc_world.site_index)
            c->local_to_comm[c->local_size++] = r;
        if (members[r] == gc_world.grid_rank)
            c->rank = r;
    }
    if (c->rank < 0)
        goto fail;
    c->local_rank = c->site_rank[c->rank];
    /*
     * Made now, while every member of this site is in the call that
     * creates the communicator: a nonblocking collective must not block
     * on a split later.  A split, not a dup: dup would run the
     * application's attribute copy callbacks on `local` (the
     * application's own handle).
     */
    if (c->local_p2p == MPI_COMM_NULL) {
        unsigned held = gc_block_begin();
        int split = PMPI_Comm_split(local, 0, c->local_rank, &c->local_p2p);
        gc_block_end(held);
        if (split != MPI_SUCCESS)
            goto fail;
    }
    if (PMPI_Comm_set_errhandler(c->local_p2p, MPI_ERRORS_RETURN) !=
            MPI_SUCCESS ||
        registry_add(c) != 0)
        goto fail;
    return c;
fail:
    comm_free_arrays(c);
    return NULL;
}

struct gc_comm *gc_comm_build(const int *members, int size, MPI_Comm local,
                              uint32_t context)
{
    return gc_comm_build_p2p(members, size, local, MPI_COMM_NULL, context);
}

struct gc_comm *gc_comm_world_init(MPI_Comm handle, uint32_t context)
{
    int *members = malloc((size_t)gc_world.size * sizeof(int));
    if (members == NULL)
        return NULL;
    for (int r = 0; r < gc_world.size; r++)
        members[r] = r;
    struct gc_comm *world =
        gc_comm_build(members, gc_world.size, handle, context);
    free(members);
    return world;
}

int gc_comm_context_taken(uint32_t context)
{
    for (int i = 0; i < registry.count; i++)
        if (registry.comms[i]->context == context)
            return 1;
    return 0;
}

void gc_comm_retain(struct gc_comm *c)
{
    c->refs++;
}

void gc_comm_attach(struct gc_comm *c, const struct gc_comm_part *part)
{
    for (int i = 0; i < c->part_count; i++)
        if (c->parts[i] == part)
            return;
    if (c->part_count == GC_COMM_PARTS) {
        fprintf(stderr,
                "gridcoll: internal error: more than %d parts on a "
                "communicator (%s)\n",
                GC_COMM_PARTS, part->name);
        abort();
    }
    c->parts[c->part_count++] = part;
}

int gc_comm_dup_parts(const struct gc_comm *c, struct gc_comm *to)
{
    for (int i = 0; i < c->part_count; i++) {
        int status =
            c->parts[i]->dup != NULL ? c->parts[i]->dup(c, to) : MPI_SUCCESS;
        if (status != MPI_SUCCESS)
            return status;
    }
    return MPI_SUCCESS;
}

void gc_comm_unref(struct gc_comm *c)
{
    if (--c->refs == 0)
        comm_free_arrays(c);
}

void gc_comm_release(struct gc_comm *c)
{
    /* The registry stays in creation order: MPI_Finalize releases what is
     * left newest first, the same order on every process, which the node
     * layer's collective free needs. */
    for (int i = 0; i < registry.count; i++)
        if (registry.comms[i] == c) {
            memmove(&registry.comms[i], &registry.comms[i + 1],
                    (size_t)(registry.count - i - 1) * sizeof *registry.comms);
            registry.count--;
            break;
        }
    for (int i = c->part_count - 1; i >= 0; i--)
        if (c->parts[i]->release != NULL)
            c->parts[i]->release(c);
    gc_comm_unref(c);
}

void gc_comm_release_all(void)
{
    while (registry.count > 0)
        gc_comm_release(registry.comms[registry.count - 1]);
    free(registry.comms);
    memset(&registry, 0, sizeof registry);
}

/* ---- public site queries (gridcoll.h) ---------------------------------- */

int GridColl_Comm_site_count(MPI_Comm comm, int *count)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c != NULL) {
        *count = c->site_count;
        return MPI_SUCCESS;
    }
    if (comm == MPI_COMM_NULL)
        return gc_error(comm, MPI_ERR_COMM,
                        "GridColl_Comm_site_count: "
                        "MPI_COMM_NULL",
                        NULL);
    *count = 1; /* every member is on this site */
    return MPI_SUCCESS;
}

int GridColl_Comm_site_of(MPI_Comm comm, int rank, int *site)
{
    struct gc_comm *c = gc_comm_find(comm);
    int size;
    if (c != NULL) {
        if (rank < 0 || rank >= c->size)
            return gc_error(comm, MPI_ERR_RANK,
                            "GridColl_Comm_site_of: rank out of range", NULL);
        *site = c->site[rank];
        return MPI_SUCCESS;
    }
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_COMM,
                        "GridColl_Comm_site_of: invalid communicator", NULL);
    if (rank < 0 || rank >= size)
        return gc_error(comm, MPI_ERR_RANK,
                        "GridColl_Comm_site_of: rank out of range", NULL);
    *site = gc_world.site_index;
    return MPI_SUCCESS;
}

int GridColl_Site_name(int site, char *name, int *resultlen)
{
    int count = gc_world.site_count > 0 ? gc_world.site_count : 1;
    if (site < 0 || site >= count)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_ARG,
                        "GridColl_Site_name: no such site", NULL);
    const char *text =
        gc_world.site_count > 0 ? gc_world.sites[site].name : "local";
    size_t len = strlen(text);
    if (len > GRIDCOLL_MAX_SITE_NAME)
        len = GRIDCOLL_MAX_SITE_NAME;
    memcpy(name, text, len);
    name[len] = '\0';
    *resultlen = (int)len;
    return MPI_SUCCESS;
}
