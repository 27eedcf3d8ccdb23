/*
 * alltoall_wan: self-checking MPI_Alltoall on MPI_COMM_WORLD with m bytes
 * per pair, for the WAN accounting test (tests/integration/
 * test_alltoall_wan.py), which runs it with GRIDCOLL_STATS=1 and checks
 * what each site sent across the WAN against the algorithm's cost model.
 *
 *   gridrun --site-sizes 3,5 -- alltoall_wan [CASE...]
 *
 * Cases m0 m1 m1000 m65536 m1048576 (bytes per pair), one MPI_Alltoall of
 * MPI_BYTE each; without arguments all run, in that order.  Byte i of the
 * block from rank s to rank d is a function of (s, d, i); every rank
 * checks every byte it received, and rank 0 prints "OK <case>" once all
 * ranks passed, or a rank prints "FAIL <case>: ..." and the job aborts.
 * Only MPI_Alltoall moves data across sites between the checks (the
 * verdict is one MPI_Allreduce), so the stats for alltoall are exactly the
 * cases run.
 *
 * Case `wildcard` (only when named): every rank posts MPI_Irecv(
 * MPI_ANY_SOURCE, MPI_ANY_TAG) on MPI_COMM_WORLD and runs 20 checked
 * MPI_Alltoalls, the odd ranks testing the receive for 5 ms after each
 * (while the others already start the next one), then sends itself one
 * int: the receive must get exactly that message, so no point-to-point
 * step of the collective may match it.
 */
#include "check_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = {0, 1, 1000, 65536, 1048576};
enum { SIZE_COUNT = sizeof sizes / sizeof *sizes };

static unsigned char pattern(int src, int dst, size_t i)
{
    return (unsigned char)(src * 131 + dst * 37 + i * 7 + (i >> 8) + 1);
}

static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], name) == 0)
            return 1;
    return 0;
}

/* One checked MPI_Alltoall; rank 0 prints "OK <name>" when `report`. */
static void run_case(const char *name, size_t m, int rank, int size, int report)
{
    size_t total = m * (size_t)size;
    begin("%s", name);
    unsigned char *sbuf = xmalloc(total);
    unsigned char *rbuf = xmalloc(total);
    for (int d = 0; d < size; d++)
        for (size_t i = 0; i < m; i++)
            sbuf[(size_t)d * m + i] = pattern(rank, d, i);
    memset(rbuf, 0x5A, total);
    MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE,
                 MPI_COMM_WORLD);
    int ok = 1;
    for (int s = 0; s < size && ok; s++)
        for (size_t i = 0; i < m && ok; i++)
            if (rbuf[(size_t)s * m + i] != pattern(s, rank, i)) {
                printf("FAIL %s: rank %d: byte %zu from rank %d is %d, "
                       "want %d\n",
                       name, rank, i, s, rbuf[(size_t)s * m + i],
                       pattern(s, rank, i));
                ok = 0;
            }
    for (int d = 0; d < size && ok; d++)
        for (size_t i = 0; i < m && ok; i++)
            if (sbuf[(size_t)d * m + i] != pattern(rank, d, i)) {
                printf("FAIL %s: rank %d: send buffer changed\n", name, rank);
                ok = 0;
            }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0 && report)
        printf("OK %s\n", name);
    fflush(stdout);
    free(sbuf);
    free(rbuf);
}

static void run_wildcard(int rank, int size)
{
    int got = -1, token = 1000 + rank;
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
              &req);
    /* Odd ranks test the pending receive for a while after each call,
     * while their peers already send them the next call's messages. */
    for (int i = 0; i < 20; i++) {
        run_case("wildcard", (size_t)(1 + i * 97), rank, size, 0);
        double start = MPI_Wtime();
        int done = 0;
        while (rank % 2 == 1 && !done && MPI_Wtime() - start < 0.005)
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            fail("the wildcard receive completed during the all-to-alls");
    }
    MPI_Send(&token, 1, MPI_INT, rank, 7, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    int ok = got == token && st.MPI_SOURCE == rank && st.MPI_TAG == 7;
    if (!ok)
        printf("FAIL wildcard: rank %d: the wildcard receive got %d from %d "
               "tag %d, want %d from %d tag 7\n",
               rank, got, st.MPI_SOURCE, st.MPI_TAG, token, rank);
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0)
        printf("OK wildcard\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_setup(rank, 0, NULL);
    for (int k = 0; k < SIZE_COUNT; k++) {
        char name[32];
        snprintf(name, sizeof name, "m%zu", sizes[k]);
        if (wanted(argc, argv, name))
            run_case(name, sizes[k], rank, size, 1);
    }
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "wildcard") == 0)
            run_wildcard(rank, size);
    MPI_Finalize();
    return 0;
}
