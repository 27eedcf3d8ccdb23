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

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/intercomm/intercomm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"

/* ---- entry points -------------------------------------------------------- */

/* Reduction arguments every member checks: count, datatype, op, and
 * buffers not aliased (`count` 0 when the caller checks aliasing). */
static int check_reduction(const struct gc_comm *c, const char *fn,
                           MPI_Count count, MPI_Datatype type, MPI_Op op,
                           const void *sendbuf, const void *recvbuf)
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
                         MPI_Count count, MPI_Datatype type, MPI_Op op,
                         int root, int exclusive, const struct coll_form *form)
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
                  void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(count) ? gc_unsupported(c->handle, fn)
                               : ic_reduce(c, fn, sendbuf, recvbuf, (int)count,
                                           datatype, op, root, form);
    int status = coll_check_root(c, fn, root);
    if (status == MPI_SUCCESS) /* recvbuf matters at the root only */
        status = check_reduction(c, fn, count, datatype, op, sendbuf,
                                 c->rank == root ? recvbuf : NULL);
    if (status == MPI_SUCCESS && sendbuf == MPI_IN_PLACE && c->rank != root)
        status = gc_error(c->handle, MPI_ERR_BUFFER, fn,
                          "MPI_IN_PLACE is valid at the root only");
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(GC_COLL_REDUCE, c, fn, sendbuf, recvbuf, count,
                         datatype, op, root, 0, form);
}

/* The parameters of Allreduce, Scan and Exscan; Reduce adds the root. */
#define ALL_REDUCTION_PARAMS(COUNT, DISP)                                      \
    const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype,    \
        MPI_Op op
#define ALL_REDUCTION_ARGS()       sendbuf, recvbuf, count, datatype, op
#define REDUCE_PARAMS(COUNT, DISP) ALL_REDUCTION_PARAMS(COUNT, DISP), int root
#define REDUCE_ARGS()              ALL_REDUCTION_ARGS(), root
#define REDUCE_IMPL(c, fn, form)   reduce(c, fn, REDUCE_ARGS(), form)
GC_COLL_FORMS(Reduce, Ireduce, REDUCE_PARAMS, REDUCE_ARGS, REDUCE_IMPL)

/* Allreduce (kind GC_COLL_ALLREDUCE), Scan and Exscan (GC_COLL_SCAN). */
static int all_reduction(enum gc_coll_kind kind, int exclusive,
                         struct gc_comm *c, const char *fn, const void *sendbuf,
                         void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, const struct coll_form *form)
{
    if (c->inter != NULL && kind == GC_COLL_ALLREDUCE)
        return !ic_fits(count) ? gc_unsupported(c->handle, fn)
                               : ic_allreduce(c, fn, sendbuf, recvbuf,
                                              (int)count, datatype, op, form);
    if (c->inter != NULL) /* MPI defines the scans on intracommunicators */
        return gc_error(c->handle, MPI_ERR_COMM, fn,
                        "not defined on an intercommunicator");
    int status = check_reduction(c, fn, count, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(kind, c, fn, sendbuf, recvbuf, count, datatype, op, 0,
                         exclusive, form);
}

#define ALLREDUCE_IMPL(c, fn, form)                                            \
    all_reduction(GC_COLL_ALLREDUCE, 0, c, fn, ALL_REDUCTION_ARGS(), form)
#define SCAN_IMPL(c, fn, form)                                                 \
    all_reduction(GC_COLL_SCAN, 0, c, fn, ALL_REDUCTION_ARGS(), form)
#define EXSCAN_IMPL(c, fn, form)                                               \
    all_reduction(GC_COLL_SCAN, 1, c, fn, ALL_REDUCTION_ARGS(), form)
GC_COLL_FORMS(Allreduce, Iallreduce, ALL_REDUCTION_PARAMS, ALL_REDUCTION_ARGS,
              ALLREDUCE_IMPL)
GC_COLL_FORMS(Scan, Iscan, ALL_REDUCTION_PARAMS, ALL_REDUCTION_ARGS, SCAN_IMPL)
GC_COLL_FORMS(Exscan, Iexscan, ALL_REDUCTION_PARAMS, ALL_REDUCTION_ARGS,
              EXSCAN_IMPL)

static int run_reduce_scatter(struct gc_comm *c, const char *fn,
                              const void *sbuf, void *rbuf,
                              const MPI_Count *recvcounts, MPI_Datatype type,
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
                          const void *sendbuf, void *recvbuf, struct coll_vec v,
                          MPI_Datatype datatype, MPI_Op op,
                          const struct coll_form *form)
{
    if (c->inter != NULL) {
        struct ic_vec x = {0};
        int status = ic_vec_narrow(c, fn, c->inter->local_size, v, &x);
        if (status == MPI_SUCCESS)
            status = ic_reduce_scatter(c, fn, sendbuf, recvbuf, x.counts, 0,
                                       datatype, op, form);
        ic_vec_free(&x);
        return status;
    }
    struct coll_wide w;
    int status = coll_vec_wide(c, c->size, v, &w);
    if (status == MPI_SUCCESS)
        status = coll_check_counts(c, fn, c->size, w.counts);
    int any = 0; /* aliasing matters when something is reduced */
    for (int r = 0; status == MPI_SUCCESS && r < c->size && !any; r++)
        any = w.counts[r] > 0;
    if (status == MPI_SUCCESS)
        status = check_reduction(c, fn, any, datatype, op, sendbuf, recvbuf);
    if (status == MPI_SUCCESS)
        status = run_reduce_scatter(c, fn, sendbuf, recvbuf, w.counts, datatype,
                                    op, 0, form);
    coll_wide_free(&w);
    return status;
}

#define REDUCE_SCATTER_PARAMS(COUNT, DISP)                                     \
    const void *sendbuf, void *recvbuf, const COUNT recvcounts[],              \
        MPI_Datatype datatype, MPI_Op op
#define REDUCE_SCATTER_ARGS() sendbuf, recvbuf, recvcounts, datatype, op
#define REDUCE_SCATTER_IMPL(c, fn, form)                                       \
    reduce_scatter(c, fn, sendbuf, recvbuf,                                    \
                   COLL_VEC(recvcounts, (const int *)NULL), datatype, op,      \
                   form)
GC_COLL_FORMS(Reduce_scatter, Ireduce_scatter, REDUCE_SCATTER_PARAMS,
              REDUCE_SCATTER_ARGS, REDUCE_SCATTER_IMPL)

static int reduce_scatter_block(struct gc_comm *c, const char *fn,
                                const void *sendbuf, void *recvbuf,
                                MPI_Count recvcount, MPI_Datatype datatype,
                                MPI_Op op, const struct coll_form *form)
{
    if (c->inter != NULL)
        return !ic_fits(recvcount)
                   ? gc_unsupported(c->handle, fn)
                   : ic_reduce_scatter(c, fn, sendbuf, recvbuf, NULL,
                                       (int)recvcount, datatype, op, form);
    MPI_Count *counts = NULL;
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

#define REDUCE_SCATTER_BLOCK_PARAMS(COUNT, DISP)                               \
    const void *sendbuf, void *recvbuf, COUNT recvcount,                       \
        MPI_Datatype datatype, MPI_Op op
#define REDUCE_SCATTER_BLOCK_ARGS() sendbuf, recvbuf, recvcount, datatype, op
#define REDUCE_SCATTER_BLOCK_IMPL(c, fn, form)                                 \
    reduce_scatter_block(c, fn, REDUCE_SCATTER_BLOCK_ARGS(), form)
GC_COLL_FORMS(Reduce_scatter_block, Ireduce_scatter_block,
              REDUCE_SCATTER_BLOCK_PARAMS, REDUCE_SCATTER_BLOCK_ARGS,
              REDUCE_SCATTER_BLOCK_IMPL)
