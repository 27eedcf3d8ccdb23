/*
 * Persistent point-to-point requests (MPI_Send_init, MPI_Ssend_init,
 * MPI_Rsend_init, MPI_Bsend_init, MPI_Recv_init) and the nonblocking
 * send-receive (MPI_Isendrecv, MPI_Isendrecv_replace) on grid
 * communicators (docs/design/mpi-layer.md, "Point-to-point").
 *
 * A persistent send to a member of this site is MPICH's own persistent
 * request on the communicator's local part: MPICH starts and completes
 * it.  Every other one (receives, which are always the engine's; sends to
 * another site; buffered sends, whose buffer is the layer's) is a request
 * of layer_request.c whose run is one engine operation, posted by
 * MPI_Start and polled by the progress engine until done: the status the
 * completion calls report is that operation's.  MPI_Isendrecv is a
 * one-shot request of the same kind whose run is a receive and a send.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_p2p.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/layer_request.h"

/* The result of an engine operation for its request's status. */
static void op_result(const struct op *op, struct layer_result *result)
{
    result->source = op->kind == OP_RECV
                         ? gc_comm_member_peer(op->comm, op->source)
                         : MPI_UNDEFINED;
    result->tag = op->kind == OP_RECV ? op->result_tag : MPI_UNDEFINED;
    result->bytes = (MPI_Count)op->bytes;
    result->cancelled = op->cancelled;
}

/* ---- persistent ----------------------------------------------------------
 */

struct persistent {
    enum op_kind kind;
    enum send_mode mode;
    struct gc_comm *comm;
    void *buf;
    MPI_Count count;
    MPI_Datatype type; /* the request's own reference (gc_type_hold) */
    int peer;
    int tag;
    struct op *op; /* of the active run */
};

static int persistent_start(struct layer_request *r, void *run)
{
    struct persistent *p = run;
    struct gc_comm *c = p->comm;
    if (p->peer == MPI_PROC_NULL) {
        /* MPI 4.1, 3.11: a status with source MPI_PROC_NULL, tag
         * MPI_ANY_TAG and count 0 (a send's says nothing). */
        struct layer_result empty = {MPI_PROC_NULL, MPI_ANY_TAG, 0, 0};
        layer_request_done(r, MPI_SUCCESS, p->kind == OP_RECV ? &empty : NULL);
        return MPI_SUCCESS;
    }
    if (p->mode == MODE_BUFFERED) {
        /* Complete once in the buffer (MPI 4.1, 3.9). */
        int status = gc_bsend(c->handle, c, p->buf, p->count, p->type, p->peer,
                              p->tag, "MPI_Start");
        if (status == MPI_SUCCESS)
            layer_request_done(r, MPI_SUCCESS, NULL);
        return status;
    }
    p->op = gc_op_new(p->kind, c, p->peer, p->tag, p->buf, p->count, p->type);
    if (p->op == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, "MPI_Start", NULL);
    if (p->kind == OP_RECV) {
        gc_op_post_recv(p->op);
        return MPI_SUCCESS;
    }
    p->op->sync = p->mode == MODE_SYNC;
    p->op->eager_only = p->mode == MODE_READY;
    int status = gc_op_start_remote_send(p->op, 0);
    if (status != MPI_SUCCESS) {
        gc_op_free(p->op);
        p->op = NULL;
        return gc_error(c->handle, status, "MPI_Start", NULL);
    }
    return MPI_SUCCESS;
}

static void persistent_poll(struct layer_request *r, void *run)
{
    struct persistent *p = run;
    if (p->op == NULL || !p->op->done)
        return;
    struct layer_result result;
    op_result(p->op, &result);
    int error = p->op->error;
    gc_op_free(p->op);
    p->op = NULL;
    layer_request_done(r, error, &result);
}

/* As the engine's own requests: a receive nothing has matched is
 * withdrawn, a send to another site withdrawn from the receiver's
 * unexpected queue if still there (gc_p2p_engine.c, request_cancel). */
static void persistent_cancel(void *run)
{
    struct persistent *p = run;
    if (p->op != NULL)
        p->op->cancel_asked = 1;
}

static void persistent_destroy(void *run)
{
    struct persistent *p = run;
    gc_type_release(&p->type);
    gc_comm_unref(p->comm);
    free(p);
}

static const struct layer_request_class persistent_class = {
    .start = persistent_start,
    .poll = persistent_poll,
    .cancel = persistent_cancel,
    .destroy = persistent_destroy};

static int persistent_init(struct gc_comm *c, enum op_kind kind,
                           enum send_mode mode, const void *buf,
                           MPI_Count count, MPI_Datatype type, int peer,
                           int tag, MPI_Request *request, const char *function)
{
    int status = check_rank(c, &peer, kind == OP_RECV, function);
    if (status == MPI_SUCCESS)
        status =
            check_args(c, buf, count, type, tag, kind == OP_RECV, function);
    if (status != MPI_SUCCESS)
        return status;
    if (kind == OP_SEND && mode != MODE_BUFFERED &&
        (peer == MPI_PROC_NULL || is_local_member(c, peer))) {
        int to = peer == MPI_PROC_NULL ? MPI_PROC_NULL : c->site_rank[peer];
        switch (mode) {
        case MODE_SYNC:
            return PMPI_Ssend_init_c(buf, count, type, to, tag, c->local,
                                     request);
        case MODE_READY:
            return PMPI_Rsend_init_c(buf, count, type, to, tag, c->local,
                                     request);
        default:
            return PMPI_Send_init_c(buf, count, type, to, tag, c->local,
                                    request);
        }
    }
    struct persistent *p = calloc(1, sizeof *p);
    if (p == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    status = gc_type_hold(type, &p->type);
    if (status != MPI_SUCCESS) {
        free(p);
        return gc_error(c->handle, status, function, NULL);
    }
    p->kind = kind;
    p->mode = mode;
    p->comm = c;
    p->buf = (void *)buf;
    p->count = count;
    p->peer = peer;
    p->tag = tag;
    gc_comm_retain(c);
    status = layer_request_create(&persistent_class, p, c->handle, 1, request);
    if (status != MPI_SUCCESS)
        persistent_destroy(p);
    return status;
}

/* MPI_Bsend_init on one of MPICH's communicators: the buffer is the
 * layer's (gc_bsend.c), so is the request. */
static int bsend_init_local(const void *buf, MPI_Count count, MPI_Datatype type,
                            int dst, int tag, MPI_Comm comm,
                            MPI_Request *request);

#define PERSISTENT_SEND(NAME, MODE, COUNT_T)                                   \
    int MPI_##NAME(const void *buf, COUNT_T count, MPI_Datatype type, int dst, \
                   int tag, MPI_Comm comm, MPI_Request *request)               \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;       \
        if (c != NULL)                                                         \
            return persistent_init(c, OP_SEND, MODE, buf, count, type, dst,    \
                                   tag, request, "MPI_" #NAME);                \
        if (MODE == MODE_BUFFERED && gc_world.active)                          \
            return bsend_init_local(buf, count, type, dst, tag, comm,          \
                                    request);                                  \
        return PMPI_##NAME(buf, count, type, dst, tag, comm, request);         \
    }

PERSISTENT_SEND(Send_init, MODE_STANDARD, int)
PERSISTENT_SEND(Ssend_init, MODE_SYNC, int)
PERSISTENT_SEND(Rsend_init, MODE_READY, int)
PERSISTENT_SEND(Bsend_init, MODE_BUFFERED, int)
PERSISTENT_SEND(Send_init_c, MODE_STANDARD, MPI_Count)
PERSISTENT_SEND(Ssend_init_c, MODE_SYNC, MPI_Count)
PERSISTENT_SEND(Rsend_init_c, MODE_READY, MPI_Count)
PERSISTENT_SEND(Bsend_init_c, MODE_BUFFERED, MPI_Count)

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int src, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Recv_init(buf, count, type, src, tag, comm, request);
    return persistent_init(c, OP_RECV, MODE_STANDARD, buf, count, type, src,
                           tag, request, "MPI_Recv_init");
}

int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype type, int src,
                    int tag, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Recv_init_c(buf, count, type, src, tag, comm, request);
    return persistent_init(c, OP_RECV, MODE_STANDARD, buf, count, type, src,
                           tag, request, "MPI_Recv_init_c");
}

/* ---- MPI_Bsend_init on MPICH's communicators ---------------------------- */

struct local_bsend {
    const void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int dst;
    int tag;
    MPI_Comm comm;
};

static int local_bsend_start(struct layer_request *r, void *run)
{
    struct local_bsend *b = run;
    int status = gc_bsend(b->comm, NULL, b->buf, b->count, b->type, b->dst,
                          b->tag, "MPI_Start");
    if (status == MPI_SUCCESS)
        layer_request_done(r, MPI_SUCCESS, NULL);
    return status;
}

static void local_bsend_destroy(void *run)
{
    struct local_bsend *b = run;
    gc_type_release(&b->type);
    free(b);
}

static const struct layer_request_class local_bsend_class = {
    .start = local_bsend_start, .destroy = local_bsend_destroy};

static int bsend_init_local(const void *buf, MPI_Count count, MPI_Datatype type,
                            int dst, int tag, MPI_Comm comm,
                            MPI_Request *request)
{
    struct local_bsend *b = calloc(1, sizeof *b);
    if (b == NULL)
        return gc_error(comm, MPI_ERR_NO_MEM, "MPI_Bsend_init", NULL);
    int status = gc_type_hold(type, &b->type);
    if (status != MPI_SUCCESS) {
        free(b);
        return gc_error(comm, status, "MPI_Bsend_init", NULL);
    }
    b->buf = buf;
    b->count = count;
    b->dst = dst;
    b->tag = tag;
    b->comm = comm;
    status = layer_request_create(&local_bsend_class, b, comm, 1, request);
    if (status != MPI_SUCCESS)
        local_bsend_destroy(b);
    return status;
}

/* ---- MPI_Isendrecv ---------------------------------------------------------
 */

struct sendrecv {
    struct gc_comm *comm;
    struct op *recv;   /* NULL for MPI_PROC_NULL */
    struct op *send;   /* to another site */
    MPI_Request local; /* to this site, through MPICH */
    void *packed;      /* MPI_Isendrecv_replace: the outgoing data */
};

static void sendrecv_poll(struct layer_request *r, void *run)
{
    struct sendrecv *x = run;
    int sent = x->send != NULL ? x->send->done : 1;
    if (x->local != MPI_REQUEST_NULL)
        PMPI_Test(&x->local, &sent, MPI_STATUS_IGNORE);
    if (!sent || (x->recv != NULL && !x->recv->done))
        return;
    struct layer_result result = {MPI_PROC_NULL, MPI_ANY_TAG, 0, 0};
    int error = x->send != NULL ? x->send->error : MPI_SUCCESS;
    if (x->recv != NULL) {
        op_result(x->recv, &result);
        if (x->recv->error != MPI_SUCCESS)
            error = x->recv->error;
    }
    layer_request_done(r, error, &result);
}

static void sendrecv_destroy(void *run)
{
    struct sendrecv *x = run;
    if (x->recv != NULL)
        gc_op_free(x->recv);
    if (x->send != NULL)
        gc_op_free(x->send);
    free(x->packed);
    gc_comm_unref(x->comm);
    free(x);
}

/* Everything is posted at creation (sendrecv_post): the run only ends. */
static int sendrecv_start(struct layer_request *r, void *run)
{
    (void)r;
    (void)run;
    return MPI_SUCCESS;
}

static const struct layer_request_class sendrecv_class = {
    .start = sendrecv_start,
    .poll = sendrecv_poll,
    .destroy = sendrecv_destroy};

/*
 * Post the receive, then the send (as MPI_Sendrecv does); with `replace`
 * the outgoing data is packed first, so the receive may land in the same
 * buffer at any time after.
 */
static int sendrecv_post(struct sendrecv *x, const void *sendbuf,
                         MPI_Count sendcount, MPI_Datatype sendtype, int dst,
                         int sendtag, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int src, int recvtag,
                         int replace, const char *function)
{
    struct gc_comm *c = x->comm;
    int status = check_rank(c, &dst, 0, function);
    if (status == MPI_SUCCESS)
        status = check_rank(c, &src, 1, function);
    if (status == MPI_SUCCESS)
        status =
            check_args(c, sendbuf, sendcount, sendtype, sendtag, 0, function);
    if (status == MPI_SUCCESS)
        status =
            check_args(c, recvbuf, recvcount, recvtype, recvtag, 1, function);
    if (status != MPI_SUCCESS)
        return status;
    if (replace && dst != MPI_PROC_NULL) {
        MPI_Count bytes, position = 0;
        status = PMPI_Pack_size_c(sendcount, sendtype, c->local, &bytes);
        if (status != MPI_SUCCESS)
            goto cleanup;
        x->packed = malloc(bytes > 0 ? (size_t)bytes : 1);
        if (x->packed == NULL) {
            status = MPI_ERR_NO_MEM;
            goto cleanup;
        }
        status = gc_pack(sendbuf, sendcount, sendtype, x->packed, bytes,
                         &position, c->local);
        if (status != MPI_SUCCESS)
            goto cleanup;
        sendcount = position;
        sendbuf = x->packed;
        sendtype = MPI_PACKED;
    }
    if (src != MPI_PROC_NULL) {
        x->recv =
            gc_op_new(OP_RECV, c, src, recvtag, recvbuf, recvcount, recvtype);
        if (x->recv == NULL) {
            status = MPI_ERR_NO_MEM;
            goto cleanup;
        }
        gc_op_post_recv(x->recv);
    }
    if (dst == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (is_local_member(c, dst)) {
        status = PMPI_Isend_c(sendbuf, sendcount, sendtype, c->site_rank[dst],
                              sendtag, c->local, &x->local);
        goto cleanup;
    }
    x->send = gc_op_new(OP_SEND, c, dst, sendtag, (void *)sendbuf, sendcount,
                        sendtype);
    status =
        x->send != NULL ? gc_op_start_remote_send(x->send, 0) : MPI_ERR_NO_MEM;
cleanup:
    if (status != MPI_SUCCESS && x->recv != NULL) {
        /* Posted already: withdrawn by the engine's next turn, freed by
         * the request's end (never begun: the caller destroys it). */
        x->recv->cancel_asked = 1;
        unsigned idle = 0;
        while (!x->recv->done) {
            gc_progress(0);
            gc_idle(&idle);
        }
    }
    return status == MPI_SUCCESS ? status
                                 : gc_error(c->handle, status, function, NULL);
}

static int isendrecv(struct gc_comm *c, const void *sendbuf,
                     MPI_Count sendcount, MPI_Datatype sendtype, int dst,
                     int sendtag, void *recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int src, int recvtag, int replace,
                     MPI_Request *request, const char *function)
{
    struct sendrecv *x = calloc(1, sizeof *x);
    if (x == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    x->comm = c;
    x->local = MPI_REQUEST_NULL;
    gc_comm_retain(c);
    int status =
        sendrecv_post(x, sendbuf, sendcount, sendtype, dst, sendtag, recvbuf,
                      recvcount, recvtype, src, recvtag, replace, function);
    if (status == MPI_SUCCESS)
        status =
            layer_request_create(&sendrecv_class, x, c->handle, 0, request);
    if (status != MPI_SUCCESS)
        sendrecv_destroy(x);
    return status;
}

int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  int dst, int sendtag, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, int src, int recvtag, MPI_Comm comm,
                  MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Isendrecv(sendbuf, sendcount, sendtype, dst, sendtag,
                              recvbuf, recvcount, recvtype, src, recvtag, comm,
                              request);
    return isendrecv(c, sendbuf, sendcount, sendtype, dst, sendtag, recvbuf,
                     recvcount, recvtype, src, recvtag, 0, request,
                     "MPI_Isendrecv");
}

int MPI_Isendrecv_c(const void *sendbuf, MPI_Count sendcount,
                    MPI_Datatype sendtype, int dst, int sendtag, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, int src,
                    int recvtag, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Isendrecv_c(sendbuf, sendcount, sendtype, dst, sendtag,
                                recvbuf, recvcount, recvtype, src, recvtag,
                                comm, request);
    return isendrecv(c, sendbuf, sendcount, sendtype, dst, sendtag, recvbuf,
                     recvcount, recvtype, src, recvtag, 0, request,
                     "MPI_Isendrecv_c");
}

int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype type, int dst,
                          int sendtag, int src, int recvtag, MPI_Comm comm,
                          MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Isendrecv_replace(buf, count, type, dst, sendtag, src,
                                      recvtag, comm, request);
    return isendrecv(c, buf, count, type, dst, sendtag, buf, count, type, src,
                     recvtag, 1, request, "MPI_Isendrecv_replace");
}

int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype type,
                            int dst, int sendtag, int src, int recvtag,
                            MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    if (c == NULL)
        return PMPI_Isendrecv_replace_c(buf, count, type, dst, sendtag, src,
                                        recvtag, comm, request);
    return isendrecv(c, buf, count, type, dst, sendtag, buf, count, type, src,
                     recvtag, 1, request, "MPI_Isendrecv_replace_c");
}
