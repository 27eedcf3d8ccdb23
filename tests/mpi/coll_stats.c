/*
 * coll_stats: CALLS calls of one collective on MPI_COMM_WORLD and no other
 * collective, so that GRIDCOLL_STATS=1's lines at MPI_Finalize can be
 * compared with exact counts (tests/integration/test_coll_select.py forces
 * the algorithm with GRIDCOLL_<COLL>).
 *
 *   coll_stats barrier CALLS
 *   coll_stats bcast|alltoall|neighbor CALLS BYTES
 *
 * BYTES of MPI_BYTE: the whole buffer for bcast (root 0), one pair's
 * block for alltoall, one neighbour's for neighbor: a halo exchange,
 * MPI_Neighbor_alltoall on a periodic 2-D grid of MPI_Dims_create's shape
 * (MPI_Cart_create with reorder 0).  Rank 0 prints "used=NAME", the algorithm
 * of the last call (GridColl_Algorithm_used; "-" when none ran).  MPI errors
 * end the job through the default error handler, whose message the selection
 * tests look for.  Exit status 2 on a usage error.
 */
#include <gridcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long number(const char *text)
{
    char *end;
    long v = strtol(text, &end, 10);
    return end != text && *end == '\0' && v >= 0 && v <= 1 << 24 ? v : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int barrier = argc == 3 && strcmp(argv[1], "barrier") == 0;
    int bcast = argc == 4 && strcmp(argv[1], "bcast") == 0;
    int alltoall = argc == 4 && strcmp(argv[1], "alltoall") == 0;
    int neighbor = argc == 4 && strcmp(argv[1], "neighbor") == 0;
    long calls = argc >= 3 ? number(argv[2]) : -1;
    long bytes = argc == 4 ? number(argv[3]) : 0;
    if (!(barrier || bcast || alltoall || neighbor) || calls < 0 || bytes < 0) {
        fprintf(stderr, "usage: coll_stats barrier CALLS | "
                        "coll_stats bcast|alltoall|neighbor CALLS BYTES\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm grid = MPI_COMM_NULL;
    if (neighbor) {
        int dims[2] = {0, 0}, periods[2] = {1, 1};
        MPI_Dims_create(size, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    }
    size_t len = (size_t)bytes * (alltoall ? (size_t)size : neighbor ? 4 : 1);
    char *send = calloc(len ? len : 1, 1), *recv = calloc(len ? len : 1, 1);
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "coll_stats: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < calls; i++) {
        if (barrier)
            MPI_Barrier(MPI_COMM_WORLD);
        else if (bcast)
            MPI_Bcast(send, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (alltoall)
            MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE,
                         MPI_COMM_WORLD);
        else
            MPI_Neighbor_alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes,
                                  MPI_BYTE, grid);
    }
    if (grid != MPI_COMM_NULL)
        MPI_Comm_free(&grid);
    const char *used = GridColl_Algorithm_used(argv[1]);
    if (rank == 0)
        printf("used=%s\n", used != NULL ? used : "-");
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
