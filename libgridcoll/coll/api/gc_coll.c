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

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/intercomm/intercomm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"

/* ---- entry points ------------------------------------------------------ */

static int check_not_in_place(const struct gc_comm *c, const char *fn,
                              const void *buf)
{
    if (buf == MPI_IN_PLACE)
        return gc_error(c->handle, MPI_ERR_BUFFER, fn,
                        "MPI_IN_PLACE is not valid here");
    return MPI_SUCCESS;
}

/*
 * A rooted call's arguments: the root, the non-root side (count x type
 * unless MPI_IN_PLACE, which only the root may pass) and, at the root,
 * its side: count x type, or counts[] (when not NULL) and type.
 */
static int check_rooted(const struct gc_comm *c, const char *fn, int root,
                        const void *buf, MPI_Count count, MPI_Datatype type,
                        MPI_Count root_count, const MPI_Count *root_counts,
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
                      const void *sbuf, void *rbuf, MPI_Count block_count,
                      MPI_Datatype block_type, const MPI_Count *counts,
                      const MPI_Aint *displs, MPI_Datatype many_type, int root,
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
static size_t agreed_bytes(MPI_Count count, MPI_Datatype type)
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
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Barrier(comm);
    return barrier(c, "MPI_Barrier", COLL_BLOCKING);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ibarrier(comm, request);
    return barrier(c, "MPI_Ibarrier", COLL_NONBLOCKING(request));
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Barrier_init(comm, info, request);
    return barrier(c, "MPI_Barrier_init", COLL_PERSISTENT(request));
}

static int bcast(struct gc_comm *c, const char *fn, void *buffer,
                 MPI_Count count, MPI_Datatype datatype, int root,
                 const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(count)
                   ? gc_unsupported(c->handle, fn)
                   : ic_bcast(c, fn, buffer, (int)count, datatype, root, form);
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

#define BCAST_PARAMS(COUNT, DISP)                                              \
    void *buffer, COUNT count, MPI_Datatype datatype, int root
#define BCAST_ARGS()            buffer, count, datatype, root
#define BCAST_IMPL(c, fn, form) bcast(c, fn, BCAST_ARGS(), form)
GC_COLL_FORMS(Bcast, Ibcast, BCAST_PARAMS, BCAST_ARGS, BCAST_IMPL)

/* Gather is Gatherv of one recvcount x recvtype block per member. */
static int gather(struct gc_comm *c, const char *fn, const void *sendbuf,
                  MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root,
                  const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(sendcount) || !ic_fits(recvcount)
                   ? gc_unsupported(c->handle, fn)
                   : ic_gather(c, fn, sendbuf, (int)sendcount, sendtype,
                               recvbuf, (int)recvcount, recvtype, root, form);
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

/* The parameters of Gather, Scatter, Allgather and Alltoall (no root). */
#define BLOCKS_PARAMS(COUNT, DISP)                                             \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, COUNT recvcount, MPI_Datatype recvtype
#define ROOTED_PARAMS(COUNT, DISP) BLOCKS_PARAMS(COUNT, DISP), int root
#define BLOCKS_ARGS()              sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype
#define ROOTED_ARGS()              BLOCKS_ARGS(), root
#define GATHER_IMPL(c, fn, form)   gather(c, fn, ROOTED_ARGS(), form)
GC_COLL_FORMS(Gather, Igather, ROOTED_PARAMS, ROOTED_ARGS, GATHER_IMPL)

static int gatherv(struct gc_comm *c, const char *fn, const void *sendbuf,
                   MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   struct coll_vec v, MPI_Datatype recvtype, int root,
                   const struct coll_form *form)
{
    if (c->inter != NULL) {
        struct ic_vec x = {0};
        int n = root == MPI_ROOT ? c->inter->remote_size : 0;
        int status = !ic_fits(sendcount) ? gc_unsupported(c->handle, fn)
                                         : ic_vec_narrow(c, fn, n, v, &x);
        if (status == MPI_SUCCESS)
            status =
                ic_gatherv(c, fn, sendbuf, (int)sendcount, sendtype, recvbuf,
                           x.counts, x.displs, recvtype, root, form);
        ic_vec_free(&x);
        return status;
    }
    struct coll_wide w;
    int status = coll_vec_wide(c, c->rank == root ? c->size : 0, v, &w);
    if (status == MPI_SUCCESS)
        status = check_rooted(c, fn, root, sendbuf, sendcount, sendtype, 0,
                              w.counts, recvtype);
    if (status == MPI_SUCCESS)
        status =
            run_rooted(GC_COLL_GATHERV, c, fn, sendbuf, recvbuf, sendcount,
                       sendtype, w.counts, w.displs, recvtype, root, 0, form);
    coll_wide_free(&w);
    return status;
}

#define GATHERV_PARAMS(COUNT, DISP)                                            \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, const COUNT recvcounts[], const DISP displs[],          \
        MPI_Datatype recvtype, int root
#define GATHERV_ARGS()                                                         \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root
#define GATHERV_IMPL(c, fn, form)                                              \
    gatherv(c, fn, sendbuf, sendcount, sendtype, recvbuf,                      \
            COLL_VEC(recvcounts, displs), recvtype, root, form)
GC_COLL_FORMS(Gatherv, Igatherv, GATHERV_PARAMS, GATHERV_ARGS, GATHERV_IMPL)

/* Scatter is Scatterv of one sendcount x sendtype block per member. */
static int scatter(struct gc_comm *c, const char *fn, const void *sendbuf,
                   MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root,
                   const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(sendcount) || !ic_fits(recvcount)
                   ? gc_unsupported(c->handle, fn)
                   : ic_scatter(c, fn, sendbuf, (int)sendcount, sendtype,
                                recvbuf, (int)recvcount, recvtype, root, form);
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

#define SCATTER_IMPL(c, fn, form) scatter(c, fn, ROOTED_ARGS(), form)
GC_COLL_FORMS(Scatter, Iscatter, ROOTED_PARAMS, ROOTED_ARGS, SCATTER_IMPL)

static int scatterv(struct gc_comm *c, const char *fn, const void *sendbuf,
                    struct coll_vec v, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, int root,
                    const struct coll_form *form)
{
    if (c->inter != NULL) {
        struct ic_vec x = {0};
        int n = root == MPI_ROOT ? c->inter->remote_size : 0;
        int status = !ic_fits(recvcount) ? gc_unsupported(c->handle, fn)
                                         : ic_vec_narrow(c, fn, n, v, &x);
        if (status == MPI_SUCCESS)
            status = ic_scatterv(c, fn, sendbuf, x.counts, x.displs, sendtype,
                                 recvbuf, (int)recvcount, recvtype, root, form);
        ic_vec_free(&x);
        return status;
    }
    struct coll_wide w;
    int status = coll_vec_wide(c, c->rank == root ? c->size : 0, v, &w);
    if (status == MPI_SUCCESS)
        status = check_rooted(c, fn, root, recvbuf, recvcount, recvtype, 0,
                              w.counts, sendtype);
    if (status == MPI_SUCCESS)
        status =
            run_rooted(GC_COLL_SCATTERV, c, fn, sendbuf, recvbuf, recvcount,
                       recvtype, w.counts, w.displs, sendtype, root, 0, form);
    coll_wide_free(&w);
    return status;
}

#define SCATTERV_PARAMS(COUNT, DISP)                                           \
    const void *sendbuf, const COUNT sendcounts[], const DISP displs[],        \
        MPI_Datatype sendtype, void *recvbuf, COUNT recvcount,                 \
        MPI_Datatype recvtype, int root
#define SCATTERV_ARGS()                                                        \
    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root
#define SCATTERV_IMPL(c, fn, form)                                             \
    scatterv(c, fn, sendbuf, COLL_VEC(sendcounts, displs), sendtype, recvbuf,  \
             recvcount, recvtype, root, form)
GC_COLL_FORMS(Scatterv, Iscatterv, SCATTERV_PARAMS, SCATTERV_ARGS,
              SCATTERV_IMPL)

/* Allgather is Allgatherv of one recvcount x recvtype block per member. */
static int allgather(struct gc_comm *c, const char *fn, const void *sendbuf,
                     MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype,
                     const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(sendcount) || !ic_fits(recvcount)
                   ? gc_unsupported(c->handle, fn)
                   : ic_allgather(c, fn, sendbuf, (int)sendcount, sendtype,
                                  recvbuf, (int)recvcount, recvtype, form);
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

#define ALLGATHER_IMPL(c, fn, form) allgather(c, fn, BLOCKS_ARGS(), form)
GC_COLL_FORMS(Allgather, Iallgather, BLOCKS_PARAMS, BLOCKS_ARGS, ALLGATHER_IMPL)

static int allgatherv(struct gc_comm *c, const char *fn, const void *sendbuf,
                      MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                      struct coll_vec v, MPI_Datatype recvtype,
                      const struct coll_form *form)
{
    if (c->inter != NULL) {
        struct ic_vec x = {0};
        int status = !ic_fits(sendcount)
                         ? gc_unsupported(c->handle, fn)
                         : ic_vec_narrow(c, fn, c->inter->remote_size, v, &x);
        if (status == MPI_SUCCESS)
            status = ic_allgatherv(c, fn, sendbuf, (int)sendcount, sendtype,
                                   recvbuf, x.counts, x.displs, recvtype, form);
        ic_vec_free(&x);
        return status;
    }
    struct coll_wide w;
    int status = coll_vec_wide(c, c->size, v, &w);
    if (status == MPI_SUCCESS)
        status = coll_check_counts(c, fn, c->size, w.counts);
    if (status == MPI_SUCCESS)
        status = coll_check_type(c, fn, recvtype);
    if (status == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        status = coll_check_buf(c, fn, sendcount, sendtype);
    if (status == MPI_SUCCESS)
        status =
            run_rooted(GC_COLL_ALLGATHERV, c, fn, sendbuf, recvbuf, sendcount,
                       sendtype, w.counts, w.displs, recvtype, 0, 0, form);
    coll_wide_free(&w);
    return status;
}

#define ALLGATHERV_PARAMS(COUNT, DISP)                                         \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, const COUNT recvcounts[], const DISP displs[],          \
        MPI_Datatype recvtype
#define ALLGATHERV_ARGS()                                                      \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype
#define ALLGATHERV_IMPL(c, fn, form)                                           \
    allgatherv(c, fn, sendbuf, sendcount, sendtype, recvbuf,                   \
               COLL_VEC(recvcounts, displs), recvtype, form)
GC_COLL_FORMS(Allgatherv, Iallgatherv, ALLGATHERV_PARAMS, ALLGATHERV_ARGS,
              ALLGATHERV_IMPL)

/* The reductions' schedules hold their op: MPI lets the program free it
 * once a nonblocking or persistent call has returned. */
int MPI_Op_free(MPI_Op *op)
{
    GC_ENTER();
    return coll_sched_op_free(op);
}
