/*
 * Broadcast order, packed message and plan runner shared by the bcast
 * algorithms; bcast_common.h says what each is for.
 */
#include "bcast_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_coll.h"

/*
 * Stream steps in flight at once: enough segments to keep the relay's
 * streams busy (64 x 256 KiB), few enough that matching a posted receive
 * stays cheap.
 */
#define BCAST_WINDOW 64

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
    int ints, addrs, types, combiner;
    MPI_Aint lb, extent;
    MPI_Count size;
    if (PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) !=
            MPI_SUCCESS ||
        combiner != MPI_COMBINER_NAMED)
        return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_size_x(type, &size) != MPI_SUCCESS)
        return 0;
    return lb == 0 && (MPI_Count)extent == size;
}

int bcast_msg_open(struct gc_comm *c, const struct coll_bcast_args *b,
                   struct bcast_msg *m)
{
    memset(m, 0, sizeof *m);
    int status = coll_packed_size(c, b->count, b->type, &m->len);
    if (status != MPI_SUCCESS || m->len == 0)
        return status;
    if (packs_as_is(b->type)) {
        m->bytes = b->buf;
        return MPI_SUCCESS;
    }
    m->owned = coll_alloc(m->len);
    if (m->owned == NULL)
        return coll_no_mem(c);
    m->bytes = m->owned;
    if (c->rank == b->root)
        status = coll_pack(c, b->buf, b->count, b->type, m->bytes, m->len);
    return status;
}

int bcast_msg_close(struct gc_comm *c, const struct coll_bcast_args *b,
                    struct bcast_msg *m, int status)
{
    if (status == MPI_SUCCESS && m->owned != NULL && c->rank != b->root)
        status = coll_unpack(c, m->bytes, m->len, b->buf, b->count, b->type);
    free(m->owned);
    memset(m, 0, sizeof *m);
    return status;
}

size_t bcast_segsize(const struct coll_args *a)
{
    return a->segsize < BCAST_MAX_MESSAGE ? a->segsize : BCAST_MAX_MESSAGE;
}

/* ---- building plans ------------------------------------------------------ */

void bcast_plan_init(struct bcast_plan *p, struct gc_comm *c,
                     unsigned char *bytes)
{
    memset(p, 0, sizeof *p);
    p->comm = c;
    p->bytes = bytes;
}

void bcast_plan_free(struct bcast_plan *p)
{
    free(p->steps);
    memset(p, 0, sizeof *p);
}

int bcast_plan_add(struct bcast_plan *p, const struct bcast_step *s)
{
    if (p->no_mem)
        return -1;
    if (p->count == p->cap) {
        int cap = p->cap > 0 ? 2 * p->cap : 64;
        struct bcast_step *grown =
            realloc(p->steps, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            p->no_mem = 1;
            return -1;
        }
        p->steps = grown;
        p->cap = cap;
    }
    p->steps[p->count] = *s;
    return p->count++;
}

static int byte_step(struct bcast_plan *p, enum bcast_step_kind kind, int peer,
                     int tag, size_t off, size_t len, int after)
{
    struct bcast_step s = {.kind = kind,
                           .peer = peer,
                           .tag = tag,
                           .buf = p->bytes + off,
                           .count = (int)len,
                           .type = MPI_BYTE,
                           .after = after};
    return bcast_plan_add(p, &s);
}

int bcast_plan_send(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len, int after)
{
    return byte_step(p, BCAST_SEND, peer, tag, off, len, after);
}

int bcast_plan_recv(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len)
{
    return byte_step(p, BCAST_RECV, peer, tag, off, len, -1);
}

void bcast_plan_local(struct bcast_plan *p, struct coll_node *node, int root,
                      void *buf, int count, MPI_Datatype type, int after)
{
    struct bcast_step s = {.kind = BCAST_LOCAL_BCAST,
                           .peer = root,
                           .buf = buf,
                           .count = count,
                           .type = type,
                           .after = after};
    struct node_type t;
    if (node == NULL || node_type_get(type, &t) != MPI_SUCCESS || t.size == 0 ||
        (MPI_Count)node_bcast_chunk(node) < t.size) {
        bcast_plan_add(p, &s);
        return;
    }
    int per = (int)((MPI_Count)node_bcast_chunk(node) / t.size < count
                        ? (MPI_Count)node_bcast_chunk(node) / t.size
                        : count);
    s.kind = BCAST_NODE_BCAST;
    for (int first = 0; first < count; first += per) {
        s.buf = (char *)buf + (MPI_Aint)first * t.extent;
        s.count = count - first < per ? count - first : per;
        bcast_plan_add(p, &s);
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

/* ---- running plans ------------------------------------------------------- */

/* Steps of one kind, peer and tag, in the order they were added. */
struct stream {
    enum bcast_step_kind kind;
    int peer, tag;
    int first; /* into run.order */
    int count;
    int next; /* steps posted */
    int busy; /* posted, not finished */
};

struct run {
    struct bcast_plan *plan;
    MPI_Comm local;
    struct stream *streams;
    int nstreams;
    int *stream_of;    /* [count] */
    int *order;        /* [count] step indices grouped by stream */
    char *done;        /* [count] */
    int left;          /* steps not finished */
    MPI_Request *lreq; /* PMPI requests in flight, and their steps */
    int *lstep;
    int nl;
    struct gc_xfer **xreq; /* relay transfers in flight, and their steps */
    int *xstep;
    int nx;
    struct node_bcast *nreq; /* node-layer chunks in flight, and steps */
    int *nstep;
    int nn;
    int *indices; /* PMPI_Testsome's */
    MPI_Status *statuses;
};

static void run_free(struct run *r)
{
    free(r->streams);
    free(r->stream_of);
    free(r->order);
    free(r->done);
    free(r->lreq);
    free(r->lstep);
    free(r->xreq);
    free(r->xstep);
    free(r->nreq);
    free(r->nstep);
    free(r->indices);
    free(r->statuses);
}

static int run_make(struct run *r)
{
    struct gc_comm *c = r->plan->comm;
    size_t n = (size_t)r->plan->count;
    r->streams = malloc(n * sizeof *r->streams);
    r->stream_of = malloc(n * sizeof *r->stream_of);
    r->order = malloc(n * sizeof *r->order);
    r->done = calloc(n, 1);
    r->lreq = malloc(n * sizeof *r->lreq);
    r->lstep = malloc(n * sizeof *r->lstep);
    r->xreq = malloc(n * sizeof *r->xreq);
    r->xstep = malloc(n * sizeof *r->xstep);
    r->nreq = malloc(n * sizeof *r->nreq);
    r->nstep = malloc(n * sizeof *r->nstep);
    r->indices = malloc(n * sizeof *r->indices);
    r->statuses = malloc(n * sizeof *r->statuses);
    if (r->statuses == NULL || r->streams == NULL || r->stream_of == NULL ||
        r->order == NULL || r->done == NULL || r->lreq == NULL ||
        r->lstep == NULL || r->xreq == NULL || r->xstep == NULL ||
        r->nreq == NULL || r->nstep == NULL || r->indices == NULL)
        return coll_no_mem(c);
    /* Few streams per member (a tree's parent and children, a ring's two
     * neighbours): a linear search per step is cheap. */
    for (int i = 0; i < r->plan->count; i++) {
        const struct bcast_step *s = &r->plan->steps[i];
        int k = 0;
        while (k < r->nstreams &&
               (r->streams[k].kind != s->kind ||
                r->streams[k].peer != s->peer || r->streams[k].tag != s->tag))
            k++;
        if (k == r->nstreams)
            r->streams[r->nstreams++] = (struct stream){
                .kind = s->kind, .peer = s->peer, .tag = s->tag};
        r->streams[k].count++;
        r->stream_of[i] = k;
    }
    for (int k = 1; k < r->nstreams; k++)
        r->streams[k].first = r->streams[k - 1].first + r->streams[k - 1].count;
    for (int i = 0; i < r->plan->count; i++) {
        struct stream *st = &r->streams[r->stream_of[i]];
        r->order[st->first + st->next++] = i;
    }
    for (int k = 0; k < r->nstreams; k++)
        r->streams[k].next = 0;
    r->left = r->plan->count;
    return MPI_SUCCESS;
}

static int is_remote(const struct gc_comm *c, const struct bcast_step *s)
{
    return (s->kind == BCAST_SEND || s->kind == BCAST_RECV) &&
           c->site[s->peer] != c->site[c->rank];
}

/* Post step i; *remote_failed tells a relay failure from an MPICH one. */
static int post(struct run *r, int i, int *remote_failed)
{
    struct gc_comm *c = r->plan->comm;
    const struct bcast_step *s = &r->plan->steps[i];
    int status;
    if (is_remote(c, s)) {
        struct gc_xfer **req = &r->xreq[r->nx];
        status = s->kind == BCAST_SEND
                     ? gc_xfer_isend(c, s->peer, s->tag, s->buf,
                                     (size_t)s->count, req)
                     : gc_xfer_irecv(c, s->peer, s->tag, s->buf,
                                     (size_t)s->count, req);
        if (status == MPI_SUCCESS)
            r->xstep[r->nx++] = i;
        else
            *remote_failed = 1;
        return status;
    }
    if (s->kind == BCAST_NODE_BCAST) {
        status = node_bcast_start(&r->nreq[r->nn], c, c->node, s->buf, s->count,
                                  s->type, s->peer);
        if (status == MPI_SUCCESS)
            r->nstep[r->nn++] = i;
        else
            free(r->nreq[r->nn].reqs);
        return status;
    }
    MPI_Request *req = &r->lreq[r->nl];
    switch (s->kind) {
    case BCAST_SEND:
        status = PMPI_Isend(s->buf, s->count, s->type, c->site_rank[s->peer],
                            s->tag, r->local, req);
        break;
    case BCAST_RECV:
        status = PMPI_Irecv(s->buf, s->count, s->type, c->site_rank[s->peer],
                            s->tag, r->local, req);
        break;
    default:
        status = PMPI_Ibcast(s->buf, s->count, s->type, s->peer, r->local, req);
        break;
    }
    if (status == MPI_SUCCESS)
        r->lstep[r->nl++] = i;
    return status;
}

/* Post what is ready: in stream order, within the window; *posted counts. */
static int post_ready(struct run *r, int *posted, int *remote_failed)
{
    for (int k = 0; k < r->nstreams; k++) {
        struct stream *st = &r->streams[k];
        while (st->next < st->count && st->busy < BCAST_WINDOW) {
            int i = r->order[st->first + st->next];
            int after = r->plan->steps[i].after;
            if (after >= 0 && !r->done[after])
                break;
            int status = post(r, i, remote_failed);
            if (status != MPI_SUCCESS)
                return status;
            st->next++;
            st->busy++;
            (*posted)++;
        }
    }
    return MPI_SUCCESS;
}

static void finished(struct run *r, int i)
{
    r->done[i] = 1;
    r->streams[r->stream_of[i]].busy--;
    r->left--;
}

/* Reap finished steps; how many. */
static int reap(struct run *r, int *status, int *remote_failed)
{
    int reaped = 0;
    if (r->nl > 0) {
        int out = 0, err_class = MPI_SUCCESS;
        int rc = PMPI_Testsome(r->nl, r->lreq, &out, r->indices, r->statuses);
        if (rc != MPI_SUCCESS)
            PMPI_Error_class(rc, &err_class);
        /* A step's own error, not MPI_ERR_IN_STATUS: no collective may
         * return that class. */
        for (int j = 0; err_class == MPI_ERR_IN_STATUS && j < out; j++)
            if (r->statuses[j].MPI_ERROR != MPI_SUCCESS) {
                rc = r->statuses[j].MPI_ERROR;
                break;
            }
        if (rc != MPI_SUCCESS && *status == MPI_SUCCESS)
            *status = rc;
        if (rc != MPI_SUCCESS && err_class != MPI_ERR_IN_STATUS) {
            /* The call itself failed: nothing tells which requests are
             * left; give them up rather than wait for them forever. */
            r->nl = 0;
            out = 0;
        }
        if (out != MPI_UNDEFINED && out > 0) {
            for (int j = 0; j < out; j++)
                finished(r, r->lstep[r->indices[j]]);
            int kept = 0;
            for (int j = 0; j < r->nl; j++)
                if (r->lreq[j] != MPI_REQUEST_NULL) {
                    r->lreq[kept] = r->lreq[j];
                    r->lstep[kept++] = r->lstep[j];
                }
            r->nl = kept;
            reaped += out;
        }
    }
    int kept = 0;
    for (int j = 0; j < r->nx; j++) {
        int done;
        int rc = gc_xfer_test(&r->xreq[j], &done);
        if (rc != MPI_SUCCESS && *status == MPI_SUCCESS) {
            *status = rc;
            *remote_failed = 1;
        }
        if (done) {
            finished(r, r->xstep[j]);
            reaped++;
        } else {
            r->xreq[kept] = r->xreq[j];
            r->xstep[kept++] = r->xstep[j];
        }
    }
    r->nx = kept;
    kept = 0;
    for (int j = 0; j < r->nn; j++) {
        int done;
        int rc = node_bcast_test(&r->nreq[j], &done);
        if (rc != MPI_SUCCESS && *status == MPI_SUCCESS)
            *status = rc;
        if (done) {
            finished(r, r->nstep[j]);
            reaped++;
        } else {
            r->nreq[kept] = r->nreq[j];
            r->nstep[kept++] = r->nstep[j];
        }
    }
    r->nn = kept;
    return reaped;
}

/*
 * Post and reap until every step finished.  After a failure nothing new is
 * posted, but what is in flight uses the caller's buffers and must finish.
 */
static int run_all(struct run *r, int *remote_failed)
{
    int status = MPI_SUCCESS;
    unsigned idle = 0;
    while (r->left > 0) {
        int moved = 0;
        if (status == MPI_SUCCESS)
            status = post_ready(r, &moved, remote_failed);
        if (r->nl == 0 && r->nx == 0 && r->nn == 0)
            break;
        /* A receive can finish as it is posted (its message was already
         * in): look before waiting. */
        moved += reap(r, &status, remote_failed);
        if (moved > 0 || r->nl > 0 || r->nn > 0) {
            gc_progress(0);
            /* MPICH's shared memory needs polling: let the peers run. */
            if (moved == 0)
                gc_idle(&idle);
            else
                idle = 0;
        } else {
            /* Only the relay can finish what is left: wait in poll(). */
            gc_progress(10);
        }
    }
    return status;
}

int bcast_plan_run(struct bcast_plan *p, const char *fn)
{
    struct gc_comm *c = p->comm;
    struct run r = {.plan = p};
    int remote_failed = 0;
    if (p->no_mem)
        return coll_no_mem(c);
    if (p->count == 0)
        return MPI_SUCCESS;
    int status = run_make(&r);
    if (status != MPI_SUCCESS)
        goto cleanup;
    const char *what = "transfer within a site failed";
    status = coll_local_p2p(c, &r.local);
    if (status == MPI_SUCCESS)
        status = run_all(&r, &remote_failed);
    if (status == MPI_SUCCESS && r.left > 0) {
        status = MPI_ERR_INTERN;
        what = "a step waits for one never posted (GridColl bug)";
    }
    if (status != MPI_SUCCESS) {
        char text[160];
        snprintf(text, sizeof text, "%s: %s", fn,
                 remote_failed ? "transfer between sites failed" : what);
        status = gc_error(c->handle, status, text);
    }
cleanup:
    run_free(&r);
    return status;
}

/* ---- the common skeleton ------------------------------------------------- */

int bcast_run(const struct coll_args *a, bcast_build_fn *build)
{
    struct gc_comm *c = a->comm;
    const struct coll_bcast_args *b = &a->u.bcast;
    struct bcast_order o = {0};
    struct bcast_msg m = {0};
    struct bcast_plan p;
    bcast_plan_init(&p, c, NULL);
    int status = bcast_msg_open(c, b, &m);
    /* Nothing to move: no message at all (a bcast does not synchronize). */
    if (status != MPI_SUCCESS || m.len == 0)
        goto cleanup;
    status = bcast_order_make(c, b->root, &o);
    if (status != MPI_SUCCESS)
        goto cleanup;
    p.bytes = m.bytes;
    status = build(&p, a, &o, m.len);
    if (status == MPI_SUCCESS)
        status = bcast_plan_run(&p, a->fn);
cleanup:
    status = bcast_msg_close(c, b, &m, status);
    bcast_plan_free(&p);
    bcast_order_free(&o);
    return status;
}
