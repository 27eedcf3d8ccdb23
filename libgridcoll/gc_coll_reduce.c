/*
 * The MPI entry points of the reductions and scans on grid communicators
 * (Reduce, Allreduce, Scan, Exscan, Reduce_scatter(_block)), in their
 * blocking, nonblocking and persistent forms.  The algorithms are in
 * coll/<collective>/; ops are applied with PMPI_Reduce_local on typed
 * temporaries, so every built-in op and datatype and user-defined ops
 * work, and a non-commutative op always combines in comm-rank order,
 * whatever the site layout.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"
#include "engine/coll_sched.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"

/* ---- entry points -------------------------------------------------------- */

/* Reduction arguments every member checks: count, datatype, op, and
 * buffers not aliased (`count` 0 when the caller checks aliasing). */
static int check_reduction(const struct gc_comm *c, const char *fn, int count,
                           MPI_Datatype type, MPI_Op op, const void *sendbuf,
                           const void *recvbuf)
{
    int status = coll_check_buf(c, fn, count, type);
    if (status == MPI_SUCCESS)
        status = coll_check_op(c, fn, op, type);
    if (status == MPI_SUCCESS)
        status = coll_check_alias(c, fn, sendbuf, recvbuf, count);
    if (status == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        status = coll_check_userbuf(c, fn, sendbuf, count, type);
    return status;
}

static int run_reduction(enum gc_coll_kind kind, struct gc_comm *c,
                         const char *fn, const void *sbuf, void *rbuf,
                         int count, MPI_Datatype type, MPI_Op op, int root,
                         int exclusive, const struct coll_form *form)
{
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .request = form->request,
                          .persistent = form->persistent};
    gc_packed_size(count, type, &a.bytes); /* checked by check_reduction */
    a.u.reduce = (struct coll_reduce_args){
        .sbuf = sbuf,
        .rbuf = rbuf,
        .count = count,
        .type = type,
        .op = op,
        .root = root,
        .exclusive = exclusive,
    };
    return coll_run(kind, &a);
}

static int reduce(struct gc_comm *c, const char *fn, const void *sendbuf,
                  void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  int root, const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_reduce(c, fn, sendbuf, recvbuf, count, datatype, op, root,
                         form);
    int status = coll_check_root(c, fn, root);
    if (status == MPI_SUCCESS) /* recvbuf matters at the root only */
        status = check_reduction(c, fn, count, datatype, op, sendbuf,
                                 c->rank == root ? recvbuf : NULL);
    if (status == MPI_SUCCESS && sendbuf == MPI_IN_PLACE && c->rank != root)
        status = coll_arg_error(c, MPI_ERR_BUFFER, fn,
                                "MPI_IN_PLACE is valid at the root only");
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(GC_COLL_REDUCE, c, fn, sendbuf, recvbuf, count,
                         datatype, op, root, 0, form);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    return reduce(c, "MPI_Reduce", sendbuf, recvbuf, count, datatype, op, root,
                  COLL_BLOCKING);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm,
                            request);
    return reduce(c, "MPI_Ireduce", sendbuf, recvbuf, count, datatype, op, root,
                  COLL_NONBLOCKING(request));
}

int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_init(sendbuf, recvbuf, count, datatype, op, root,
                                comm, info, request);
    return reduce(c, "MPI_Reduce_init", sendbuf, recvbuf, count, datatype, op,
                  root, COLL_PERSISTENT(request));
}

/* Allreduce (kind GC_COLL_ALLREDUCE), Scan and Exscan (GC_COLL_SCAN). */
static int all_reduction(enum gc_coll_kind kind, int exclusive,
                         struct gc_comm *c, const char *fn, const void *sendbuf,
                         void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, const struct coll_form *form)
{
    if (c->inter != NULL && kind == GC_COLL_ALLREDUCE)
        return ic_allreduce(c, fn, sendbuf, recvbuf, count, datatype, op, form);
    if (c->inter != NULL) /* MPI defines the scans on intracommunicators */
        return coll_arg_error(c, MPI_ERR_COMM, fn,
                              "not defined on an intercommunicator");
    int status = check_reduction(c, fn, count, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(kind, c, fn, sendbuf, recvbuf, count, datatype, op, 0,
                         exclusive, form);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return all_reduction(GC_COLL_ALLREDUCE, 0, c, "MPI_Allreduce", sendbuf,
                         recvbuf, count, datatype, op, COLL_BLOCKING);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
                               request);
    return all_reduction(GC_COLL_ALLREDUCE, 0, c, "MPI_Iallreduce", sendbuf,
                         recvbuf, count, datatype, op,
                         COLL_NONBLOCKING(request));
}

int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                       MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm,
                                   info, request);
    return all_reduction(GC_COLL_ALLREDUCE, 0, c, "MPI_Allreduce_init", sendbuf,
                         recvbuf, count, datatype, op,
                         COLL_PERSISTENT(request));
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count,
             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
    return all_reduction(GC_COLL_SCAN, 0, c, "MPI_Scan", sendbuf, recvbuf,
                         count, datatype, op, COLL_BLOCKING);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request);
    return all_reduction(GC_COLL_SCAN, 0, c, "MPI_Iscan", sendbuf, recvbuf,
                         count, datatype, op, COLL_NONBLOCKING(request));
}

int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                  MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scan_init(sendbuf, recvbuf, count, datatype, op, comm, info,
                              request);
    return all_reduction(GC_COLL_SCAN, 0, c, "MPI_Scan_init", sendbuf, recvbuf,
                         count, datatype, op, COLL_PERSISTENT(request));
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
    return all_reduction(GC_COLL_SCAN, 1, c, "MPI_Exscan", sendbuf, recvbuf,
                         count, datatype, op, COLL_BLOCKING);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm,
                            request);
    return all_reduction(GC_COLL_SCAN, 1, c, "MPI_Iexscan", sendbuf, recvbuf,
                         count, datatype, op, COLL_NONBLOCKING(request));
}

int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Exscan_init(sendbuf, recvbuf, count, datatype, op, comm,
                                info, request);
    return all_reduction(GC_COLL_SCAN, 1, c, "MPI_Exscan_init", sendbuf,
                         recvbuf, count, datatype, op,
                         COLL_PERSISTENT(request));
}

static int run_reduce_scatter(struct gc_comm *c, const char *fn,
                              const void *sbuf, void *rbuf,
                              const int *recvcounts, MPI_Datatype type,
                              MPI_Op op, size_t block_bytes,
                              const struct coll_form *form)
{
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .bytes = block_bytes,
                          .request = form->request,
                          .persistent = form->persistent};
    a.u.reduce_scatter = (struct coll_reduce_scatter_args){
        .sbuf = sbuf,
        .rbuf = rbuf,
        .rcounts = recvcounts,
        .type = type,
        .op = op,
    };
    return coll_run(GC_COLL_REDUCE_SCATTER, &a);
}

static int reduce_scatter(struct gc_comm *c, const char *fn,
                          const void *sendbuf, void *recvbuf,
                          const int recvcounts[], MPI_Datatype datatype,
                          MPI_Op op, const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_reduce_scatter(c, fn, sendbuf, recvbuf, recvcounts, 0,
                                 datatype, op, form);
    int status = coll_check_counts(c, fn, c->size, recvcounts);
    int any = 0; /* aliasing matters when something is reduced */
    for (int r = 0; status == MPI_SUCCESS && r < c->size && !any; r++)
        any = recvcounts[r] > 0;
    if (status == MPI_SUCCESS)
        status = check_reduction(c, fn, any, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduce_scatter(c, fn, sendbuf, recvbuf, recvcounts, datatype, op,
                              0, form);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                       const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
                                   comm);
    return reduce_scatter(c, "MPI_Reduce_scatter", sendbuf, recvbuf, recvcounts,
                          datatype, op, COLL_BLOCKING);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf,
                        const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
                                    comm, request);
    return reduce_scatter(c, "MPI_Ireduce_scatter", sendbuf, recvbuf,
                          recvcounts, datatype, op, COLL_NONBLOCKING(request));
}

int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf,
                            const int recvcounts[], MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype,
                                        op, comm, info, request);
    return reduce_scatter(c, "MPI_Reduce_scatter_init", sendbuf, recvbuf,
                          recvcounts, datatype, op, COLL_PERSISTENT(request));
}

static int reduce_scatter_block(struct gc_comm *c, const char *fn,
                                const void *sendbuf, void *recvbuf,
                                int recvcount, MPI_Datatype datatype, MPI_Op op,
                                const struct coll_form *form)
{
    if (c->inter != NULL)
        return ic_reduce_scatter(c, fn, sendbuf, recvbuf, NULL, recvcount,
                                 datatype, op, form);
    int *counts = NULL;
    size_t block_bytes = 0;
    int status =
        check_reduction(c, fn, recvcount, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if ((counts = malloc((size_t)c->size * sizeof *counts)) == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int r = 0; r < c->size; r++)
        counts[r] = recvcount;
    gc_packed_size(recvcount, datatype, &block_bytes);
    status = run_reduce_scatter(c, fn, sendbuf, recvbuf, counts, datatype, op,
                                block_bytes, form);
cleanup:
    free(counts);
    return status;
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype,
                                         op, comm);
    return reduce_scatter_block(c, "MPI_Reduce_scatter_block", sendbuf, recvbuf,
                                recvcount, datatype, op, COLL_BLOCKING);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype,
                                          op, comm, request);
    return reduce_scatter_block(c, "MPI_Ireduce_scatter_block", sendbuf,
                                recvbuf, recvcount, datatype, op,
                                COLL_NONBLOCKING(request));
}

int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf,
                                  int recvcount, MPI_Datatype datatype,
                                  MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter_block_init(
            sendbuf, recvbuf, recvcount, datatype, op, comm, info, request);
    return reduce_scatter_block(c, "MPI_Reduce_scatter_block_init", sendbuf,
                                recvbuf, recvcount, datatype, op,
                                COLL_PERSISTENT(request));
}
