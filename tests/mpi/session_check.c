/*
 * session_check: MPI-4 sessions and the site as a hardware level across
 * sites, as an ordinary MPI program (only mpi.h), run under gridrun on
 * several sites; what it expects of the layout comes from the environment
 * gridrun and mpiexec set (GRIDCOLL_SITE_OFFSET, GRIDCOLL_SITE_SIZE,
 * GRIDCOLL_WORLD_SIZE, PMI_RANK: the rank in the site), never from the
 * calls under test.
 *
 *   gridrun --site-sizes 2,1,2 -- session_check
 *
 * The cases run in this order, each printing "OK <case>" from grid rank 0
 * once every rank passed it; a mismatch prints "FAIL <case>: rank R: ..."
 * and aborts (status 2):
 *   psets          a session alone (no MPI_Init): three process sets,
 *                  mpi://WORLD, mpi://SELF, gridcoll://site, their names'
 *                  lengths and mpi_size, names without regard to case
 *                  (an unknown name is not tried: MPICH 4.0.2 aborts on
 *                  it even under MPI_ERRORS_RETURN)
 *   session_world  MPI_Comm_create_from_group of mpi://WORLD: the grid
 *                  world (size, rank = grid rank, members), a ring and an
 *                  allreduce; of gridcoll://site: this site's ranks
 *   threads        the session asked for MPI_THREAD_MULTIPLE and has it;
 *                  four threads run rings of sendrecvs on their own
 *                  duplicates of the world communicator at once
 *   from_group     MPI_Comm_create_from_group of a group spanning sites
 *                  (every other grid rank, reversed) from a second session,
 *                  two creations with distinct stringtags back to back
 *   intercomm_from_groups  MPI_Intercomm_create_from_groups of the even
 *                  against the odd grid ranks (both span sites): sizes,
 *                  the remote group, an exchange with statuses
 *   with_init      MPI_Init after the sessions: MPI_COMM_WORLD is the same
 *                  grid (CONGRUENT with the session's world communicator)
 *   hw_unguided    MPI_COMM_TYPE_HW_UNGUIDED: grid -> site (members, and
 *                  mpi_hw_resource_type = gridcoll://site in the info passed
 *                  and in the new communicator's); from the site, a strict
 *                  subset or MPI_COMM_NULL
 *   hw_guided      MPI_COMM_TYPE_HW_GUIDED with gridcoll://site: the site;
 *                  with an unknown resource type: MPI_COMM_NULL;
 *                  MPI_COMM_TYPE_SHARED still gives a part of the site
 *
 * On every new communicator: size, rank and members (its group translated
 * to a group of mpi://WORLD), a ring of sendrecvs carrying (rank, grid
 * rank) with wildcard sources, an allreduce of grid ranks, a bcast.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

static int grid_rank = -1, grid_size, site_offset, site_size;
static MPI_Group world_group = MPI_GROUP_NULL; /* of mpi://WORLD */

static int env_int(const char *name)
{
    const char *value = getenv(name);
    if (value == NULL) {
        fprintf(stderr, "session_check: %s is not set (run under gridrun)\n",
                name);
        exit(1);
    }
    return atoi(value);
}

static int position_of(int rank, const int *members, int count)
{
    for (int i = 0; i < count; i++)
        if (members[i] == rank)
            return i;
    return -1;
}

/* Group g's members are grid ranks members[0..count-1], in rank order. */
static void check_group_members(MPI_Group g, const int *members, int count,
                                const char *label)
{
    int *ranks = xmalloc(sizeof(int) * (size_t)count);
    int *grid = xmalloc(sizeof(int) * (size_t)count);
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    MPI_CHECK(MPI_Group_translate_ranks(g, count, ranks, world_group, grid));
    for (int i = 0; i < count; i++)
        CHECK(grid[i] == members[i], "%s: member %d is grid rank %d, want %d",
              label, i, grid[i], members[i]);
    free(ranks);
    free(grid);
}

/* Size, rank, members (grid ranks, by rank), then traffic. */
static void exercise(MPI_Comm comm, const int *members, int count,
                     const char *label)
{
    CHECK(comm != MPI_COMM_NULL, "%s: MPI_COMM_NULL", label);
    int size, rank;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    CHECK(size == count, "%s: size %d, want %d", label, size, count);
    CHECK(rank == position_of(grid_rank, members, count),
          "%s: rank %d, want %d", label, rank,
          position_of(grid_rank, members, count));

    MPI_Group group;
    MPI_CHECK(MPI_Comm_group(comm, &group));
    check_group_members(group, members, count, label);
    MPI_CHECK(MPI_Group_free(&group));

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[2] = {rank, grid_rank}, in[2] = {-1, -1};
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv(out, 2, MPI_INT, right, 7, in, 2, MPI_INT,
                           MPI_ANY_SOURCE, 7, comm, &status));
    CHECK(status.MPI_SOURCE == left && in[0] == left && in[1] == members[left],
          "%s: ring got (%d,%d) from %d, want (%d,%d) from %d", label, in[0],
          in[1], status.MPI_SOURCE, left, members[left], left);

    long sum = 0, want = 0;
    long mine = grid_rank;
    for (int i = 0; i < count; i++)
        want += members[i];
    MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
    CHECK(sum == want, "%s: allreduce %ld, want %ld", label, sum, want);

    int root_grid = rank == size - 1 ? grid_rank : -1;
    MPI_CHECK(MPI_Bcast(&root_grid, 1, MPI_INT, size - 1, comm));
    CHECK(root_grid == members[size - 1], "%s: bcast %d, want %d", label,
          root_grid, members[size - 1]);
}

static void site_members(int *members)
{
    for (int i = 0; i < site_size; i++)
        members[i] = site_offset + i;
}

/* ---- sessions alone ---------------------------------------------------- */

static MPI_Session session = MPI_SESSION_NULL, session2 = MPI_SESSION_NULL;
static MPI_Comm session_world = MPI_COMM_NULL;

static void check_pset_size(const char *name, int want)
{
    MPI_Info info;
    char value[32];
    int flag = 0;
    MPI_CHECK(MPI_Session_get_pset_info(session, name, &info));
    MPI_CHECK(
        MPI_Info_get(info, "mpi_size", (int)sizeof value - 1, value, &flag));
    CHECK(flag && atoi(value) == want, "%s: mpi_size %s, want %d", name,
          flag ? value : "(none)", want);
    MPI_CHECK(MPI_Info_free(&info));
}

static void case_psets(void)
{
    static const char *const want[] = {"mpi://WORLD", "mpi://SELF",
                                       "gridcoll://site"};
    int count = 0;
    MPI_CHECK(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &count));
    CHECK(count == 3, "%d process sets, want 3", count);
    for (int i = 0; i < count; i++) {
        char name[64];
        int length = 0;
        MPI_CHECK(
            MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &length, NULL));
        CHECK(length == (int)strlen(want[i]) + 1, "pset %d: length %d, want %d",
              i, length, (int)strlen(want[i]) + 1);
        MPI_CHECK(
            MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &length, name));
        CHECK(strcmp(name, want[i]) == 0, "pset %d is %s, want %s", i, name,
              want[i]);
    }
    check_pset_size("mpi://WORLD", grid_size);
    check_pset_size("mpi://SELF", 1);
    check_pset_size("gridcoll://site", site_size);
    check_pset_size("MPI://world", grid_size); /* names ignore case */
}

static void case_session_world(void)
{
    int *members = malloc(sizeof(int) * (size_t)grid_size);
    CHECK(members != NULL, "out of memory");
    for (int i = 0; i < grid_size; i++)
        members[i] = i;
    exercise(session_world, members, grid_size, "mpi://WORLD");

    MPI_Group site_group;
    MPI_Comm site;
    MPI_CHECK(
        MPI_Group_from_session_pset(session, "gridcoll://site", &site_group));
    MPI_CHECK(MPI_Comm_create_from_group(site_group, "session_check/site",
                                         MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                         &site));
    site_members(members);
    exercise(site, members, site_size, "gridcoll://site");
    MPI_CHECK(MPI_Comm_free(&site));
    MPI_CHECK(MPI_Group_free(&site_group));
    free(members);
}

/* ---- threads ------------------------------------------------------------ */

enum { THREADS = 4, THREAD_ITERS = 40, THREAD_BIG = 16384 };
static MPI_Comm thread_comm[THREADS];

static unsigned char thread_byte(int from, int thread, int iter, size_t i)
{
    return (unsigned char)(from * 131 + thread * 29 + iter * 7 + i * 3 + 1);
}

/* A ring of sendrecvs on the thread's own communicator, checked byte for
 * byte: the threads are in the layer at once. */
static void *thread_ring(void *arg)
{
    int t = (int)(intptr_t)arg;
    int next = (grid_rank + 1) % grid_size;
    int prev = (grid_rank + grid_size - 1) % grid_size;
    unsigned char *out = xmalloc(THREAD_BIG), *in = xmalloc(THREAD_BIG);
    for (int iter = 0; iter < THREAD_ITERS; iter++) {
        int len = iter % 4 == 0 ? THREAD_BIG : 8 + iter;
        for (int i = 0; i < len; i++)
            out[i] = thread_byte(grid_rank, t, iter, (size_t)i);
        MPI_Status st;
        int count;
        MPI_CHECK(MPI_Sendrecv(out, len, MPI_BYTE, next, iter, in, THREAD_BIG,
                               MPI_BYTE, prev, iter, thread_comm[t], &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(st.MPI_SOURCE == prev && count == len,
              "thread %d iteration %d: source %d count %d, want %d %d", t, iter,
              st.MPI_SOURCE, count, prev, len);
        for (int i = 0; i < len; i++)
            CHECK(in[i] == thread_byte(prev, t, iter, (size_t)i),
                  "thread %d iteration %d: byte %d is %u", t, iter, i, in[i]);
    }
    free(out);
    free(in);
    return NULL;
}

/* The session asked for MPI_THREAD_MULTIPLE (main): it has it, and
 * threads use the grid at once. */
static void case_threads(void)
{
    MPI_Info info;
    char level[32];
    int len = (int)sizeof level, flag = 0;
    MPI_CHECK(MPI_Session_get_info(session, &info));
    MPI_CHECK(MPI_Info_get_string(info, "thread_level", &len, level, &flag));
    MPI_CHECK(MPI_Info_free(&info));
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0,
          "session thread_level %s, want MPI_THREAD_MULTIPLE",
          flag ? level : "(none)");
    pthread_t id[THREADS];
    for (int t = 0; t < THREADS; t++)
        MPI_CHECK(MPI_Comm_dup(session_world, &thread_comm[t]));
    for (intptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&id[t], NULL, thread_ring, (void *)t) == 0,
              "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(id[t], NULL);
    for (int t = 0; t < THREADS; t++)
        MPI_CHECK(MPI_Comm_free(&thread_comm[t]));
}

static void case_from_group(void)
{
    /* Every other grid rank, the last first: spans sites on every layout
     * of the tests (uneven sites interleave with it). */
    int n = (grid_size + 1) / 2;
    int *ranks = malloc(sizeof(int) * (size_t)n);
    CHECK(ranks != NULL, "out of memory");
    for (int i = 0; i < n; i++)
        ranks[i] = 2 * (n - 1 - i);
    MPI_Group world2, even, odd;
    MPI_CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session2));
    MPI_CHECK(MPI_Group_from_session_pset(session2, "mpi://WORLD", &world2));
    MPI_CHECK(MPI_Group_incl(world2, n, ranks, &even));
    MPI_CHECK(MPI_Group_excl(world2, n, ranks, &odd));
    int in_even = grid_rank % 2 == 0;
    MPI_Comm comm;
    /* Two creations one after the other on different members, each told
     * apart by its stringtag. */
    MPI_CHECK(MPI_Comm_create_from_group(
        in_even ? even : odd,
        in_even ? "session_check/even" : "session_check/odd", MPI_INFO_NULL,
        MPI_ERRORS_RETURN, &comm));
    if (in_even) {
        exercise(comm, ranks, n, "even ranks reversed");
    } else {
        int m = grid_size - n, *odd_ranks = malloc(sizeof(int) * (size_t)m);
        CHECK(odd_ranks != NULL, "out of memory");
        for (int i = 0; i < m; i++)
            odd_ranks[i] = 2 * i + 1;
        exercise(comm, odd_ranks, m, "odd ranks");
        free(odd_ranks);
    }
    MPI_CHECK(MPI_Comm_free(&comm));
    MPI_CHECK(MPI_Group_free(&even));
    MPI_CHECK(MPI_Group_free(&odd));
    MPI_CHECK(MPI_Group_free(&world2));
    free(ranks);
}

static void case_intercomm_from_groups(void)
{
    /* The even grid ranks against the odd ones, both spanning sites, from
     * the second session's mpi://WORLD: no peer communicator. */
    int n[2] = {(grid_size + 1) / 2, grid_size / 2}, mine = grid_rank % 2;
    int *members[2];
    MPI_Group world2, groups[2], remote;
    MPI_CHECK(MPI_Group_from_session_pset(session2, "mpi://WORLD", &world2));
    for (int g = 0; g < 2; g++) {
        members[g] = malloc(sizeof(int) * (size_t)n[g]);
        CHECK(members[g] != NULL, "out of memory");
        for (int i = 0; i < n[g]; i++)
            members[g][i] = 2 * i + g;
        MPI_CHECK(MPI_Group_incl(world2, n[g], members[g], &groups[g]));
    }
    MPI_Comm ic;
    MPI_CHECK(MPI_Intercomm_create_from_groups(
        groups[mine], 0, groups[!mine], 0, "session_check/intercomm",
        MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic));
    int inter = 0, size, rank, remote_size;
    MPI_CHECK(MPI_Comm_test_inter(ic, &inter));
    MPI_CHECK(MPI_Comm_size(ic, &size));
    MPI_CHECK(MPI_Comm_rank(ic, &rank));
    MPI_CHECK(MPI_Comm_remote_size(ic, &remote_size));
    CHECK(inter && size == n[mine] && rank == grid_rank / 2 &&
              remote_size == n[!mine],
          "intercommunicator %d: rank %d of %d, remote %d; want 1: %d of "
          "%d, remote %d",
          inter, rank, size, remote_size, grid_rank / 2, n[mine], n[!mine]);

    MPI_CHECK(MPI_Comm_remote_group(ic, &remote));
    check_group_members(remote, members[!mine], remote_size, "remote group");

    /* Rank i of each group with remote rank i: grid ranks both ways. */
    if (rank < n[1]) {
        int in = -1;
        MPI_Status status;
        MPI_CHECK(MPI_Sendrecv(&grid_rank, 1, MPI_INT, rank, 9, &in, 1, MPI_INT,
                               MPI_ANY_SOURCE, 9, ic, &status));
        CHECK(in == members[!mine][rank] && status.MPI_SOURCE == rank,
              "intercommunicator exchange: %d from %d, want %d from %d", in,
              status.MPI_SOURCE, members[!mine][rank], rank);
    }
    MPI_CHECK(MPI_Group_free(&remote));
    MPI_CHECK(MPI_Comm_free(&ic));
    for (int g = 0; g < 2; g++) {
        MPI_CHECK(MPI_Group_free(&groups[g]));
        free(members[g]);
    }
    MPI_CHECK(MPI_Group_free(&world2));
}

/* ---- with MPI_Init ---------------------------------------------------- */

static void case_with_init(void)
{
    int initialized = 1, rank, size, result;
    MPI_CHECK(MPI_Initialized(&initialized));
    CHECK(!initialized, "MPI_Initialized says 1 before MPI_Init");
    MPI_CHECK(MPI_Init(NULL, NULL));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(rank == grid_rank && size == grid_size,
          "MPI_COMM_WORLD: rank %d of %d, want %d of %d", rank, size, grid_rank,
          grid_size);
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, session_world, &result));
    CHECK(result == MPI_CONGRUENT,
          "MPI_COMM_WORLD vs mpi://WORLD: %d, want "
          "MPI_CONGRUENT",
          result);
}

/* ---- hardware levels --------------------------------------------------- */

static void check_level(MPI_Comm comm, MPI_Info passed_info, const char *want)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info info;
    MPI_CHECK(MPI_Comm_get_info(comm, &info));
    MPI_CHECK(MPI_Info_get(info, "mpi_hw_resource_type", MPI_MAX_INFO_VAL,
                           value, &flag));
    CHECK(flag && strcmp(value, want) == 0,
          "the new communicator's mpi_hw_resource_type is %s, want %s",
          flag ? value : "(none)", want);
    MPI_CHECK(MPI_Info_free(&info));
    if (passed_info == MPI_INFO_NULL)
        return;
    MPI_CHECK(MPI_Info_get(passed_info, "mpi_hw_resource_type",
                           MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, want) == 0,
          "the info passed says mpi_hw_resource_type %s, want %s",
          flag ? value : "(none)", want);
}

static void case_hw_unguided(void)
{
    int *members = malloc(sizeof(int) * (size_t)site_size);
    CHECK(members != NULL, "out of memory");
    site_members(members);
    MPI_Info info;
    MPI_Comm site, below;
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0,
                                  info, &site));
    exercise(site, members, site_size, "unguided from the grid");
    check_level(site, info, "gridcoll://site");
    MPI_CHECK(MPI_Info_free(&info));

    /* The next level (node, then MPICH's) must be a strict subset, or
     * there is none. */
    MPI_CHECK(MPI_Comm_split_type(site, MPI_COMM_TYPE_HW_UNGUIDED, 0,
                                  MPI_INFO_NULL, &below));
    if (below != MPI_COMM_NULL) {
        int size;
        MPI_CHECK(MPI_Comm_size(below, &size));
        CHECK(size < site_size, "unguided from the site: size %d of %d", size,
              site_size);
        MPI_CHECK(MPI_Comm_free(&below));
    }
    MPI_CHECK(MPI_Comm_free(&site));
    free(members);
}

static void case_hw_guided(void)
{
    int *members = malloc(sizeof(int) * (size_t)site_size);
    CHECK(members != NULL, "out of memory");
    site_members(members);
    MPI_Info info;
    MPI_Comm comm;
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "mpi_hw_resource_type", "gridcoll://site"));
    /* Key = minus the grid rank: the site's members in reverse. */
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED,
                                  -grid_rank, info, &comm));
    int *reversed = malloc(sizeof(int) * (size_t)site_size);
    CHECK(reversed != NULL, "out of memory");
    for (int i = 0; i < site_size; i++)
        reversed[i] = members[site_size - 1 - i];
    exercise(comm, reversed, site_size, "guided gridcoll://site");
    check_level(comm, MPI_INFO_NULL, "gridcoll://site");
    MPI_CHECK(MPI_Comm_free(&comm));

    MPI_CHECK(MPI_Info_set(info, "mpi_hw_resource_type", "gridcoll://nowhere"));
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0,
                                  info, &comm));
    CHECK(comm == MPI_COMM_NULL, "an unknown resource type gave a "
                                 "communicator");
    MPI_CHECK(MPI_Info_free(&info));

    /* Shared memory: within the node, so within the site. */
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                  MPI_INFO_NULL, &comm));
    int size;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    CHECK(size >= 1 && size <= site_size, "shared: size %d, site %d", size,
          site_size);
    MPI_CHECK(MPI_Comm_free(&comm));
    free(reversed);
    free(members);
}

int main(void)
{
    site_offset = env_int("GRIDCOLL_SITE_OFFSET");
    site_size = env_int("GRIDCOLL_SITE_SIZE");
    grid_size = env_int("GRIDCOLL_WORLD_SIZE");
    grid_rank = site_offset + env_int("PMI_RANK");
    check_setup(grid_rank, 0, NULL);
    /* No communicator spans the job until the session's world exists. */
    check_comm(MPI_COMM_NULL);

    MPI_Group group;
    MPI_Info asked;
    MPI_CHECK(MPI_Info_create(&asked));
    MPI_CHECK(MPI_Info_set(asked, "thread_level", "MPI_THREAD_MULTIPLE"));
    int rc = MPI_Session_init(asked, MPI_ERRORS_RETURN, &session);
    MPI_CHECK(MPI_Info_free(&asked));
    if (rc != MPI_SUCCESS) {
        printf("FAIL setup: MPI_Session_init returned %d\n", rc);
        return 2;
    }
    MPI_CHECK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    MPI_CHECK(MPI_Comm_create_from_group(group, "session_check/world",
                                         MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                         &session_world));
    world_group = group;
    check_comm(session_world);

    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {
        {"psets", case_psets},
        {"session_world", case_session_world},
        {"threads", case_threads},
        {"from_group", case_from_group},
        {"intercomm_from_groups", case_intercomm_from_groups},
        {"with_init", case_with_init},
        {"hw_unguided", case_hw_unguided},
        {"hw_guided", case_hw_guided},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        begin("%s", cases[i].name);
        cases[i].run();
        passed();
    }
    begin("finalize");
    MPI_CHECK(MPI_Comm_free(&session_world));
    MPI_CHECK(MPI_Group_free(&world_group));
    MPI_CHECK(MPI_Session_finalize(&session2));
    MPI_CHECK(MPI_Session_finalize(&session));
    MPI_CHECK(MPI_Finalize());
    return 0;
}
