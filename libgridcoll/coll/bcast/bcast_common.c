/*
 * Broadcast order, packed message and plan steps shared by the bcast
 * algorithms; bcast_common.h says what each is for.
 */
#include "coll/bcast/bcast_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_world.h"

/* ---- broadcast order ---------------------------------------------------- */

int bcast_order_make(const struct gc_comm *c, int root, struct bcast_order *o)
{
    memset(o, 0, sizeof *o);
    o->rank = malloc((size_t)c->size * sizeof *o->rank);
    o->pos = malloc((size_t)c->size * sizeof *o->pos);
    if (o->rank == NULL || o->pos == NULL)
        return coll_no_mem(c);
    int root_site = c->site[root], v = 0;
    for (int k = 0; k < GC_MAX_SITES; k++) {
        int s = (root_site + k) % GC_MAX_SITES;
        if (c->leader[s] < 0)
            continue;
        o->first[o->sites] = v;
        if (s == root_site)
            o->rank[v++] = root;
        for (int r = 0; r < c->size; r++)
            if (c->site[r] == s && r != root)
                o->rank[v++] = r;
        o->count[o->sites] = v - o->first[o->sites];
        o->sites++;
    }
    for (v = 0; v < c->size; v++)
        o->pos[o->rank[v]] = v;
    return MPI_SUCCESS;
}

void bcast_order_free(struct bcast_order *o)
{
    free(o->rank);
    free(o->pos);
    memset(o, 0, sizeof *o);
}

/* ---- the packed message -------------------------------------------------- */

/*
 * Whether count x type packs to exactly the bytes at buf: a named type
 * whose elements have no holes (MPICH packs homogeneous data as its type
 * signature, and a named type's signature is its memory image).
 */
static int packs_as_is(MPI_Datatype type)
{
    MPI_Aint lb, extent;
    MPI_Count size;
    if (!gc_type_is_named(type))
        return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_size_x(type, &size) != MPI_SUCCESS)
        return 0;
    return lb == 0 && (MPI_Count)extent == size;
}

int bcast_msg_open(struct coll_sched *s, const struct coll_bcast_args *b,
                   int after, unsigned char **bytes, size_t *len, int *ready)
{
    struct gc_comm *c = coll_sched_comm(s);
    *bytes = NULL;
    *ready = after;
    int status = coll_packed_size(c, b->count, b->type, len);
    if (status != MPI_SUCCESS || *len == 0)
        return status;
    if (packs_as_is(b->type)) {
        *bytes = b->buf;
        return MPI_SUCCESS;
    }
    *bytes = coll_sched_alloc(s, *len);
    if (*bytes == NULL)
        return coll_no_mem(c);
    if (c->rank == b->root)
        *ready =
            coll_sched_pack(s, b->buf, b->count, b->type, *bytes, *len, after);
    return MPI_SUCCESS;
}

int bcast_msg_finish(struct coll_sched *s, const struct coll_bcast_args *b,
                     unsigned char *bytes, size_t len)
{
    if (bytes == b->buf || coll_sched_comm(s)->rank == b->root)
        return MPI_SUCCESS;
    coll_sched_unpack(s, bytes, len, b->buf, b->count, b->type,
                      coll_sched_fence(s));
    return MPI_SUCCESS;
}

size_t bcast_segsize(const struct coll_args *a)
{
    return a->segsize < BCAST_MAX_MESSAGE ? a->segsize : BCAST_MAX_MESSAGE;
}

/* ---- building plans ------------------------------------------------------ */

int bcast_plan_send(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len, int after)
{
    return coll_sched_send(p->sched, peer, tag, p->bytes + off, (MPI_Count)len,
                           MPI_BYTE, after >= 0 ? after : p->ready);
}

int bcast_plan_recv(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len)
{
    return coll_sched_recv(p->sched, peer, tag, p->bytes + off, (MPI_Count)len,
                           MPI_BYTE, p->ready);
}

void bcast_plan_local(struct bcast_plan *p, struct coll_node *node, int root,
                      void *buf, MPI_Count count, MPI_Datatype type, int after)
{
    struct node_type t;
    if (after < 0)
        after = p->ready;
    if (node == NULL || node_type_get(type, &t) != MPI_SUCCESS || t.size == 0 ||
        (MPI_Count)node_bcast_chunk(node) < t.size) {
        struct sched_local l = {.op = LOCAL_BCAST,
                                .rbuf = buf,
                                .count = count,
                                .type = coll_sched_type(p->sched, type),
                                .root = root};
        coll_sched_local(p->sched, &l, after);
        return;
    }
    MPI_Count per = (MPI_Count)node_bcast_chunk(node) / t.size < count
                        ? (MPI_Count)node_bcast_chunk(node) / t.size
                        : count;
    for (MPI_Count first = 0; first < count; first += per) {
        /* Out of memory, the schedule reports it when it runs. */
        struct node_bcast_args *a = coll_sched_alloc(p->sched, sizeof *a);
        if (a == NULL)
            return;
        *a = (struct node_bcast_args){
            .comm = coll_sched_comm(p->sched),
            .node = node,
            .buf = (char *)buf + first * t.extent,
            .count = count - first < per ? count - first : per,
            .type = type,
            .root = root};
        coll_sched_poll(p->sched, &node_bcast_poll, a, after);
    }
}

void bcast_plan_relay(struct bcast_plan *p, int from, const int *to, int n,
                      int tag, size_t off, size_t len, size_t seg)
{
    for (size_t at = off; at < off + len; at += seg) {
        size_t piece = off + len - at < seg ? off + len - at : seg;
        int got = from >= 0 ? bcast_plan_recv(p, from, tag, at, piece) : -1;
        for (int i = 0; i < n; i++)
            bcast_plan_send(p, to[i], tag, at, piece, got);
    }
}

/* ---- the common skeleton ------------------------------------------------- */

int bcast_build(struct coll_sched *s, const struct coll_args *a,
                bcast_build_fn *build)
{
    struct gc_comm *c = a->comm;
    const struct coll_bcast_args *b = &a->u.bcast;
    struct bcast_order o = {0};
    struct bcast_plan p = {.sched = s};
    size_t len;
    int status = bcast_msg_open(s, b, -1, &p.bytes, &len, &p.ready);
    /* Nothing to move: no message at all (a bcast does not synchronize). */
    if (status != MPI_SUCCESS || len == 0)
        return status;
    status = bcast_order_make(c, b->root, &o);
    if (status == MPI_SUCCESS)
        status = build(&p, a, &o, len);
    if (status == MPI_SUCCESS)
        status = bcast_msg_finish(s, b, p.bytes, len);
    bcast_order_free(&o);
    return status;
}
