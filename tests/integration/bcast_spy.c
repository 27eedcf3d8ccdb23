/* A preload for the ranks of a gridcoll-bench job (integration.bench).
 * Rank 0 prints each MPI_Bcast call's algorithm (forced, or auto) and
 * size on stderr, in call order.  While the algorithm named by
 * GRIDCOLL_TEST_WRONG_BCAST is forced, the last rank gets a result whose
 * byte 3 is flipped: the bench's own checks must notice.  MPI_Ibcast
 * alike, but only for a request that went through MPI_Test before it
 * completed (the --overlap --test-every calls): the flip lands when
 * MPI_Test or MPI_Wait completes it.  The calls themselves go through to
 * libgridcoll. */
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

/* The last rank's pending MPI_Ibcast while the victim is forced: its
 * request, buffer and size; tested: MPI_Test saw it. */
static MPI_Request victim_req = MPI_REQUEST_NULL;
static unsigned char *victim_buf;
static long victim_bytes;
static int victim_tested;

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *req)
{
    static int (*next)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
    if (next == NULL)
        next = next_symbol("MPI_Ibcast");
    int status = next(buf, count, type, root, comm, req);
    const char *victim = getenv("GRIDCOLL_TEST_WRONG_BCAST");
    int rank, size, type_size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_size(type, &type_size);
    if (status == MPI_SUCCESS && victim != NULL &&
        strcmp(victim, forced_bcast) == 0 && rank == size - 1 && rank != root &&
        (long)count * type_size > 3) {
        victim_req = *req;
        victim_buf = buf;
        victim_bytes = (long)count * type_size;
        victim_tested = 0;
    }
    return status;
}

/* After the victim request completed: flip its byte 3 if MPI_Test saw it
 * first. */
static void victim_done(void)
{
    if (victim_tested && victim_bytes > 3)
        victim_buf[3] ^= 0x5a;
    victim_req = MPI_REQUEST_NULL;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    static int (*next)(MPI_Request *, int *, MPI_Status *);
    if (next == NULL)
        next = next_symbol("MPI_Test");
    int mine = victim_req != MPI_REQUEST_NULL && *req == victim_req;
    int rc = next(req, flag, status);
    if (mine) {
        victim_tested = 1;
        if (rc == MPI_SUCCESS && *flag)
            victim_done();
    }
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    static int (*next)(MPI_Request *, MPI_Status *);
    if (next == NULL)
        next = next_symbol("MPI_Wait");
    int mine = victim_req != MPI_REQUEST_NULL && *req == victim_req;
    int rc = next(req, status);
    if (mine && rc == MPI_SUCCESS)
        victim_done();
    return rc;
}
