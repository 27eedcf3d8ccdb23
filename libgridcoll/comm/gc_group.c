/*
 * MPI groups across sites: MPI_Comm_group of a grid communicator and
 * every MPI_Group_* call that involves a grid group (gc_group.h says how
 * a grid group is represented).  Calls on MPICH groups alone pass through:
 * such groups only hold this site's processes, so MPICH is right about
 * them.  A call mixing the two kinds converts the MPICH group to grid
 * ranks.  Errors go to MPI_COMM_WORLD's handler, as for MPICH's group
 * calls, which have no communicator either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/gc_group.h"
#include "comm/gc_intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_world.h"

#define HANDLE_BASE  0x0A000000u
#define HANDLE_MASK  0xFE000000u
#define HANDLE_INDEX 0x01FFFFFFu

struct grid_group {
    int size;
    int rank;     /* this process's group rank, or MPI_UNDEFINED */
    int member[]; /* grid ranks, by group rank */
};

/* Handle index -> group; freed slots are NULL and reused.  Programs hold
 * few groups, so finding a free slot by scanning is cheap enough. */
static struct {
    struct grid_group **slot;
    int count;
    int cap;
} groups;

enum set_op { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

int gc_group_is_grid(MPI_Group group)
{
    return gc_world.active && ((unsigned)group & HANDLE_MASK) == HANDLE_BASE;
}

static struct grid_group *group_find(MPI_Group group)
{
    unsigned index = (unsigned)group & HANDLE_INDEX;
    if (!gc_group_is_grid(group) || index >= (unsigned)groups.count)
        return NULL;
    return groups.slot[index];
}

/* MPI_GROUP_EMPTY when empty, as MPICH answers for its own empty
 * results. */
int gc_group_new(const int *member, int size, MPI_Group *out)
{
    if (size == 0) {
        *out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    int index = 0;
    while (index < groups.count && groups.slot[index] != NULL)
        index++;
    if (index == groups.cap) {
        int cap = groups.cap ? 2 * groups.cap : 16;
        struct grid_group **grown;
        if ((unsigned)cap > HANDLE_INDEX + 1u)
            return MPI_ERR_NO_MEM;
        grown = realloc(groups.slot, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return MPI_ERR_NO_MEM;
        groups.slot = grown;
        groups.cap = cap;
    }
    struct grid_group *g =
        malloc(sizeof *g + (size_t)size * sizeof g->member[0]);
    if (g == NULL)
        return MPI_ERR_NO_MEM;
    g->size = size;
    g->rank = MPI_UNDEFINED;
    for (int r = 0; r < size; r++) {
        g->member[r] = member[r];
        if (member[r] == gc_world.grid_rank)
            g->rank = r;
    }
    groups.slot[index] = g;
    if (index == groups.count)
        groups.count++;
    *out = (MPI_Group)(HANDLE_BASE | (unsigned)index);
    return MPI_SUCCESS;
}

int gc_group_ranks(MPI_Group group, MPI_Comm report_to, const char *function,
                   struct gc_ranks *out)
{
    int status, size, *seq = NULL;
    const struct gc_site *site = &gc_world.sites[gc_world.site_index];
    MPI_Group world = MPI_GROUP_NULL;
    memset(out, 0, sizeof *out);
    if (gc_group_is_grid(group)) {
        struct grid_group *g = group_find(group);
        if (g == NULL)
            return gc_error(report_to, MPI_ERR_GROUP, function,
                            "invalid group (freed?)");
        out->size = g->size;
        out->rank = g->member;
        return MPI_SUCCESS;
    }
    if (group == MPI_GROUP_NULL)
        return gc_error(report_to, MPI_ERR_GROUP, function, "MPI_GROUP_NULL");
    /* An MPICH group: its members are ranks of the site's MPICH world. */
    status = PMPI_Group_size(group, &size);
    if (status != MPI_SUCCESS)
        return status; /* MPICH has reported the bad handle */
    out->owned = malloc((size_t)size * sizeof(int) + 1);
    seq = malloc((size_t)size * sizeof(int) + 1);
    if (out->owned == NULL || seq == NULL) {
        status = gc_error(report_to, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    for (int r = 0; r < size; r++)
        seq[r] = r;
    status = PMPI_Comm_group(gc_world.site_world, &world);
    if (status == MPI_SUCCESS)
        status =
            PMPI_Group_translate_ranks(group, size, seq, world, out->owned);
    if (status != MPI_SUCCESS)
        goto cleanup;
    for (int r = 0; r < size; r++) {
        if (out->owned[r] == MPI_UNDEFINED) {
            status = gc_error(report_to, MPI_ERR_GROUP, function,
                              "the group has processes outside the grid "
                              "world");
            goto cleanup;
        }
        out->owned[r] += site->offset;
    }
    out->size = size;
    out->rank = out->owned;
cleanup:
    if (world != MPI_GROUP_NULL)
        PMPI_Group_free(&world);
    free(seq);
    if (status != MPI_SUCCESS)
        gc_ranks_free(out);
    return status;
}

void gc_ranks_free(struct gc_ranks *r)
{
    free(r->owned);
    memset(r, 0, sizeof *r);
}

int gc_group_to_site(const struct gc_ranks *r, MPI_Group *group)
{
    const struct gc_site *site = &gc_world.sites[gc_world.site_index];
    MPI_Group world = MPI_GROUP_NULL;
    int status = MPI_SUCCESS;
    if (r->size == 0) {
        *group = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    int *local = malloc((size_t)r->size * sizeof *local);
    if (local == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < r->size && status == MPI_SUCCESS; i++) {
        local[i] = r->rank[i] - site->offset;
        if (local[i] < 0 || local[i] >= site->size)
            status = MPI_ERR_GROUP;
    }
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_group(gc_world.site_world, &world);
    if (status == MPI_SUCCESS)
        status = PMPI_Group_incl(world, r->size, local, group);
    if (world != MPI_GROUP_NULL)
        PMPI_Group_free(&world);
    free(local);
    return status;
}

int gc_ranks_on_site(const struct gc_ranks *r)
{
    const struct gc_site *site = &gc_world.sites[gc_world.site_index];
    for (int i = 0; i < r->size; i++)
        if (r->rank[i] < site->offset ||
            r->rank[i] >= site->offset + site->size)
            return 0;
    return 1;
}

/* Grid rank -> position in r, -1 for non-members; NULL without memory. */
static int *position_map(const struct gc_ranks *r)
{
    int *pos = malloc((size_t)gc_world.size * sizeof *pos);
    if (pos == NULL)
        return NULL;
    for (int g = 0; g < gc_world.size; g++)
        pos[g] = -1;
    for (int i = 0; i < r->size; i++)
        pos[r->rank[i]] = i;
    return pos;
}

int gc_ranks_compare(const struct gc_ranks *a, const struct gc_ranks *b,
                     int *result)
{
    if (a->size != b->size) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    if (memcmp(a->rank, b->rank, (size_t)a->size * sizeof(int)) == 0) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    int *pos = position_map(b);
    if (pos == NULL)
        return MPI_ERR_NO_MEM;
    *result = MPI_SIMILAR;
    for (int i = 0; i < a->size; i++)
        if (pos[a->rank[i]] < 0)
            *result = MPI_UNEQUAL;
    free(pos);
    return MPI_SUCCESS;
}

/* ---- MPI calls --------------------------------------------------------- */

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Comm_group(comm, group);
    int status =
        gc_group_new(gc_comm_group_members(c), gc_comm_group_size(c), group);
    if (status != MPI_SUCCESS)
        return gc_error(comm, status, "MPI_Comm_group", "out of memory");
    return MPI_SUCCESS;
}

int MPI_Group_size(MPI_Group group, int *size)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_size(group, size);
    struct grid_group *g = group_find(group);
    if (g == NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_size",
                        "invalid group (freed?)");
    *size = g->size;
    return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_rank(group, rank);
    struct grid_group *g = group_find(group);
    if (g == NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_rank",
                        "invalid group (freed?)");
    *rank = g->rank;
    return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
    GC_ENTER();
    if (group == NULL || !gc_group_is_grid(*group))
        return PMPI_Group_free(group);
    struct grid_group *g = group_find(*group);
    if (g == NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_free",
                        "invalid group (freed already?)");
    groups.slot[(unsigned)*group & HANDLE_INDEX] = NULL;
    free(g);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                              MPI_Group group2, int ranks2[])
{
    GC_ENTER();
    static const char function[] = "MPI_Group_translate_ranks";
    if (!gc_group_is_grid(group1) && !gc_group_is_grid(group2))
        return PMPI_Group_translate_ranks(group1, n, ranks1, group2, ranks2);
    struct gc_ranks a = {0}, b = {0};
    int *pos = NULL;
    int status = gc_group_ranks(group1, MPI_COMM_WORLD, function, &a);
    if (status == MPI_SUCCESS)
        status = gc_group_ranks(group2, MPI_COMM_WORLD, function, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (n < 0 || (n > 0 && (ranks1 == NULL || ranks2 == NULL))) {
        status = gc_error(MPI_COMM_WORLD, MPI_ERR_ARG, function,
                          "invalid count or rank array");
        goto cleanup;
    }
    pos = position_map(&b);
    if (pos == NULL) {
        status =
            gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
        } else if (r < 0 || r >= a.size) {
            status = gc_error(MPI_COMM_WORLD, MPI_ERR_RANK, function,
                              "a rank is not in group1");
            goto cleanup;
        } else {
            ranks2[i] = pos[a.rank[r]] >= 0 ? pos[a.rank[r]] : MPI_UNDEFINED;
        }
    }
cleanup:
    free(pos);
    gc_ranks_free(&a);
    gc_ranks_free(&b);
    return status;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    GC_ENTER();
    static const char function[] = "MPI_Group_compare";
    if (!gc_group_is_grid(group1) && !gc_group_is_grid(group2))
        return PMPI_Group_compare(group1, group2, result);
    struct gc_ranks a = {0}, b = {0};
    int status = gc_group_ranks(group1, MPI_COMM_WORLD, function, &a);
    if (status == MPI_SUCCESS)
        status = gc_group_ranks(group2, MPI_COMM_WORLD, function, &b);
    if (status == MPI_SUCCESS &&
        gc_ranks_compare(&a, &b, result) != MPI_SUCCESS)
        status =
            gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, function, "out of memory");
    gc_ranks_free(&a);
    gc_ranks_free(&b);
    return status;
}

/* Union, intersection or difference, in the order MPI prescribes: group1's
 * members first, in group1's order, then (union) group2's others. */
static int combine(MPI_Group group1, MPI_Group group2, enum set_op op,
                   MPI_Group *newgroup, const char *function)
{
    struct gc_ranks a = {0}, b = {0};
    int *in_a = NULL, *in_b = NULL, *member = NULL, n = 0;
    int status = gc_group_ranks(group1, MPI_COMM_WORLD, function, &a);
    if (status == MPI_SUCCESS)
        status = gc_group_ranks(group2, MPI_COMM_WORLD, function, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    in_a = position_map(&a);
    in_b = position_map(&b);
    member = malloc((size_t)(a.size + b.size) * sizeof *member + 1);
    if (in_a == NULL || in_b == NULL || member == NULL) {
        status =
            gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < a.size; i++)
        if (op == SET_UNION ||
            (in_b[a.rank[i]] >= 0) == (op == SET_INTERSECTION))
            member[n++] = a.rank[i];
    for (int i = 0; i < b.size && op == SET_UNION; i++)
        if (in_a[b.rank[i]] < 0)
            member[n++] = b.rank[i];
    status = gc_group_new(member, n, newgroup);
    if (status != MPI_SUCCESS)
        status = gc_error(MPI_COMM_WORLD, status, function, "out of memory");
cleanup:
    free(in_a);
    free(in_b);
    free(member);
    gc_ranks_free(&a);
    gc_ranks_free(&b);
    return status;
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group1) && !gc_group_is_grid(group2))
        return PMPI_Group_union(group1, group2, newgroup);
    return combine(group1, group2, SET_UNION, newgroup, "MPI_Group_union");
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2,
                           MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group1) && !gc_group_is_grid(group2))
        return PMPI_Group_intersection(group1, group2, newgroup);
    return combine(group1, group2, SET_INTERSECTION, newgroup,
                   "MPI_Group_intersection");
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2,
                         MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group1) && !gc_group_is_grid(group2))
        return PMPI_Group_difference(group1, group2, newgroup);
    return combine(group1, group2, SET_DIFFERENCE, newgroup,
                   "MPI_Group_difference");
}

/*
 * The ranks the triplets (first, last, stride) of MPI_Group_range_incl and
 * _excl denote, each checked against a group of `size`.  More than `size`
 * ranks cannot be distinct, which bounds the list before it is built.
 */
static int expand_ranges(int n, const int ranges[][3], int size, int **ranks,
                         int *count, const char *function)
{
    const char *problem = n < 0 ? "negative number of ranges" : NULL;
    int total = 0;
    for (int i = 0; i < n && problem == NULL; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (first < 0 || first >= size || last < 0 || last >= size)
            problem = "a range leaves the group";
        else if (stride == 0 || (stride > 0 && first > last) ||
                 (stride < 0 && first < last))
            problem = "a range's stride is 0 or points away from its end";
        else if ((total += (last - first) / stride + 1) > size)
            problem = "the ranges name a rank twice";
    }
    if (problem != NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_RANK, function, "%s", problem);
    *ranks = malloc((size_t)total * sizeof **ranks + 1);
    if (*ranks == NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, function,
                        "out of memory");
    *count = 0;
    for (int i = 0; i < n; i++) {
        int steps = (ranges[i][1] - ranges[i][0]) / ranges[i][2];
        for (int k = 0; k <= steps; k++)
            (*ranks)[(*count)++] = ranges[i][0] + k * ranges[i][2];
    }
    return MPI_SUCCESS;
}

/*
 * MPI_Group_incl/_excl and their range forms: the group's members at the
 * given ranks, or all others (in group order).  With `ranges`, n counts
 * triplets and `ranks` is ignored.
 */
static int select_members(MPI_Group group, int n, const int *ranks,
                          const int (*ranges)[3], int exclude,
                          MPI_Group *newgroup, const char *function)
{
    struct gc_ranks g = {0};
    int *expanded = NULL, *member = NULL, count = n;
    char *picked = NULL;
    int status = gc_group_ranks(group, MPI_COMM_WORLD, function, &g);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (ranges != NULL) {
        status = expand_ranges(n, ranges, g.size, &expanded, &count, function);
        if (status != MPI_SUCCESS)
            goto cleanup;
        ranks = expanded;
    }
    if (count < 0 || count > g.size || (count > 0 && ranks == NULL)) {
        status = gc_error(MPI_COMM_WORLD, MPI_ERR_ARG, function,
                          "invalid count or rank array");
        goto cleanup;
    }
    picked = calloc((size_t)g.size + 1, 1);
    member = malloc((size_t)g.size * sizeof *member + 1);
    if (picked == NULL || member == NULL) {
        status =
            gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, function, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < count; i++) {
        if (ranks[i] < 0 || ranks[i] >= g.size || picked[ranks[i]]) {
            status = gc_error(MPI_COMM_WORLD, MPI_ERR_RANK, function,
                              "a rank is outside the group or repeated");
            goto cleanup;
        }
        picked[ranks[i]] = 1;
        member[i] = g.rank[ranks[i]];
    }
    if (exclude) {
        count = 0;
        for (int r = 0; r < g.size; r++)
            if (!picked[r])
                member[count++] = g.rank[r];
    }
    status = gc_group_new(member, count, newgroup);
    if (status != MPI_SUCCESS)
        status = gc_error(MPI_COMM_WORLD, status, function, "out of memory");
cleanup:
    free(picked);
    free(member);
    free(expanded);
    gc_ranks_free(&g);
    return status;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_incl(group, n, ranks, newgroup);
    return select_members(group, n, ranks, NULL, 0, newgroup, "MPI_Group_incl");
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_excl(group, n, ranks, newgroup);
    return select_members(group, n, ranks, NULL, 1, newgroup, "MPI_Group_excl");
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3],
                         MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_range_incl(group, n, ranges, newgroup);
    return select_members(group, n, NULL, (const int(*)[3])ranges, 0, newgroup,
                          "MPI_Group_range_incl");
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3],
                         MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_group_is_grid(group))
        return PMPI_Group_range_excl(group, n, ranges, newgroup);
    return select_members(group, n, NULL, (const int(*)[3])ranges, 1, newgroup,
                          "MPI_Group_range_excl");
}

/* ---- other calls that take a group ---------------------------------------
 *
 * MPICH knows only its own groups.  A grid group whose members are all on
 * this site means the same processes as an MPICH group of them, so it is
 * converted and the call runs in MPICH; one that spans sites cannot be
 * expressed to MPICH: MPI_Comm_create_group and MPI_Comm_create_from_group
 * build a grid communicator then (gc_comm_group.c), the other calls fail
 * naming themselves.
 */

/* *local is `group` itself, or a converted grid group to free afterwards
 * (*converted); MPI_ERR_GROUP (unreported) when it spans sites. */
static int site_group(MPI_Group group, MPI_Group *local, int *converted)
{
    *converted = 0;
    *local = group;
    if (!gc_group_is_grid(group))
        return MPI_SUCCESS;
    struct gc_ranks r;
    int status = gc_group_ranks(group, MPI_COMM_WORLD, "MPI group", &r);
    if (status != MPI_SUCCESS)
        return status;
    status = gc_group_to_site(&r, local);
    gc_ranks_free(&r);
    *converted = status == MPI_SUCCESS && *local != MPI_GROUP_EMPTY;
    return status;
}

static void site_group_free(MPI_Group *local, int converted)
{
    if (converted)
        PMPI_Group_free(local);
}

/* gc_unsupported through a handler the call was given, not a
 * communicator's: a private MPI_COMM_SELF carries it. */
static int unsupported_with(MPI_Errhandler handler, const char *function)
{
    MPI_Comm self;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &self) != MPI_SUCCESS)
        return gc_unsupported(MPI_COMM_WORLD, function);
    PMPI_Comm_set_errhandler(self, handler);
    int code = gc_unsupported(self, function);
    PMPI_Comm_free(&self);
    return code;
}

int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag,
                               MPI_Info info, MPI_Errhandler errhandler,
                               MPI_Comm *newcomm)
{
    GC_ENTER();
    if (gc_group_is_grid(group))
        return gc_comm_from_group_grid(group, stringtag, info, errhandler,
                                       newcomm);
    GC_LEAVE();
    return PMPI_Comm_create_from_group(group, stringtag, info, errhandler,
                                       newcomm);
}

/*
 * MPI_Intercomm_create_from_groups whose groups span sites (MPI 4.1,
 * 7.6.2): the local group's communicator, made as MPI_Comm_create_from_group
 * makes it, then MPI_Intercomm_create over the layer's own grid
 * communicator, which no program message can match, with a tag of the
 * stringtag, which both groups pass, below 32768 (MPI_TAG_UB is at least
 * 32767).
 */
static int intercomm_from_grid_groups(MPI_Group local_group, int local_leader,
                                      MPI_Group remote_group, int remote_leader,
                                      const char *stringtag, MPI_Info info,
                                      MPI_Errhandler errhandler,
                                      MPI_Comm *newintercomm)
{
    static const char function[] = "MPI_Intercomm_create_from_groups";
    struct gc_ranks remote = {0};
    MPI_Comm local = MPI_COMM_NULL;
    int status = MPI_Comm_create_from_group(local_group, stringtag, info,
                                            errhandler, &local);
    if (status != MPI_SUCCESS)
        return status;
    status = gc_group_ranks(remote_group, local, function, &remote);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (remote_leader < 0 || remote_leader >= remote.size) {
        status = gc_error(local, MPI_ERR_RANK, function,
                          "remote_leader is not in remote_group");
        goto cleanup;
    }
    status = MPI_Intercomm_create(
        local, local_leader, gc_world.grid->handle, remote.rank[remote_leader],
        (int)(gc_stringtag_hash(stringtag) % 32768), newintercomm);
    if (status == MPI_SUCCESS)
        status = MPI_Comm_set_errhandler(*newintercomm, errhandler);
cleanup:
    gc_ranks_free(&remote);
    MPI_Comm_free(&local);
    return status;
}

int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                     MPI_Group remote_group, int remote_leader,
                                     const char *stringtag, MPI_Info info,
                                     MPI_Errhandler errhandler,
                                     MPI_Comm *newintercomm)
{
    GC_ENTER();
    MPI_Group local = MPI_GROUP_NULL, remote = MPI_GROUP_NULL;
    int local_converted = 0, remote_converted = 0;
    *newintercomm = MPI_COMM_NULL;
    int status = site_group(local_group, &local, &local_converted);
    if (status == MPI_SUCCESS)
        status = site_group(remote_group, &remote, &remote_converted);
    if (status == MPI_SUCCESS)
        status = PMPI_Intercomm_create_from_groups(
            local, local_leader, remote, remote_leader, stringtag, info,
            errhandler, newintercomm);
    else if (!gc_world.active || stringtag == NULL)
        status =
            unsupported_with(errhandler, "MPI_Intercomm_create_from_groups");
    else
        status = intercomm_from_grid_groups(
            local_group, local_leader, remote_group, remote_leader, stringtag,
            info, errhandler, newintercomm);
    site_group_free(&local, local_converted);
    site_group_free(&remote, remote_converted);
    return status;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                          MPI_Comm *newcomm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c != NULL)
        return gc_comm_create_group_grid(c, group, tag, newcomm);
    MPI_Group local;
    int converted;
    int status = site_group(group, &local, &converted);
    if (status != MPI_SUCCESS)
        return gc_error(comm, MPI_ERR_GROUP, "MPI_Comm_create_group",
                        "the group has members on other sites than the "
                        "communicator's");
    GC_LEAVE(); /* MPICH's alone from here, and it blocks */
    status = PMPI_Comm_create_group(comm, local, tag, newcomm);
    site_group_free(&local, converted);
    return status;
}

/* Windows live on one site (MPI_Win_create fails on a grid communicator),
 * so a group spanning sites is not a subgroup of the window's. */
#define WIN_GROUP_CALL(NAME)                                                   \
    int MPI_##NAME(MPI_Group group, int assert, MPI_Win win)                   \
    {                                                                          \
        GC_ENTER();                                                            \
        MPI_Group local;                                                       \
        int converted;                                                         \
        int status = site_group(group, &local, &converted);                    \
        if (status != MPI_SUCCESS) {                                           \
            fprintf(stderr,                                                    \
                    "gridcoll: grid rank %d: MPI_" #NAME                       \
                    ": the group has members on other sites\n",                \
                    gc_world.grid_rank);                                       \
            PMPI_Win_call_errhandler(win, MPI_ERR_GROUP);                      \
            return MPI_ERR_GROUP;                                              \
        }                                                                      \
        status = PMPI_##NAME(local, assert, win);                              \
        site_group_free(&local, converted);                                    \
        return status;                                                         \
    }

WIN_GROUP_CALL(Win_post)
WIN_GROUP_CALL(Win_start)
