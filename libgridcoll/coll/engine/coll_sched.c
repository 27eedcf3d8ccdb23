/*
 * The schedule engine: building schedules and running them
 * (coll_sched.h says what a schedule is and in which order steps go).
 */
#include "coll/engine/coll_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_request.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_ctxid.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_wan_stats.h"
#include "p2p/gc_xfer.h"

/*
 * Stream steps in flight at once: enough segments to keep the relay's
 * streams busy (64 x 256 KiB), few enough that matching a posted receive
 * stays cheap.
 */
#define SCHED_WINDOW 64

/* Tags below this are the step kinds (enum coll_tag); the schedule's
 * number on its communicator goes above, and also keeps them apart from
 * the tags of the collectives not yet written as schedules. */
#define SCHED_TAG_KINDS 32

enum step_kind { SEND, RECV, LOCAL, POLL, NESTED, CALL, JOIN };

struct step {
    enum step_kind kind;
    int peer, tag; /* SEND, RECV */
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int after;
    struct sched_local *local;
    const struct sched_poll_ops *poll; /* POLL: its client's work, */
    void *state, *poll_arg;            /* its state and argument */
    struct coll_sched *child;          /* NESTED: a grid communicator's, or */
    MPI_Request request;               /* an MPICH persistent collective, or */
    MPI_Request *posted;               /* an MPICH request the builder posted */
    sched_call_fn *fn;
    void *arg;
    int dep_first, dep_count; /* JOIN: into deps */
};

/* Sends or receives with one peer and tag, in the order they were added. */
struct stream {
    enum step_kind kind;
    int peer, tag;
    int first; /* into order */
    int count;
    int next; /* steps posted in this run */
    int busy; /* posted, not finished */
};

struct chunk {
    struct chunk *next;
    max_align_t data[];
};

struct coll_sched {
    struct gc_comm *comm;
    const char *fn;
    struct gc_wan_count *wan; /* where its WAN traffic counts */
    struct step *steps;
    int count, cap;
    int *deps;
    int ndeps, deps_cap;
    int fence_from; /* first step the next fence covers */
    struct chunk *mem;
    MPI_Datatype *types;
    int ntypes, types_cap;
    int no_mem;
    int blocking; /* has coll_sched_call_blocking steps */
    MPI_Op op;    /* held until the schedule is freed (coll_sched_hold_op) */
    /*
     * Persistent (coll_sched_persist): numbered once, and LOCAL steps on
     * a private copy of the site communicator, made by PMPI_Comm_idup
     * (local_idup until it completes): MPI lets members start persistent
     * collectives in different orders.
     */
    int persistent;
    MPI_Comm local;
    MPI_Request local_idup;
    /* A NESTED step's child: the parent and the step it finishes. */
    struct coll_sched *parent;
    int parent_step;

    /* Fixed once the first run starts. */
    int prepared;
    struct stream *streams;
    int nstreams;
    int *stream_of; /* [count] */
    int *order;     /* [count] step indices grouped by stream */
    int *ordered;   /* LOCAL, POLL, NESTED steps, each in added order */
    int nlocal, npoll, nnested;
    int *free_steps; /* CALL and JOIN */
    int nfree;
    char *done; /* [count] */
    MPI_Request *lreq;
    int *lstep;
    struct gc_xfer **xreq;
    int *xstep;
    int *pstep; /* POLL steps started, not yet done */
    int *indices;
    MPI_Status *statuses;

    /* The run. */
    int running;
    unsigned seq;
    int left, nl, nx, np, nchild;
    int local_next, poll_next, nested_next, free_left;
    int status;
    int truncated;
    int remote_failed;
    sched_done_fn *done_fn;
    void *done_arg;
    struct coll_sched *next_running;
};

/* Running schedules, oldest first. */
static struct coll_sched *running_head;
static int in_progress;
static unsigned seq_wrap;
/* A child finished during a progress pass: its parent may move on. */
static int child_finished;

/* ---- user-defined ops held by schedules ---------------------------------- */

/*
 * MPI lets a program free an op right after MPI_Ireduce; a schedule
 * posts its local reduction later, so MPI_Op_free of a held op is
 * deferred until the last schedule holding it is freed.
 */
static struct held_op {
    MPI_Op op;
    int holds;
    int freed;
} * held_ops;
static int held_count, held_cap;

static struct held_op *op_find(MPI_Op op)
{
    for (int i = 0; i < held_count; i++)
        if (held_ops[i].op == op)
            return &held_ops[i];
    return NULL;
}

static void op_release(MPI_Op op)
{
    struct held_op *h = op == MPI_OP_NULL ? NULL : op_find(op);
    if (h == NULL || --h->holds > 0)
        return;
    if (h->freed)
        PMPI_Op_free(&h->op);
    *h = held_ops[--held_count];
}

int coll_sched_hold_op(struct coll_sched *s, MPI_Op op)
{
    struct held_op *h = op_find(op);
    if (h == NULL) {
        if (held_count == held_cap) {
            int cap = held_cap > 0 ? 2 * held_cap : 8;
            struct held_op *grown = realloc(held_ops, cap * sizeof *grown);
            if (grown == NULL)
                return MPI_ERR_NO_MEM;
            held_ops = grown;
            held_cap = cap;
        }
        h = &held_ops[held_count++];
        *h = (struct held_op){.op = op};
    }
    h->holds++;
    s->op = op;
    return MPI_SUCCESS;
}

int coll_sched_op_free(MPI_Op *op)
{
    struct held_op *h = op != NULL ? op_find(*op) : NULL;
    if (h == NULL || h->freed)
        return PMPI_Op_free(op);
    h->freed = 1;
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

/* ---- building ---------------------------------------------------------- */

struct coll_sched *coll_sched_new(struct gc_comm *c, const char *fn,
                                  struct gc_wan_count *wan)
{
    struct coll_sched *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->op = MPI_OP_NULL;
    s->local = MPI_COMM_NULL;
    s->local_idup = MPI_REQUEST_NULL;
    s->comm = c;
    s->fn = fn;
    s->wan = wan;
    gc_comm_retain(c);
    return s;
}

struct gc_comm *coll_sched_comm(const struct coll_sched *s)
{
    return s->comm;
}

static void free_run(struct coll_sched *s)
{
    free(s->streams);
    free(s->stream_of);
    free(s->order);
    free(s->ordered);
    free(s->free_steps);
    free(s->done);
    free(s->lreq);
    free(s->lstep);
    free(s->xreq);
    free(s->xstep);
    free(s->pstep);
    free(s->indices);
    free(s->statuses);
}

void coll_sched_free(struct coll_sched *s)
{
    if (s == NULL)
        return;
    /* Freed before its copy of the site communicator was ready: the
     * other members made theirs too, so it completes. */
    gc_ctxid_wait(&s->local_idup);
    if (s->local != MPI_COMM_NULL)
        PMPI_Comm_free(&s->local);
    /* Children first: they may use the parent's memory and op. */
    for (int i = 0; i < s->count; i++) {
        /* Never run: its duplication still writes into s's memory. */
        if (s->steps[i].posted != NULL)
            gc_ctxid_wait(s->steps[i].posted);
        coll_sched_free(s->steps[i].child);
        if (s->steps[i].request != MPI_REQUEST_NULL)
            PMPI_Request_free(&s->steps[i].request);
    }
    op_release(s->op);
    free_run(s);
    for (struct chunk *k = s->mem, *next; k != NULL; k = next) {
        next = k->next;
        free(k);
    }
    for (int i = 0; i < s->ntypes; i++)
        PMPI_Type_free(&s->types[i]);
    free(s->types);
    free(s->steps);
    free(s->deps);
    gc_comm_unref(s->comm);
    free(s);
}

void *coll_sched_alloc(struct coll_sched *s, size_t bytes)
{
    if (bytes > SIZE_MAX - sizeof(struct chunk)) {
        s->no_mem = 1;
        return NULL;
    }
    struct chunk *k = calloc(1, sizeof *k + bytes);
    if (k == NULL) {
        s->no_mem = 1;
        return NULL;
    }
    k->next = s->mem;
    s->mem = k;
    return k->data;
}

MPI_Datatype coll_sched_type(struct coll_sched *s, MPI_Datatype type)
{
    if (type == MPI_DATATYPE_NULL || gc_type_is_named(type))
        return type;
    if (s->ntypes == s->types_cap) {
        int cap = s->types_cap > 0 ? 2 * s->types_cap : 4;
        MPI_Datatype *grown = realloc(s->types, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            s->no_mem = 1;
            return type;
        }
        s->types = grown;
        s->types_cap = cap;
    }
    /*
     * A type built on `type` holds a reference to it in MPICH, so the
     * object outlives the program's MPI_Type_free; the steps keep using
     * the program's own handle, which a user op may compare with its own.
     */
    MPI_Datatype keeper;
    if (PMPI_Type_contiguous(1, type, &keeper) != MPI_SUCCESS) {
        s->no_mem = 1;
        return type;
    }
    s->types[s->ntypes++] = keeper;
    return type;
}

static int add(struct coll_sched *s, const struct step *given)
{
    struct step st = *given;
    /* Steps that hold no request, so coll_sched_free passes them by. */
    if (st.kind != NESTED)
        st.request = MPI_REQUEST_NULL;
    if (s->no_mem)
        return -1;
    if (s->count == s->cap) {
        int cap = s->cap > 0 ? 2 * s->cap : 16;
        struct step *grown = realloc(s->steps, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            s->no_mem = 1;
            return -1;
        }
        s->steps = grown;
        s->cap = cap;
    }
    s->steps[s->count] = st;
    return s->count++;
}

int coll_sched_send(struct coll_sched *s, int peer, int tag, const void *buf,
                    MPI_Count count, MPI_Datatype type, int after)
{
    struct step st = {.kind = SEND,
                      .peer = peer,
                      .tag = tag,
                      .buf = (void *)buf,
                      .count = count,
                      .type = type,
                      .after = after};
    return add(s, &st);
}

int coll_sched_recv(struct coll_sched *s, int peer, int tag, void *buf,
                    MPI_Count count, MPI_Datatype type, int after)
{
    struct step st = {.kind = RECV,
                      .peer = peer,
                      .tag = tag,
                      .buf = buf,
                      .count = count,
                      .type = type,
                      .after = after};
    return add(s, &st);
}

int coll_sched_local(struct coll_sched *s, const struct sched_local *l,
                     int after)
{
    struct sched_local *copy = coll_sched_alloc(s, sizeof *copy);
    if (copy == NULL)
        return -1;
    *copy = *l;
    struct step st = {.kind = LOCAL, .local = copy, .after = after};
    return add(s, &st);
}

int coll_sched_poll(struct coll_sched *s, const struct sched_poll_ops *ops,
                    void *arg, int after)
{
    void *state = coll_sched_alloc(s, ops->state_size);
    if (state == NULL)
        return -1;
    struct step st = {.kind = POLL,
                      .poll = ops,
                      .state = state,
                      .poll_arg = arg,
                      .after = after};
    return add(s, &st);
}

int coll_sched_nested(struct coll_sched *s, struct coll_sched *child, int after)
{
    struct step st = {.kind = NESTED,
                      .child = child,
                      .request = MPI_REQUEST_NULL,
                      .after = after};
    int i = add(s, &st);
    if (i < 0) {
        coll_sched_free(child);
        return -1;
    }
    child->parent = s;
    child->parent_step = i;
    return i;
}

int coll_sched_nested_mpich(struct coll_sched *s, MPI_Request request,
                            int after)
{
    struct step st = {.kind = NESTED, .request = request, .after = after};
    int i = add(s, &st);
    if (i < 0)
        PMPI_Request_free(&request);
    return i;
}

int coll_sched_wait_mpich(struct coll_sched *s, MPI_Request *request, int after)
{
    struct step st = {.kind = NESTED,
                      .request = MPI_REQUEST_NULL,
                      .posted = request,
                      .after = after};
    return add(s, &st);
}

int coll_sched_call(struct coll_sched *s, sched_call_fn *fn, void *arg,
                    int after)
{
    struct step st = {.kind = CALL, .fn = fn, .arg = arg, .after = after};
    return add(s, &st);
}

int coll_sched_call_blocking(struct coll_sched *s, sched_call_fn *fn, void *arg,
                             int after)
{
    s->blocking = 1;
    return coll_sched_call(s, fn, arg, after);
}

int coll_sched_join(struct coll_sched *s, const int *steps, int n)
{
    if (s->no_mem)
        return -1;
    if (s->ndeps + n > s->deps_cap) {
        int cap = s->deps_cap > 0 ? s->deps_cap : 16;
        while (cap < s->ndeps + n)
            cap *= 2;
        int *grown = realloc(s->deps, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            s->no_mem = 1;
            return -1;
        }
        s->deps = grown;
        s->deps_cap = cap;
    }
    struct step st = {.kind = JOIN, .after = -1, .dep_first = s->ndeps};
    for (int i = 0; i < n; i++)
        if (steps[i] >= 0)
            s->deps[s->ndeps + st.dep_count++] = steps[i];
    s->ndeps += st.dep_count;
    return add(s, &st);
}

int coll_sched_fence(struct coll_sched *s)
{
    if (s->no_mem)
        return -1;
    int n = s->count - s->fence_from;
    int *all = malloc((size_t)(n > 0 ? n : 1) * sizeof *all);
    if (all == NULL) {
        s->no_mem = 1;
        return -1;
    }
    for (int i = 0; i < n; i++)
        all[i] = s->fence_from + i;
    int join = coll_sched_join(s, all, n);
    free(all);
    /* Later fences need only cover what comes after this one. */
    if (join >= 0)
        s->fence_from = join;
    return join;
}

void coll_sched_retarget(struct coll_sched *s, int step, void *buf,
                         MPI_Count count)
{
    if (step >= 0 && step < s->count) {
        s->steps[step].buf = buf;
        s->steps[step].count = count;
    }
}

struct sched_local *coll_sched_local_args(struct coll_sched *s, int step)
{
    return step >= 0 && step < s->count ? s->steps[step].local : NULL;
}

/* ---- common CALL steps ----------------------------------------------- */

struct copy_arg {
    void *dst;
    const void *src;
    size_t len;
};

static int do_copy(struct coll_sched *s, void *arg)
{
    (void)s;
    struct copy_arg *c = arg;
    if (c->len > 0 && c->dst != c->src)
        memcpy(c->dst, c->src, c->len);
    return MPI_SUCCESS;
}

int coll_sched_copy(struct coll_sched *s, void *dst, const void *src,
                    size_t len, int after)
{
    struct copy_arg *c = coll_sched_alloc(s, sizeof *c);
    if (c == NULL)
        return -1;
    *c = (struct copy_arg){dst, src, len};
    return coll_sched_call(s, do_copy, c, after);
}

struct pack_arg {
    void *buf; /* the typed side */
    void *bytes;
    size_t len;
    MPI_Count count;
    MPI_Datatype type;
    int unpack;
};

static int do_pack(struct coll_sched *s, void *arg)
{
    struct pack_arg *p = arg;
    return p->unpack ? coll_unpack(s->comm, p->bytes, p->len, p->buf, p->count,
                                   p->type)
                     : coll_pack(s->comm, p->buf, p->count, p->type, p->bytes,
                                 p->len);
}

static int pack_step(struct coll_sched *s, void *buf, MPI_Count count,
                     MPI_Datatype type, void *bytes, size_t len, int unpack,
                     int after)
{
    struct pack_arg *p = coll_sched_alloc(s, sizeof *p);
    if (p == NULL)
        return -1;
    *p = (struct pack_arg){buf,   bytes, len, count, coll_sched_type(s, type),
                           unpack};
    return coll_sched_call(s, do_pack, p, after);
}

int coll_sched_pack(struct coll_sched *s, const void *buf, MPI_Count count,
                    MPI_Datatype type, void *out, size_t len, int after)
{
    return pack_step(s, (void *)buf, count, type, out, len, 0, after);
}

int coll_sched_unpack(struct coll_sched *s, const void *in, size_t len,
                      void *buf, MPI_Count count, MPI_Datatype type, int after)
{
    return pack_step(s, buf, count, type, (void *)in, len, 1, after);
}

struct reduce_arg {
    const void *in;
    void *inout;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
};

static int do_reduce(struct coll_sched *s, void *arg)
{
    (void)s;
    struct reduce_arg *r = arg;
    if (r->count == 0)
        return MPI_SUCCESS;
    return PMPI_Reduce_local_c(r->in, r->inout, r->count, r->type, r->op);
}

int coll_sched_reduce(struct coll_sched *s, const void *in, void *inout,
                      MPI_Count count, MPI_Datatype type, MPI_Op op, int after)
{
    struct reduce_arg *r = coll_sched_alloc(s, sizeof *r);
    if (r == NULL)
        return -1;
    *r = (struct reduce_arg){in, inout, count, coll_sched_type(s, type), op};
    return coll_sched_call(s, do_reduce, r, after);
}

/* ---- preparing the first run -------------------------------------------- */

static int is_stream(enum step_kind kind)
{
    return kind == SEND || kind == RECV;
}

static int prepare(struct coll_sched *s)
{
    size_t n = (size_t)(s->count > 0 ? s->count : 1);
    s->streams = malloc(n * sizeof *s->streams);
    s->stream_of = malloc(n * sizeof *s->stream_of);
    s->order = malloc(n * sizeof *s->order);
    s->ordered = malloc(n * sizeof *s->ordered);
    s->free_steps = malloc(n * sizeof *s->free_steps);
    s->done = malloc(n);
    s->lreq = malloc(n * sizeof *s->lreq);
    s->lstep = malloc(n * sizeof *s->lstep);
    s->xreq = malloc(n * sizeof *s->xreq);
    s->xstep = malloc(n * sizeof *s->xstep);
    s->pstep = malloc(n * sizeof *s->pstep);
    s->indices = malloc(n * sizeof *s->indices);
    s->statuses = malloc(n * sizeof *s->statuses);
    if (s->streams == NULL || s->stream_of == NULL || s->order == NULL ||
        s->ordered == NULL || s->free_steps == NULL || s->done == NULL ||
        s->lreq == NULL || s->lstep == NULL || s->xreq == NULL ||
        s->xstep == NULL || s->pstep == NULL || s->indices == NULL ||
        s->statuses == NULL)
        return MPI_ERR_NO_MEM;
    /* Few streams per member (a tree's parent and children, the site
     * leaders): a linear search per step is cheap. */
    for (int i = 0; i < s->count; i++) {
        const struct step *st = &s->steps[i];
        s->stream_of[i] = -1;
        if (st->kind == LOCAL)
            s->ordered[s->nlocal++] = i;
        if (st->kind == CALL || st->kind == JOIN)
            s->free_steps[s->nfree++] = i;
        if (!is_stream(st->kind))
            continue;
        int k = 0;
        while (k < s->nstreams &&
               (s->streams[k].kind != st->kind ||
                s->streams[k].peer != st->peer || s->streams[k].tag != st->tag))
            k++;
        if (k == s->nstreams)
            s->streams[s->nstreams++] = (struct stream){
                .kind = st->kind, .peer = st->peer, .tag = st->tag};
        s->streams[k].count++;
        s->stream_of[i] = k;
    }
    for (int i = 0; i < s->count; i++)
        if (s->steps[i].kind == POLL)
            s->ordered[s->nlocal + s->npoll++] = i;
    for (int i = 0; i < s->count; i++)
        if (s->steps[i].kind == NESTED)
            s->ordered[s->nlocal + s->npoll + s->nnested++] = i;
    for (int k = 1; k < s->nstreams; k++)
        s->streams[k].first = s->streams[k - 1].first + s->streams[k - 1].count;
    for (int i = 0; i < s->count; i++)
        if (s->stream_of[i] >= 0) {
            struct stream *stream = &s->streams[s->stream_of[i]];
            s->order[stream->first + stream->next++] = i;
        }
    s->prepared = 1;
    return MPI_SUCCESS;
}

/* ---- running ---------------------------------------------------------- */

static int step_ready(const struct coll_sched *s, const struct step *st)
{
    if (st->after >= 0 && !s->done[st->after])
        return 0;
    if (st->kind == JOIN)
        for (int d = 0; d < st->dep_count; d++)
            if (!s->done[s->deps[st->dep_first + d]])
                return 0;
    return 1;
}

static void finished(struct coll_sched *s, int i)
{
    s->done[i] = 1;
    if (s->stream_of[i] >= 0)
        s->streams[s->stream_of[i]].busy--;
    s->left--;
}

/* The tag on the wire: the step's kind and the schedule's number. */
static int wire_tag(const struct coll_sched *s, int tag)
{
    return tag + SCHED_TAG_KINDS * (int)(1 + s->seq % seq_wrap);
}

static int remote(const struct coll_sched *s, const struct step *st)
{
    return s->comm->site[st->peer] != s->comm->site[s->comm->rank];
}

static int post_transfer(struct coll_sched *s, int i)
{
    struct gc_comm *c = s->comm;
    const struct step *st = &s->steps[i];
    int tag = wire_tag(s, st->tag), status;
    if (st->count < 0) {
        finished(s, i); /* retargeted away: nothing to move this run */
        return MPI_SUCCESS;
    }
    if (remote(s, st)) {
        /* Only bytes cross sites: the algorithms pack. */
        struct gc_xfer **req = &s->xreq[s->nx];
        struct gc_wan_count *outer = gc_wan_enter(s->wan);
        status = st->kind == SEND ? gc_xfer_isend(c, st->peer, tag, st->buf,
                                                  (size_t)st->count, req)
                                  : gc_xfer_irecv(c, st->peer, tag, st->buf,
                                                  (size_t)st->count, req);
        gc_wan_enter(outer);
        if (status == MPI_SUCCESS)
            s->xstep[s->nx++] = i;
        else
            s->remote_failed = 1;
        return status;
    }
    MPI_Request *req = &s->lreq[s->nl];
    status = st->kind == SEND
                 ? PMPI_Isend_c(st->buf, st->count, st->type,
                                c->site_rank[st->peer], tag, c->local_p2p, req)
                 : PMPI_Irecv_c(st->buf, st->count, st->type,
                                c->site_rank[st->peer], tag, c->local_p2p, req);
    if (status == MPI_SUCCESS)
        s->lstep[s->nl++] = i;
    return status;
}

static int post_local(struct coll_sched *s, int i)
{
    const struct sched_local *l = s->steps[i].local;
    MPI_Comm comm = s->persistent ? s->local : s->comm->local;
    MPI_Request *req = &s->lreq[s->nl];
    int status;
    switch (l->op) {
    case LOCAL_BARRIER: status = PMPI_Ibarrier(comm, req); break;
    case LOCAL_BCAST:
        status = PMPI_Ibcast_c(l->rbuf, l->count, l->type, l->root, comm, req);
        break;
    case LOCAL_REDUCE:
        status = PMPI_Ireduce_c(l->sbuf, l->rbuf, l->count, l->type, l->mop,
                                l->root, comm, req);
        break;
    case LOCAL_ALLREDUCE:
        status = PMPI_Iallreduce_c(l->sbuf, l->rbuf, l->count, l->type, l->mop,
                                   comm, req);
        break;
    case LOCAL_SCAN:
        status = PMPI_Iscan_c(l->sbuf, l->rbuf, l->count, l->type, l->mop, comm,
                              req);
        break;
    case LOCAL_REDUCE_SCATTER:
        /* A step reducing in its own buffer: MPICH rejects aliased
         * buffers, and MPI_IN_PLACE takes the input from rbuf. */
        status = PMPI_Ireduce_scatter_c(
            l->sbuf == l->rbuf ? MPI_IN_PLACE : l->sbuf, l->rbuf, l->counts,
            l->type, l->mop, comm, req);
        break;
    case LOCAL_EXSCAN:
        status = PMPI_Iexscan_c(l->sbuf, l->rbuf, l->count, l->type, l->mop,
                                comm, req);
        break;
    case LOCAL_GATHERV:
        status = PMPI_Igatherv_c(l->sbuf, l->count, l->type, l->rbuf, l->counts,
                                 l->displs, l->rtype, l->root, comm, req);
        break;
    case LOCAL_SCATTERV:
        status =
            PMPI_Iscatterv_c(l->sbuf, l->counts, l->displs, l->type, l->rbuf,
                             l->rcount, l->rtype, l->root, comm, req);
        break;
    case LOCAL_ALLGATHERV:
        status = PMPI_Iallgatherv_c(l->sbuf, l->count, l->type, l->rbuf,
                                    l->counts, l->displs, l->rtype, comm, req);
        break;
    case LOCAL_START: status = l->start(l, req); break;
    default:
        status = PMPI_Ialltoallw_c(l->sbuf, l->scounts, l->sdispls, l->stypes,
                                   l->rbuf, l->rcounts, l->rdispls, l->rtypes,
                                   comm, req);
        break;
    }
    if (status == MPI_SUCCESS)
        s->lstep[s->nl++] = i;
    return status;
}

/* A child's run ended: its step in the parent is done. */
static void child_done(struct coll_sched *child, int status, void *arg)
{
    (void)arg;
    struct coll_sched *s = child->parent;
    if (status != MPI_SUCCESS && s->status == MPI_SUCCESS)
        s->status = status;
    s->nchild--;
    finished(s, child->parent_step);
    child_finished = 1;
}

static int post_nested(struct coll_sched *s, int i)
{
    struct step *st = &s->steps[i];
    if (st->child == NULL) {
        if (st->posted != NULL) {
            s->lreq[s->nl] = *st->posted;
            s->lstep[s->nl++] = i;
            *st->posted = MPI_REQUEST_NULL; /* freed as it completes */
            return MPI_SUCCESS;
        }
        int status = PMPI_Start(&st->request);
        if (status == MPI_SUCCESS) {
            /* A copy: MPICH leaves a persistent request's handle as it
             * is when it completes, reap() drops it by index. */
            s->lreq[s->nl] = st->request;
            s->lstep[s->nl++] = i;
        }
        return status;
    }
    s->nchild++;
    int status = coll_sched_start(st->child, child_done, NULL);
    if (status != MPI_SUCCESS)
        s->nchild--;
    return status;
}

/*
 * Whether s may post its local collectives: every schedule started
 * earlier on the same communicator has posted all of its own.
 */
static int local_turn(struct coll_sched *s)
{
    if (s->persistent) {
        /* Its own communicator, once PMPI_Comm_idup has made it. */
        int made = 1;
        if (s->local_idup != MPI_REQUEST_NULL &&
            PMPI_Test(&s->local_idup, &made, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            made = 0;
        return made;
    }
    for (const struct coll_sched *t = running_head; t != s; t = t->next_running)
        if (t->comm == s->comm && !t->persistent && t->local_next < t->nlocal)
            return 0;
    return 1;
}

/* Post (or run) what is ready; how many steps moved. */
static int post_ready(struct coll_sched *s)
{
    int moved = 0, status = MPI_SUCCESS;
    for (int k = 0; k < s->nstreams && status == MPI_SUCCESS; k++) {
        struct stream *stream = &s->streams[k];
        while (stream->next < stream->count && stream->busy < SCHED_WINDOW) {
            int i = s->order[stream->first + stream->next];
            if (!step_ready(s, &s->steps[i]))
                break;
            status = post_transfer(s, i);
            if (status != MPI_SUCCESS)
                break;
            stream->next++;
            stream->busy++;
            moved++;
        }
    }
    while (status == MPI_SUCCESS && s->local_next < s->nlocal &&
           step_ready(s, &s->steps[s->ordered[s->local_next]]) &&
           local_turn(s)) {
        status = post_local(s, s->ordered[s->local_next]);
        if (status == MPI_SUCCESS) {
            s->local_next++;
            moved++;
        }
    }
    while (status == MPI_SUCCESS && s->poll_next < s->npoll) {
        int i = s->ordered[s->nlocal + s->poll_next];
        const struct step *st = &s->steps[i];
        if (!step_ready(s, st))
            break;
        status = st->poll->start(st->state, st->poll_arg);
        if (status != MPI_SUCCESS)
            break;
        s->pstep[s->np++] = i;
        s->poll_next++;
        moved++;
    }
    while (status == MPI_SUCCESS && s->nested_next < s->nnested) {
        int i = s->ordered[s->nlocal + s->npoll + s->nested_next];
        if (!step_ready(s, &s->steps[i]))
            break;
        s->nested_next++;
        status = post_nested(s, i);
        moved++;
    }
    /* Local work, in the order it was added among what is ready; one
     * finished step can make the next ready. */
    for (int j = 0; j < s->nfree && status == MPI_SUCCESS; j++) {
        int i = s->free_steps[j];
        if (s->done[i] || !step_ready(s, &s->steps[i]))
            continue;
        if (s->steps[i].kind == CALL)
            status = s->steps[i].fn(s, s->steps[i].arg);
        if (status == MPI_SUCCESS) {
            finished(s, i);
            moved++;
        }
    }
    if (status != MPI_SUCCESS && s->status == MPI_SUCCESS)
        s->status = status;
    return moved;
}

/* Reap finished steps; how many. */
static int reap(struct coll_sched *s)
{
    int reaped = 0;
    if (s->nl > 0) {
        int out = 0, err_class = MPI_SUCCESS;
        int rc = PMPI_Testsome(s->nl, s->lreq, &out, s->indices, s->statuses);
        if (rc != MPI_SUCCESS)
            PMPI_Error_class(rc, &err_class);
        /* A step's own error, not MPI_ERR_IN_STATUS: no collective may
         * return that class. */
        for (int j = 0; err_class == MPI_ERR_IN_STATUS && j < out; j++)
            if (s->statuses[j].MPI_ERROR != MPI_SUCCESS) {
                rc = s->statuses[j].MPI_ERROR;
                break;
            }
        if (rc != MPI_SUCCESS && s->status == MPI_SUCCESS)
            s->status = rc;
        if (rc != MPI_SUCCESS && err_class != MPI_ERR_IN_STATUS) {
            /* The call itself failed: nothing tells which requests are
             * left; give them up rather than wait for them forever. */
            s->nl = 0;
            out = 0;
        }
        if (out != MPI_UNDEFINED && out > 0) {
            for (int j = 0; j < out; j++) {
                finished(s, s->lstep[s->indices[j]]);
                s->lreq[s->indices[j]] = MPI_REQUEST_NULL;
            }
            int kept = 0;
            for (int j = 0; j < s->nl; j++)
                if (s->lreq[j] != MPI_REQUEST_NULL) {
                    s->lreq[kept] = s->lreq[j];
                    s->lstep[kept++] = s->lstep[j];
                }
            s->nl = kept;
            reaped += out;
        }
    }
    int kept = 0;
    for (int j = 0; j < s->nx; j++) {
        int done;
        int rc = gc_xfer_test(&s->xreq[j], &done);
        if (rc == MPI_ERR_TRUNCATE)
            s->truncated = 1;
        else if (rc != MPI_SUCCESS && s->status == MPI_SUCCESS) {
            s->status = rc;
            s->remote_failed = 1;
        }
        if (done) {
            finished(s, s->xstep[j]);
            reaped++;
        } else {
            s->xreq[kept] = s->xreq[j];
            s->xstep[kept++] = s->xstep[j];
        }
    }
    s->nx = kept;
    kept = 0;
    for (int j = 0; j < s->np; j++) {
        const struct step *st = &s->steps[s->pstep[j]];
        int done = 0;
        int rc = st->poll->test(st->state, &done);
        if (rc != MPI_SUCCESS && s->status == MPI_SUCCESS)
            s->status = rc;
        if (done || rc != MPI_SUCCESS) {
            finished(s, s->pstep[j]);
            reaped++;
        } else {
            s->pstep[kept++] = s->pstep[j];
        }
    }
    s->np = kept;
    return reaped;
}

static void unlink_running(struct coll_sched *s)
{
    struct coll_sched **at = &running_head;
    while (*at != s)
        at = &(*at)->next_running;
    *at = s->next_running;
    s->next_running = NULL;
}

/*
 * One turn of s: post, reap, and end the run when every step finished,
 * or after a failure when nothing is in flight any more.  How many steps
 * moved.
 */
static int advance(struct coll_sched *s)
{
    int moved = 0, more;
    do {
        more = s->status == MPI_SUCCESS ? post_ready(s) : 0;
        /* A receive can finish as it is posted: look before waiting. */
        more += reap(s);
        moved += more;
    } while (more > 0 && s->left > 0);
    int idle = s->nl == 0 && s->nx == 0 && s->np == 0 && s->nchild == 0;
    if (s->left > 0 && !(idle && s->status != MPI_SUCCESS))
        return moved;
    if (s->status == MPI_SUCCESS && s->truncated)
        s->status = MPI_ERR_TRUNCATE;
    s->running = 0;
    unlink_running(s);
    if (s->done_fn != NULL)
        s->done_fn(s, s->status, s->done_arg);
    return moved;
}

int coll_sched_start(struct coll_sched *s, sched_done_fn *done, void *arg)
{
    if (s->no_mem)
        return MPI_ERR_NO_MEM;
    /* Blocking steps only run from coll_sched_run (done == NULL). */
    if (s->blocking && done != NULL)
        return MPI_ERR_INTERN;
    if (!s->prepared) {
        int status = prepare(s);
        if (status != MPI_SUCCESS)
            return status;
    }
    if (seq_wrap == 0) {
        /* Tags must stay within MPICH's bound on local_p2p. */
        int *ub, flag = 0;
        PMPI_Comm_get_attr(gc_world.site_world, MPI_TAG_UB, &ub, &flag);
        seq_wrap = flag ? (unsigned)(*ub / SCHED_TAG_KINDS) - 1 : 1023;
    }
    struct gc_comm *c = s->comm;
    if (!s->persistent)
        s->seq = (unsigned)c->coll_seq++;
    memset(s->done, 0, (size_t)(s->count > 0 ? s->count : 1));
    for (int k = 0; k < s->nstreams; k++)
        s->streams[k].next = s->streams[k].busy = 0;
    s->left = s->count;
    s->nl = s->nx = s->np = s->nchild = 0;
    s->local_next = s->poll_next = s->nested_next = 0;
    s->status = MPI_SUCCESS;
    s->truncated = s->remote_failed = 0;
    s->done_fn = done;
    s->done_arg = arg;
    s->running = 1;
    struct coll_sched **tail = &running_head;
    while (*tail != NULL)
        tail = &(*tail)->next_running;
    *tail = s;
    /* Local work first: a schedule of CALL steps only finishes here. */
    in_progress++;
    gc_progress_step_begin();
    advance(s);
    gc_progress_step_end();
    in_progress--;
    return MPI_SUCCESS;
}

int coll_sched_persist(struct coll_sched *s)
{
    struct gc_comm *c = s->comm;
    s->persistent = 1;
    s->seq = (unsigned)c->coll_seq++;
    /* local_p2p, not local: no attributes of the program's to copy. */
    return gc_ctxid_idup(c->local_p2p, MPI_INFO_NULL, &s->local,
                         &s->local_idup);
}

int coll_sched_active(const struct coll_sched *s)
{
    return s->running;
}

static int progress_all(void)
{
    if (in_progress)
        return 0;
    in_progress++;
    gc_progress_step_begin();
    int moved = 0;
    do {
        /* Children run after their parents: one that finished lets its
         * parent go on in another pass. */
        child_finished = 0;
        for (struct coll_sched *s = running_head, *next; s != NULL; s = next) {
            /* advance() may unlink s (and start children, which go
             * last); its done_fn must not touch others. */
            next = s->next_running;
            moved += advance(s);
        }
    } while (child_finished);
    gc_progress_step_end();
    in_progress--;
    return moved;
}

static int sched_pending(void)
{
    return running_head != NULL;
}

/* Collective schedules post their next steps as transfers finish. */
static void sched_progress(void)
{
    if (in_progress)
        return;
    coll_request_free_released();
    progress_all();
}

const struct gc_progress_hook coll_sched_progress_hook = {
    .name = "schedule engine",
    .after_poll = sched_progress,
    .pending = sched_pending,
};

/* Whether a running schedule waits on MPICH (which needs polling). */
static int mpich_busy(void)
{
    for (const struct coll_sched *s = running_head; s != NULL;
         s = s->next_running)
        if (s->nl > 0 || s->np > 0 || (s->local_next < s->nlocal))
            return 1;
    return 0;
}

/* Drive everything until `until(arg)` holds. */
static void wait_until(int (*until)(const void *), const void *arg)
{
    unsigned idle = 0;
    while (!until(arg)) {
        int moved = progress_all();
        if (until(arg))
            break;
        if (mpich_busy()) {
            gc_progress(0);
            /* MPICH's shared memory needs polling: let the peers run. */
            if (moved == 0)
                gc_idle(&idle);
            else
                idle = 0;
        } else {
            /* Only the relay can finish what is left: wait in poll(). */
            gc_wait_relay(10);
        }
    }
}

static int ended(const void *arg)
{
    return !((const struct coll_sched *)arg)->running;
}

static int comm_idle(const void *arg)
{
    for (const struct coll_sched *s = running_head; s != NULL;
         s = s->next_running)
        if (s->comm == arg)
            return 0;
    return 1;
}

int coll_sched_error(struct coll_sched *s, int status)
{
    if (status == MPI_SUCCESS)
        return status;
    if (status == MPI_ERR_TRUNCATE)
        return gc_error(s->comm->handle, status, s->fn,
                        "the members' message sizes differ");
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(s->comm);
    return gc_error(s->comm->handle, status, s->fn, "%s",
                    s->remote_failed ? "transfer between sites failed"
                                     : "transfer within a site failed");
}

int coll_sched_run(struct coll_sched *s)
{
    if (s->blocking)
        coll_sched_drain(s->comm);
    int status = coll_sched_start(s, NULL, NULL);
    if (status != MPI_SUCCESS)
        return coll_sched_error(s, status);
    wait_until(ended, s);
    return coll_sched_error(s, s->status);
}

void coll_sched_drain(struct gc_comm *c)
{
    wait_until(comm_idle, c);
}
