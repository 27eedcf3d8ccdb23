/* A preload for the ranks of a gridcoll-bench job (integration.bench).
 * Rank 0 prints each MPI_Bcast call's algorithm (forced, or auto) and
 * size on stderr, in call order.  While the algorithm named by
 * GRIDCOLL_TEST_WRONG_BCAST is forced, the last rank gets a result whose
 * byte 3 is flipped: the bench's own checks must notice.  The calls
 * themselves go through to libgridcoll. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char forced_bcast[64];

static void *next_symbol(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) {
        fprintf(stderr, "bcast_spy: %s not found after the preload\n", name);
        abort();
    }
    return f;
}

int GridColl_Set_algorithm(const char *coll, const char *algo)
{
    static int (*next)(const char *, const char *);
    if (next == NULL)
        next = next_symbol("GridColl_Set_algorithm");
    if (strcmp(coll, "bcast") == 0)
        snprintf(forced_bcast, sizeof forced_bcast, "%s", algo ? algo : "");
    return next(coll, algo);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    static int (*next)(void *, int, MPI_Datatype, int, MPI_Comm);
    if (next == NULL)
        next = next_symbol("MPI_Bcast");
    int status = next(buf, count, type, root, comm);
    const char *victim = getenv("GRIDCOLL_TEST_WRONG_BCAST");
    int rank, size, type_size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_size(type, &type_size);
    if (rank == 0)
        fprintf(stderr, "bcast_spy: %s %ld\n",
                forced_bcast[0] ? forced_bcast : "auto",
                (long)count * type_size);
    if (status == MPI_SUCCESS && victim != NULL &&
        strcmp(victim, forced_bcast) == 0 && rank == size - 1 && rank != root &&
        (long)count * type_size > 3)
        ((unsigned char *)buf)[3] ^= 0x5a;
    return status;
}
