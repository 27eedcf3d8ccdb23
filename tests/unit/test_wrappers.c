/*
 * Unit test of the generated fail-safe wrappers
 * (libgridcoll/gen/gen_wrappers.py
 * -> gc_wrappers.c), linked with a test double of the runtime
 * (wrappers_test_double.c) that reports one communicator, a dup of
 * MPI_COMM_WORLD, as multi-site.  Runs as an MPICH singleton (no mpiexec).
 *
 * Checks: a sample of wrappers refuses the "grid" communicator through
 * gc_unsupported() with the right function name and communicator, and the
 * error it returns; the same calls on MPI_COMM_WORLD pass through to MPICH;
 * hand-written, pass-through and skipped functions are not wrapped; the
 * generated name lists are sorted, disjoint and complete.
 */
#include <mpi.h>

#include "unit_check.h"

#include <stdio.h>
#include <string.h>

/* From the test double. */
extern MPI_Comm wtd_grid_comm;
extern int wtd_is_grid_calls;
extern int wtd_unsupported_calls;
extern char wtd_last_function[64];
extern MPI_Comm wtd_last_comm;
extern int wtd_lock_depth;
extern int wtd_unlocked_calls;

/* From the generated gc_wrappers.c. */
extern const char *const gc_generated_wrappers[];
extern const size_t gc_generated_wrappers_count;
extern const char *const gc_comm_functions_not_wrapped[];
extern const size_t gc_comm_functions_not_wrapped_count;
extern const size_t gc_comm_functions_seen;

static int in_list(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

static int wrapped(const char *name)
{
    return in_list(gc_generated_wrappers, gc_generated_wrappers_count, name);
}

static int not_wrapped(const char *name)
{
    return in_list(gc_comm_functions_not_wrapped,
                   gc_comm_functions_not_wrapped_count, name);
}

/* Before a call expected to be refused. */
static void reset(void)
{
    wtd_unsupported_calls = 0;
    wtd_last_function[0] = '\0';
    wtd_last_comm = MPI_COMM_NULL;
}

/* After it: exactly one gc_unsupported(comm, name), its code returned. */
static void expect_refused(int line, int rc, const char *name, MPI_Comm comm)
{
    CHECK_AT(rc == MPI_ERR_UNSUPPORTED_OPERATION, line,
             "%s: returned %d, expected MPI_ERR_UNSUPPORTED_OPERATION", name,
             rc);
    CHECK_AT(wtd_unsupported_calls == 1, line,
             "%s: gc_unsupported called %d times", name, wtd_unsupported_calls);
    CHECK_AT(strcmp(wtd_last_function, name) == 0, line,
             "%s: gc_unsupported got name '%s'", name, wtd_last_function);
    CHECK_AT(wtd_last_comm == comm, line,
             "%s: gc_unsupported got the wrong communicator", name);
}

#define REFUSED(call, name, comm)                                              \
    do {                                                                       \
        reset();                                                               \
        int rc_ = (call);                                                      \
        expect_refused(__LINE__, rc_, (name), (comm));                         \
    } while (0)

static void test_lists(void)
{
    for (size_t i = 1; i < gc_generated_wrappers_count; i++)
        CHECKF(strcmp(gc_generated_wrappers[i - 1], gc_generated_wrappers[i]) <
                   0,
               "wrapper list not sorted/unique at %s, %s",
               gc_generated_wrappers[i - 1], gc_generated_wrappers[i]);
    for (size_t i = 0; i < gc_comm_functions_not_wrapped_count; i++)
        CHECKF(!wrapped(gc_comm_functions_not_wrapped[i]),
               "%s both wrapped and not wrapped",
               gc_comm_functions_not_wrapped[i]);

    /* MPICH 4.0.2 declares 249 MPI_/MPIX_ functions with a by-value
     * MPI_Comm, plus MPI_Comm_free and MPI_Comm_disconnect (in-out);
     * far fewer means the generator stopped seeing prototypes. */
    CHECKF(gc_comm_functions_seen >= 240, "only %zu comm-taking functions seen",
           gc_comm_functions_seen);
    CHECKF(gc_generated_wrappers_count + gc_comm_functions_not_wrapped_count ==
               gc_comm_functions_seen,
           "%zu wrapped + %zu not wrapped != %zu seen",
           gc_generated_wrappers_count, gc_comm_functions_not_wrapped_count,
           gc_comm_functions_seen);

    static const char *const must_wrap[] = {
        "MPI_Win_create_c", "MPI_Win_allocate_c", "MPI_Win_allocate_shared_c",
        "MPI_Win_create",   "MPI_Comm_spawn",     "MPI_Comm_spawn_multiple",
        "MPI_File_open",    "MPI_Comm_accept",    "MPI_Comm_disconnect",
        "MPIX_Comm_shrink", "MPI_Win_allocate",
    };
    for (size_t i = 0; i < sizeof(must_wrap) / sizeof(must_wrap[0]); i++)
        CHECKF(wrapped(must_wrap[i]), "%s not wrapped", must_wrap[i]);

    /* Hand-written, pass-through (grid_functions.txt) and skipped. */
    static const char *const must_not_wrap[] = {
        "MPI_Comm_rank",
        "MPI_Comm_size",
        "MPI_Abort",
        "MPI_Barrier",
        "MPI_Send",
        "MPI_Irecv",
        "MPI_Comm_set_name",
        "MPI_Comm_set_errhandler",
        "MPI_Pack",
        "MPI_Comm_call_errhandler",
        "MPI_DUP_FN",
        "MPI_Ibcast",
        "MPI_Allreduce_init",
        "MPI_Send_init",
        "MPI_Psend_init",
        "MPI_Comm_idup",
        "MPI_Intercomm_create",
    };
    for (size_t i = 0; i < sizeof(must_not_wrap) / sizeof(must_not_wrap[0]);
         i++) {
        CHECKF(!wrapped(must_not_wrap[i]), "%s wrapped", must_not_wrap[i]);
        CHECKF(not_wrapped(must_not_wrap[i]), "%s not in the not-wrapped list",
               must_not_wrap[i]);
    }
    /* No communicator: never generated. */
    CHECKF(!wrapped("MPI_Init") && !wrapped("MPI_Wtime") &&
               !wrapped("MPI_Comm_get_parent") && !wrapped("MPI_Comm_join"),
           "a function without a by-value MPI_Comm was wrapped");
}

static void test_refused_on_grid(MPI_Comm g)
{
    int buf[4] = {1, 2, 3, 4};
    int out[4] = {0};
    MPI_Comm newcomm = MPI_COMM_NULL;
    MPI_Win win = MPI_WIN_NULL;
    MPI_File fh = MPI_FILE_NULL;
    int errcodes[1];

    REFUSED(MPI_Win_allocate_c(sizeof(buf), 1, MPI_INFO_NULL, g, out, &win),
            "MPI_Win_allocate_c", g);
    CHECKF(win == MPI_WIN_NULL, "MPI_Win_allocate_c created a window");
    REFUSED(MPI_Comm_accept("port", MPI_INFO_NULL, 0, g, &newcomm),
            "MPI_Comm_accept", g);
    CHECKF(newcomm == MPI_COMM_NULL, "MPI_Comm_accept created a communicator");
    REFUSED(MPI_Win_create(buf, sizeof(buf), 1, MPI_INFO_NULL, g, &win),
            "MPI_Win_create", g);
    CHECKF(win == MPI_WIN_NULL, "MPI_Win_create created a window");
    REFUSED(MPI_File_open(g, "/nonexistent/gridcoll", MPI_MODE_RDONLY,
                          MPI_INFO_NULL, &fh),
            "MPI_File_open", g);
    REFUSED(MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, g,
                           &newcomm, errcodes),
            "MPI_Comm_spawn", g);
    int agreed = 1;
    REFUSED(MPIX_Comm_agree(g, &agreed), "MPIX_Comm_agree", g);

    /* In-out MPI_Comm *: disconnecting a grid communicator's local part
     * behind the runtime's back is refused too. */
    MPI_Comm g_copy = g;
    REFUSED(MPI_Comm_disconnect(&g_copy), "MPI_Comm_disconnect", g);
    CHECKF(g_copy == g, "refused MPI_Comm_disconnect changed the handle");

    CHECKF(newcomm == MPI_COMM_NULL, "a refused call created a communicator");
}

static void test_not_refused_on_grid(MPI_Comm g)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0, size = 0, rank = -1;

    /* Pass-through (grid_functions.txt) and hand-written (here: MPICH's own,
     * as the runtime is not linked) functions reach MPICH. */
    reset();
    CHECKF(MPI_Comm_set_name(g, "grid-double") == MPI_SUCCESS,
           "MPI_Comm_set_name on the grid comm failed");
    CHECKF(MPI_Comm_get_name(g, name, &len) == MPI_SUCCESS &&
               strcmp(name, "grid-double") == 0,
           "MPI_Comm_get_name on the grid comm: '%s'", name);
    CHECKF(MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN) == MPI_SUCCESS,
           "MPI_Comm_set_errhandler on the grid comm failed");
    CHECKF(MPI_Pack_size(3, MPI_INT, g, &size) == MPI_SUCCESS &&
               size >= 3 * (int)sizeof(int),
           "MPI_Pack_size on the grid comm: %d", size);
    CHECKF(MPI_Comm_rank(g, &rank) == MPI_SUCCESS && rank == 0,
           "MPI_Comm_rank on the grid comm");
    CHECKF(wtd_unsupported_calls == 0,
           "a pass-through/hand-written call was refused (%s)",
           wtd_last_function);
}

static void test_pass_through_on_world(void)
{
    int in = 5, out = 0;
    MPI_Comm dup = MPI_COMM_NULL;

    reset();
    int before = wtd_is_grid_calls;
    MPI_Win win = MPI_WIN_NULL;
    CHECKF(MPI_Win_create_c(&in, sizeof in, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                            &win) == MPI_SUCCESS &&
               MPI_Win_free(&win) == MPI_SUCCESS,
           "MPI_Win_create_c on MPI_COMM_WORLD failed");
    CHECKF(wtd_is_grid_calls == before + 1,
           "MPI_Win_create_c did not go through the generated wrapper");
    CHECKF(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
                   MPI_SUCCESS &&
               out == 5,
           "MPI_Allreduce on MPI_COMM_WORLD: %d", out);
    CHECKF(MPI_Comm_dup(MPI_COMM_WORLD, &dup) == MPI_SUCCESS &&
               dup != MPI_COMM_NULL,
           "MPI_Comm_dup of MPI_COMM_WORLD failed");
    out = 0;
    CHECKF(MPI_Sendrecv(&in, 1, MPI_INT, 0, 3, &out, 1, MPI_INT, 0, 3, dup,
                        MPI_STATUS_IGNORE) == MPI_SUCCESS &&
               out == 5,
           "MPI_Sendrecv to self: %d", out);
    CHECKF(MPI_Comm_free(&dup) == MPI_SUCCESS && dup == MPI_COMM_NULL,
           "MPI_Comm_free failed");
    before = wtd_is_grid_calls;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECKF(wtd_is_grid_calls == before,
           "MPI_Comm_rank went through a generated wrapper");
    CHECKF(wtd_unsupported_calls == 0, "a call on MPI_COMM_WORLD was refused");
}

/* Every generated wrapper holds the library lock (gc_lock.h) while it
 * looks at the registry, and gives it back on every return. */
static void test_lock_held(void)
{
    CHECKF(wtd_unlocked_calls == 0,
           "%d gc_comm_is_grid calls from wrappers without the lock",
           wtd_unlocked_calls);
    CHECKF(wtd_lock_depth == 0,
           "the lock is still held %d times after the "
           "calls returned",
           wtd_lock_depth);
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init failed\n");
        return 1;
    }
    MPI_Comm g = MPI_COMM_NULL;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Comm_dup failed\n");
        return 1;
    }
    wtd_grid_comm = g;

    test_lists();
    test_refused_on_grid(g);
    test_not_refused_on_grid(g);
    test_pass_through_on_world();
    test_lock_held();

    wtd_grid_comm = MPI_COMM_NULL;
    MPI_Comm_free(&g);
    MPI_Finalize();
    return unit_check_report("");
}
