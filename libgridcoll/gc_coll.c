/*
 * Collectives on grid communicators, issue-3 level: plain hierarchical
 * versions after the MagPIe scheme (Kielmann et al., "MagPIe: MPI's
 * collective communication operations for clustered wide area systems",
 * PPoPP 1999, section 3): a local phase through PMPI on the site's `local`
 * communicator with the user's datatypes, one exchange across the relays
 * between site leaders (or the root) carrying packed bytes, and a local
 * phase back.  Only packed bytes cross sites, so derived datatypes never
 * need to be contiguous; all sites share one architecture.
 *
 * WAN messages per call of what is here and in gc_coll_reduce.c, S =
 * sites with members:
 *   Barrier, gc_coll_allgather_bytes      S(S-1), one round between leaders
 *   Allreduce reduce_bcast, Reduce_scatter
 *   reduce_scatterv, Scan gather_scatter,
 *   Allgather(v) gather_bcast             to a root and back: two WAN
 *                                         latencies, S-1 messages each way
 *                                         (per segment on the legs through
 *                                         phase_reduce and phase_bcast)
 * These are the issue-3 fallbacks, the first entries of their tables,
 * composed as schedules (engine/coll_sched.h) of the phases of the
 * MagPIe Gather(v), Scatter(v), Reduce and Bcast in coll/ (phase_gatherv,
 * phase_scatterv, phase_reduce, phase_bcast); the literature's
 * algorithms are in coll/, one per file (docs/algorithms.md).  Also here:
 * the entry points of the bcast, gather, scatter and allgather families
 * in their blocking, nonblocking and persistent forms, and helpers the
 * algorithms share.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/coll_sched.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"

/* ---- shared helpers ---------------------------------------------------- */

int coll_packed_size(const struct gc_comm *c, int count, MPI_Datatype type,
                     size_t *len)
{
    int status = gc_packed_size(count, type, len);
    if (status == MPI_ERR_COUNT)
        return gc_error(c->handle, status,
                        "collective on a grid communicator: message size "
                        "overflows");
    return status;
}

void *coll_alloc(size_t bytes)
{
    return malloc(bytes > 0 ? bytes : 1);
}

int coll_no_mem(const struct gc_comm *c)
{
    return gc_error(c->handle, MPI_ERR_NO_MEM,
                    "collective on a grid communicator: out of memory");
}

int coll_local_p2p(struct gc_comm *c, MPI_Comm *comm)
{
    *comm = c->local_p2p;
    return MPI_SUCCESS;
}

int coll_arg_error(const struct gc_comm *c, int code, const char *fn,
                   const char *what)
{
    char detail[160];
    snprintf(detail, sizeof detail, "%s: %s", fn, what);
    return gc_error(c->handle, code, detail);
}

int coll_check_root(const struct gc_comm *c, const char *fn, int root)
{
    if (root < 0 || root >= c->size)
        return coll_arg_error(c, MPI_ERR_ROOT, fn, "root out of range");
    return MPI_SUCCESS;
}

static int check_count(const struct gc_comm *c, const char *fn, int count)
{
    if (count < 0)
        return coll_arg_error(c, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}

int coll_check_counts(const struct gc_comm *c, const char *fn, int n,
                      const int *counts)
{
    if (counts == NULL && n > 0)
        return coll_arg_error(c, MPI_ERR_ARG, fn, "counts array is NULL");
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return coll_arg_error(c, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}

int coll_check_type(const struct gc_comm *c, const char *fn, MPI_Datatype type)
{
    if (gc_type_check(type) != MPI_SUCCESS)
        return coll_arg_error(c, MPI_ERR_TYPE, fn,
                              type == MPI_DATATYPE_NULL
                                  ? "MPI_DATATYPE_NULL"
                                  : "datatype not committed");
    return MPI_SUCCESS;
}

int coll_check_buf(const struct gc_comm *c, const char *fn, int count,
                   MPI_Datatype type)
{
    int status = check_count(c, fn, count);
    return status == MPI_SUCCESS ? coll_check_type(c, fn, type) : status;
}

int coll_check_op(const struct gc_comm *c, const char *fn, MPI_Op op,
                  MPI_Datatype type)
{
    if (gc_op_check(op, type) != MPI_SUCCESS)
        return coll_arg_error(c, MPI_ERR_OP, fn,
                              op == MPI_OP_NULL
                                  ? "MPI_OP_NULL"
                                  : "operation not defined for the datatype");
    return MPI_SUCCESS;
}

int coll_check_userbuf(const struct gc_comm *c, const char *fn, const void *buf,
                       int count, MPI_Datatype type)
{
    /* NULL is MPI_BOTTOM, valid with a type of absolute addresses only:
     * a null buffer would fail late, on the ranks that touch it. */
    if (buf == NULL && count > 0 && gc_type_is_named(type))
        return coll_arg_error(c, MPI_ERR_BUFFER, fn, "null buffer");
    return MPI_SUCCESS;
}

int coll_check_alias(const struct gc_comm *c, const char *fn,
                     const void *sendbuf, const void *recvbuf, int count)
{
    /* As MPICH checks it: the same non-null address for both buffers. */
    if (count > 0 && sendbuf != MPI_IN_PLACE && sendbuf == recvbuf &&
        sendbuf != MPI_BOTTOM)
        return coll_arg_error(c, MPI_ERR_BUFFER, fn,
                              "send and receive buffers must not be aliased "
                              "(use MPI_IN_PLACE)");
    return MPI_SUCCESS;
}

int site_map_build(const struct gc_comm *c, struct site_map *m)
{
    memset(m, 0, sizeof *m);
    m->member = malloc((size_t)c->size * sizeof *m->member);
    if (m->member == NULL)
        return coll_no_mem(c);
    for (int r = 0; r < c->size; r++)
        m->count[c->site[r]]++;
    for (int s = 1; s < GC_MAX_SITES; s++)
        m->first[s] = m->first[s - 1] + m->count[s - 1];
    for (int r = 0; r < c->size; r++)
        m->member[m->first[c->site[r]] + c->site_rank[r]] = r;
    return MPI_SUCCESS;
}

void site_map_free(struct site_map *m)
{
    free(m->member);
    m->member = NULL;
}

/*
 * The bytes `count` elements of `type` touch, from *lo (relative to the
 * first element's address) for *span bytes, rounded up to 16 so blocks
 * after the first keep the alignment malloc gave it.
 */
static int temp_span(int count, MPI_Datatype type, MPI_Aint *lo, MPI_Aint *span)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    int status = PMPI_Type_get_extent(type, &lb, &extent);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    if (status != MPI_SUCCESS)
        return status;
    /* A negative extent (resized types) lays later elements below the
     * first. */
    MPI_Aint hi = 0;
    *lo = 0;
    if (count > 0) {
        MPI_Aint reach = (MPI_Aint)(count - 1) * extent;
        *lo = true_lb + (reach < 0 ? reach : 0);
        hi = true_lb + true_extent + (reach > 0 ? reach : 0);
    }
    *span = (hi - *lo + 15) & ~(MPI_Aint)15;
    return MPI_SUCCESS;
}

int coll_temp_alloc(const struct gc_comm *c, int count, MPI_Datatype type,
                    int blocks, struct coll_temp *t)
{
    MPI_Aint lo;
    int status = temp_span(count, type, &lo, &t->stride);
    if (status != MPI_SUCCESS)
        return status;
    t->mem = coll_alloc((size_t)t->stride * (size_t)blocks);
    if (t->mem == NULL)
        return coll_no_mem(c);
    t->base = (char *)t->mem - lo;
    return MPI_SUCCESS;
}

int coll_sched_temp(struct coll_sched *s, int count, MPI_Datatype type,
                    void **base)
{
    MPI_Aint lo, span;
    int status = temp_span(count, type, &lo, &span);
    if (status != MPI_SUCCESS)
        return status;
    char *mem = coll_sched_alloc(s, (size_t)span);
    if (mem == NULL)
        return coll_no_mem(coll_sched_comm(s));
    *base = mem - lo;
    return MPI_SUCCESS;
}

int coll_pack(const struct gc_comm *c, const void *buf, int count,
              MPI_Datatype type, void *out, size_t len)
{
    MPI_Count position = 0;
    if (len == 0) /* count 0 or an empty type: buf may be anything */
        return MPI_SUCCESS;
    return gc_pack(buf, count, type, out, (MPI_Count)len, &position, c->local);
}

int coll_unpack(const struct gc_comm *c, const void *in, size_t len, void *buf,
                int count, MPI_Datatype type)
{
    MPI_Count position = 0;
    if (len == 0)
        return MPI_SUCCESS;
    return gc_unpack(in, (MPI_Count)len, &position, buf, count, type, c->local);
}

int coll_blocks_make(const struct gc_comm *c, MPI_Count count,
                     MPI_Datatype type, int layout, struct coll_blocks *b)
{
    *b = (struct coll_blocks){.type = MPI_DATATYPE_NULL, .count = count > 0};
    int status = PMPI_Type_contiguous_c(count, type, &b->type);
    if (status != MPI_SUCCESS) {
        b->type = MPI_DATATYPE_NULL;
        return status;
    }
    status = PMPI_Type_commit(&b->type);
    if (status != MPI_SUCCESS || !layout)
        return status;
    b->counts = malloc((size_t)c->size * sizeof *b->counts);
    b->displs = malloc((size_t)c->size * sizeof *b->displs);
    if (b->counts == NULL || b->displs == NULL)
        return coll_no_mem(c);
    for (int r = 0; r < c->size; r++) {
        b->counts[r] = b->count;
        b->displs[r] = r;
    }
    return MPI_SUCCESS;
}

void coll_blocks_free(struct coll_blocks *b)
{
    if (b->type != MPI_DATATYPE_NULL)
        PMPI_Type_free(&b->type);
    free(b->counts);
    free(b->displs);
    *b = (struct coll_blocks){.type = MPI_DATATYPE_NULL};
}

static int xfer_failed(struct gc_comm *c, int status)
{
    return gc_error(c->handle, status,
                    "collective on a grid communicator: transfer between "
                    "sites failed");
}

int coll_wait(struct gc_comm *c, int n, struct gc_xfer **reqs, int status)
{
    /* Posted transfers must finish even after a failed post: they use the
     * caller's buffers. */
    int wait_status = n > 0 ? gc_xfer_waitall(n, reqs) : MPI_SUCCESS;
    if (status == MPI_SUCCESS)
        status = wait_status;
    return status == MPI_SUCCESS ? status : xfer_failed(c, status);
}

int coll_isend(struct gc_comm *c, int dst, int tag, const void *buf, size_t len,
               struct gc_xfer **reqs, int *n)
{
    int status = gc_xfer_isend(c, dst, tag, buf, len, &reqs[*n]);
    if (status == MPI_SUCCESS)
        (*n)++;
    return status;
}

int coll_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
               struct gc_xfer **reqs, int *n)
{
    int status = gc_xfer_irecv(c, src, tag, buf, len, &reqs[*n]);
    if (status == MPI_SUCCESS)
        (*n)++;
    return status;
}

/* ---- layer-internal collectives ---------------------------------------- */

/* Barrier: local barrier, leaders exchange empty messages, local barrier. */
int gc_coll_barrier(struct gc_comm *c)
{
    /* After the collectives started before it (engine/coll_sched.h). */
    coll_sched_drain(c);
    int status = coll_local_barrier(c->local);
    if (status != MPI_SUCCESS || c->site_count == 1)
        return status;
    if (c->local_rank == 0) {
        struct gc_xfer *reqs[2 * GC_MAX_SITES];
        int n = 0;
        for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
            if (c->leader[s] < 0 || s == gc_world.site_index)
                continue;
            status =
                coll_isend(c, c->leader[s], TAG_BARRIER, NULL, 0, reqs, &n);
            if (status == MPI_SUCCESS)
                status =
                    coll_irecv(c, c->leader[s], TAG_BARRIER, NULL, 0, reqs, &n);
        }
        status = coll_wait(c, n, reqs, status);
    }
    return status == MPI_SUCCESS ? coll_local_barrier(c->local) : status;
}

/*
 * Allgather of bytes: local gather to the leader, every leader sends its
 * site's block to every other leader, local bcast of the whole.
 */
int gc_coll_allgather_bytes(struct gc_comm *c, const void *mine, size_t len,
                            void *all)
{
    int status = MPI_SUCCESS;
    unsigned char *blocks[GC_MAX_SITES] = {NULL};
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    struct site_map map = {0};
    int n = 0;
    coll_sched_drain(c);
    if ((size_t)c->size * len > INT_MAX)
        return MPI_ERR_COUNT;
    status = site_map_build(c, &map);
    if (status != MPI_SUCCESS)
        return status;
    /* Each site's contributions, in site-rank order, at its leader. */
    for (int s = 0; s < GC_MAX_SITES; s++) {
        if (map.count[s] == 0 || (s != gc_world.site_index && c->local_rank))
            continue;
        blocks[s] = coll_alloc(len * (size_t)map.count[s]);
        if (blocks[s] == NULL) {
            status = coll_no_mem(c);
            goto cleanup;
        }
    }
    unsigned char *own = blocks[gc_world.site_index];
    status = PMPI_Gather(mine, (int)len, MPI_BYTE, own, (int)len, MPI_BYTE, 0,
                         c->local);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c->local_rank == 0) {
        for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
            if (map.count[s] == 0 || s == gc_world.site_index)
                continue;
            status = coll_isend(c, c->leader[s], TAG_ALLGATHER_BYTES, own,
                                len * (size_t)c->local_size, reqs, &n);
            if (status == MPI_SUCCESS)
                status =
                    coll_irecv(c, c->leader[s], TAG_ALLGATHER_BYTES, blocks[s],
                               len * (size_t)map.count[s], reqs, &n);
        }
        status = coll_wait(c, n, reqs, status);
        if (status != MPI_SUCCESS)
            goto cleanup;
        for (int r = 0; r < c->size; r++)
            memcpy((unsigned char *)all + (size_t)r * len,
                   blocks[c->site[r]] + (size_t)c->site_rank[r] * len, len);
    }
    status = coll_local_bcast(all, (int)((size_t)c->size * len), MPI_BYTE, 0,
                              c->local);
cleanup:
    for (int s = 0; s < GC_MAX_SITES; s++)
        free(blocks[s]);
    site_map_free(&map);
    return status;
}

/*
 * Allgatherv: Gatherv to rank 0, then Bcast of the whole receive buffer
 * from it, described as one indexed datatype.
 */
int allgatherv_grid_gather_bcast(struct coll_sched *s,
                                 const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    struct gc_comm *c = a->comm;
    const void *sbuf = r->sbuf;
    int scount = r->block_count, done;
    MPI_Datatype stype = r->block_type, all = MPI_DATATYPE_NULL;
    MPI_Aint lb, extent;
    int status = PMPI_Type_get_extent(r->many_type, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    if (sbuf == MPI_IN_PLACE && c->rank != 0) {
        /* Rank 0 gathers in place; the others send from their slot
         * (an empty one may have a NULL recvbuf: no offset then). */
        sbuf = r->rbuf;
        if (r->counts[c->rank] > 0)
            sbuf = (const char *)r->rbuf + r->displs[c->rank] * extent;
        scount = r->counts[c->rank];
        stype = r->many_type;
    }
    status = phase_gatherv(s, sbuf, scount, stype, r->rbuf, r->counts,
                           r->displs, r->many_type, 0, r->uniform, -1, &done);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_indexed(c->size, r->counts, r->displs, r->many_type,
                                   &all);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_commit(&all);
    /* The schedule holds its own reference. */
    if (status == MPI_SUCCESS)
        status = phase_bcast(s, r->rbuf, 1, all, 0, done, &done);
    if (all != MPI_DATATYPE_NULL)
        PMPI_Type_free(&all);
    return status;
}

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
        status = check_count(c, fn, root_count);
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
