/*
 * What the intercommunicator collectives share (intercomm.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll/engine/coll_request.h"
#include "coll/intercomm/intercomm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"

int ic_role_of(struct gc_comm *c, const char *fn, int root, enum ic_role *role,
               int *root_member)
{
    *root_member = -1;
    if (root == MPI_ROOT) {
        *role = IC_ROOT;
    } else if (root == MPI_PROC_NULL) {
        *role = IC_IDLE;
    } else if (root >= 0 && root < c->inter->remote_size) {
        *role = IC_LEAF;
        *root_member = ic_remote(c, root);
    } else {
        return gc_error(c->handle, MPI_ERR_ROOT, fn,
                        "root is not MPI_ROOT, MPI_PROC_NULL or a rank "
                        "of the remote group");
    }
    return MPI_SUCCESS;
}

struct coll_sched *ic_sched_new(struct gc_comm *c, const char *fn)
{
    struct coll_sched *s = coll_sched_new(c, fn, NULL);
    if (s == NULL)
        coll_no_mem(c);
    return s;
}

int ic_sched_run(struct coll_sched *s)
{
    int status = coll_sched_run(s);
    coll_sched_free(s);
    return status;
}

int ic_sched_finish(struct coll_sched *s, int status,
                    const struct coll_form *form)
{
    if (status != MPI_SUCCESS) {
        coll_sched_free(s);
        return status;
    }
    if (form->request == NULL)
        return ic_sched_run(s);
    return form->persistent ? coll_request_persistent(s, form->request)
                            : coll_request_start(s, form->request);
}

/* MPICH's persistent collective of a call on a single-site group. */
static int mpich_init(enum gc_coll_kind kind, const struct coll_args *a,
                      MPI_Comm g, MPI_Request *request)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    const struct coll_rooted_args *v = &a->u.rooted;
    switch (kind) {
    case GC_COLL_REDUCE:
        return PMPI_Reduce_init_c(r->sbuf, r->rbuf, r->count, r->type, r->op,
                                  r->root, g, MPI_INFO_NULL, request);
    case GC_COLL_BCAST:
        return PMPI_Bcast_init_c(a->u.bcast.buf, a->u.bcast.count,
                                 a->u.bcast.type, a->u.bcast.root, g,
                                 MPI_INFO_NULL, request);
    case GC_COLL_GATHER:
        return PMPI_Gatherv_init_c(v->sbuf, v->block_count, v->block_type,
                                   v->rbuf, v->counts, v->displs, v->many_type,
                                   v->root, g, MPI_INFO_NULL, request);
    default: /* scatter(v) */
        return PMPI_Scatterv_init_c(v->sbuf, v->counts, v->displs, v->many_type,
                                    v->rbuf, v->block_count, v->block_type,
                                    v->root, g, MPI_INFO_NULL, request);
    }
}

int ic_group(struct coll_sched *s, enum gc_coll_kind kind, struct coll_args *a,
             int after, int *step)
{
    struct gc_comm *c = coll_sched_comm(s);
    struct gc_comm *grid = gc_comm_find(c->inter->group_comm);
    int status;
    *step = -1;
    if (grid == NULL) {
        MPI_Request request;
        status = mpich_init(kind, a, c->inter->group_comm, &request);
        if (status != MPI_SUCCESS)
            return gc_error(c->handle, status, a->fn, NULL);
        *step = coll_sched_nested_mpich(s, request, after);
        return MPI_SUCCESS;
    }
    /* Persistent, of the group's algorithm, whatever the call's form: it
     * takes its number on group_comm now, in the order of the calls. */
    MPI_Request unused;
    struct coll_sched *child;
    a->comm = grid;
    a->request = &unused;
    a->persistent = 1;
    status = coll_build(kind, a, &child);
    if (status != MPI_SUCCESS)
        return status;
    status = coll_sched_persist(child);
    if (status != MPI_SUCCESS) {
        coll_sched_free(child);
        return coll_sched_error(s, status);
    }
    *step = coll_sched_nested(s, child, after);
    return MPI_SUCCESS;
}

int ic_group_reduce(struct coll_sched *s, const char *fn, const void *sbuf,
                    int count, MPI_Datatype type, MPI_Op op, void **result,
                    int *step)
{
    struct gc_comm *c = coll_sched_comm(s);
    int status = MPI_SUCCESS;
    *result = NULL;
    *step = -1;
    if (coll_sched_hold_op(s, op) != MPI_SUCCESS)
        return coll_no_mem(c);
    if (gc_comm_group_rank(c) == 0)
        status = coll_sched_temp(s, count, type, result);
    struct coll_args a = {.fn = fn};
    gc_packed_size(count, type, &a.bytes);
    a.u.reduce = (struct coll_reduce_args){
        .sbuf = sbuf,
        .rbuf = *result,
        .count = count,
        .type = type,
        .op = op,
        .root = 0,
    };
    return status == MPI_SUCCESS ? ic_group(s, GC_COLL_REDUCE, &a, -1, step)
                                 : status;
}

int ic_bundle_alloc(struct coll_sched *s, const char *fn, int leader,
                    size_t block, struct ic_bundle *b)
{
    struct gc_comm *c = coll_sched_comm(s);
    int m = c->inter->local_size;
    b->leader = leader;
    b->block = block;
    b->all = NULL;
    b->counts = NULL;
    b->displs = NULL;
    if (block * (size_t)m > INT_MAX)
        return gc_error(c->handle, MPI_ERR_COUNT, fn, "message too large");
    b->mine = coll_sched_alloc(s, block);
    if (leader) {
        b->all = coll_sched_alloc(s, block * (size_t)m);
        b->counts = coll_sched_alloc(s, (size_t)m * sizeof *b->counts);
        b->displs = coll_sched_alloc(s, (size_t)m * sizeof *b->displs);
    }
    if (b->mine == NULL ||
        (leader && (b->all == NULL || b->counts == NULL || b->displs == NULL)))
        return coll_no_mem(c);
    for (int i = 0; leader && i < m; i++) {
        b->counts[i] = (MPI_Count)block;
        b->displs[i] = (MPI_Aint)(block * (size_t)i);
    }
    return MPI_SUCCESS;
}

int ic_bundle_make(struct coll_sched *s, const char *fn, int root,
                   int leaf_count, MPI_Datatype leaf_type, int root_count,
                   MPI_Datatype root_type, struct ic_bundle *b)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t block = 0;
    *b = (struct ic_bundle){0};
    int status = ic_role_of(c, fn, root, &b->role, &b->root_member);
    if (status == MPI_SUCCESS && b->role == IC_LEAF)
        status = coll_check_buf(c, fn, leaf_count, leaf_type);
    if (status == MPI_SUCCESS && b->role == IC_ROOT)
        status = coll_check_buf(c, fn, root_count, root_type);
    if (status == MPI_SUCCESS && b->role == IC_LEAF)
        status = coll_packed_size(c, leaf_count, leaf_type, &block);
    if (status != MPI_SUCCESS || b->role != IC_LEAF)
        return status;
    return ic_bundle_alloc(s, fn, gc_comm_group_rank(c) == 0, block, b);
}

int ic_group_blocks(struct coll_sched *s, const char *fn,
                    enum gc_coll_kind kind, const struct ic_bundle *b,
                    int after, int *step)
{
    int gather = kind == GC_COLL_GATHER;
    struct coll_args a = {.fn = fn, .bytes = b->block};
    a.u.rooted = (struct coll_rooted_args){
        .sbuf = gather ? b->mine : b->all,
        .rbuf = gather ? b->all : b->mine,
        .block_count = (MPI_Count)b->block,
        .block_type = MPI_BYTE,
        .counts = b->counts,
        .displs = b->displs,
        .many_type = MPI_BYTE,
        .uniform = 1,
    };
    return ic_group(s, kind, &a, after, step);
}

/* Bytes of count x type to cross sites in, or -1 (reported). */
static int wire_length(struct coll_sched *s, int count, MPI_Datatype type)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t len;
    if (coll_packed_size(c, count, type, &len) != MPI_SUCCESS)
        return -1;
    if (len > INT_MAX) {
        gc_error(c->handle, MPI_ERR_COUNT, "intercommunicator collective",
                 "message too large");
        return -1;
    }
    return (int)len;
}

static int same_site(struct coll_sched *s, int peer)
{
    struct gc_comm *c = coll_sched_comm(s);
    return c->site[peer] == c->site[c->rank];
}

int ic_send(struct coll_sched *s, int peer, int tag, const void *buf, int count,
            MPI_Datatype type, int after)
{
    type = coll_sched_type(s, type);
    if (same_site(s, peer) || type == MPI_BYTE)
        return coll_sched_send(s, peer, tag, buf, count, type, after);
    int len = wire_length(s, count, type);
    void *packed = len >= 0 ? coll_sched_alloc(s, (size_t)len) : NULL;
    if (packed == NULL)
        return -1;
    int step = coll_sched_pack(s, buf, count, type, packed, (size_t)len, after);
    return coll_sched_send(s, peer, tag, packed, len, MPI_BYTE, step);
}

int ic_recv(struct coll_sched *s, int peer, int tag, void *buf, int count,
            MPI_Datatype type, int after)
{
    type = coll_sched_type(s, type);
    if (same_site(s, peer) || type == MPI_BYTE)
        return coll_sched_recv(s, peer, tag, buf, count, type, after);
    int len = wire_length(s, count, type);
    void *packed = len >= 0 ? coll_sched_alloc(s, (size_t)len) : NULL;
    if (packed == NULL)
        return -1;
    int step = coll_sched_recv(s, peer, tag, packed, len, MPI_BYTE, after);
    return coll_sched_unpack(s, packed, (size_t)len, buf, count, type, step);
}

int ic_vec_narrow(struct gc_comm *c, const char *fn, int n, struct coll_vec v,
                  struct ic_vec *x)
{
    *x = (struct ic_vec){v.icounts, v.idispls, NULL};
    if (v.counts == NULL || n == 0)
        return MPI_SUCCESS;
    x->counts = x->displs = x->own = malloc(2 * (size_t)n * sizeof *x->own);
    if (x->own == NULL)
        return coll_no_mem(c);
    for (int i = 0; i < n; i++) {
        MPI_Count displ = v.displs != NULL ? v.displs[i] : 0;
        if (!ic_fits(v.counts[i]) || !ic_fits(displ))
            return gc_unsupported(c->handle, fn);
        x->own[i] = (int)v.counts[i];
        x->own[n + i] = (int)displ;
    }
    x->displs = v.displs != NULL ? x->own + n : NULL;
    return MPI_SUCCESS;
}

void ic_vec_free(struct ic_vec *x)
{
    free(x->own);
    *x = (struct ic_vec){0};
}

int ic_check_counts(const struct gc_comm *c, const char *fn, int n,
                    const int *counts)
{
    if (counts == NULL && n > 0)
        return gc_error(c->handle, MPI_ERR_ARG, fn, "counts array is NULL");
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return gc_error(c->handle, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}
