/*
 * Intercommunicators across sites (gc_intercomm.h says how one is
 * represented): MPI_Intercomm_create, MPI_Intercomm_merge,
 * MPI_Comm_remote_size, MPI_Comm_remote_group, and the dup, split and
 * create of an intercommunicator (MPI 4.1 §7.4, §7.6).  An intercommunicator
 * all of whose members are on this site is MPICH's own: its union is made here,
 * then turned into an MPICH intercommunicator, so MPICH's semantics hold.
 */
#include <stdatomic.h>
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
#include "core/gc_site_union.h"
#include "core/gc_world.h"

int gc_inter_site_dup(MPI_Comm intercomm, MPI_Comm newcomm)
{
    MPI_Comm whole, copy = MPI_COMM_NULL;
    int remote_offset;
    if (!gc_site_union(intercomm, &whole, &remote_offset))
        return MPI_SUCCESS;
    unsigned held = gc_block_begin();
    int status = PMPI_Comm_dup(whole, &copy);
    gc_block_end(held);
    if (status == MPI_SUCCESS)
        status = gc_site_union_attach(newcomm, copy, remote_offset);
    if (status != MPI_SUCCESS && copy != MPI_COMM_NULL)
        PMPI_Comm_free(&copy);
    return status;
}

/*
 * The MPICH intercommunicator of a union all on this site (`whole`, an
 * MPICH intracommunicator in union order, taken over: the new
 * intercommunicator keeps it, or it is freed).
 */
static int site_intercomm(MPI_Comm whole, int first_size, int local_first,
                          MPI_Comm *newcomm)
{
    MPI_Comm group = MPI_COMM_NULL;
    int rank;
    PMPI_Comm_rank(whole, &rank);
    int remote_leader = local_first ? first_size : 0;
    *newcomm = MPI_COMM_NULL;
    unsigned held = gc_block_begin();
    int status = PMPI_Comm_split(whole, rank < first_size, rank, &group);
    if (status == MPI_SUCCESS)
        status =
            PMPI_Intercomm_create(group, 0, whole, remote_leader, 0, newcomm);
    gc_block_end(held);
    if (status == MPI_SUCCESS)
        status =
            gc_site_union_attach(*newcomm, whole, local_first ? first_size : 0);
    if (status != MPI_SUCCESS) {
        if (*newcomm != MPI_COMM_NULL)
            PMPI_Comm_free(newcomm);
        PMPI_Comm_free(&whole);
    }
    if (group != MPI_COMM_NULL)
        PMPI_Comm_free(&group);
    return status;
}

/*
 * Hand out a union made by a split or from scratch (`*newcomm`, a grid
 * communicator or, all on this site, an MPICH one) as an intercommunicator.
 */
static int finish(MPI_Comm *newcomm, int first_size, int local_first,
                  const char *function)
{
    struct gc_comm *u = gc_comm_find(*newcomm);
    if (u != NULL)
        return gc_inter_attach(u, first_size, local_first, function);
    return site_intercomm(*newcomm, first_size, local_first, newcomm);
}

int gc_inter_attach(struct gc_comm *c, int first_size, int local_first,
                    const char *function)
{
    struct gc_inter *in = calloc(1, sizeof *in);
    if (in == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    in->local_size = local_first ? first_size : c->size - first_size;
    in->remote_size = c->size - in->local_size;
    in->local_offset = local_first ? 0 : first_size;
    in->remote_offset = local_first ? first_size : 0;
    in->group_comm = MPI_COMM_NULL;
    gc_inter_adopt(c, in);
    return gc_comm_split_grid(c, !local_first, c->rank - in->local_offset,
                              MPI_SUCCESS, &in->group_comm, function);
}

/* MPI_Comm_free of an intercommunicator: free its group communicators
 * (collective, like the free); the struct goes with the last reference. */
static void inter_release(struct gc_comm *c)
{
    if (c->inter->group_comm != MPI_COMM_NULL) {
        struct gc_comm *g = gc_comm_find(c->inter->group_comm);
        PMPI_Comm_free(&c->inter->group_comm);
        if (g != NULL)
            gc_comm_release(g);
    }
}

static void inter_destroy(struct gc_comm *c)
{
    free(c->inter);
    c->inter = NULL;
}

static const struct gc_comm_part inter_part = {.name = "intercommunicator",
                                               .release = inter_release,
                                               .destroy = inter_destroy};

void gc_inter_adopt(struct gc_comm *c, struct gc_inter *in)
{
    c->inter = in;
    gc_comm_attach(c, &inter_part);
}

/*
 * A new union of grid ranks `members` (the first group's `first_size`,
 * then the other's) on `context`, made by the members alone: its site
 * part is MPICH's group-collective creation from this site's world.
 */
static int make_union(const int *members, int size, int first_size,
                      int local_first, uint32_t context, MPI_Comm report_to,
                      MPI_Comm *newcomm, const char *function)
{
    struct gc_ranks here = {0};
    int *on_site = malloc((size_t)size * sizeof *on_site);
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm local = MPI_COMM_NULL;
    int status = MPI_SUCCESS;
    if (on_site == NULL) {
        status = gc_error(report_to, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    const struct gc_site *site = &gc_world.sites[gc_world.site_index];
    for (int r = 0; r < size; r++)
        if (members[r] >= site->offset &&
            members[r] < site->offset + site->size)
            on_site[here.size++] = members[r];
    here.rank = on_site;
    status = gc_group_to_site(&here, &group);
    /* Over the communicator the group was taken from: MPICH 4.0.2's
     * PMPI_Comm_create_group dereferences NULL when the group comes from
     * another communicator and nobody asked the parent for its group yet
     * (plain MPICH: a group of MPI_Comm_dup(MPI_COMM_WORLD) in
     * MPI_Comm_create_group(MPI_COMM_WORLD) before any
     * MPI_Comm_group(MPI_COMM_WORLD)).  The tag is unique per creation
     * among the processes that meet here: contexts only grow on each
     * process. */
    if (status == MPI_SUCCESS) {
        unsigned held = gc_block_begin();
        status = PMPI_Comm_create_group(gc_world.site_world, group,
                                        (int)(context / GC_CTX_STRIDE % 32768),
                                        &local);
        gc_block_end(held);
    }
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (here.size < size &&
        gc_comm_build(members, size, local, context) == NULL) {
        PMPI_Comm_free(&local);
        status = gc_error(report_to, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    *newcomm = local;
    status = finish(newcomm, first_size, local_first, function);
cleanup:
    if (group != MPI_GROUP_NULL && group != MPI_GROUP_EMPTY)
        PMPI_Group_free(&group);
    free(on_site);
    return status;
}

/*
 * What the two groups agree on before the union is made: the other
 * group's size, and the relay context, in rounds (gc_context.c): an
 * allreduce in each group, the leaders' exchange, a bcast in each group.
 * The creation's place among the others of each process is the peer
 * communicator's context and the tag, which name it alike on both sides
 * (the groups' own communicators differ); the leaders pass the first on
 * to their groups.
 */
static int agree(MPI_Comm local_comm, int rank, int local_leader,
                 MPI_Comm peer_comm, int remote_leader, int tag, uint32_t size,
                 uint32_t *their_size, uint32_t *context)
{
    struct gc_ctx_claim claim;
    int status = MPI_SUCCESS, exhausted = 0;
    uint32_t peer_context = 0;
    if (rank == local_leader) {
        const struct gc_comm *peer = gc_comm_find(peer_comm);
        peer_context = peer != NULL ? peer->context : 0;
    }
    gc_ctx_claim_begin(&claim, peer_context, tag);
    for (*context = 0; *context == 0 && !exhausted && status == MPI_SUCCESS;) {
        uint32_t proposal = gc_ctx_propose(&claim);
        /* size, [largest proposal, whether one yielded] (by MPI_MAX) */
        uint32_t ours[3] = {size, proposal, proposal == 0};
        uint32_t theirs[4] = {0, 0, 0, peer_context};
        status = MPI_Allreduce(MPI_IN_PLACE, &ours[1], 2, MPI_UINT32_T, MPI_MAX,
                               local_comm);
        if (status == MPI_SUCCESS && rank == local_leader)
            status = MPI_Sendrecv(ours, 3, MPI_UINT32_T, remote_leader, tag,
                                  theirs, 3, MPI_UINT32_T, remote_leader, tag,
                                  peer_comm, MPI_STATUS_IGNORE);
        if (status == MPI_SUCCESS)
            status =
                MPI_Bcast(theirs, 4, MPI_UINT32_T, local_leader, local_comm);
        if (status != MPI_SUCCESS)
            break;
        *their_size = theirs[0];
        claim.priority = gc_ctx_priority(theirs[3], tag);
        *context =
            gc_ctx_decide(&claim, ours[1] > theirs[1] ? ours[1] : theirs[1],
                          ours[2] || theirs[2], &exhausted);
    }
    gc_ctx_claim_end(&claim);
    return status == MPI_SUCCESS && exhausted ? MPI_ERR_INTERN : status;
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader,
                         MPI_Comm peer_comm, int remote_leader, int tag,
                         MPI_Comm *newintercomm)
{
    GC_ENTER();
    static const char function[] = "MPI_Intercomm_create";
    if (!gc_world.active)
        return PMPI_Intercomm_create(local_comm, local_leader, peer_comm,
                                     remote_leader, tag, newintercomm);
    struct gc_ranks mine = {0};
    MPI_Group group = MPI_GROUP_NULL;
    int *members = NULL, *remote = NULL, rank = 0, inter = 0, status;
    struct gc_comm *lc = gc_comm_find(local_comm);
    if (lc != NULL) {
        inter = lc->inter != NULL;
        mine.size = gc_comm_group_size(lc);
        mine.rank = gc_comm_group_members(lc);
        rank = gc_comm_group_rank(lc);
    } else {
        status = PMPI_Comm_test_inter(local_comm, &inter);
        if (status == MPI_SUCCESS && !inter)
            status = PMPI_Comm_group(local_comm, &group);
        if (status == MPI_SUCCESS && !inter)
            status = gc_group_ranks(group, local_comm, function, &mine);
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_rank(local_comm, &rank);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    if (inter || local_leader < 0 || local_leader >= mine.size) {
        status =
            gc_error(local_comm, inter ? MPI_ERR_COMM : MPI_ERR_RANK, function,
                     inter ? "local_comm is an intercommunicator"
                           : "local_leader is not in local_comm");
        goto cleanup;
    }
    uint32_t their_size = 0, context = 0;
    status = agree(local_comm, rank, local_leader, peer_comm, remote_leader,
                   tag, (uint32_t)mine.size, &their_size, &context);
    if (status != MPI_SUCCESS)
        goto cleanup;
    int size = mine.size + (int)their_size;
    remote = malloc((size_t)their_size * sizeof *remote + 1);
    members = malloc((size_t)size * sizeof *members);
    if (remote == NULL || members == NULL) {
        /* The others go on into the exchange: the job cannot recover. */
        status =
            gc_error(local_comm, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    if (rank == local_leader)
        status = MPI_Sendrecv(mine.rank, mine.size, MPI_INT, remote_leader, tag,
                              remote, (int)their_size, MPI_INT, remote_leader,
                              tag, peer_comm, MPI_STATUS_IGNORE);
    if (status == MPI_SUCCESS)
        status = MPI_Bcast(remote, (int)their_size, MPI_INT, local_leader,
                           local_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* Groups are disjoint: the group holding the lower first grid rank
     * comes first, on both sides. */
    int local_first = mine.rank[0] < remote[0];
    int first_size = local_first ? mine.size : (int)their_size;
    memcpy(members + (local_first ? 0 : first_size), mine.rank,
           (size_t)mine.size * sizeof *members);
    memcpy(members + (local_first ? first_size : 0), remote,
           (size_t)their_size * sizeof *members);
    status = make_union(members, size, first_size, local_first, context,
                        local_comm, newintercomm, function);
cleanup:
    if (group != MPI_GROUP_NULL)
        PMPI_Group_free(&group);
    gc_ranks_free(&mine);
    free(remote);
    free(members);
    return status;
}

/* What the members of an intercommunicator's union tell each other in
 * MPI_Comm_split; `key` is MPI_Intercomm_merge's `high` there. */
struct placing {
    int color;
    int key;
};

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    GC_ENTER();
    static const char function[] = "MPI_Intercomm_merge";
    struct gc_comm *c = GC_FIND(intercomm);
    if (c == NULL)
        return PMPI_Intercomm_merge(intercomm, high, newintracomm);
    if (c->inter == NULL)
        return gc_error(intercomm, MPI_ERR_COMM, function,
                        "not an intercommunicator");
    struct placing mine = {0, high != 0};
    struct placing *all = malloc((size_t)c->size * sizeof *all);
    int status = all != NULL
                     ? gc_coll_allgather_bytes(c, &mine, sizeof mine, all)
                     : MPI_ERR_NO_MEM;
    if (status != MPI_SUCCESS) {
        free(all);
        return gc_error(intercomm, status, function,
                        "exchange with the other group failed");
    }
    /* The group that said high = false comes first; when both said the
     * same, the union's order decides, as every member sees it. */
    int first_size = c->inter->local_offset == 0 ? c->inter->local_size
                                                 : c->inter->remote_size;
    int swap = all[0].key && !all[c->size - 1].key;
    free(all);
    int key = c->rank;
    if (swap)
        key = c->rank < first_size ? c->rank + (c->size - first_size)
                                   : c->rank - first_size;
    return gc_comm_split_grid(c, 0, key, MPI_SUCCESS, newintracomm, function);
}

static int by_key_then_rank(const void *a, const void *b)
{
    const int *x = a, *y = b; /* {key, union rank} */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int gc_inter_split(struct gc_comm *c, int color, int key, int own_error,
                   MPI_Comm *newcomm, const char *function)
{
    struct placing mine = {own_error == MPI_SUCCESS ? color : MPI_UNDEFINED,
                           key};
    struct placing *all = malloc((size_t)c->size * sizeof *all);
    int(*order)[2] = malloc((size_t)c->size * sizeof *order);
    int status = own_error;
    if (status == MPI_SUCCESS && color < 0 && color != MPI_UNDEFINED) {
        /* Still takes part, so that the others do not wait for it. */
        status = gc_error(c->handle, MPI_ERR_ARG, function,
                          "color is negative and not MPI_UNDEFINED");
        mine.color = MPI_UNDEFINED;
    }
    int rc = all != NULL && order != NULL
                 ? gc_coll_allgather_bytes(c, &mine, sizeof mine, all)
                 : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        status = gc_error(c->handle, rc, function,
                          "exchange with the other group failed");
        goto cleanup;
    }
    /* New union: each group's members of this color by (key, rank), the
     * first group first; a color one group lacks gives MPI_COMM_NULL. */
    int first_size = c->inter->local_offset == 0 ? c->inter->local_size
                                                 : c->inter->remote_size;
    int n = 0, new_first = 0, new_rank = 0;
    for (int part = 0; part < 2 && mine.color != MPI_UNDEFINED; part++) {
        int begin = n;
        for (int r = part ? first_size : 0; r < (part ? c->size : first_size);
             r++)
            if (all[r].color == mine.color) {
                order[n][0] = all[r].key;
                order[n++][1] = r;
            }
        qsort(order + begin, (size_t)(n - begin), sizeof *order,
              by_key_then_rank);
        if (part == 0)
            new_first = n;
    }
    if (new_first == 0 || new_first == n)
        mine.color = MPI_UNDEFINED;
    for (int i = 0; i < n; i++)
        if (order[i][1] == c->rank)
            new_rank = i;
    rc = gc_comm_split_grid(c, mine.color, new_rank, status, newcomm, function);
    if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL)
        rc = finish(newcomm, new_first, c->inter->local_offset == 0, function);
    if (status == MPI_SUCCESS)
        status = rc;
cleanup:
    free(all);
    free(order);
    return status;
}

int MPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_remote_size(comm, size);
    if (c->inter == NULL)
        return gc_error(comm, MPI_ERR_COMM, "MPI_Comm_remote_size",
                        "not an intercommunicator");
    *size = c->inter->remote_size;
    return MPI_SUCCESS;
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    GC_ENTER();
    static const char function[] = "MPI_Comm_remote_group";
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_remote_group(comm, group);
    if (c->inter == NULL)
        return gc_error(comm, MPI_ERR_COMM, function,
                        "not an intercommunicator");
    int status = gc_group_new(c->grid_rank + c->inter->remote_offset,
                              c->inter->remote_size, group);
    return status == MPI_SUCCESS
               ? status
               : gc_error(comm, status, function, "out of memory");
}

int gc_inter_create(struct gc_comm *c, MPI_Group group, MPI_Comm *newcomm)
{
    static const char function[] = "MPI_Comm_create";
    struct gc_ranks g = {0};
    int color = MPI_UNDEFINED, key = 0;
    int error = gc_group_ranks(group, c->handle, function, &g);
    const int *members = gc_comm_group_members(c);
    for (int i = 0; i < g.size && error == MPI_SUCCESS; i++) {
        int found = 0;
        for (int r = 0; r < gc_comm_group_size(c) && !found; r++)
            found = members[r] == g.rank[i];
        if (!found)
            error = gc_error(c->handle, MPI_ERR_GROUP, function,
                             "the group has a process outside the local "
                             "group");
        if (g.rank[i] == gc_world.grid_rank) {
            color = 0;
            key = i;
        }
    }
    int status = gc_inter_split(c, color, key, error, newcomm, function);
    gc_ranks_free(&g);
    return status;
}
