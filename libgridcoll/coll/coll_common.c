/*
 * Helpers the collectives share (gc_coll.h): argument checks of the entry
 * points, packed sizes, temporaries and packing with the user's
 * datatypes, the per-member blocks of the v-forms, site maps, and the
 * internal transfers of the layer's own collectives.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_world.h"
#include "p2p/gc_xfer.h"

int coll_packed_size(const struct gc_comm *c, MPI_Count count,
                     MPI_Datatype type, size_t *len)
{
    int status = gc_packed_size(count, type, len);
    if (status == MPI_ERR_COUNT)
        return gc_error(c->handle, status,
                        "collective on a grid communicator: message size "
                        "overflows",
                        NULL);
    return status;
}

void *coll_alloc(size_t bytes)
{
    return malloc(bytes > 0 ? bytes : 1);
}

int coll_no_mem(const struct gc_comm *c)
{
    return gc_error(c->handle, MPI_ERR_NO_MEM,
                    "collective on a grid communicator: out of memory", NULL);
}

int coll_local_p2p(struct gc_comm *c, MPI_Comm *comm)
{
    *comm = c->local_p2p;
    return MPI_SUCCESS;
}

int coll_check_root(const struct gc_comm *c, const char *fn, int root)
{
    if (root < 0 || root >= c->size)
        return gc_error(c->handle, MPI_ERR_ROOT, fn, "root out of range");
    return MPI_SUCCESS;
}

int coll_check_count(const struct gc_comm *c, const char *fn, MPI_Count count)
{
    if (count < 0)
        return gc_error(c->handle, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}

int coll_check_counts(const struct gc_comm *c, const char *fn, int n,
                      const MPI_Count *counts)
{
    if (counts == NULL && n > 0)
        return gc_error(c->handle, MPI_ERR_ARG, fn, "counts array is NULL");
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return gc_error(c->handle, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}

int coll_check_type(const struct gc_comm *c, const char *fn, MPI_Datatype type)
{
    if (gc_type_check(type) != MPI_SUCCESS)
        return gc_error(c->handle, MPI_ERR_TYPE, fn,
                        type == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL"
                                                  : "datatype not committed");
    return MPI_SUCCESS;
}

int coll_check_buf(const struct gc_comm *c, const char *fn, MPI_Count count,
                   MPI_Datatype type)
{
    int status = coll_check_count(c, fn, count);
    return status == MPI_SUCCESS ? coll_check_type(c, fn, type) : status;
}

int coll_check_op(const struct gc_comm *c, const char *fn, MPI_Op op,
                  MPI_Datatype type)
{
    if (gc_op_check(op, type) != MPI_SUCCESS)
        return gc_error(c->handle, MPI_ERR_OP, fn,
                        op == MPI_OP_NULL
                            ? "MPI_OP_NULL"
                            : "operation not defined for the datatype");
    return MPI_SUCCESS;
}

int coll_check_userbuf(const struct gc_comm *c, const char *fn, const void *buf,
                       MPI_Count count, MPI_Datatype type)
{
    /* NULL is MPI_BOTTOM, valid with a type of absolute addresses only:
     * a null buffer would fail late, on the ranks that touch it. */
    if (buf == NULL && count > 0 && gc_type_is_named(type))
        return gc_error(c->handle, MPI_ERR_BUFFER, fn, "null buffer");
    return MPI_SUCCESS;
}

int coll_check_alias(const struct gc_comm *c, const char *fn,
                     const void *sendbuf, const void *recvbuf, MPI_Count count)
{
    /* As MPICH checks it: the same non-null address for both buffers. */
    if (count > 0 && sendbuf != MPI_IN_PLACE && sendbuf == recvbuf &&
        sendbuf != MPI_BOTTOM)
        return gc_error(c->handle, MPI_ERR_BUFFER, fn,
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
static int temp_span(MPI_Count count, MPI_Datatype type, MPI_Aint *lo,
                     MPI_Aint *span)
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

int coll_temp_alloc(const struct gc_comm *c, MPI_Count count, MPI_Datatype type,
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

int coll_sched_temp(struct coll_sched *s, MPI_Count count, MPI_Datatype type,
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

int coll_pack(const struct gc_comm *c, const void *buf, MPI_Count count,
              MPI_Datatype type, void *out, size_t len)
{
    MPI_Count position = 0;
    if (len == 0) /* count 0 or an empty type: buf may be anything */
        return MPI_SUCCESS;
    return gc_pack(buf, count, type, out, (MPI_Count)len, &position, c->local);
}

int coll_unpack(const struct gc_comm *c, const void *in, size_t len, void *buf,
                MPI_Count count, MPI_Datatype type)
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

int coll_vec_wide(const struct gc_comm *c, int n, struct coll_vec v,
                  struct coll_wide *w)
{
    *w = (struct coll_wide){.counts = v.counts, .displs = v.displs};
    if (n > 0 && v.icounts != NULL) {
        if ((w->own_counts = malloc((size_t)n * sizeof *w->own_counts)) == NULL)
            return coll_no_mem(c);
        for (int i = 0; i < n; i++)
            w->own_counts[i] = v.icounts[i];
        w->counts = w->own_counts;
    }
    if (n > 0 && v.idispls != NULL) {
        if ((w->own_displs = malloc((size_t)n * sizeof *w->own_displs)) == NULL)
            return coll_no_mem(c);
        for (int i = 0; i < n; i++)
            w->own_displs[i] = v.idispls[i];
        w->displs = w->own_displs;
    }
    return MPI_SUCCESS;
}

void coll_wide_free(struct coll_wide *w)
{
    free(w->own_counts);
    free(w->own_displs);
    *w = (struct coll_wide){0};
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
                    "sites failed",
                    NULL);
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
