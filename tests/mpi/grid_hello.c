/*
 * grid_hello: an ordinary MPI program used by the runtime tests.  It only
 * uses MPI, so the same source is built twice: linked with libgridcoll, and
 * against plain MPICH (for gridrun --preload).
 *
 *   grid_hello [late MS] [unsupported] [fatal] [abort CODE] [thread]
 *
 * Prints "rank R of N", then per option:
 *   late MS      rank 0 sleeps MS ms before a barrier; every rank prints how
 *                long it waited in it ("barrier_ms=X")
 *   unsupported  with MPI_ERRORS_RETURN on MPI_COMM_WORLD, calls
 *                MPI_Win_create and MPI_Win_allocate (no RMA across sites)
 *                and prints the error string each got and the string of
 *                its error class
 *   fatal        the same with errors fatal (the default)
 *   abort CODE   the last rank calls MPI_Abort(MPI_COMM_WORLD, CODE)
 *   die CODE     the last rank exits with CODE at once (no MPI_Finalize)
 *                while every other rank waits in MPI_Recv for it
 *   hang         every rank waits in MPI_Recv for a message nobody sends
 * Other arguments are ignored (tests use one to find their processes).
 *   thread       MPI_Init_thread(MULTIPLE), prints the level provided
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int create_window(MPI_Win *win)
{
    static int exposed[4];
    return MPI_Win_create(exposed, sizeof exposed, sizeof(int), MPI_INFO_NULL,
                          MPI_COMM_WORLD, win);
}

static void print_error(int rank, const char *call, int rc, MPI_Win *win)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, error_class = MPI_SUCCESS;
    MPI_Error_string(rc, text, &len);
    printf("rank %d %s rc=%s: %s\n", rank, call,
           rc == MPI_SUCCESS ? "success" : "error", text);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &error_class);
        MPI_Error_string(error_class, text, &len);
        printf("rank %d %s class: %s\n", rank, call, text);
    }
    if (*win != MPI_WIN_NULL)
        MPI_Win_free(win);
}

int main(int argc, char **argv)
{
    int thread = argc > 1 && strcmp(argv[argc - 1], "thread") == 0;
    int provided = -1;
    if (thread)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d\n", rank, size);
    if (thread)
        printf("rank %d thread level %s\n", rank,
               provided == MPI_THREAD_MULTIPLE     ? "multiple"
               : provided == MPI_THREAD_SERIALIZED ? "serialized"
                                                   : "lower");
    fflush(stdout);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "late") == 0 && i + 1 < argc) {
            int ms = atoi(argv[++i]);
            if (rank == 0) {
                struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
                nanosleep(&pause, NULL);
            }
            double start = now_ms();
            MPI_Barrier(MPI_COMM_WORLD);
            printf("rank %d barrier_ms=%.0f\n", rank, now_ms() - start);
        } else if (strcmp(argv[i], "unsupported") == 0) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            MPI_Win win = MPI_WIN_NULL;
            print_error(rank, "MPI_Win_create", create_window(&win), &win);
            int *base = NULL;
            int rc = MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL,
                                      MPI_COMM_WORLD, &base, &win);
            print_error(rank, "MPI_Win_allocate", rc, &win);
        } else if (strcmp(argv[i], "fatal") == 0) {
            MPI_Win win = MPI_WIN_NULL;
            create_window(&win);
            printf("rank %d survived MPI_Win_create\n", rank);
        } else if (strcmp(argv[i], "die") == 0 && i + 1 < argc) {
            int code = atoi(argv[++i]);
            printf("rank %d waiting\n", rank);
            fflush(stdout);
            if (rank == size - 1)
                exit(code);
            int value;
            MPI_Recv(&value, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else if (strcmp(argv[i], "hang") == 0) {
            printf("rank %d waiting\n", rank);
            fflush(stdout);
            int value;
            MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else if (strcmp(argv[i], "abort") == 0 && i + 1 < argc) {
            int code = atoi(argv[++i]);
            if (rank == size - 1)
                MPI_Abort(MPI_COMM_WORLD, code);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
