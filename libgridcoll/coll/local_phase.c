/*
 * Local phases of the grid algorithms that wait asleep: MPICH's
 * nonblocking collective completed by coll_local_wait (gc_coll.h), so the
 * ranks of a site that wait in them sleep between polls instead of
 * spinning inside a blocking MPICH call.
 *
 * Why: a grid collective costs at least one WAN delay (milliseconds), and
 * a site's ranks share their node's cores with the ranks, relay and (in
 * tests) WAN emulator the collective waits for.  Spinning ranks take those
 * cores: on this 2-core machine a barrier across 2+2 ranks over a 20 ms
 * link took 27-29 ms in one call of ten, and ~41 ms on 4+4, with
 * PMPI_Barrier as its first local phase; 20.8 and 21.1 ms with the
 * nonblocking one.  Only for small data: from LARGE_PHASE bytes per rank
 * MPICH's blocking algorithms stay, since its nonblocking schedules were
 * slower with large buffers (allreduce hier of 16 MiB on 4+4: 1.03-1.10 s
 * against 0.78-0.85 s), and the choice depends only on the count and type
 * every rank passes alike (a blocking and a nonblocking collective do not
 * match).  What sleeping costs: a wait that outlasts gc_idle's spinning
 * polls wakes up to one nap (50 us) late.  docs/design/mpi-layer.md.
 */
#include "coll/gc_coll.h"
#include "core/gc_progress.h"

#define LARGE_PHASE (256 * 1024)

int coll_local_wait(MPI_Request *req)
{
    unsigned idle = 0;
    MPI_Status st = {.MPI_ERROR = MPI_SUCCESS};
    int done = 0, status = PMPI_Test(req, &done, &st);
    while (status == MPI_SUCCESS && !done) {
        gc_idle(&idle);
        status = PMPI_Test(req, &done, &st);
    }
    /* MPICH 4.0.2 fails a nonblocking collective whose members disagree
     * on sizes with MPI_ERR_IN_STATUS, a class no collective returns. */
    int cls = MPI_SUCCESS;
    if (status != MPI_SUCCESS)
        PMPI_Error_class(status, &cls);
    if (cls == MPI_ERR_IN_STATUS)
        status = st.MPI_ERROR != MPI_SUCCESS ? st.MPI_ERROR : MPI_ERR_OTHER;
    return status;
}

/* `status`: what posting `req` returned. */
static int complete(int status, MPI_Request *req)
{
    return status == MPI_SUCCESS ? coll_local_wait(req) : status;
}

int coll_local_barrier(MPI_Comm comm)
{
    MPI_Request req;
    return complete(PMPI_Ibarrier(comm, &req), &req);
}

/* Whether `count` elements of `type` are a small local phase. */
static int small_phase(MPI_Count count, MPI_Datatype type)
{
    MPI_Count size;
    return PMPI_Type_size_c(type, &size) == MPI_SUCCESS &&
           count * size < LARGE_PHASE;
}

int coll_local_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root,
                     MPI_Comm comm)
{
    if (!small_phase(count, type)) {
        unsigned held = gc_block_begin();
        int status = PMPI_Bcast_c(buf, count, type, root, comm);
        gc_block_end(held);
        return status;
    }
    MPI_Request req;
    return complete(PMPI_Ibcast_c(buf, count, type, root, comm, &req), &req);
}

int coll_local_reduce(const void *sbuf, void *rbuf, MPI_Count count,
                      MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    if (!small_phase(count, type)) {
        unsigned held = gc_block_begin();
        int status = PMPI_Reduce_c(sbuf, rbuf, count, type, op, root, comm);
        gc_block_end(held);
        return status;
    }
    MPI_Request req;
    return complete(
        PMPI_Ireduce_c(sbuf, rbuf, count, type, op, root, comm, &req), &req);
}

int coll_local_waitall(int count, MPI_Request reqs[])
{
    /* Every request, even after one failed: they use the caller's
     * buffers.  (One at a time: GCC misreads MPI_STATUSES_IGNORE as a
     * too-small array.) */
    int status = MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        int one = coll_local_wait(&reqs[i]);
        if (status == MPI_SUCCESS)
            status = one;
    }
    return status;
}
