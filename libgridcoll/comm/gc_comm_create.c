/*
 * Making, freeing and inspecting communicators derived from grid
 * communicators (docs/design/mpi-layer.md, "Communicators").
 *
 * A new communicator's MPICH part is always made by MPICH from the
 * parent's `local` (split, dup), so every member on a site takes part in
 * the same MPICH collective and gets this site's members in new-rank
 * order.  When all its members are on this site that part is the whole
 * communicator and is handed out as it is; otherwise it becomes the handle
 * of a registered grid communicator (gc_comm_build).
 *
 * Relay context ids are agreed in the constructor's exchange over the
 * parent (gc_context.c).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/internal_coll.h"
#include "comm/gc_comm_create.h"
#include "comm/gc_context.h"
#include "comm/gc_group.h"
#include "comm/gc_intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"

/* What every member of the parent tells the others when a communicator
 * is made from it. */
struct contribution {
    int32_t color; /* MPI_UNDEFINED: no new communicator for this member */
    int32_t key;
    uint32_t next_context;
    int32_t error_class; /* what the member found wrong in its arguments */
};

/* Position of a member in its new communicator's rank order. */
struct placing {
    int key;
    int parent_rank;
};

static int by_key_then_parent_rank(const void *a, const void *b)
{
    const struct placing *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->parent_rank > y->parent_rank) -
           (x->parent_rank < y->parent_rank);
}

static int check_newcomm(struct gc_comm *c, MPI_Comm *newcomm,
                         const char *function)
{
    if (newcomm != NULL)
        return MPI_SUCCESS;
    return gc_error(c->handle, MPI_ERR_ARG, function, "newcomm is NULL");
}

/*
 * The collective step of every constructor on a grid communicator: all
 * members' contributions (*all, the caller frees it) and the new context.
 * A member whose own arguments were wrong reported that already but still
 * takes part, so that the others do not wait for it forever; then every
 * member fails.  Usually one round; another when a member's process was
 * making another communicator at the same time (gc_context.c).
 */
static int exchange(struct gc_comm *c, struct contribution *mine, int own_error,
                    struct contribution **all, uint32_t *context,
                    const char *function)
{
    int status = MPI_SUCCESS;
    struct gc_ctx_claim claim;
    *all = malloc((size_t)c->size * sizeof **all);
    if (*all == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    mine->error_class = MPI_SUCCESS;
    /* Error codes, and classes added at run time, are per process; only
     * MPICH's predefined classes mean the same to every member. */
    if (own_error != MPI_SUCCESS &&
        (PMPI_Error_class(own_error, &mine->error_class) != MPI_SUCCESS ||
         mine->error_class >= MPICH_ERR_LAST_CLASS))
        mine->error_class = MPI_ERR_OTHER;
    gc_ctx_claim_begin(&claim, c->context, 0);
    for (*context = 0; *context == 0;) {
        mine->next_context = gc_ctx_propose(&claim);
        status = gc_coll_allgather_bytes(c, mine, sizeof *mine, *all);
        if (status != MPI_SUCCESS) {
            status = gc_error(c->handle, status, function,
                              "exchange with the other sites failed");
            goto cleanup;
        }
        uint32_t largest = 0;
        int yielded = 0;
        for (int r = 0; r < c->size; r++) {
            if ((*all)[r].error_class != MPI_SUCCESS) {
                status =
                    own_error != MPI_SUCCESS
                        ? own_error
                        : gc_error(c->handle, (*all)[r].error_class, function,
                                   "another member passed "
                                   "invalid arguments");
                goto cleanup;
            }
            yielded |= (*all)[r].next_context == 0;
            if ((*all)[r].next_context > largest)
                largest = (*all)[r].next_context;
        }
        int exhausted;
        *context = gc_ctx_decide(&claim, largest, yielded, &exhausted);
        if (exhausted) {
            status = gc_error(c->handle, MPI_ERR_INTERN, function,
                              "no relay context ids left");
            goto cleanup;
        }
    }
cleanup:
    gc_ctx_claim_end(&claim);
    return status;
}

/*
 * Hand out a new communicator made from `parent`: `local` alone when its
 * members are all on this site (site-local semantics are then right),
 * otherwise registered as a grid communicator under that handle.
 */
static int adopt(struct gc_comm *parent, const int *members, int size,
                 MPI_Comm local, uint32_t context, MPI_Comm *newcomm,
                 const char *function)
{
    for (int i = 0; i < size; i++) {
        int parent_rank = parent->comm_rank_of_grid[members[i]];
        if (parent->site[parent_rank] == gc_world.site_index)
            continue;
        if (gc_comm_build(members, size, local, context) == NULL) {
            PMPI_Comm_free(&local);
            return gc_error(parent->handle, MPI_ERR_NO_MEM, function,
                            "out of memory");
        }
        break;
    }
    *newcomm = local;
    return MPI_SUCCESS;
}

/*
 * MPI_Comm_split of a grid communicator, also behind MPI_Comm_create
 * (color: the group, key: the rank in it).  `own_error` is what this
 * member found wrong with its arguments, already reported; `expect`, when
 * not NULL, the member list every member of the new communicator must get
 * (what the group said).
 */
static int split_grid(struct gc_comm *c, int color, int key, int own_error,
                      const struct gc_ranks *expect, MPI_Comm *newcomm,
                      const char *function)
{
    struct contribution mine = {.color = color, .key = key};
    struct contribution *all = NULL;
    /* Allocated before the exchange: failing after it would leave this
     * site's other members waiting in the MPICH split below. */
    struct placing *order = malloc((size_t)c->size * sizeof *order);
    int *members = malloc((size_t)c->size * sizeof *members);
    MPI_Comm local = MPI_COMM_NULL;
    uint32_t context = 0;
    int size = 0, new_rank = 0;
    if (own_error == MPI_SUCCESS && (order == NULL || members == NULL))
        own_error =
            gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    int status = exchange(c, &mine, own_error, &all, &context, function);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (color != MPI_UNDEFINED) {
        for (int r = 0; r < c->size; r++)
            if (all[r].color == color)
                order[size++] = (struct placing){all[r].key, r};
        qsort(order, (size_t)size, sizeof *order, by_key_then_parent_rank);
        for (int i = 0; i < size; i++) {
            members[i] = c->grid_rank[order[i].parent_rank];
            if (order[i].parent_rank == c->rank)
                new_rank = i;
        }
    }
    /* Same color, new rank as key: MPICH keeps this site's members of
     * each new communicator in new-rank order, as gc_comm_build needs. */
    unsigned held = gc_block_begin();
    status = PMPI_Comm_split(c->local, color, new_rank, &local);
    gc_block_end(held);
    if (status != MPI_SUCCESS || color == MPI_UNDEFINED) {
        *newcomm = local;
        goto cleanup; /* an MPICH error is reported by MPICH */
    }
    if (expect != NULL &&
        (expect->size != size ||
         memcmp(expect->rank, members, (size_t)size * sizeof *members))) {
        PMPI_Comm_free(&local);
        status = gc_error(c->handle, MPI_ERR_GROUP, function,
                          "the members' groups differ");
        goto cleanup;
    }
    status = adopt(c, members, size, local, context, newcomm, function);
cleanup:
    free(all);
    free(order);
    free(members);
    return status;
}

int gc_comm_split_grid(struct gc_comm *c, int color, int key, int own_error,
                       MPI_Comm *newcomm, const char *function)
{
    return split_grid(c, color, key, own_error, NULL, newcomm, function);
}

/* MPI_Comm_dup(_with_info) of a grid communicator; the duplicate keeps
 * the topology (MPI-4.0 §7.4.2). */
static int dup_grid(struct gc_comm *c, int with_info, MPI_Info info,
                    MPI_Comm *newcomm, const char *function)
{
    struct contribution mine = {0};
    struct contribution *all = NULL;
    MPI_Comm local = MPI_COMM_NULL;
    uint32_t context = 0;
    int status = exchange(c, &mine, check_newcomm(c, newcomm, function), &all,
                          &context, function);
    free(all);
    if (status != MPI_SUCCESS)
        return status;
    /* From the handle, not `local`: for MPI_COMM_WORLD both are MPICH's
     * world, otherwise they are the same communicator; MPICH copies the
     * attributes and the error handler. */
    unsigned held = gc_block_begin();
    status = with_info ? PMPI_Comm_dup_with_info(c->handle, info, &local)
                       : PMPI_Comm_dup(c->handle, &local);
    gc_block_end(held);
    if (status != MPI_SUCCESS) {
        /* An attribute copy callback failed (MPI 4.1 section 7.7.2): no
         * communicator, as MPICH answers for its own. */
        *newcomm = MPI_COMM_NULL;
        return status;
    }
    status = adopt(c, c->grid_rank, c->size, local, context, newcomm, function);
    if (status == MPI_SUCCESS && c->inter != NULL)
        status =
            gc_inter_attach(gc_comm_find(*newcomm),
                            c->inter->local_offset == 0 ? c->inter->local_size
                                                        : c->inter->remote_size,
                            c->inter->local_offset == 0, function);
    if (status == MPI_SUCCESS)
        status = gc_comm_dup_parts_of(c, newcomm, function);
    return status;
}

int gc_comm_dup_parts_of(struct gc_comm *c, MPI_Comm *newcomm,
                         const char *function)
{
    struct gc_comm *dup = gc_comm_find(*newcomm);
    if (dup == NULL || gc_comm_dup_parts(c, dup) == MPI_SUCCESS)
        return MPI_SUCCESS; /* an MPICH communicator has no parts */
    PMPI_Comm_free(newcomm);
    gc_comm_release(dup);
    return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c != NULL)
        return dup_grid(c, 0, MPI_INFO_NULL, newcomm, "MPI_Comm_dup");
    int status = PMPI_Comm_dup(comm, newcomm);
    return status == MPI_SUCCESS ? gc_inter_site_dup(comm, *newcomm) : status;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c != NULL)
        return dup_grid(c, 1, info, newcomm, "MPI_Comm_dup_with_info");
    int status = PMPI_Comm_dup_with_info(comm, info, newcomm);
    return status == MPI_SUCCESS ? gc_inter_site_dup(comm, *newcomm) : status;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    GC_ENTER();
    static const char function[] = "MPI_Comm_split";
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Comm_split(comm, color, key, newcomm);
    if (c->inter != NULL)
        return gc_inter_split(c, color, key, MPI_SUCCESS, newcomm,
                              "MPI_Comm_split");
    int error = check_newcomm(c, newcomm, function);
    if (error == MPI_SUCCESS && color < 0 && color != MPI_UNDEFINED)
        error = gc_error(comm, MPI_ERR_ARG, function,
                         "color is negative and not MPI_UNDEFINED");
    return split_grid(c, color, key, error, NULL, newcomm, function);
}

/* MPI_Comm_create of a grid communicator: split by group. */
static int create_grid(struct gc_comm *c, MPI_Group group, MPI_Comm *newcomm)
{
    static const char function[] = "MPI_Comm_create";
    struct gc_ranks g = {0};
    int color = MPI_UNDEFINED, key = 0;
    int error = check_newcomm(c, newcomm, function);
    if (error == MPI_SUCCESS)
        error = gc_group_ranks(group, c->handle, function, &g);
    for (int i = 0; i < g.size && error == MPI_SUCCESS; i++) {
        if (c->comm_rank_of_grid[g.rank[i]] < 0)
            error = gc_error(c->handle, MPI_ERR_GROUP, function,
                             "the group has a process outside the "
                             "communicator");
        /* Groups of one call are equal or disjoint: the parent rank of
         * group rank 0 tells them apart. */
        if (g.rank[i] == gc_world.grid_rank) {
            color = c->comm_rank_of_grid[g.rank[0]];
            key = i;
        }
    }
    int status = split_grid(c, color, key, error, &g, newcomm, function);
    gc_ranks_free(&g);
    return status;
}

/* MPI_Comm_create of a site-local communicator with a grid group: MPICH
 * needs the group as its own. */
static int create_site_local(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char function[] = "MPI_Comm_create";
    struct gc_ranks g = {0};
    MPI_Group site_group = MPI_GROUP_EMPTY;
    int status = gc_group_ranks(group, comm, function, &g);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = gc_group_to_site(&g, &site_group);
    if (status == MPI_ERR_GROUP || status == MPI_ERR_NO_MEM)
        status = gc_error(comm, status, function,
                          status == MPI_ERR_GROUP
                              ? "the group has processes of other sites, "
                                "which are not in the communicator"
                              : "out of memory");
    if (status != MPI_SUCCESS)
        goto cleanup;
    unsigned held = gc_block_begin();
    status = PMPI_Comm_create(comm, site_group, newcomm);
    gc_block_end(held);
cleanup:
    if (site_group != MPI_GROUP_EMPTY)
        PMPI_Group_free(&site_group);
    gc_ranks_free(&g);
    return status;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c != NULL && c->inter != NULL)
        return gc_inter_create(c, group, newcomm);
    if (c != NULL)
        return create_grid(c, group, newcomm);
    if (gc_group_is_grid(group))
        return create_site_local(comm, group, newcomm);
    GC_LEAVE();
    return PMPI_Comm_create(comm, group, newcomm);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    GC_ENTER();
    if (!gc_world.active || comm == NULL)
        return PMPI_Comm_free(comm);
    if (*comm == MPI_COMM_WORLD)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_COMM,
                        "MPI_Comm_free: MPI_COMM_WORLD cannot be freed", NULL);
    struct gc_comm *c = gc_comm_find(*comm);
    int status = PMPI_Comm_free(comm);
    /* Released after MPICH's free: attribute delete callbacks run inside
     * it and may still use the communicator. */
    if (status == MPI_SUCCESS && c != NULL)
        gc_comm_release(c);
    return status;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    GC_ENTER();
    struct gc_comm *a = gc_comm_find(comm1), *b = gc_comm_find(comm2);
    if (a == NULL && b == NULL)
        return PMPI_Comm_compare(comm1, comm2, result);
    if (comm1 == comm2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (a == NULL || b == NULL) {
        /* One spans sites, the other is on this site alone: never equal,
         * but the other must still be a communicator. */
        MPI_Comm grid = a ? comm1 : comm2, other = a ? comm2 : comm1;
        int size;
        int status = other == MPI_COMM_NULL
                         ? gc_error(grid, MPI_ERR_COMM,
                                    "MPI_Comm_compare: MPI_COMM_NULL", NULL)
                         : PMPI_Comm_size(other, &size);
        if (status == MPI_SUCCESS)
            *result = MPI_UNEQUAL;
        return status;
    }
    if ((a->inter == NULL) != (b->inter == NULL)) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    struct gc_ranks ra = {a->size, a->grid_rank, NULL};
    struct gc_ranks rb = {b->size, b->grid_rank, NULL};
    if (gc_ranks_compare(&ra, &rb, result) != MPI_SUCCESS)
        return gc_error(comm1, MPI_ERR_NO_MEM,
                        "MPI_Comm_compare: out of memory", NULL);
    if (*result == MPI_IDENT)
        *result = MPI_CONGRUENT; /* same members in order, two handles */
    return MPI_SUCCESS;
}

typedef int attr_get_fn(MPI_Comm comm, int keyval, void *value, int *flag);

/*
 * MPI_Comm_get_attr and MPI_Attr_get.  MPICH answers the predefined
 * attributes on every communicator for its own job, which is one site:
 * the universe is the grid world, grid communicators have no global
 * clock, and a site's mpiexec numbers its own applications from 0, so
 * MPI_APPNUM is gridrun's count over every site (GRIDCOLL_APPNUM).  The
 * rest (user keyvals, MPI_TAG_UB: the relay carries MPICH's whole tag
 * range, MPI_HOST, MPI_IO) is MPICH's.
 */
static int get_attr(attr_get_fn *pmpi, MPI_Comm comm, int keyval, void *value,
                    int *flag)
{
    /* Predefined attribute values are returned by address. */
    static int universe_size, wtime_is_global, appnum; /* wtime: stays 0 */
    int *answer = NULL;
    int status = pmpi(comm, keyval, value, flag);
    if (status != MPI_SUCCESS || !gc_world.active)
        return status;
    if (keyval == MPI_UNIVERSE_SIZE) {
        universe_size = gc_world.size;
        answer = &universe_size;
    } else if (keyval == MPI_WTIME_IS_GLOBAL && gc_comm_is_grid(comm)) {
        answer = &wtime_is_global;
    } else if (keyval == MPI_APPNUM && *flag && gc_settings_appnum() >= 0) {
        appnum = gc_settings_appnum();
        answer = &appnum;
    }
    if (answer != NULL) {
        memcpy(value, &answer, sizeof answer);
        *flag = 1;
    }
    return MPI_SUCCESS;
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *value, int *flag)
{
    GC_ENTER();
    return get_attr(PMPI_Comm_get_attr, comm, keyval, value, flag);
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *value, int *flag)
{
    GC_ENTER();
    return get_attr(PMPI_Attr_get, comm, keyval, value, flag);
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    GC_ENTER();
    if (!gc_comm_is_grid(comm))
        return PMPI_Comm_test_inter(comm, flag);
    *flag = gc_comm_find(comm)->inter != NULL;
    return MPI_SUCCESS;
}
