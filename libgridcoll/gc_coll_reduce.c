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

#include "engine/coll_sched.h"
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

/*
 * Scan and Exscan: every contribution goes to rank 0 (Gather), which
 * computes the prefixes in rank order and sends each member its own
 * (Scatter).  Exscan leaves rank 0's buffer alone (undefined by MPI).
 */
struct prefixes {
    unsigned char *all; /* rank 0: every member's packed contribution */
    void *x;            /* rank 0: the typed prefixes, stride apart */
    MPI_Aint stride;
    size_t len;
    int count, size, exclusive;
    MPI_Datatype type;
    MPI_Op op;
};

static int prefixes(struct coll_sched *s, void *arg)
{
    struct prefixes *p = arg;
    struct gc_comm *c = coll_sched_comm(s);
    int status = MPI_SUCCESS;
    /* Prefix i in block i: x[0] op ... op x[i] = prefix(i-1) op x[i]. */
    for (int i = 0; i < p->size && status == MPI_SUCCESS; i++) {
        char *x = (char *)p->x + (MPI_Aint)i * p->stride;
        status = coll_unpack(c, p->all + (size_t)i * p->len, p->len, x,
                             p->count, p->type);
        if (status == MPI_SUCCESS && i > 0 && p->count > 0)
            status =
                PMPI_Reduce_local(x - p->stride, x, p->count, p->type, p->op);
    }
    for (int i = p->exclusive; i < p->size && status == MPI_SUCCESS; i++)
        status = coll_pack(
            c, (char *)p->x + (MPI_Aint)(i - p->exclusive) * p->stride,
            p->count, p->type, p->all + (size_t)i * p->len, p->len);
    return status;
}

int coll_fold_step(struct coll_sched *s, void *arg)
{
    const struct coll_fold *f = arg;
    return coll_combine(coll_sched_comm(s), f->partials, f->sources, f->stride,
                        f->len, f->rbuf, f->count, f->type, f->op);
}

int scan_grid_gather_scatter(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    int root = c->rank == 0;
    struct coll_blocks b = COLL_BLOCKS_INIT;
    size_t len;
    int done;
    int status = coll_packed_size(c, r->count, r->type, &len);
    if (status != MPI_SUCCESS)
        return status;
    struct prefixes *p = coll_sched_alloc(s, sizeof *p);
    unsigned char *mine = coll_sched_alloc(s, len);
    if (p == NULL || mine == NULL)
        return coll_no_mem(c);
    *p = (struct prefixes){.len = len,
                           .count = r->count,
                           .size = c->size,
                           .exclusive = r->exclusive,
                           .type = coll_sched_type(s, r->type),
                           .op = r->op};
    if (root) {
        /* One typed block per member, laid out as the datatype says. */
        MPI_Aint lb, extent;
        status = PMPI_Type_get_extent(r->type, &lb, &extent);
        p->all = coll_sched_alloc(s, len * (size_t)c->size);
        if (status == MPI_SUCCESS)
            status = coll_sched_temp(s, r->count * c->size, r->type, &p->x);
        if (status != MPI_SUCCESS)
            return status;
        if (p->all == NULL)
            return coll_no_mem(c);
        p->stride = (MPI_Aint)r->count * extent;
    }
    status = coll_blocks_make(c, (MPI_Count)len, MPI_BYTE, root, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    int packed = coll_sched_pack(s, r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
                                 r->count, r->type, mine, len, -1);
    status = phase_gatherv(s, mine, b.count, b.type, p->all, b.counts, b.displs,
                           b.type, 0, 1, packed, &done);
    if (status == MPI_SUCCESS && root)
        done = coll_sched_call(s, prefixes, p, done);
    if (status == MPI_SUCCESS)
        status = phase_scatterv(s, p->all, b.counts, b.displs, b.type, mine,
                                b.count, b.type, 0, 1, done, &done);
    if (status == MPI_SUCCESS && !(r->exclusive && c->rank == 0))
        coll_sched_unpack(s, mine, len, r->rbuf, r->count, r->type, done);
cleanup:
    coll_blocks_free(&b);
    return status;
}

/*
 * Reduce_scatter(_block): Reduce of the whole vector to rank 0 into a
 * temporary, then Scatterv of the pieces.  recvcounts[] are the pieces'
 * sizes (all equal, Reduce_scatter_block, when `bytes` is set).
 */
int reduce_scatter_grid_reduce_scatterv(struct coll_sched *s,
                                        const struct coll_args *a)
{
    const struct coll_reduce_scatter_args *args = &a->u.reduce_scatter;
    struct gc_comm *c = a->comm;
    const int *recvcounts = args->rcounts;
    long long total = 0;
    int done;
    for (int r = 0; r < c->size; r++)
        total += recvcounts[r];
    if (total > INT_MAX)
        return coll_arg_error(c, MPI_ERR_COUNT, a->fn,
                              "the counts add up to more than INT_MAX");
    int *displs = coll_sched_alloc(s, (size_t)c->size * sizeof *displs);
    if (displs == NULL)
        return coll_no_mem(c);
    for (int r = 0, at = 0; r < c->size; at += recvcounts[r++])
        displs[r] = at;
    void *temp = NULL;
    if (c->rank == 0) {
        int status = coll_sched_temp(s, (int)total, args->type, &temp);
        if (status != MPI_SUCCESS)
            return status;
    }
    /* In place, the input is rbuf; the result goes to a temporary. */
    const void *input = args->sbuf == MPI_IN_PLACE ? args->rbuf : args->sbuf;
    int status =
        phase_reduce(s, input, temp, (int)total, args->type, args->op, 0,
                     coll_table_of(GC_COLL_REDUCE)->default_segsize, -1, &done);
    if (status != MPI_SUCCESS)
        return status;
    return phase_scatterv(s, temp, recvcounts, displs, args->type, args->rbuf,
                          recvcounts[c->rank], args->type, 0, a->bytes > 0,
                          done, &done);
}

/* Allreduce: Reduce to rank 0, then Bcast from it. */
int allreduce_grid_reduce_bcast(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    int done;
    /* In place, rank 0 reduces in place and the others' input is rbuf. */
    const void *sbuf = r->sbuf;
    if (sbuf == MPI_IN_PLACE && a->comm->rank != 0)
        sbuf = r->rbuf;
    int status =
        phase_reduce(s, sbuf, r->rbuf, r->count, r->type, r->op, 0,
                     coll_table_of(GC_COLL_REDUCE)->default_segsize, -1, &done);
    if (status != MPI_SUCCESS)
        return status;
    return phase_bcast(s, r->rbuf, r->count, r->type, 0, done, &done);
}

/* Reduce hier to rank 0 (root_site is rank 0's site for an allreduce),
 * then bcast hier from it, both with the default segments phase_reduce
 * and phase_bcast get here. */
double allreduce_grid_reduce_bcast_cost(const struct coll_cost_args *c)
{
    struct coll_cost_args fixed = *c;
    fixed.segsize = coll_table_of(GC_COLL_BCAST)->default_segsize;
    return reduce_grid_hier_cost(&fixed) + bcast_grid_hier_cost(&fixed);
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
