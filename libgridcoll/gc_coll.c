/*
 * The MPI entry points of the barrier, bcast, gather, scatter and
 * allgather families on grid communicators, in their blocking,
 * nonblocking and persistent forms: each checks its arguments, fills a
 * struct coll_args and calls coll_run (gc_coll_select.c), which picks the
 * algorithm of the collective's table (coll/<collective>/) and runs its
 * schedule (engine/coll_sched.h).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/intercomm/intercomm.h"
#include "engine/coll_sched.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"

/* ---- entry points ------------------------------------------------------ */

static int check_not_in_place(const struct gc_comm *c, const char *fn,
                              const void *buf)
{
    if (buf == MPI_IN_PLACE)
        return coll_arg_error(c, MPI_ERR_BUFFER, fn,
                              "MPI_IN_PLACE is not valid here");
    return MPI_SUCCESS;
}

/*
 * A rooted call's arguments: the root, the non-root side (count x type
 * unless MPI_IN_PLACE, which only the root may pass) and, at the root,
 * its side: count x type, or counts[] (when not NULL) and type.
 */
static int check_rooted(const struct gc_comm *c, const char *fn, int root,
                        const void *buf, int count, MPI_Datatype type,
                        int root_count, const int *root_counts,
                        MPI_Datatype root_type)
{
    int status = coll_check_root(c, fn, root);
    if (status != MPI_SUCCESS)
        return status;
    if (buf != MPI_IN_PLACE)
        status = coll_check_buf(c, fn, count, type);
    else if (c->rank != root)
        status = check_not_in_place(c, fn, buf);
    if (status != MPI_SUCCESS || c->rank != root)
        return status;
    if (root_counts != NULL)
        status = coll_check_counts(c, fn, c->size, root_counts);
    else
        status = coll_check_count(c, fn, root_count);
    return status == MPI_SUCCESS ? coll_check_type(c, fn, root_type) : status;
}

/*
 * A gather, scatter or allgather call (struct coll_rooted_args says which
 * side is which); `bytes` is the block size when uniform.
 */
static int run_rooted(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                      const void *sbuf, void *rbuf, int block_count,
                      MPI_Datatype block_type, const int *counts,
                      const int *displs, MPI_Datatype many_type, int root,
                      size_t bytes, const struct coll_form *form)
{
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .bytes = bytes,
                          .request = form->request,
                          .persistent = form->persistent};
    a.u.rooted = (struct coll_rooted_args){
        .sbuf = sbuf,
        .rbuf = rbuf,
        .block_count = block_count,
        .block_type = block_type,
        .counts = counts,
        .displs = displs,
        .many_type = many_type,
        .root = root,
        .uniform = kind == GC_COLL_GATHER || kind == GC_COLL_SCATTER ||
                   kind == GC_COLL_ALLGATHER,
    };
    return coll_run(kind, &a);
}

/* The size of `count` x `type`, what every member agrees on. */
static size_t agreed_bytes(int count, MPI_Datatype type)
{
    size_t bytes = 0;
    return gc_packed_size(count, type, &bytes) == MPI_SUCCESS ? bytes : 0;
}

/*
 * The three forms of each collective (struct coll_form) share their
 * checks and their algorithms.
 */
static int barrier(struct gc_comm *c, const char *fn,
                   const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_barrier(c, fn, form);
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .request = form->request,
                          .persistent = form->persistent};
    return coll_run(GC_COLL_BARRIER, &a);
}

int MPI_Barrier(MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Barrier(comm);
    return barrier(c, "MPI_Barrier", COLL_BLOCKING);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ibarrier(comm, request);
    return barrier(c, "MPI_Ibarrier", COLL_NONBLOCKING(request));
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Barrier_init(comm, info, request);
    return barrier(c, "MPI_Barrier_init", COLL_PERSISTENT(request));
}

static int bcast(struct gc_comm *c, const char *fn, void *buffer, int count,
                 MPI_Datatype datatype, int root, const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_bcast(c, fn, buffer, count, datatype, root, form);
    int status = coll_check_root(c, fn, root);
    if (status == MPI_SUCCESS)
        status = coll_check_buf(c, fn, count, datatype);
    if (status == MPI_SUCCESS)
        status = coll_check_userbuf(c, fn, buffer, count, datatype);
    if (status == MPI_SUCCESS)
        status = check_not_in_place(c, fn, buffer);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .bytes = agreed_bytes(count, datatype),
                          .request = form->request,
                          .persistent = form->persistent};
    a.u.bcast.buf = buffer;
    a.u.bcast.count = count;
    a.u.bcast.type = datatype;
    a.u.bcast.root = root;
    return coll_run(GC_COLL_BCAST, &a);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
              MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    return bcast(c, "MPI_Bcast", buffer, count, datatype, root, COLL_BLOCKING);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
               MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    return bcast(c, "MPI_Ibcast", buffer, count, datatype, root,
                 COLL_NONBLOCKING(request));
}

int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                   MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Bcast_init(buffer, count, datatype, root, comm, info,
                               request);
    return bcast(c, "MPI_Bcast_init", buffer, count, datatype, root,
                 COLL_PERSISTENT(request));
}

/* Gather is Gatherv of one recvcount x recvtype block per member. */
static int gather(struct gc_comm *c, const char *fn, const void *sendbuf,
                  int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root,
                  const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_gather(c, fn, sendbuf, sendcount, sendtype, recvbuf,
                         recvcount, recvtype, root, form);
    struct coll_blocks b = COLL_BLOCKS_INIT;
    int status = check_rooted(c, fn, root, sendbuf, sendcount, sendtype,
                              recvcount, NULL, recvtype);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c->rank == root) {
        status = coll_blocks_make(c, recvcount, recvtype, 1, &b);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    /* The root may pass MPI_IN_PLACE: its receive side sizes the block. */
    size_t bytes = c->rank == root ? agreed_bytes(recvcount, recvtype)
                                   : agreed_bytes(sendcount, sendtype);
    status =
        run_rooted(GC_COLL_GATHER, c, fn, sendbuf, recvbuf, sendcount, sendtype,
                   b.counts, b.displs, b.type, root, bytes, form);
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
               MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                           recvtype, root, comm);
    return gather(c, "MPI_Gather", sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, recvtype, root, COLL_BLOCKING);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, root, comm, request);
    return gather(c, "MPI_Igather", sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, recvtype, root, COLL_NONBLOCKING(request));
}

int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype,
                    int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gather_init(sendbuf, sendcount, sendtype, recvbuf,
                                recvcount, recvtype, root, comm, info, request);
    return gather(c, "MPI_Gather_init", sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, recvtype, root, COLL_PERSISTENT(request));
}

static int gatherv(struct gc_comm *c, const char *fn, const void *sendbuf,
                   int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, int root,
                   const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_gatherv(c, fn, sendbuf, sendcount, sendtype, recvbuf,
                          recvcounts, displs, recvtype, root, form);
    int status = check_rooted(c, fn, root, sendbuf, sendcount, sendtype, 0,
                              recvcounts, recvtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_GATHERV, c, fn, sendbuf, recvbuf, sendcount,
                      sendtype, recvcounts, displs, recvtype, root, 0, form);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, const int recvcounts[], const int displs[],
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                            displs, recvtype, root, comm);
    return gatherv(c, "MPI_Gatherv", sendbuf, sendcount, sendtype, recvbuf,
                   recvcounts, displs, recvtype, root, COLL_BLOCKING);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, const int recvcounts[], const int displs[],
                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                             displs, recvtype, root, comm, request);
    return gatherv(c, "MPI_Igatherv", sendbuf, sendcount, sendtype, recvbuf,
                   recvcounts, displs, recvtype, root,
                   COLL_NONBLOCKING(request));
}

int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const int recvcounts[], const int displs[],
                     MPI_Datatype recvtype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf,
                                 recvcounts, displs, recvtype, root, comm, info,
                                 request);
    return gatherv(c, "MPI_Gatherv_init", sendbuf, sendcount, sendtype, recvbuf,
                   recvcounts, displs, recvtype, root,
                   COLL_PERSISTENT(request));
}

/* Scatter is Scatterv of one sendcount x sendtype block per member. */
static int scatter(struct gc_comm *c, const char *fn, const void *sendbuf,
                   int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root,
                   const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_scatter(c, fn, sendbuf, sendcount, sendtype, recvbuf,
                          recvcount, recvtype, root, form);
    struct coll_blocks b = COLL_BLOCKS_INIT;
    int status = check_rooted(c, fn, root, recvbuf, recvcount, recvtype,
                              sendcount, NULL, sendtype);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c->rank == root) {
        status = coll_blocks_make(c, sendcount, sendtype, 1, &b);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    size_t bytes = c->rank == root ? agreed_bytes(sendcount, sendtype)
                                   : agreed_bytes(recvcount, recvtype);
    status =
        run_rooted(GC_COLL_SCATTER, c, fn, sendbuf, recvbuf, recvcount,
                   recvtype, b.counts, b.displs, b.type, root, bytes, form);
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, root, comm);
    return scatter(c, "MPI_Scatter", sendbuf, sendcount, sendtype, recvbuf,
                   recvcount, recvtype, root, COLL_BLOCKING);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, root, comm, request);
    return scatter(c, "MPI_Iscatter", sendbuf, sendcount, sendtype, recvbuf,
                   recvcount, recvtype, root, COLL_NONBLOCKING(request));
}

int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatter_init(sendbuf, sendcount, sendtype, recvbuf,
                                 recvcount, recvtype, root, comm, info,
                                 request);
    return scatter(c, "MPI_Scatter_init", sendbuf, sendcount, sendtype, recvbuf,
                   recvcount, recvtype, root, COLL_PERSISTENT(request));
}

static int scatterv(struct gc_comm *c, const char *fn, const void *sendbuf,
                    const int sendcounts[], const int displs[],
                    MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int root,
                    const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_scatterv(c, fn, sendbuf, sendcounts, displs, sendtype,
                           recvbuf, recvcount, recvtype, root, form);
    int status = check_rooted(c, fn, root, recvbuf, recvcount, recvtype, 0,
                              sendcounts, sendtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_SCATTERV, c, fn, sendbuf, recvbuf, recvcount,
                      recvtype, sendcounts, displs, sendtype, root, 0, form);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
                 const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                             recvcount, recvtype, root, comm);
    return scatterv(c, "MPI_Scatterv", sendbuf, sendcounts, displs, sendtype,
                    recvbuf, recvcount, recvtype, root, COLL_BLOCKING);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[],
                  const int displs[], MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                              recvcount, recvtype, root, comm, request);
    return scatterv(c, "MPI_Iscatterv", sendbuf, sendcounts, displs, sendtype,
                    recvbuf, recvcount, recvtype, root,
                    COLL_NONBLOCKING(request));
}

int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[],
                      const int displs[], MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatterv_init(sendbuf, sendcounts, displs, sendtype,
                                  recvbuf, recvcount, recvtype, root, comm,
                                  info, request);
    return scatterv(c, "MPI_Scatterv_init", sendbuf, sendcounts, displs,
                    sendtype, recvbuf, recvcount, recvtype, root,
                    COLL_PERSISTENT(request));
}

/* Allgather is Allgatherv of one recvcount x recvtype block per member. */
static int allgather(struct gc_comm *c, const char *fn, const void *sendbuf,
                     int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype,
                     const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_allgather(c, fn, sendbuf, sendcount, sendtype, recvbuf,
                            recvcount, recvtype, form);
    struct coll_blocks b = COLL_BLOCKS_INIT;
    int status = coll_check_buf(c, fn, recvcount, recvtype);
    if (status == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        status = coll_check_buf(c, fn, sendcount, sendtype);
    if (status == MPI_SUCCESS && sendcount > 0)
        status = coll_check_alias(c, fn, sendbuf, recvbuf, recvcount);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = coll_blocks_make(c, recvcount, recvtype, 1, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = run_rooted(GC_COLL_ALLGATHER, c, fn, sendbuf, recvbuf, sendcount,
                        sendtype, b.counts, b.displs, b.type, 0,
                        agreed_bytes(recvcount, recvtype), form);
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              recvtype, comm);
    return allgather(c, "MPI_Allgather", sendbuf, sendcount, sendtype, recvbuf,
                     recvcount, recvtype, COLL_BLOCKING);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                               recvtype, comm, request);
    return allgather(c, "MPI_Iallgather", sendbuf, sendcount, sendtype, recvbuf,
                     recvcount, recvtype, COLL_NONBLOCKING(request));
}

int MPI_Allgather_init(const void *sendbuf, int sendcount,
                       MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf,
                                   recvcount, recvtype, comm, info, request);
    return allgather(c, "MPI_Allgather_init", sendbuf, sendcount, sendtype,
                     recvbuf, recvcount, recvtype, COLL_PERSISTENT(request));
}

static int allgatherv_call(struct gc_comm *c, const char *fn,
                           const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[],
                           MPI_Datatype recvtype, const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_allgatherv(c, fn, sendbuf, sendcount, sendtype, recvbuf,
                             recvcounts, displs, recvtype, form);
    int status = coll_check_counts(c, fn, c->size, recvcounts);
    if (status == MPI_SUCCESS)
        status = coll_check_type(c, fn, recvtype);
    if (status == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        status = coll_check_buf(c, fn, sendcount, sendtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_ALLGATHERV, c, fn, sendbuf, recvbuf, sendcount,
                      sendtype, recvcounts, displs, recvtype, 0, 0, form);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                               recvcounts, displs, recvtype, comm);
    return allgatherv_call(c, "MPI_Allgatherv", sendbuf, sendcount, sendtype,
                           recvbuf, recvcounts, displs, recvtype,
                           COLL_BLOCKING);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                recvcounts, displs, recvtype, comm, request);
    return allgatherv_call(c, "MPI_Iallgatherv", sendbuf, sendcount, sendtype,
                           recvbuf, recvcounts, displs, recvtype,
                           COLL_NONBLOCKING(request));
}

int MPI_Allgatherv_init(const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[],
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf,
                                    recvcounts, displs, recvtype, comm, info,
                                    request);
    return allgatherv_call(c, "MPI_Allgatherv_init", sendbuf, sendcount,
                           sendtype, recvbuf, recvcounts, displs, recvtype,
                           COLL_PERSISTENT(request));
}
