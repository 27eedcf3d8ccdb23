/*
 * Reductions and scans on grid communicators: the entry points, the
 * helpers the reduction algorithms share, and the issue-3 fallbacks
 * reduce_bcast, reduce_scatterv and gather_scatter (gc_coll.c has their
 * WAN message counts; the other algorithms are in coll/).  Ops are
 * applied with PMPI_Reduce_local on typed temporaries, so every built-in
 * op and datatype and user-defined ops work; a non-commutative op always
 * combines in comm-rank order, whatever the site layout.
 */
#include <limits.h>
#include <stdlib.h>

#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"

int coll_sites_contiguous(const struct gc_comm *c)
{
    /* Contiguous: the site changes exactly site_count - 1 times. */
    int runs = 1;
    for (int r = 1; r < c->size; r++)
        runs += c->site[r] != c->site[r - 1];
    return runs == c->site_count;
}

int coll_site_partials_ok(const struct gc_comm *c, MPI_Op op, int *in_order)
{
    int commutative;
    int status = PMPI_Op_commutative(op, &commutative);
    if (status != MPI_SUCCESS)
        return status;
    *in_order = commutative || coll_sites_contiguous(c);
    return MPI_SUCCESS;
}

/* Folding from the right keeps the order for non-commutative ops:
 * acc = x[i] op acc. */
int coll_combine(const struct gc_comm *c, const unsigned char *x, int n,
                 size_t stride, size_t len, void *rbuf, int count,
                 MPI_Datatype type, MPI_Op op)
{
    struct coll_temp t = {0};
    int status = coll_temp_alloc(c, count, type, 1, &t);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status =
        coll_unpack(c, x + (size_t)(n - 1) * stride, len, rbuf, count, type);
    for (int i = n - 2; i >= 0 && count > 0 && status == MPI_SUCCESS; i--) {
        status =
            coll_unpack(c, x + (size_t)i * stride, len, t.base, count, type);
        if (status == MPI_SUCCESS)
            status = PMPI_Reduce_local(t.base, rbuf, count, type, op);
    }
cleanup:
    free(t.mem);
    return status;
}

int coll_pack_input(const struct gc_comm *c, const void *sbuf, const void *rbuf,
                    int count, MPI_Datatype type, size_t len, int layout,
                    unsigned char **mine, struct coll_blocks *b)
{
    int status = coll_blocks_make(c, (MPI_Count)len, MPI_BYTE, layout, b);
    if (status != MPI_SUCCESS)
        return status;
    if ((*mine = coll_alloc(len)) == NULL)
        return coll_no_mem(c);
    return coll_pack(c, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, type, *mine,
                     len);
}

/*
 * Scan and Exscan: every contribution goes to rank 0 (Gather), which
 * computes the prefixes in rank order and sends each member its own
 * (Scatter).  Exscan leaves rank 0's buffer alone (undefined by MPI).
 */
static int scan(struct gc_comm *c, const void *sbuf, void *rbuf, int count,
                MPI_Datatype type, MPI_Op op, int exclusive)
{
    unsigned char *mine = NULL, *all = NULL;
    struct coll_blocks b = COLL_BLOCKS_INIT;
    struct coll_temp t = {0};
    int root = c->rank == 0;
    size_t len;
    int status = coll_packed_size(c, count, type, &len);
    if (status == MPI_SUCCESS)
        status =
            coll_pack_input(c, sbuf, rbuf, count, type, len, root, &mine, &b);
    if (status == MPI_SUCCESS && root)
        status = coll_temp_alloc(c, count, type, c->size, &t);
    if (status == MPI_SUCCESS && root &&
        (all = coll_alloc(len * (size_t)c->size)) == NULL)
        status = coll_no_mem(c);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = coll_gatherv(c, mine, b.count, b.type, all, b.counts, b.displs,
                          b.type, 0, 1);
    /* Prefix i in block i: x[0] op ... op x[i] = prefix(i-1) op x[i]. */
    for (int i = 0; root && i < c->size && status == MPI_SUCCESS; i++) {
        char *x = t.base + (MPI_Aint)i * t.stride;
        status = coll_unpack(c, all + (size_t)i * len, len, x, count, type);
        if (status == MPI_SUCCESS && i > 0 && count > 0)
            status = PMPI_Reduce_local(x - t.stride, x, count, type, op);
    }
    for (int i = exclusive; root && i < c->size && status == MPI_SUCCESS; i++)
        status = coll_pack(c, t.base + (MPI_Aint)(i - exclusive) * t.stride,
                           count, type, all + (size_t)i * len, len);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = coll_scatterv(c, all, b.counts, b.displs, b.type, mine, b.count,
                           b.type, 0, 1);
    if (status == MPI_SUCCESS && !(exclusive && c->rank == 0))
        status = coll_unpack(c, mine, len, rbuf, count, type);
cleanup:
    free(mine);
    free(all);
    free(t.mem);
    coll_blocks_free(&b);
    return status;
}

/*
 * Reduce_scatter(_block): Reduce of the whole vector to rank 0 into a
 * temporary, then Scatterv of the pieces.  recvcounts[] are the pieces'
 * sizes (all equal, Reduce_scatter_block, when `bytes` is set).
 */
int reduce_scatter_grid_reduce_scatterv(const struct coll_args *a)
{
    const struct coll_reduce_scatter_args *args = &a->u.reduce_scatter;
    struct gc_comm *c = a->comm;
    const int *recvcounts = args->rcounts;
    MPI_Datatype type = args->type;
    struct coll_temp t = {0};
    int *displs = NULL;
    long long total = 0;
    int status = MPI_SUCCESS;
    for (int r = 0; r < c->size; r++)
        total += recvcounts[r];
    if (total > INT_MAX) {
        status = coll_arg_error(c, MPI_ERR_COUNT, a->fn,
                                "the counts add up to more than INT_MAX");
        goto cleanup;
    }
    if ((displs = malloc((size_t)c->size * sizeof *displs)) == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int r = 0, at = 0; r < c->size; at += recvcounts[r++])
        displs[r] = at;
    if (c->rank == 0) {
        status = coll_temp_alloc(c, (int)total, type, 1, &t);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    /* In place, the input is rbuf; the result goes to a temporary. */
    const void *input = args->sbuf == MPI_IN_PLACE ? args->rbuf : args->sbuf;
    status = coll_reduce(c, input, t.base, (int)total, type, args->op, 0);
    if (status == MPI_SUCCESS)
        status = coll_scatterv(c, t.base, recvcounts, displs, type, args->rbuf,
                               recvcounts[c->rank], type, 0, a->bytes > 0);
cleanup:
    free(t.mem);
    free(displs);
    return status;
}

/* Allreduce: Reduce to rank 0, then Bcast from it. */
int allreduce_grid_reduce_bcast(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    /* In place, rank 0 reduces in place and the others' input is rbuf. */
    const void *sbuf = r->sbuf;
    if (sbuf == MPI_IN_PLACE && a->comm->rank != 0)
        sbuf = r->rbuf;
    int status =
        coll_reduce(a->comm, sbuf, r->rbuf, r->count, r->type, r->op, 0);
    if (status != MPI_SUCCESS)
        return status;
    return coll_bcast(a->comm, r->rbuf, r->count, r->type, 0);
}

/* Reduce hier to rank 0 (root_site is rank 0's site for an allreduce),
 * then bcast hier from it, both with the segments coll_reduce and
 * coll_bcast use. */
double allreduce_grid_reduce_bcast_cost(const struct coll_cost_args *c)
{
    struct coll_cost_args fixed = *c;
    fixed.segsize = coll_table_of(GC_COLL_BCAST)->default_segsize;
    return reduce_grid_hier_cost(&fixed) + bcast_grid_hier_cost(&fixed);
}

int scan_grid_gather_scatter(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    return scan(a->comm, r->sbuf, r->rbuf, r->count, r->type, r->op,
                r->exclusive);
}

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
                         int exclusive)
{
    struct coll_args a = {.comm = c, .fn = fn};
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

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    static const char fn[] = "MPI_Reduce";
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
                         datatype, op, root, 0);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    static const char fn[] = "MPI_Allreduce";
    int status = check_reduction(c, fn, count, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(GC_COLL_ALLREDUCE, c, fn, sendbuf, recvbuf, count,
                         datatype, op, 0, 0);
}

static int run_reduce_scatter(struct gc_comm *c, const char *fn,
                              const void *sbuf, void *rbuf,
                              const int *recvcounts, MPI_Datatype type,
                              MPI_Op op, size_t block_bytes)
{
    struct coll_args a = {.comm = c, .fn = fn, .bytes = block_bytes};
    a.u.reduce_scatter = (struct coll_reduce_scatter_args){
        .sbuf = sbuf,
        .rbuf = rbuf,
        .rcounts = recvcounts,
        .type = type,
        .op = op,
    };
    return coll_run(GC_COLL_REDUCE_SCATTER, &a);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                       const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
                                   comm);
    static const char fn[] = "MPI_Reduce_scatter";
    int status = coll_check_counts(c, fn, c->size, recvcounts);
    int any = 0; /* aliasing matters when something is reduced */
    for (int r = 0; status == MPI_SUCCESS && r < c->size && !any; r++)
        any = recvcounts[r] > 0;
    if (status == MPI_SUCCESS)
        status = check_reduction(c, fn, any, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduce_scatter(c, fn, sendbuf, recvbuf, recvcounts, datatype, op,
                              0);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype,
                                         op, comm);
    static const char fn[] = "MPI_Reduce_scatter_block";
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
                                block_bytes);
cleanup:
    free(counts);
    return status;
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count,
             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
    static const char fn[] = "MPI_Scan";
    int status = check_reduction(c, fn, count, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(GC_COLL_SCAN, c, fn, sendbuf, recvbuf, count, datatype,
                         op, 0, 0);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
    static const char fn[] = "MPI_Exscan";
    int status = check_reduction(c, fn, count, datatype, op, sendbuf, recvbuf);
    if (status != MPI_SUCCESS)
        return status;
    return run_reduction(GC_COLL_SCAN, c, fn, sendbuf, recvbuf, count, datatype,
                         op, 0, 1);
}
