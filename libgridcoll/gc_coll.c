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
 *                                         coll_reduce and coll_bcast)
 * These are the issue-3 fallbacks, the first entries of their tables; the
 * literature's algorithms are in coll/, one per file (docs/algorithms.md),
 * among them the MagPIe Gather(v), Scatter(v) and Reduce (coll_gatherv,
 * coll_scatterv, coll_reduce) the fallbacks are built on.  The helpers
 * hier Gatherv and Scatterv share stay here (coll_rooted_*).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* A split, not a dup: dup would run the application's attribute copy
     * callbacks on `local` (the application's own handle). */
    if (c->local_p2p == MPI_COMM_NULL) {
        MPI_Comm made;
        int status = PMPI_Comm_split(c->local, 0, c->local_rank, &made);
        if (status != MPI_SUCCESS)
            return status;
        status = PMPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN);
        if (status != MPI_SUCCESS) {
            PMPI_Comm_free(&made);
            return status;
        }
        c->local_p2p = made;
    }
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

int coll_temp_alloc(const struct gc_comm *c, int count, MPI_Datatype type,
                    int blocks, struct coll_temp *t)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    int status = PMPI_Type_get_extent(type, &lb, &extent);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    if (status != MPI_SUCCESS)
        return status;
    /* The bytes count elements touch; a negative extent (resized types)
     * lays later elements below the first. */
    MPI_Aint lo = 0, hi = 0;
    if (count > 0) {
        MPI_Aint reach = (MPI_Aint)(count - 1) * extent;
        lo = true_lb + (reach < 0 ? reach : 0);
        hi = true_lb + true_extent + (reach > 0 ? reach : 0);
    }
    /* Blocks after the first keep the alignment malloc gave the first. */
    t->stride = (hi - lo + 15) & ~(MPI_Aint)15;
    t->mem = coll_alloc((size_t)t->stride * (size_t)blocks);
    if (t->mem == NULL)
        return coll_no_mem(c);
    t->base = (char *)t->mem - lo;
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

static int recv_bytes(struct gc_comm *c, int src, int tag, void *buf,
                      size_t len)
{
    int status = gc_xfer_recv(c, src, tag, buf, len);
    return status == MPI_SUCCESS ? status : xfer_failed(c, status);
}

int coll_send(struct gc_comm *c, int dst, int tag, const void *buf, size_t len)
{
    int status = gc_xfer_send(c, dst, tag, buf, len);
    return status == MPI_SUCCESS ? status : xfer_failed(c, status);
}

/* ---- layer-internal collectives ---------------------------------------- */

/* Barrier: local barrier, leaders exchange empty messages, local barrier. */
int gc_coll_barrier(struct gc_comm *c)
{
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

/* ---- rooted data movement --------------------------------------------- */

/* Packed bytes of site s's members' parts, counts[] by comm rank. */
static int site_bytes(const struct gc_comm *c, const struct site_map *m, int s,
                      const int *counts, MPI_Datatype type, size_t *total)
{
    *total = 0;
    for (int i = m->first[s]; i < m->first[s] + m->count[s]; i++) {
        size_t len;
        int status = coll_packed_size(c, counts[m->member[i]], type, &len);
        if (status != MPI_SUCCESS)
            return status;
        *total += len;
    }
    return MPI_SUCCESS;
}

/*
 * The local byte phase of a site without the root moves `len` packed
 * bytes per member; the leader learns every member's length (locally,
 * unless all are `len`) as counts and displacements for PMPI_Gatherv or
 * PMPI_Scatterv, and their `total`.  Others get NULL arrays.  The caller
 * frees the arrays, also after a failure.
 */
static int member_lengths(const struct gc_comm *c, size_t len, int uniform,
                          int **lens, int **displs, size_t *total)
{
    *lens = *displs = NULL;
    *total = 0;
    if (len > INT_MAX)
        return gc_error(c->handle, MPI_ERR_COUNT,
                        "collective on a grid communicator: more than "
                        "INT_MAX packed bytes from one member");
    int ilen = (int)len;
    if (c->local_rank == 0) {
        *lens = malloc((size_t)c->local_size * sizeof **lens);
        *displs = malloc((size_t)c->local_size * sizeof **displs);
        if (*lens == NULL || *displs == NULL)
            return coll_no_mem(c);
    }
    if (!uniform) {
        int status =
            PMPI_Gather(&ilen, 1, MPI_INT, *lens, 1, MPI_INT, 0, c->local);
        if (status != MPI_SUCCESS)
            return status;
    }
    for (int k = 0; c->local_rank == 0 && k < c->local_size; k++) {
        if (uniform)
            (*lens)[k] = ilen;
        if (*total > INT_MAX - (size_t)(*lens)[k])
            return gc_error(c->handle, MPI_ERR_COUNT,
                            "collective on a grid communicator: more than "
                            "INT_MAX packed bytes from one site");
        (*displs)[k] = (int)*total;
        *total += (size_t)(*lens)[k];
    }
    return MPI_SUCCESS;
}

/*
 * counts[]/displs[] by comm rank, re-indexed by local rank for the root's
 * local phase.  The caller frees the arrays, also after a failure.
 */
static int local_layout(const struct gc_comm *c, const int *counts,
                        const int *displs, int **lcounts, int **ldispls)
{
    *lcounts = malloc((size_t)c->local_size * sizeof **lcounts);
    *ldispls = malloc((size_t)c->local_size * sizeof **ldispls);
    if (*lcounts == NULL || *ldispls == NULL)
        return coll_no_mem(c);
    for (int k = 0; k < c->local_size; k++) {
        (*lcounts)[k] = counts[c->local_to_comm[k]];
        (*ldispls)[k] = displs[c->local_to_comm[k]];
    }
    return MPI_SUCCESS;
}

void coll_rooted_free(struct coll_rooted *x)
{
    for (int s = 0; s < GC_MAX_SITES; s++)
        free(x->blocks[s]);
    free(x->lcounts);
    free(x->ldispls);
    site_map_free(&x->map);
}

int coll_rooted_make(const struct gc_comm *c, const int *counts,
                     const int *displs, MPI_Datatype type,
                     struct coll_rooted *x)
{
    MPI_Aint lb;
    int status = PMPI_Type_get_extent(type, &lb, &x->extent);
    if (status == MPI_SUCCESS)
        status = site_map_build(c, &x->map);
    if (status == MPI_SUCCESS)
        status = local_layout(c, counts, displs, &x->lcounts, &x->ldispls);
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
        if (x->map.count[s] == 0 || s == c->site[c->rank])
            continue;
        status = site_bytes(c, &x->map, s, counts, type, &x->bytes[s]);
        if (status == MPI_SUCCESS &&
            (x->blocks[s] = coll_alloc(x->bytes[s])) == NULL)
            status = coll_no_mem(c);
    }
    return status;
}

int coll_rooted_copy(const struct gc_comm *c, const struct coll_rooted *x,
                     int s, const int *counts, const int *displs,
                     MPI_Datatype type, void *buf, int unpack)
{
    size_t pos = 0;
    for (int i = x->map.first[s]; i < x->map.first[s] + x->map.count[s]; i++) {
        int r = x->map.member[i];
        size_t len;
        int status = coll_packed_size(c, counts[r], type, &len);
        if (status != MPI_SUCCESS)
            return status;
        if (len == 0) /* buf may be NULL when nothing moves */
            continue;
        char *at = (char *)buf + displs[r] * x->extent;
        status =
            unpack
                ? coll_unpack(c, x->blocks[s] + pos, len, at, counts[r], type)
                : coll_pack(c, at, counts[r], type, x->blocks[s] + pos, len);
        if (status != MPI_SUCCESS)
            return status;
        pos += len;
    }
    return MPI_SUCCESS;
}

int coll_rooted_remote(struct gc_comm *c, void *buf, int count,
                       MPI_Datatype type, int root, int uniform, int gather)
{
    unsigned char *mine = NULL, *block = NULL;
    int *lens = NULL, *displs = NULL;
    int leader = c->local_rank == 0;
    size_t len, total;
    int status = coll_packed_size(c, count, type, &len);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = member_lengths(c, len, uniform, &lens, &displs, &total);
    if (status != MPI_SUCCESS)
        goto cleanup;
    mine = coll_alloc(len);
    block = leader ? coll_alloc(total) : NULL;
    if (mine == NULL || (leader && block == NULL)) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    if (gather) {
        status = coll_pack(c, buf, count, type, mine, len);
        if (status != MPI_SUCCESS)
            goto cleanup;
        status = PMPI_Gatherv(mine, (int)len, MPI_BYTE, block, lens, displs,
                              MPI_BYTE, 0, c->local);
        if (status == MPI_SUCCESS && leader)
            status = coll_send(c, root, TAG_GATHER, block, total);
    } else {
        if (leader)
            status = recv_bytes(c, root, TAG_SCATTER, block, total);
        if (status != MPI_SUCCESS)
            goto cleanup;
        status = PMPI_Scatterv(block, lens, displs, MPI_BYTE, mine, (int)len,
                               MPI_BYTE, 0, c->local);
        if (status == MPI_SUCCESS)
            status = coll_unpack(c, mine, len, buf, count, type);
    }
cleanup:
    free(mine);
    free(block);
    free(lens);
    free(displs);
    return status;
}

/*
 * Allgatherv: Gatherv to rank 0, then Bcast of the whole receive buffer
 * from it, described as one indexed datatype.
 */
static int allgatherv(struct gc_comm *c, const void *sbuf, int scount,
                      MPI_Datatype stype, void *rbuf, const int *rcounts,
                      const int *rdispls, MPI_Datatype rtype, int uniform)
{
    MPI_Datatype all = MPI_DATATYPE_NULL;
    MPI_Aint lb, extent;
    int status = PMPI_Type_get_extent(rtype, &lb, &extent);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (sbuf == MPI_IN_PLACE && c->rank != 0) {
        /* Rank 0 gathers in place; the others send from their slot
         * (an empty one may have a NULL recvbuf: no offset then). */
        sbuf = rbuf;
        if (rcounts[c->rank] > 0)
            sbuf = (const char *)rbuf + rdispls[c->rank] * extent;
        scount = rcounts[c->rank];
        stype = rtype;
    }
    status = coll_gatherv(c, sbuf, scount, stype, rbuf, rcounts, rdispls, rtype,
                          0, uniform);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = PMPI_Type_indexed(c->size, rcounts, rdispls, rtype, &all);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = PMPI_Type_commit(&all);
    if (status == MPI_SUCCESS)
        status = coll_bcast(c, rbuf, 1, all, 0);
cleanup:
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

/* ---- algorithm-table entries (gc_coll_select.c) -------------------------- */

int barrier_grid_hier(const struct coll_args *a)
{
    return gc_coll_barrier(a->comm);
}

int allgatherv_grid_gather_bcast(const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    return allgatherv(a->comm, r->sbuf, r->block_count, r->block_type, r->rbuf,
                      r->counts, r->displs, r->many_type, r->uniform);
}

/* ---- entry points -------------------------------------------------------- */

/*
 * A gather, scatter or allgather call (struct coll_rooted_args says which
 * side is which); `bytes` is the block size when uniform.
 */
static int run_rooted(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                      const void *sbuf, void *rbuf, int block_count,
                      MPI_Datatype block_type, const int *counts,
                      const int *displs, MPI_Datatype many_type, int root,
                      size_t bytes)
{
    struct coll_args a = {.comm = c, .fn = fn, .bytes = bytes};
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

int MPI_Barrier(MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Barrier(comm);
    struct coll_args a = {.comm = c, .fn = "MPI_Barrier"};
    return coll_run(GC_COLL_BARRIER, &a);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
              MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    int status = coll_check_root(c, "MPI_Bcast", root);
    if (status == MPI_SUCCESS)
        status = coll_check_buf(c, "MPI_Bcast", count, datatype);
    if (status == MPI_SUCCESS)
        status = coll_check_userbuf(c, "MPI_Bcast", buffer, count, datatype);
    if (status == MPI_SUCCESS)
        status = check_not_in_place(c, "MPI_Bcast", buffer);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_args a = {
        .comm = c, .fn = "MPI_Bcast", .bytes = agreed_bytes(count, datatype)};
    a.u.bcast.buf = buffer;
    a.u.bcast.count = count;
    a.u.bcast.type = datatype;
    a.u.bcast.root = root;
    return coll_run(GC_COLL_BCAST, &a);
}

/* Gather is Gatherv of one recvcount x recvtype block per member. */
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
               MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                           recvtype, root, comm);
    static const char fn[] = "MPI_Gather";
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
    status = run_rooted(GC_COLL_GATHER, c, fn, sendbuf, recvbuf, sendcount,
                        sendtype, b.counts, b.displs, b.type, root, bytes);
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, const int recvcounts[], const int displs[],
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                            displs, recvtype, root, comm);
    static const char fn[] = "MPI_Gatherv";
    int status = check_rooted(c, fn, root, sendbuf, sendcount, sendtype, 0,
                              recvcounts, recvtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_GATHERV, c, fn, sendbuf, recvbuf, sendcount,
                      sendtype, recvcounts, displs, recvtype, root, 0);
}

/* Scatter is Scatterv of one sendcount x sendtype block per member. */
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, root, comm);
    static const char fn[] = "MPI_Scatter";
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
    status = run_rooted(GC_COLL_SCATTER, c, fn, sendbuf, recvbuf, recvcount,
                        recvtype, b.counts, b.displs, b.type, root, bytes);
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
                 const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                             recvcount, recvtype, root, comm);
    static const char fn[] = "MPI_Scatterv";
    int status = check_rooted(c, fn, root, recvbuf, recvcount, recvtype, 0,
                              sendcounts, sendtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_SCATTERV, c, fn, sendbuf, recvbuf, recvcount,
                      recvtype, sendcounts, displs, sendtype, root, 0);
}

/* Allgather is Allgatherv of one recvcount x recvtype block per member. */
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              recvtype, comm);
    static const char fn[] = "MPI_Allgather";
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
                        agreed_bytes(recvcount, recvtype));
cleanup:
    coll_blocks_free(&b);
    return status;
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                               recvcounts, displs, recvtype, comm);
    static const char fn[] = "MPI_Allgatherv";
    int status = coll_check_counts(c, fn, c->size, recvcounts);
    if (status == MPI_SUCCESS)
        status = coll_check_type(c, fn, recvtype);
    if (status == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        status = coll_check_buf(c, fn, sendcount, sendtype);
    if (status != MPI_SUCCESS)
        return status;
    return run_rooted(GC_COLL_ALLGATHERV, c, fn, sendbuf, recvbuf, sendcount,
                      sendtype, recvcounts, displs, recvtype, 0, 0);
}
