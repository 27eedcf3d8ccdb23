/*
 * Pieces and the streaming fold shared by the reductions; reduce_common.h
 * says what each is for.
 */
#include "coll/reduce/reduce_common.h"

#include "coll/engine/coll_sched.h"

#include <stdlib.h>

#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/* The largest relay message a segment may be: a larger partial result is
 * still pipelined. */
#define REDUCE_MAX_MESSAGE ((size_t)1 << 30)

void reduce_pieces_free(struct reduce_pieces *p)
{
    free(p->at);
    *p = (struct reduce_pieces){0};
}

void reduce_pieces_add(struct reduce_pieces *p, int source, int peer,
                       MPI_Count lo, MPI_Count hi, MPI_Count seg)
{
    for (MPI_Count e = lo; e < hi && !p->no_mem; e += seg) {
        if (p->count == p->cap) {
            int cap = p->cap > 0 ? 2 * p->cap : 16;
            struct reduce_piece *grown =
                realloc(p->at, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                p->no_mem = 1;
                return;
            }
            p->at = grown;
            p->cap = cap;
        }
        p->at[p->count++] = (struct reduce_piece){
            .source = source,
            .peer = peer,
            .lo = e,
            .hi = hi - e > seg ? e + seg : hi,
        };
    }
}

MPI_Count reduce_segment(size_t segsize, size_t esize)
{
    size_t bytes = segsize < REDUCE_MAX_MESSAGE ? segsize : REDUCE_MAX_MESSAGE;
    size_t seg = esize > 0 ? bytes / esize : bytes;
    return seg > 0 ? (MPI_Count)seg : 1;
}

int reduce_fold_steps(struct coll_sched *s, const struct reduce_fold *f,
                      const struct reduce_piece *pieces, const int *steps,
                      int npieces, int own)
{
    int next[GC_MAX_SITES];
    for (int u = 0; u < f->sources; u++)
        next[u] = -1;
    for (int k = npieces - 1; k >= 0; k--)
        next[pieces[k].source] = k;
    for (MPI_Count at = f->lo; at < f->hi;) {
        /* The stretch ends where the first current piece ends. */
        MPI_Count end = f->hi;
        int deps[GC_MAX_SITES + 1], n = 0;
        deps[n++] = own;
        for (int u = 0; u < f->sources; u++) {
            if (next[u] < 0)
                continue;
            deps[n++] = steps[next[u]];
            if (pieces[next[u]].hi < end)
                end = pieces[next[u]].hi;
        }
        struct coll_fold *x = coll_sched_alloc(s, sizeof *x);
        if (x == NULL)
            return -1;
        *x = (struct coll_fold){
            .partials = f->partials + (size_t)(at - f->lo) * f->esize,
            .sources = f->sources,
            .stride = f->stride,
            .len = (size_t)(end - at) * f->esize,
            .rbuf = (char *)f->rbuf + (MPI_Aint)(at - f->lo) * f->extent,
            .count = end - at,
            .type = f->type,
            .op = f->op};
        coll_sched_call(s, coll_fold_step, x, coll_sched_join(s, deps, n));
        for (int u = 0; u < f->sources; u++)
            if (next[u] >= 0 && pieces[next[u]].hi == end)
                next[u]++;
        at = end;
    }
    return coll_sched_fence(s);
}

/* ---- site partials and folding (gc_coll.h) ---------------------------- */

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
                 size_t stride, size_t len, void *rbuf, MPI_Count count,
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
            status = PMPI_Reduce_local_c(t.base, rbuf, count, type, op);
    }
cleanup:
    free(t.mem);
    return status;
}

int coll_fold_step(struct coll_sched *s, void *arg)
{
    const struct coll_fold *f = arg;
    return coll_combine(coll_sched_comm(s), f->partials, f->sources, f->stride,
                        f->len, f->rbuf, f->count, f->type, f->op);
}
