/*
 * bcast_wan: self-checking MPI_Bcast test for every bcast algorithm of
 * GridColl, switched with GridColl_Set_algorithm.
 *
 *   gridrun --site-sizes 3,5 -- bcast_wan [--time ITERS] [ALGORITHM...]
 *
 * For each algorithm (all of GridColl_Algorithm_name("bcast", i), or the
 * ones named), each size of 0 B, 1 B, 1000 B, 64 KiB and 4 MiB and each
 * root of 0, the last rank and the middle one (size / 2; repeated roots
 * run once), one MPI_Bcast of MPI_BYTE on MPI_COMM_WORLD.  Every rank
 * checks every byte, that the guard byte past the end is untouched, and
 * that a wildcard receive it posted before the call took none of the
 * bcast's messages (cancelled after; the last rank enters the 4 MiB calls
 * 20 ms late, so that many segments are waiting for it); rank 0 prints
 * "OK <algorithm>/<bytes>/root<r>" once every rank has passed, or a rank
 * prints "FAIL <case>: rank R: ..." and calls MPI_Abort(MPI_COMM_WORLD, 2). The
 * calls are in this order on every rank, so with GRIDCOLL_STATS=1 the
 * gridcoll-stats lines give exact WAN bytes and messages per algorithm
 * (tests/integration/test_bcast_wan.py checks them against the cost models).
 *
 * --time ITERS: afterwards, for each algorithm and sizes of 1000 B to
 * 4 MiB, ITERS back-to-back bcasts from root 0 (after one untimed and a
 * barrier); rank 0 prints "TIME <algorithm> <bytes> <usec per bcast>
 * <MB/s>" from the slowest rank's loop time.  Back to back, a member
 * leaves when its part is done, so consecutive calls overlap, as in an
 * application; a barrier per call would time mostly the barrier's skew
 * on an oversubscribed machine.
 */
#include "check_util.h"

#include <gridcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GUARD    0x5a
#define SENTINEL 0xa5

static const int sizes[] = {0, 1, 1000, 64 * 1024, 4 * 1024 * 1024};
#define SIZE_COUNT ((int)(sizeof sizes / sizeof *sizes))
static const int timed_sizes[] = {1000,       16 * 1024,  64 * 1024,
                                  128 * 1024, 256 * 1024, 1024 * 1024,
                                  4096 * 1024};
#define TIMED_COUNT ((int)(sizeof timed_sizes / sizeof *timed_sizes))

static int rank, size;

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + (i >> 8) * 7u + seed) & 0xff);
}

static void run_case(const char *algo, int bytes, int root, unsigned seed)
{
    begin("%s/%d/root%d", algo, bytes, root);
    unsigned char *buf = xmalloc((size_t)bytes + 1);
    for (int i = 0; i < bytes; i++)
        buf[i] = rank == root ? pattern((size_t)i, seed) : SENTINEL;
    buf[bytes] = GUARD;
    /* A pending wildcard receive must not take the bcast's messages. */
    int stray, taken;
    MPI_Request wildcard;
    MPI_CHECK(MPI_Irecv(&stray, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                        MPI_COMM_WORLD, &wildcard));
    if (bytes == sizes[SIZE_COUNT - 1] && rank == size - 1) {
        /* Arrive late, so segments wait unexpected when the call starts. */
        struct timespec pause = {0, 20 * 1000000L};
        nanosleep(&pause, NULL);
    }
    MPI_CHECK(MPI_Bcast(buf, bytes, MPI_BYTE, root, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Test(&wildcard, &taken, MPI_STATUS_IGNORE));
    if (taken)
        fail("a wildcard receive matched a message of the bcast");
    MPI_CHECK(MPI_Cancel(&wildcard));
    MPI_CHECK(MPI_Wait(&wildcard, MPI_STATUS_IGNORE));
    int bad = -1;
    for (int i = 0; i < bytes && bad < 0; i++)
        if (buf[i] != pattern((size_t)i, seed))
            bad = i;
    if (bad >= 0)
        fail("byte %d is 0x%02x, want 0x%02x", bad, buf[bad],
             pattern((size_t)bad, seed));
    if (buf[bytes] != GUARD)
        fail("guard byte past the end overwritten");
    free(buf);
    /* A barrier, not a reduction: the only collectives the statistics
     * see besides the bcasts are these, and they move no data. */
    passed();
}

static void time_algorithm(const char *algo, int iters)
{
    begin("time/%s", algo);
    for (int s = 0; s < TIMED_COUNT; s++) {
        int bytes = timed_sizes[s];
        unsigned char *buf = xmalloc((size_t)bytes);
        memset(buf, 0, (size_t)bytes);
        MPI_CHECK(MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double start = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_CHECK(MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
        double mine = MPI_Wtime() - start, slowest;
        MPI_CHECK(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
                             MPI_COMM_WORLD));
        if (rank == 0)
            printf("TIME %s %d %.1f %.1f\n", algo, bytes, slowest / iters * 1e6,
                   bytes * (double)iters / slowest / 1e6);
        free(buf);
    }
}

static int selected(const char *algo, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], algo) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_setup(rank, 0, NULL);
    int iters = 0, first = 1;
    if (argc > 2 && strcmp(argv[1], "--time") == 0) {
        iters = atoi(argv[2]);
        first = 3;
    }
    int roots[3] = {0, size - 1, size / 2};
    unsigned seed = 1;
    const char *algo;
    for (int a = 0; (algo = GridColl_Algorithm_name("bcast", a)) != NULL; a++) {
        if (!selected(algo, argc, argv, first))
            continue;
        begin("%s", algo);
        MPI_CHECK(GridColl_Set_algorithm("bcast", algo));
        for (int s = 0; s < SIZE_COUNT; s++)
            for (int r = 0; r < 3; r++) {
                if ((r > 0 && roots[r] == roots[0]) ||
                    (r > 1 && roots[r] == roots[1]))
                    continue;
                run_case(algo, sizes[s], roots[r], seed++);
            }
        if (iters > 0)
            time_algorithm(algo, iters);
    }
    MPI_Finalize();
    return 0;
}
