/*
 * comm_check: self-checking test of communicator management, written as an
 * ordinary MPI program (only mpi.h) so it runs unchanged under plain MPICH
 * and under gridrun, where MPI_COMM_WORLD spans several sites.
 *
 *   mpiexec -n 5 comm_check [CASE...]
 *   gridrun --site-sizes 2,1,2 -- comm_check [CASE...]
 *
 * Without arguments every case runs; with arguments only the named ones.
 * Rank 0 prints "OK <case>" once every rank has passed the case; a rank
 * that finds a mismatch prints "FAIL <case>: rank R: ..." and calls
 * MPI_Abort(MPI_COMM_WORLD, 2).
 *
 * Cases (the expected membership and rank order of every new communicator
 * is computed independently on each rank from the color/key rules, never
 * by asking MPI):
 *   world             size, rank, Comm_compare IDENT, traffic on the world
 *   dup               Comm_dup: CONGRUENT, traffic, Comm_free -> COMM_NULL
 *   split_parity      color rank%2, key rank
 *   split_mod3_rev    color rank%3, key -rank (order reversed)
 *   split_reverse     one color, key size-1-rank: SIMILAR to the world
 *   split_undefined   MPI_UNDEFINED -> MPI_COMM_NULL; tied keys are ordered
 *                     by parent rank
 *   split_shared      Comm_split_type(SHARED): all members report the same
 *                     processor name and agree on the member list; MPICH's
 *                     MPIX_COMM_TYPE_NEIGHBORHOOD on the working directory
 *                     gives the same members, MPI_COMM_NULL everywhere when
 *                     one rank names another directory or for an unknown
 *                     hint
 *   groups            Group_incl/excl/range_incl/range_excl/union/
 *                     intersection/difference/translate_ranks/compare
 *   create            Comm_create from reordered, full, partial and empty
 *                     groups, on the world and on a dup
 *   compare           IDENT, CONGRUENT, SIMILAR, UNEQUAL
 *   attributes        keyvals with copy/delete callbacks (dup copies, set
 *                     replaces, delete_attr and free run the delete
 *                     callback), NULL_COPY_FN and DUP_FN, MPI_TAG_UB
 *                     (>= 32767 and usable as a tag)
 *   nested            split of a split, dup of a split, create on a split,
 *                     split of a dup
 *   free_many         many communicators alive at once, freed out of order,
 *                     then created and freed in a loop
 *   isolation         same source and tag on three communicators: each
 *                     message arrives on its own communicator
 *   create_group      Comm_create_group called by the group's members only:
 *                     even ranks reversed and odd ranks at once (two tags),
 *                     the first and last rank on a dup; a negative tag fails
 *   idup              Comm_idup with point-to-point between the call and
 *                     its completion, two idups of two communicators started
 *                     in opposite orders on even and odd ranks, idup of a
 *                     split; Comm_idup_with_info keeps an mpi_assert_ hint;
 *                     idups of the world and of the parity split, all
 *                     outstanding at once (a parity half has one member on
 *                     a site of two: MPICH 4.0.2 looped without end)
 *   info              Comm_set_info/Comm_get_info: an mpi_assert_ hint set
 *                     on a dup is reported, the world's is not set
 *
 * On every new communicator: size and rank, Comm_group translated to the
 * world, a sendrecv ring with wildcard receives whose MPI_SOURCE must be a
 * communicator rank, a barrier, an allreduce and a bcast.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

static int world_rank;
static int world_size;

static const char *compare_name(int result)
{
    switch (result) {
    case MPI_IDENT: return "IDENT";
    case MPI_CONGRUENT: return "CONGRUENT";
    case MPI_SIMILAR: return "SIMILAR";
    case MPI_UNEQUAL: return "UNEQUAL";
    default: return "?";
    }
}

/* ---- expected membership, computed without MPI ------------------------ */

/* A color or key rule: a function of the rank in the parent communicator
 * and the parent's size. */
typedef int (*split_rule)(int parent_rank, int parent_size);

struct split_entry {
    int key;
    int parent_rank;
};

static int by_key_then_parent_rank(const void *a, const void *b)
{
    const struct split_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->parent_rank > y->parent_rank) -
           (x->parent_rank < y->parent_rank);
}

/* The world ranks of my new communicator, in new-rank order, as
 * MPI_Comm_split defines it: members share my color, ordered by key with
 * ties broken by parent rank.  `parent` lists the world ranks of the
 * parent communicator in parent-rank order.  Returns the member count, 0
 * when my color is MPI_UNDEFINED. */
static int split_members(const int *parent, int parent_size, int my_parent_rank,
                         split_rule color, split_rule key, int *members)
{
    int my_color = color(my_parent_rank, parent_size);
    if (my_color == MPI_UNDEFINED)
        return 0;
    struct split_entry *entries = xmalloc(sizeof *entries * parent_size);
    int count = 0;
    for (int p = 0; p < parent_size; p++) {
        if (color(p, parent_size) != my_color)
            continue;
        entries[count].key = key(p, parent_size);
        entries[count].parent_rank = p;
        count++;
    }
    qsort(entries, count, sizeof *entries, by_key_then_parent_rank);
    for (int i = 0; i < count; i++)
        members[i] = parent[entries[i].parent_rank];
    free(entries);
    return count;
}

/* What Comm_compare must say about two distinct handles with these member
 * lists. */
static int expected_compare(const int *a, int na, const int *b, int nb)
{
    if (na != nb)
        return MPI_UNEQUAL;
    if (memcmp(a, b, sizeof *a * na) == 0)
        return MPI_CONGRUENT;
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb && !found; j++)
            found = a[i] == b[j];
        if (!found)
            return MPI_UNEQUAL;
    }
    return MPI_SIMILAR;
}

static int position_of(int world, const int *members, int count)
{
    for (int i = 0; i < count; i++)
        if (members[i] == world)
            return i;
    return -1;
}

static void world_list(int *members)
{
    for (int i = 0; i < world_size; i++)
        members[i] = i;
}

/* ---- exercising a communicator ----------------------------------------- */

static void check_compare(MPI_Comm a, MPI_Comm b, int expected,
                          const char *what)
{
    int result;
    MPI_CHECK(MPI_Comm_compare(a, b, &result));
    CHECK(result == expected, "Comm_compare(%s) = %s, want %s", what,
          compare_name(result), compare_name(expected));
}

/* The group of `comm`, translated to world ranks, must list `members`. */
static void check_group_members(MPI_Comm comm, const int *members, int count,
                                const char *label)
{
    MPI_Group group, world_group;
    MPI_CHECK(MPI_Comm_group(comm, &group));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int group_size, group_rank;
    MPI_CHECK(MPI_Group_size(group, &group_size));
    MPI_CHECK(MPI_Group_rank(group, &group_rank));
    CHECK(group_size == count, "%s: Group_size %d, want %d", label, group_size,
          count);
    CHECK(group_rank == position_of(world_rank, members, count),
          "%s: Group_rank %d, want %d", label, group_rank,
          position_of(world_rank, members, count));
    int *ranks = xmalloc(sizeof *ranks * count);
    int *world = xmalloc(sizeof *world * count);
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    MPI_CHECK(
        MPI_Group_translate_ranks(group, count, ranks, world_group, world));
    for (int i = 0; i < count; i++)
        CHECK(world[i] == members[i], "%s: member %d is world rank %d, want %d",
              label, i, world[i], members[i]);
    free(ranks);
    free(world);
    MPI_CHECK(MPI_Group_free(&group));
    MPI_CHECK(MPI_Group_free(&world_group));
}

/* Size, rank, membership, then traffic: a ring whose wildcard receives
 * must report communicator ranks, a barrier, an allreduce that rebuilds the
 * member list, and a bcast from the last rank. */
static void exercise(MPI_Comm comm, const int *members, int count,
                     const char *label)
{
    CHECK(comm != MPI_COMM_NULL, "%s: got MPI_COMM_NULL, want %d members",
          label, count);
    int size, rank;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    CHECK(size == count, "%s: size %d, want %d", label, size, count);
    int want_rank = position_of(world_rank, members, count);
    CHECK(rank == want_rank, "%s: rank %d, want %d", label, rank, want_rank);
    check_group_members(comm, members, count, label);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[2] = {rank, world_rank}, in[2] = {-1, -1};
    MPI_Status status;
    /* Wildcard source, but a tag only the left neighbour uses: with a
     * wildcard tag too, the right neighbour's message of the next phase
     * could legally match. */
    MPI_CHECK(MPI_Sendrecv(out, 2, MPI_INT, right, 100 + rank, in, 2, MPI_INT,
                           MPI_ANY_SOURCE, 100 + left, comm, &status));
    int received;
    MPI_CHECK(MPI_Get_count(&status, MPI_INT, &received));
    CHECK(status.MPI_SOURCE == left && status.MPI_TAG == 100 + left &&
              received == 2,
          "%s: ring recv source %d tag %d count %d, want %d %d 2", label,
          status.MPI_SOURCE, status.MPI_TAG, received, left, 100 + left);
    CHECK(in[0] == left && in[1] == members[left],
          "%s: ring payload (%d,%d), want (%d,%d)", label, in[0], in[1], left,
          members[left]);
    /* The other direction, wildcard tag: each rank's only message left
     * for me is this one. */
    MPI_CHECK(MPI_Sendrecv(out, 2, MPI_INT, left, 7, in, 2, MPI_INT, right,
                           MPI_ANY_TAG, comm, &status));
    CHECK(status.MPI_SOURCE == right && status.MPI_TAG == 7 && in[0] == right &&
              in[1] == members[right],
          "%s: reverse ring got source %d payload (%d,%d), want %d (%d,%d)",
          label, status.MPI_SOURCE, in[0], in[1], right, right, members[right]);

    MPI_CHECK(MPI_Barrier(comm));

    int *slots = xmalloc(sizeof *slots * size);
    int *sums = xmalloc(sizeof *sums * size);
    for (int i = 0; i < size; i++)
        slots[i] = i == rank ? world_rank + 1 : 0;
    MPI_CHECK(MPI_Allreduce(slots, sums, size, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < size; i++)
        CHECK(sums[i] == members[i] + 1, "%s: allreduce slot %d = %d, want %d",
              label, i, sums[i], members[i] + 1);
    free(slots);
    free(sums);

    int token = rank == size - 1 ? world_rank * 7 + 3 : -1;
    MPI_CHECK(MPI_Bcast(&token, 1, MPI_INT, size - 1, comm));
    CHECK(token == members[size - 1] * 7 + 3, "%s: bcast got %d, want %d",
          label, token, members[size - 1] * 7 + 3);
}

static void free_comm(MPI_Comm *comm)
{
    MPI_CHECK(MPI_Comm_free(comm));
    CHECK(*comm == MPI_COMM_NULL, "Comm_free left the handle non-null");
}

/* Split `parent` (world ranks `parent_members`, my rank `parent_rank`) by
 * the rules, check the result and return it with its expected members. */
static MPI_Comm split_and_exercise(MPI_Comm parent, const int *parent_members,
                                   int parent_size, int parent_rank,
                                   split_rule color, split_rule key,
                                   int *members, int *count, const char *label)
{
    MPI_Comm result;
    MPI_CHECK(MPI_Comm_split(parent, color(parent_rank, parent_size),
                             key(parent_rank, parent_size), &result));
    *count = split_members(parent_members, parent_size, parent_rank, color, key,
                           members);
    if (*count == 0)
        CHECK(result == MPI_COMM_NULL,
              "%s: MPI_UNDEFINED color gave a communicator", label);
    else
        exercise(result, members, *count, label);
    return result;
}

/* ---- color and key rules ------------------------------------------------ */

static int color_zero(int rank, int size)
{
    (void)rank, (void)size;
    return 0;
}
static int color_parity(int rank, int size)
{
    (void)size;
    return rank % 2;
}
static int color_mod3(int rank, int size)
{
    (void)size;
    return rank % 3;
}
/* Colors 0 and 2 only, so color values need not be dense. */
static int color_undefined_for_mod3_1(int rank, int size)
{
    (void)size;
    return rank % 3 == 1 ? MPI_UNDEFINED : rank % 3;
}
static int key_rank(int rank, int size)
{
    (void)size;
    return rank;
}
static int key_negative_rank(int rank, int size)
{
    (void)size;
    return -rank;
}
static int key_reverse(int rank, int size)
{
    return size - 1 - rank;
}
/* Many ties: the order among equal keys must follow the parent rank. */
static int key_parity_ties(int rank, int size)
{
    (void)size;
    return 1 - rank % 2;
}

/* ---- cases -------------------------------------------------------------- */

static void case_world(void)
{
    int *all = xmalloc(sizeof *all * world_size);
    world_list(all);
    check_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_IDENT, "world, world");
    exercise(MPI_COMM_WORLD, all, world_size, "world");
    free(all);
}

static void case_dup(void)
{
    int *all = xmalloc(sizeof *all * world_size);
    world_list(all);
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    check_compare(MPI_COMM_WORLD, dup, MPI_CONGRUENT, "world, dup");
    check_compare(dup, dup, MPI_IDENT, "dup, dup");
    exercise(dup, all, world_size, "dup");
    free_comm(&dup);
    free(all);
}

/* One split of the world, checked and compared with the world. */
static void split_world_case(split_rule color, split_rule key,
                             const char *label)
{
    int *all = xmalloc(sizeof *all * world_size);
    int *members = xmalloc(sizeof *members * world_size);
    world_list(all);
    int count;
    MPI_Comm comm =
        split_and_exercise(MPI_COMM_WORLD, all, world_size, world_rank, color,
                           key, members, &count, label);
    if (comm != MPI_COMM_NULL) {
        check_compare(MPI_COMM_WORLD, comm,
                      expected_compare(all, world_size, members, count), label);
        free_comm(&comm);
    }
    free(members);
    free(all);
}

static void case_split_parity(void)
{
    split_world_case(color_parity, key_rank, "split rank%2");
}

static void case_split_mod3_rev(void)
{
    split_world_case(color_mod3, key_negative_rank, "split rank%3 key -rank");
}

static void case_split_reverse(void)
{
    split_world_case(color_zero, key_reverse, "split key size-1-rank");
}

static void case_split_undefined(void)
{
    split_world_case(color_undefined_for_mod3_1, key_parity_ties,
                     "split with MPI_UNDEFINED");
}

static void case_split_shared(void)
{
    MPI_Comm shared;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                  world_rank, MPI_INFO_NULL, &shared));
    CHECK(shared != MPI_COMM_NULL, "split_type(SHARED) gave MPI_COMM_NULL");
    int size, rank;
    MPI_CHECK(MPI_Comm_size(shared, &size));
    MPI_CHECK(MPI_Comm_rank(shared, &rank));
    CHECK(size >= 1 && size <= world_size && rank >= 0 && rank < size,
          "shared: size %d rank %d", size, rank);

    /* Which ranks share the node is the implementation's business; what
     * must hold is that the members agree on who they are, that I am one
     * of them, and that the key (world rank) orders them. */
    MPI_Group group, world_group;
    MPI_CHECK(MPI_Comm_group(shared, &group));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int *ranks = xmalloc(sizeof *ranks * size);
    int *members = xmalloc(sizeof *members * size);
    int *from_root = xmalloc(sizeof *from_root * size);
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    MPI_CHECK(
        MPI_Group_translate_ranks(group, size, ranks, world_group, members));
    CHECK(members[rank] == world_rank, "shared: member %d is %d, not me (%d)",
          rank, members[rank], world_rank);
    for (int i = 1; i < size; i++)
        CHECK(members[i - 1] < members[i],
              "shared: members not in key order: %d before %d", members[i - 1],
              members[i]);
    memcpy(from_root, members, sizeof *members * size);
    MPI_CHECK(MPI_Bcast(from_root, size, MPI_INT, 0, shared));
    CHECK(memcmp(from_root, members, sizeof *members * size) == 0,
          "shared: members disagree with shared rank 0 on the member list");

    char name[MPI_MAX_PROCESSOR_NAME], root_name[MPI_MAX_PROCESSOR_NAME];
    int length;
    memset(name, 0, sizeof name);
    MPI_CHECK(MPI_Get_processor_name(name, &length));
    memcpy(root_name, name, sizeof name);
    MPI_CHECK(
        MPI_Bcast(root_name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, shared));
    CHECK(strcmp(name, root_name) == 0,
          "shared: processor name '%s', shared rank 0 has '%s'", name,
          root_name);

    exercise(shared, members, size, "split_type shared");
#ifdef MPIX_COMM_TYPE_NEIGHBORHOOD
    /* The processes sharing a directory: this machine's, as for SHARED. */
    static const struct {
        const char *key, *value, *rank1_value;
    } hints[] = {
        {"nbhd_common_dirname", ".", "."},
        {"nbhd_common_dirname", ".", "/"},
        {"mpix_tooth_fairy", "enable", "enable"},
    };
    for (int h = 0; h < 3; h++) {
        MPI_Info info;
        MPI_Comm nbhd;
        int result = MPI_UNEQUAL;
        MPI_CHECK(MPI_Info_create(&info));
        MPI_CHECK(MPI_Info_set(info, hints[h].key,
                               world_rank == 1 ? hints[h].rank1_value
                                               : hints[h].value));
        MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD,
                                      MPIX_COMM_TYPE_NEIGHBORHOOD, world_rank,
                                      info, &nbhd));
        MPI_CHECK(MPI_Info_free(&info));
        if (h == 0) {
            CHECK(nbhd != MPI_COMM_NULL, "neighborhood of '.': MPI_COMM_NULL");
            MPI_CHECK(MPI_Comm_compare(nbhd, shared, &result));
            CHECK(result == MPI_CONGRUENT,
                  "neighborhood of '.' against shared: %s, want CONGRUENT",
                  compare_name(result));
            free_comm(&nbhd);
        } else {
            CHECK(nbhd == MPI_COMM_NULL,
                  "neighborhood with %s: a communicator, want MPI_COMM_NULL",
                  h == 1 ? "mismatched directories" : "an unknown hint");
        }
    }
#endif
    MPI_CHECK(MPI_Group_free(&group));
    MPI_CHECK(MPI_Group_free(&world_group));
    free_comm(&shared);
    free(ranks);
    free(members);
    free(from_root);
}

/* `group` (a subgroup of the world) must hold exactly `want`, in order. */
static void check_group(MPI_Group group, const int *want, int count,
                        const char *label)
{
    MPI_Group world_group;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int size, rank;
    MPI_CHECK(MPI_Group_size(group, &size));
    MPI_CHECK(MPI_Group_rank(group, &rank));
    CHECK(size == count, "%s: Group_size %d, want %d", label, size, count);
    int want_rank = position_of(world_rank, want, count);
    if (want_rank < 0)
        want_rank = MPI_UNDEFINED;
    CHECK(rank == want_rank, "%s: Group_rank %d, want %d", label, rank,
          want_rank);
    int *ranks = xmalloc(sizeof *ranks * (count + 1));
    int *world = xmalloc(sizeof *world * (count + 1));
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    ranks[count] = MPI_PROC_NULL; /* translates to itself */
    MPI_CHECK(
        MPI_Group_translate_ranks(group, count + 1, ranks, world_group, world));
    for (int i = 0; i < count; i++)
        CHECK(world[i] == want[i], "%s: member %d is world %d, want %d", label,
              i, world[i], want[i]);
    CHECK(world[count] == MPI_PROC_NULL, "%s: MPI_PROC_NULL translated to %d",
          label, world[count]);
    free(ranks);
    free(world);
    MPI_CHECK(MPI_Group_free(&world_group));
}

static void check_group_compare(MPI_Group a, MPI_Group b, int expected,
                                const char *label)
{
    int result;
    MPI_CHECK(MPI_Group_compare(a, b, &result));
    CHECK(result == expected, "Group_compare(%s) = %s, want %s", label,
          compare_name(result), compare_name(expected));
}

/* Groups are local objects, but a grid library must build them from the
 * grid membership, not the site's. */
static void case_groups(void)
{
    int n = world_size;
    MPI_Group world_group;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int *all = xmalloc(sizeof *all * n);
    int *evens = xmalloc(sizeof *evens * n);
    int *odds = xmalloc(sizeof *odds * n);
    int *reversed = xmalloc(sizeof *reversed * n);
    int *scratch = xmalloc(sizeof *scratch * n);
    int even_count = 0, odd_count = 0;
    world_list(all);
    for (int r = 0; r < n; r++) {
        if (r % 2 == 0)
            evens[even_count++] = r;
        else
            odds[odd_count++] = r;
        reversed[r] = n - 1 - r;
    }
    check_group(world_group, all, n, "world group");

    MPI_Group even_group, odd_group, reversed_group;
    MPI_CHECK(MPI_Group_incl(world_group, even_count, evens, &even_group));
    check_group(even_group, evens, even_count, "Group_incl evens");
    MPI_CHECK(MPI_Group_excl(world_group, even_count, evens, &odd_group));
    check_group(odd_group, odds, odd_count, "Group_excl evens");
    MPI_CHECK(MPI_Group_incl(world_group, n, reversed, &reversed_group));
    check_group(reversed_group, reversed, n, "Group_incl reversed");
    check_group_compare(reversed_group, world_group,
                        n > 1 ? MPI_SIMILAR : MPI_IDENT, "reversed, world");
    check_group_compare(world_group, world_group, MPI_IDENT, "world, world");
    check_group_compare(even_group, world_group,
                        n > 1 ? MPI_UNEQUAL : MPI_IDENT, "evens, world");

    /* Ranges: stride 2 from 1 must equal the odd ranks; a descending range
     * with stride -3 picks n-1, n-4, ... */
    if (n >= 2) {
        int range[1][3] = {{1, n - 1, 2}};
        MPI_Group range_group;
        MPI_CHECK(MPI_Group_range_incl(world_group, 1, range, &range_group));
        check_group(range_group, odds, odd_count, "Group_range_incl odds");
        check_group_compare(range_group, odd_group, MPI_IDENT,
                            "range odds, excl odds");
        MPI_CHECK(MPI_Group_free(&range_group));
    }
    {
        int range[1][3] = {{n - 1, 0, -3}};
        int count = 0;
        for (int r = n - 1; r >= 0; r -= 3)
            scratch[count++] = r;
        MPI_Group range_group, rest_group;
        MPI_CHECK(MPI_Group_range_incl(world_group, 1, range, &range_group));
        check_group(range_group, scratch, count, "Group_range_incl -3");
        MPI_CHECK(MPI_Group_range_excl(world_group, 1, range, &rest_group));
        int rest = 0;
        for (int r = 0; r < n; r++)
            if ((n - 1 - r) % 3 != 0)
                scratch[rest++] = r;
        check_group(rest_group, scratch, rest, "Group_range_excl -3");
        MPI_CHECK(MPI_Group_free(&range_group));
        MPI_CHECK(MPI_Group_free(&rest_group));
    }

    /* Set operations keep the order of the first group, then the second. */
    MPI_Group united, common, difference, empty_common;
    MPI_CHECK(MPI_Group_union(even_group, odd_group, &united));
    memcpy(scratch, evens, sizeof *evens * even_count);
    memcpy(scratch + even_count, odds, sizeof *odds * odd_count);
    check_group(united, scratch, n, "Group_union evens, odds");
    check_group_compare(united, world_group,
                        expected_compare(scratch, n, all, n) == MPI_CONGRUENT
                            ? MPI_IDENT
                            : MPI_SIMILAR,
                        "union, world");
    MPI_CHECK(MPI_Group_intersection(world_group, reversed_group, &common));
    check_group(common, all, n, "Group_intersection world, reversed");
    MPI_CHECK(MPI_Group_difference(world_group, even_group, &difference));
    check_group(difference, odds, odd_count, "Group_difference world-evens");
    MPI_CHECK(MPI_Group_intersection(even_group, odd_group, &empty_common));
    check_group(empty_common, NULL, 0, "Group_intersection evens, odds");
    check_group_compare(empty_common, MPI_GROUP_EMPTY, MPI_IDENT,
                        "empty intersection, MPI_GROUP_EMPTY");

    /* Translating between two derived groups, including ranks that are
     * absent from the target. */
    for (int r = 0; r < n; r++)
        scratch[r] = r;
    int *translated = xmalloc(sizeof *translated * n);
    MPI_CHECK(MPI_Group_translate_ranks(reversed_group, n, scratch, even_group,
                                        translated));
    for (int r = 0; r < n; r++) {
        int world = n - 1 - r;
        int want = world % 2 == 0 ? world / 2 : MPI_UNDEFINED;
        CHECK(translated[r] == want,
              "translate reversed->evens: rank %d gave %d, want %d", r,
              translated[r], want);
    }
    free(translated);

    MPI_Group *to_free[] = {&even_group,   &odd_group,  &reversed_group,
                            &united,       &common,     &difference,
                            &empty_common, &world_group};
    for (size_t i = 0; i < sizeof to_free / sizeof to_free[0]; i++) {
        MPI_CHECK(MPI_Group_free(to_free[i]));
        CHECK(*to_free[i] == MPI_GROUP_NULL, "Group_free left a handle");
    }
    free(all);
    free(evens);
    free(odds);
    free(reversed);
    free(scratch);
}

/* Comm_create over `parent` with the group of `ranks` (parent ranks, in the
 * new order); `parent_members` are the parent's world ranks. */
static void create_and_exercise(MPI_Comm parent, const int *parent_members,
                                const int *ranks, int count, const char *label)
{
    MPI_Group parent_group, group;
    MPI_CHECK(MPI_Comm_group(parent, &parent_group));
    if (count == 0)
        group = MPI_GROUP_EMPTY;
    else
        MPI_CHECK(MPI_Group_incl(parent_group, count, ranks, &group));
    MPI_Comm comm;
    MPI_CHECK(MPI_Comm_create(parent, group, &comm));
    int *members = xmalloc(sizeof *members * (count + 1));
    for (int i = 0; i < count; i++)
        members[i] = parent_members[ranks[i]];
    if (position_of(world_rank, members, count) < 0) {
        CHECK(comm == MPI_COMM_NULL,
              "%s: non-member got a communicator from Comm_create", label);
    } else {
        exercise(comm, members, count, label);
        free_comm(&comm);
    }
    free(members);
    if (group != MPI_GROUP_EMPTY)
        MPI_CHECK(MPI_Group_free(&group));
    MPI_CHECK(MPI_Group_free(&parent_group));
}

static void case_create(void)
{
    int n = world_size;
    int *all = xmalloc(sizeof *all * n);
    int *ranks = xmalloc(sizeof *ranks * n);
    world_list(all);

    int count = 0;
    for (int r = n - 1; r >= 0; r--)
        if (r % 2 == 0)
            ranks[count++] = r;
    create_and_exercise(MPI_COMM_WORLD, all, ranks, count,
                        "create reversed evens");

    create_and_exercise(MPI_COMM_WORLD, all, all, n, "create full group");
    {
        MPI_Group world_group;
        MPI_Comm full;
        MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
        MPI_CHECK(MPI_Comm_create(MPI_COMM_WORLD, world_group, &full));
        check_compare(MPI_COMM_WORLD, full, MPI_CONGRUENT,
                      "world, create(world group)");
        free_comm(&full);
        MPI_CHECK(MPI_Group_free(&world_group));
    }

    /* On a dup: everyone but rank 0, rotated so rank 0's old neighbour
     * leads.  With one rank the group is empty and the only rank gets
     * MPI_COMM_NULL. */
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    count = 0;
    for (int i = 0; i < n - 1; i++)
        ranks[count++] = 1 + (i + 1) % (n - 1);
    create_and_exercise(dup, all, ranks, count, "create on dup, no rank 0");
    create_and_exercise(dup, all, ranks, 0, "create with MPI_GROUP_EMPTY");
    free_comm(&dup);
    free(all);
    free(ranks);
}

static void case_compare(void)
{
    int n = world_size;
    MPI_Comm dup, reversed, parity;
    check_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_IDENT, "world, world");
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    check_compare(MPI_COMM_WORLD, dup, MPI_CONGRUENT, "world, dup");
    check_compare(dup, MPI_COMM_WORLD, MPI_CONGRUENT, "dup, world");
    check_compare(dup, dup, MPI_IDENT, "dup, dup");
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - world_rank, &reversed));
    check_compare(MPI_COMM_WORLD, reversed, n > 1 ? MPI_SIMILAR : MPI_CONGRUENT,
                  "world, reversed split");
    check_compare(dup, reversed, n > 1 ? MPI_SIMILAR : MPI_CONGRUENT,
                  "dup, reversed split");
    MPI_CHECK(
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &parity));
    check_compare(MPI_COMM_WORLD, parity, n > 1 ? MPI_UNEQUAL : MPI_CONGRUENT,
                  "world, parity split");
    check_compare(reversed, parity, n > 1 ? MPI_UNEQUAL : MPI_CONGRUENT,
                  "reversed split, parity split");

    /* The same members in the same order, built another way: CONGRUENT. */
    MPI_Group world_group, parity_group;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    MPI_CHECK(MPI_Comm_group(parity, &parity_group));
    MPI_Comm parity_again;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank,
                             &parity_again));
    check_compare(parity, parity_again, MPI_CONGRUENT,
                  "parity split, same split again");
    free_comm(&parity_again);
    /* Comm_create is collective over the whole parent, so every rank
     * creates both halves and keeps the one it belongs to. */
    int *ranks_in_half = xmalloc(sizeof *ranks_in_half * n);
    for (int half = 0; half < 2 && half < n; half++) {
        int count = 0;
        for (int r = half; r < n; r += 2)
            ranks_in_half[count++] = r;
        MPI_Group half_group;
        MPI_Comm half_comm;
        MPI_CHECK(
            MPI_Group_incl(world_group, count, ranks_in_half, &half_group));
        MPI_CHECK(MPI_Comm_create(MPI_COMM_WORLD, half_group, &half_comm));
        if (world_rank % 2 == half) {
            check_compare(parity, half_comm, MPI_CONGRUENT,
                          "parity split, create(same group)");
            free_comm(&half_comm);
        } else {
            CHECK(half_comm == MPI_COMM_NULL,
                  "create: non-member got a communicator");
        }
        MPI_CHECK(MPI_Group_free(&half_group));
    }
    free(ranks_in_half);
    MPI_CHECK(MPI_Group_free(&parity_group));
    MPI_CHECK(MPI_Group_free(&world_group));
    free_comm(&dup);
    free_comm(&reversed);
    free_comm(&parity);
}

/* ---- attributes --------------------------------------------------------- */

#define ATTRIBUTE_MAGIC 0x6a77c011

struct attribute_value {
    int magic;
    int generation; /* 0 when set by hand, +1 per copy */
    int owner;      /* world rank that created it */
};

struct callback_counts {
    int copies;
    int deletes;
};

static struct attribute_value *new_attribute(int generation)
{
    struct attribute_value *value = xmalloc(sizeof *value);
    value->magic = ATTRIBUTE_MAGIC;
    value->generation = generation;
    value->owner = world_rank;
    return value;
}

static int copy_attribute(MPI_Comm old_comm, int keyval, void *extra_state,
                          void *value_in, void *value_out, int *flag)
{
    (void)old_comm, (void)keyval;
    struct callback_counts *counts = extra_state;
    struct attribute_value *old = value_in;
    CHECK(old->magic == ATTRIBUTE_MAGIC && old->owner == world_rank,
          "copy callback got a foreign attribute value");
    counts->copies++;
    *(void **)value_out = new_attribute(old->generation + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_attribute(MPI_Comm comm, int keyval, void *value,
                            void *extra_state)
{
    (void)comm, (void)keyval;
    struct callback_counts *counts = extra_state;
    struct attribute_value *attribute = value;
    CHECK(attribute->magic == ATTRIBUTE_MAGIC && attribute->owner == world_rank,
          "delete callback got a foreign attribute value");
    attribute->magic = 0;
    free(attribute);
    counts->deletes++;
    return MPI_SUCCESS;
}

/* The attribute on `comm` under `keyval`: NULL when absent. */
static struct attribute_value *get_attribute(MPI_Comm comm, int keyval)
{
    void *value = NULL;
    int flag = -1;
    MPI_CHECK(MPI_Comm_get_attr(comm, keyval, &value, &flag));
    CHECK(flag == 0 || flag == 1, "Comm_get_attr flag %d", flag);
    if (!flag)
        return NULL;
    struct attribute_value *attribute = value;
    CHECK(attribute->magic == ATTRIBUTE_MAGIC,
          "Comm_get_attr returned a value that is not ours");
    return attribute;
}

static void check_counts(const struct callback_counts *counts, int copies,
                         int deletes, const char *when)
{
    CHECK(counts->copies == copies && counts->deletes == deletes,
          "%s: %d copies and %d deletes, want %d and %d", when, counts->copies,
          counts->deletes, copies, deletes);
}

static void attribute_lifecycle(MPI_Comm base, const char *label)
{
    char when[160];
    struct callback_counts counts = {0, 0};
    int keyval;
    MPI_CHECK(MPI_Comm_create_keyval(copy_attribute, delete_attribute, &keyval,
                                     &counts));

    MPI_Comm first, second;
    MPI_CHECK(MPI_Comm_dup(base, &first));
    CHECK(get_attribute(first, keyval) == NULL,
          "%s: fresh communicator already has the attribute", label);
    struct attribute_value *original = new_attribute(0);
    MPI_CHECK(MPI_Comm_set_attr(first, keyval, original));
    CHECK(get_attribute(first, keyval) == original,
          "%s: Comm_get_attr did not return the value set", label);

    MPI_CHECK(MPI_Comm_dup(first, &second));
    snprintf(when, sizeof when, "%s: after Comm_dup", label);
    check_counts(&counts, 1, 0, when);
    struct attribute_value *copied = get_attribute(second, keyval);
    CHECK(copied != NULL && copied != original && copied->generation == 1,
          "%s: dup did not carry a fresh copy of the attribute", label);
    CHECK(get_attribute(first, keyval) == original,
          "%s: dup changed the original's attribute", label);

    /* Setting over an existing value deletes the old one first. */
    MPI_CHECK(MPI_Comm_set_attr(first, keyval, new_attribute(5)));
    snprintf(when, sizeof when, "%s: after replacing with set_attr", label);
    check_counts(&counts, 1, 1, when);
    MPI_CHECK(MPI_Comm_delete_attr(second, keyval));
    snprintf(when, sizeof when, "%s: after Comm_delete_attr", label);
    check_counts(&counts, 1, 2, when);
    CHECK(get_attribute(second, keyval) == NULL,
          "%s: attribute still present after Comm_delete_attr", label);
    free_comm(&first);
    snprintf(when, sizeof when, "%s: after freeing the holder", label);
    check_counts(&counts, 1, 3, when);
    free_comm(&second);
    snprintf(when, sizeof when, "%s: after freeing a comm without it", label);
    check_counts(&counts, 1, 3, when);

    MPI_CHECK(MPI_Comm_free_keyval(&keyval));
    CHECK(keyval == MPI_KEYVAL_INVALID,
          "%s: Comm_free_keyval left the keyval valid", label);
}

static void case_attributes(void)
{
    int *tag_ub = NULL;
    int flag = 0;
    MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && tag_ub != NULL && *tag_ub >= 32767,
          "MPI_TAG_UB: flag %d value %d, want >= 32767", flag,
          flag && tag_ub ? *tag_ub : -1);
    /* The advertised bound must be usable across the whole world. */
    int right = (world_rank + 1) % world_size;
    int left = (world_rank + world_size - 1) % world_size;
    int out = world_rank, in = -1;
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv(&out, 1, MPI_INT, right, *tag_ub, &in, 1, MPI_INT,
                           left, *tag_ub, MPI_COMM_WORLD, &status));
    CHECK(in == left && status.MPI_TAG == *tag_ub,
          "message with tag MPI_TAG_UB (%d): got %d tag %d", *tag_ub, in,
          status.MPI_TAG);

    attribute_lifecycle(MPI_COMM_WORLD, "on dups of the world");
    MPI_Comm reversed;
    MPI_CHECK(
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &reversed));
    attribute_lifecycle(reversed, "on dups of a reversed split");

    /* The predefined copy functions: NULL_COPY drops, DUP_FN shares. */
    int dropped, shared;
    static int marker;
    MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                     MPI_COMM_NULL_DELETE_FN, &dropped, NULL));
    MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN,
                                     &shared, NULL));
    MPI_CHECK(MPI_Comm_set_attr(reversed, dropped, &marker));
    MPI_CHECK(MPI_Comm_set_attr(reversed, shared, &marker));
    MPI_Comm copy;
    MPI_CHECK(MPI_Comm_dup(reversed, &copy));
    void *value = NULL;
    MPI_CHECK(MPI_Comm_get_attr(copy, dropped, &value, &flag));
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN attribute survived Comm_dup");
    MPI_CHECK(MPI_Comm_get_attr(copy, shared, &value, &flag));
    CHECK(flag && value == &marker,
          "MPI_COMM_DUP_FN attribute not shared by Comm_dup");
    int *members = xmalloc(sizeof *members * world_size);
    for (int i = 0; i < world_size; i++)
        members[i] = world_size - 1 - i;
    exercise(copy, members, world_size, "dup of reversed split with attrs");
    free(members);
    free_comm(&copy);
    free_comm(&reversed);
    MPI_CHECK(MPI_Comm_free_keyval(&dropped));
    MPI_CHECK(MPI_Comm_free_keyval(&shared));
}

static void case_nested(void)
{
    int n = world_size;
    int *all = xmalloc(sizeof *all * n);
    int *outer = xmalloc(sizeof *outer * n);
    int *inner = xmalloc(sizeof *inner * n);
    int *ranks = xmalloc(sizeof *ranks * n);
    world_list(all);
    int outer_count, inner_count, outer_rank;

    MPI_Comm outer_comm = split_and_exercise(
        MPI_COMM_WORLD, all, n, world_rank, color_parity, key_negative_rank,
        outer, &outer_count, "split rank%2 key -rank");
    MPI_CHECK(MPI_Comm_rank(outer_comm, &outer_rank));

    MPI_Comm inner_comm = split_and_exercise(
        outer_comm, outer, outer_count, outer_rank, color_parity,
        key_negative_rank, inner, &inner_count, "split of that split");

    MPI_Comm dup_of_split;
    MPI_CHECK(MPI_Comm_dup(outer_comm, &dup_of_split));
    exercise(dup_of_split, outer, outer_count, "dup of split");
    check_compare(outer_comm, dup_of_split, MPI_CONGRUENT,
                  "split, dup of split");

    MPI_Comm dup_of_inner;
    MPI_CHECK(MPI_Comm_dup(inner_comm, &dup_of_inner));
    exercise(dup_of_inner, inner, inner_count, "dup of split of split");

    /* Comm_create on the split: all but its rank 0, in reverse. */
    int count = 0;
    for (int r = outer_count - 1; r >= 1; r--)
        ranks[count++] = r;
    create_and_exercise(outer_comm, outer, ranks, count,
                        "create on split, reversed, no rank 0");

    /* Split of a dup of the world, interleaving the other way. */
    MPI_Comm world_dup;
    int mod3_count;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world_dup));
    MPI_Comm mod3_comm = split_and_exercise(
        world_dup, all, n, world_rank, color_mod3, key_reverse, ranks,
        &mod3_count, "split rank%3 of a dup");

    free_comm(&mod3_comm);
    free_comm(&world_dup);
    free_comm(&dup_of_inner);
    free_comm(&dup_of_split);
    free_comm(&inner_comm);
    free_comm(&outer_comm);
    free(all);
    free(outer);
    free(inner);
    free(ranks);
}

/* Context ids must be recycled correctly: many communicators alive at once,
 * used in an order unlike their creation, freed out of order. */
static void case_free_many(void)
{
    enum { ALIVE = 10, LOOPS = 12 };
    MPI_Comm comms[ALIVE];
    for (int i = 0; i < ALIVE; i++) {
        if (i % 3 == 2)
            MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank,
                                     &comms[i]));
        else
            MPI_CHECK(
                MPI_Comm_dup(i % 2 ? comms[i - 1] : MPI_COMM_WORLD, &comms[i]));
    }
    for (int step = 0; step < ALIVE; step++) {
        /* 7 and 3 are coprime with ALIVE: each visits every index once. */
        int i = (step * 7) % ALIVE;
        int value = world_rank + i, sum = -1;
        MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comms[i]));
        int want = world_size * (world_size - 1) / 2 + world_size * i;
        CHECK(sum == want, "allreduce on communicator %d gave %d, want %d", i,
              sum, want);
    }
    for (int step = 0; step < ALIVE; step++)
        free_comm(&comms[(step * 3) % ALIVE]);

    for (int loop = 0; loop < LOOPS; loop++) {
        MPI_Comm comm;
        if (loop % 2)
            MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
        else
            MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2,
                                     -world_rank, &comm));
        int size, value = 1, sum = -1;
        MPI_CHECK(MPI_Comm_size(comm, &size));
        MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm));
        CHECK(sum == size, "loop %d: allreduce %d, want %d", loop, sum, size);
        free_comm(&comm);
    }
}

/* Three messages from the same source with the same tag, one per
 * communicator, received in the opposite order from the sends: each must
 * arrive on its own communicator. */
static void case_isolation(void)
{
    MPI_Comm dup, reversed;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - 1 - world_rank,
                             &reversed));
    int right = (world_rank + 1) % world_size;
    int left = (world_rank + world_size - 1) % world_size;
    MPI_Comm comms[3] = {MPI_COMM_WORLD, dup, reversed};
    int to[3] = {right, right, world_size - 1 - right};
    int from[3] = {left, left, world_size - 1 - left};
    int out[3], in[3] = {-1, -1, -1};
    MPI_Request requests[6];
    for (int c = 2; c >= 0; c--)
        MPI_CHECK(
            MPI_Irecv(&in[c], 1, MPI_INT, from[c], 42, comms[c], &requests[c]));
    for (int c = 0; c < 3; c++) {
        out[c] = world_rank * 10 + c;
        MPI_CHECK(MPI_Isend(&out[c], 1, MPI_INT, to[c], 42, comms[c],
                            &requests[3 + c]));
    }
    /* Real status arrays: gcc 12 flags MPI_STATUSES_IGNORE
     * ((MPI_Status *)1) as a zero-size region with -Wstringop-overflow. */
    MPI_Status statuses[6];
    MPI_CHECK(MPI_Waitall(6, requests, statuses));
    for (int c = 0; c < 3; c++)
        CHECK(in[c] == left * 10 + c,
              "communicator %d received %d, want %d (crossed communicators)", c,
              in[c], left * 10 + c);

    /* Blocking, wildcard source: a message on the dup must not satisfy a
     * receive on the world even though it was sent first. */
    int first = world_rank * 10 + 7, second = world_rank * 10 + 8;
    MPI_Request sends[2];
    MPI_CHECK(MPI_Isend(&first, 1, MPI_INT, right, 5, dup, &sends[0]));
    MPI_CHECK(
        MPI_Isend(&second, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &sends[1]));
    int got_world = -1, got_dup = -1;
    MPI_Status status;
    MPI_CHECK(MPI_Recv(&got_world, 1, MPI_INT, MPI_ANY_SOURCE, 5,
                       MPI_COMM_WORLD, &status));
    MPI_CHECK(MPI_Recv(&got_dup, 1, MPI_INT, MPI_ANY_SOURCE, 5, dup, &status));
    MPI_CHECK(MPI_Waitall(2, sends, statuses));
    CHECK(got_world == left * 10 + 8 && got_dup == left * 10 + 7,
          "wildcard receives got world=%d dup=%d, want %d and %d", got_world,
          got_dup, left * 10 + 8, left * 10 + 7);
    free_comm(&dup);
    free_comm(&reversed);
}

/* ---- MPI-3/4 constructors: create_group, idup, info ------------------- */

/* Members: world ranks `members` (count), tag `tag`; only members call. */
static void create_group_and_exercise(MPI_Comm parent, const int *members,
                                      int count, int tag, const char *label)
{
    if (position_of(world_rank, members, count) < 0)
        return;
    MPI_Group world_group, group;
    MPI_Comm result;
    /* parent's own group (its ranks are world ranks): MPICH 4.0.2 crashes
     * on a group made from another communicator's. */
    MPI_CHECK(MPI_Comm_group(parent, &world_group));
    MPI_CHECK(MPI_Group_incl(world_group, count, members, &group));
    MPI_CHECK(MPI_Comm_create_group(parent, group, tag, &result));
    exercise(result, members, count, label);
    free_comm(&result);
    MPI_CHECK(MPI_Group_free(&group));
    MPI_CHECK(MPI_Group_free(&world_group));
}

static void case_create_group(void)
{
    int *even = xmalloc(sizeof *even * world_size);
    int *odd = xmalloc(sizeof *odd * world_size);
    int n_even = 0, n_odd = 0;
    for (int r = world_size - 1; r >= 0; r--)
        if (r % 2 == 0)
            even[n_even++] = r;
    for (int r = 0; r < world_size; r++)
        if (r % 2 == 1)
            odd[n_odd++] = r;
    /* Disjoint groups at once, told apart by their tags. */
    create_group_and_exercise(MPI_COMM_WORLD, even, n_even, 11,
                              "even ranks reversed");
    if (n_odd > 0)
        create_group_and_exercise(MPI_COMM_WORLD, odd, n_odd, 12, "odd ranks");

    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int ends[2] = {0, world_size - 1};
    create_group_and_exercise(dup, ends, world_size > 1 ? 2 : 1, 0,
                              "first and last on a dup");

    /* A negative tag: every member fails alike, nobody waits. */
    MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    if (world_rank == 0 || world_rank == world_size - 1) {
        MPI_Group world_group, group;
        MPI_Comm result = MPI_COMM_NULL;
        MPI_CHECK(MPI_Comm_group(dup, &world_group));
        MPI_CHECK(
            MPI_Group_incl(world_group, world_size > 1 ? 2 : 1, ends, &group));
        int rc = MPI_Comm_create_group(dup, group, -5, &result);
        CHECK(rc != MPI_SUCCESS && result == MPI_COMM_NULL,
              "a negative tag was accepted (rc %d)", rc);
        MPI_CHECK(MPI_Group_free(&group));
        MPI_CHECK(MPI_Group_free(&world_group));
    }
    free_comm(&dup);
    free(even);
    free(odd);
}

/* The value of `key` in comm's info ("" when absent). */
static void info_value(MPI_Comm comm, const char *key, char *value, int size)
{
    MPI_Info info;
    int flag = 0;
    MPI_CHECK(MPI_Comm_get_info(comm, &info));
    MPI_CHECK(MPI_Info_get(info, key, size - 1, value, &flag));
    if (!flag)
        value[0] = '\0';
    MPI_CHECK(MPI_Info_free(&info));
}

static void case_idup(void)
{
    int *world = xmalloc(sizeof *world * world_size);
    world_list(world);
    int right = (world_rank + 1) % world_size;
    int left = (world_rank + world_size - 1) % world_size;

    /* Messages between the start and the completion must not deadlock. */
    MPI_Comm copy;
    MPI_Request requests[3];
    int out = world_rank, in = -1;
    MPI_CHECK(
        MPI_Irecv(&in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &requests[0]));
    MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &copy, &requests[1]));
    MPI_CHECK(
        MPI_Isend(&out, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &requests[2]));
    MPI_Status statuses[3];
    MPI_CHECK(MPI_Waitall(3, requests, statuses));
    CHECK(in == left, "message around the idup: %d, want %d", in, left);
    exercise(copy, world, world_size, "idup of the world");
    check_compare(copy, MPI_COMM_WORLD, MPI_CONGRUENT, "idup, world");

    /* Two communicators duplicated in opposite orders by even and odd
     * ranks (MPI orders collectives per communicator only). */
    MPI_Comm a, b, a2 = MPI_COMM_NULL, b2 = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    MPI_CHECK(
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - 1 - world_rank, &b));
    if (world_rank % 2 == 0) {
        MPI_CHECK(MPI_Comm_idup(a, &a2, &requests[0]));
        MPI_CHECK(MPI_Comm_idup(b, &b2, &requests[1]));
    } else {
        MPI_CHECK(MPI_Comm_idup(b, &b2, &requests[1]));
        MPI_CHECK(MPI_Comm_idup(a, &a2, &requests[0]));
    }
    MPI_CHECK(MPI_Waitall(2, requests, statuses));
    int *reversed = xmalloc(sizeof *reversed * world_size);
    for (int i = 0; i < world_size; i++)
        reversed[i] = world_size - 1 - i;
    exercise(a2, world, world_size, "idup of a dup");
    exercise(b2, reversed, world_size, "idup of a reversed split");

    /* A hint given to idup_with_info is the new communicator's. */
    MPI_Info info;
    MPI_Comm hinted;
    char value[MPI_MAX_INFO_VAL + 1];
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    MPI_CHECK(MPI_Comm_idup_with_info(b, info, &hinted, &requests[0]));
    MPI_CHECK(MPI_Info_free(&info)); /* allowed before completion */
    MPI_CHECK(MPI_Wait(&requests[0], MPI_STATUS_IGNORE));
    info_value(hinted, "mpi_assert_no_any_tag", value, sizeof value);
    CHECK(strcmp(value, "true") == 0,
          "idup_with_info: mpi_assert_no_any_tag is '%s', want 'true'", value);
    exercise(hinted, reversed, world_size, "idup_with_info");

    /* Duplications of communicators with one member on a site beside
     * duplications of communicators with several, all outstanding. */
    enum { ROUNDS = 4 };
    int *half = xmalloc(sizeof *half * world_size);
    int half_size = 0;
    MPI_Comm parity = split_and_exercise(MPI_COMM_WORLD, world, world_size,
                                         world_rank, color_parity, key_rank,
                                         half, &half_size, "parity split");
    MPI_Comm copies[2 * ROUNDS];
    MPI_Request pending[2 * ROUNDS];
    MPI_Status done[2 * ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        MPI_CHECK(
            MPI_Comm_idup(MPI_COMM_WORLD, &copies[2 * i], &pending[2 * i]));
        MPI_CHECK(
            MPI_Comm_idup(parity, &copies[2 * i + 1], &pending[2 * i + 1]));
    }
    MPI_CHECK(MPI_Waitall(2 * ROUNDS, pending, done));
    for (int i = 0; i < ROUNDS; i++) {
        exercise(copies[2 * i], world, world_size, "interleaved idup, world");
        exercise(copies[2 * i + 1], half, half_size,
                 "interleaved idup, parity split");
        free_comm(&copies[2 * i]);
        free_comm(&copies[2 * i + 1]);
    }
    free_comm(&parity);
    free(half);

    free_comm(&hinted);
    free_comm(&a2);
    free_comm(&b2);
    free_comm(&a);
    free_comm(&b);
    free_comm(&copy);
    free(reversed);
    free(world);
}

static void case_info(void)
{
    char value[MPI_MAX_INFO_VAL + 1];
    MPI_Comm dup;
    MPI_Info info;
    info_value(MPI_COMM_WORLD, "mpi_assert_no_any_source", value, sizeof value);
    CHECK(value[0] == '\0' || strcmp(value, "false") == 0,
          "the world says mpi_assert_no_any_source '%s'", value);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "true"));
    MPI_CHECK(MPI_Comm_set_info(dup, info));
    MPI_CHECK(MPI_Info_free(&info));
    info_value(dup, "mpi_assert_no_any_source", value, sizeof value);
    CHECK(strcmp(value, "true") == 0,
          "set_info: mpi_assert_no_any_source is '%s', want 'true'", value);
    int *world = xmalloc(sizeof *world * world_size);
    world_list(world);
    exercise(dup, world, world_size, "dup with a hint");
    free_comm(&dup);
    free(world);
}

/* ---- driver ------------------------------------------------------------- */

struct test_case {
    const char *name;
    void (*run)(void);
};

static const struct test_case cases[] = {
    {"world", case_world},
    {"dup", case_dup},
    {"split_parity", case_split_parity},
    {"split_mod3_rev", case_split_mod3_rev},
    {"split_reverse", case_split_reverse},
    {"split_undefined", case_split_undefined},
    {"split_shared", case_split_shared},
    {"groups", case_groups},
    {"create", case_create},
    {"compare", case_compare},
    {"attributes", case_attributes},
    {"nested", case_nested},
    {"free_many", case_free_many},
    {"isolation", case_isolation},
    {"create_group", case_create_group},
    {"idup", case_idup},
    {"info", case_info},
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    check_setup(world_rank, 0, NULL);

    for (int i = 1; i < argc; i++) {
        int known = 0;
        for (int c = 0; c < CASE_COUNT; c++)
            known |= strcmp(argv[i], cases[c].name) == 0;
        if (!known) {
            if (world_rank == 0)
                fprintf(stderr, "comm_check: unknown case '%s'\n", argv[i]);
            MPI_Finalize();
            return 1;
        }
    }

    for (int c = 0; c < CASE_COUNT; c++) {
        if (!case_selected(cases[c].name, argc, argv))
            continue;
        begin("%s", cases[c].name);
        cases[c].run();
        passed();
    }
    MPI_Finalize();
    return 0;
}
