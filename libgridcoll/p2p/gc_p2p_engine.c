/*
 * The point-to-point engine: matching and progress for every send and
 * receive the library carries out on a grid communicator, the MPI
 * point-to-point calls' (gc_p2p.c) and the collectives' internal transfers
 * (gc_xfer.c) alike (docs/design/mpi-layer.md, "Point-to-point" and
 * "Progress").
 *
 * Receives are always the engine's: one FIFO of posted receives per
 * process, matched against
 *   - remote messages when their first chunk arrives (the relay client's
 *     on_alloc callback), or from the unexpected queue when posted later;
 *   - local messages with PMPI_Improbe + PMPI_Imrecv, tried in posting
 *     order, so an MPI_ANY_SOURCE receive posted first gets the message
 *     before a later receive naming its source, as MPI's matching rules
 *     require, whichever site the message comes from.
 * The application sees a receive (and a remote send) as an MPICH extended
 * generalized request, so MPICH's own Wait/Test functions handle arrays
 * that mix them with ordinary requests; status fields are the grid
 * communicator's ranks.
 *
 * Ordering: the relay delivers the messages of one (source, destination)
 * pair in send order and matching happens in arrival order, so MPI's
 * non-overtaking rule holds per communicator.  MPI_Ssend to another site
 * completes when the receiver's matching sends back an acknowledgement.
 * MPI_Cancel of a send to another site asks the receiver's engine, on the
 * same acknowledgement context, to withdraw the message from its
 * unexpected queue; the answer says whether it did.
 *
 * Large messages, and small ones beyond the pair's eager window, go by
 * rendezvous (gc_p2p_rndv.c) unless the receiver has posted receives for
 * them: an announcement matched here like any message, its data sent once
 * a receive has it, so that what a rank that does not receive holds stays
 * bounded.
 */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/gc_request.h"
#include "p2p/layer_request.h"
#include "relay_client/gc_relay_client.h"

/*
 * Messages on the acknowledgement context: empty, a synchronous send's
 * acknowledgement; one byte (enum control), a cancel request for a send
 * to another site or its answer, or a rendezvous' HOLD or CTS.  The tag is
 * the message's msg_seq (31 bits, per pair).  A rendezvous' RTS, data and
 * CREDIT are there too (gc_p2p_rndv.c).
 */

static struct {
    struct op *recvs; /* posted, unmatched or matched-but-incomplete */
    struct op **recvs_tail;
    struct op *sends; /* remote sends not yet complete */
    struct op *freed; /* released by MPICH's free_fn, freed by the engine */
    struct rx *arriving;
    struct rx *unexpected;
    struct rx **unexpected_tail;
    MPIX_Grequest_class request_class;
    int have_request_class;
    MPI_Comm self; /* private MPI_COMM_SELF for unpacking partial elements */
} engine = {.recvs_tail = &engine.recvs,
            .unexpected_tail = &engine.unexpected,
            .self = MPI_COMM_NULL};

/* ---- small helpers ------------------------------------------------------ */

static uint32_t ctx_base(uint32_t context)
{
    return gc_ctx_base(context);
}

/* Named types without gaps are sent in place; everything else packed. */
static int type_is_contiguous(MPI_Datatype type)
{
    int size;
    MPI_Aint lb, extent, true_lb, true_extent;
    if (!gc_type_is_named(type))
        return 0;
    PMPI_Type_size(type, &size);
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    return lb == 0 && true_lb == 0 && extent == size && true_extent == size;
}

static void list_remove_op(struct op **head, struct op *op)
{
    for (struct op **p = head; *p != NULL; p = &(*p)->next)
        if (*p == op) {
            *p = op->next;
            if (head == &engine.recvs && *p == NULL)
                engine.recvs_tail = p;
            return;
        }
}

void gc_op_free(struct op *op)
{
    if (op->kind == OP_RECV)
        gc_type_release(&op->type);
    gc_comm_unref(op->comm);
    free(op->owned);
    free(op);
}

/* Operations MPICH released inside a callback (request_free). */
static void free_released_ops(void)
{
    while (engine.freed != NULL) {
        struct op *op = engine.freed;
        engine.freed = op->next;
        gc_op_free(op);
    }
}

/* Unlink, record completion and tell MPICH.  An operation whose request
 * the application released with MPI_Request_free (MPICH has called
 * free_fn already, request_free) is freed here, after MPICH drops the
 * request. */
static void complete_op(struct op *op)
{
    if (op->kind == OP_RECV)
        gc_rndv_unposted(op);
    list_remove_op(op->kind == OP_RECV ? &engine.recvs : &engine.sends, op);
    op->done = 1;
    if (op->request != MPI_REQUEST_NULL)
        PMPI_Grequest_complete(op->request);
    if (op->released)
        gc_op_free(op);
}

/* ---- receiving from other sites ---------------------------------------- */

static int envelope_matches(const struct op *op,
                            const struct gc_rc_msg_info *info)
{
    uint32_t cls = info->context_id % GC_CTX_STRIDE;
    if (ctx_base(info->context_id) != op->comm->context)
        return 0;
    if (op->coll ? cls != (uint32_t)op->coll
                 : cls != GC_CTX_P2P && cls != GC_CTX_SYNC)
        return 0;
    if (op->peer == MPI_ANY_SOURCE) {
        if (info->src_rank >= (uint32_t)gc_world.size ||
            op->comm->comm_rank_of_grid[info->src_rank] < 0)
            return 0;
    } else if ((uint32_t)op->comm->grid_rank[op->peer] != info->src_rank) {
        return 0;
    }
    /* Negative tags are partitioned messages' (gc_partitioned.c), which
     * only their partitioned receive matches. */
    if (op->tag == MPI_ANY_TAG)
        return op->coll || info->tag >= 0;
    return op->tag == info->tag;
}

/* Copy (or unpack) a library-buffered message into the receive buffer. */
static void copy_out(struct op *op, const void *data)
{
    if (op->bytes == 0)
        return;
    if (op->contiguous) {
        memcpy(op->buf, data, op->bytes);
        return;
    }
    MPI_Count size, position = 0;
    PMPI_Type_size_x(op->type, &size);
    if (op->bytes % (size_t)size == 0) {
        gc_unpack(data, (MPI_Count)op->bytes, &position, op->buf,
                  (MPI_Count)(op->bytes / (size_t)size), op->type,
                  op->comm->local);
        return;
    }
    /* A message ending inside an element (a different type signature):
     * PMPI_Unpack takes whole elements only, but MPICH's receive path
     * stores the basic elements that did arrive, as MPI_Get_elements
     * reports them.  MPI_PACKED matches any receive type. */
    if (engine.self == MPI_COMM_NULL)
        PMPI_Comm_dup(gc_world.site_self, &engine.self);
    PMPI_Sendrecv_c(data, (MPI_Count)op->bytes, MPI_PACKED, 0, 0, op->buf,
                    op->count, op->type, 0, 0, engine.self, MPI_STATUS_IGNORE);
}

void gc_engine_deliver(struct op *op, struct rx *rx)
{
    if (rx->data != NULL)
        copy_out(op, rx->data);
    free(rx->data);
    free(rx);
    op->rx = NULL;
    complete_op(op);
}

static void match_remote(struct op *op, struct rx *rx)
{
    const struct gc_rc_msg_info *info = &rx->info;
    op->matched = 1;
    op->rx = rx;
    rx->op = op;
    op->source = op->comm->comm_rank_of_grid[info->src_rank];
    op->result_tag = info->tag;
    op->bytes = info->msg_len < op->capacity ? info->msg_len : op->capacity;
    if (info->msg_len > op->capacity ||
        (op->exact_length && info->msg_len != op->capacity))
        op->error = MPI_ERR_TRUNCATE;
    if (rx->rndv) {
        /* The CTS is the synchronous send's acknowledgement too. */
        gc_rndv_matched(rx);
        return;
    }
    gc_rndv_unposted(op);
    gc_rndv_taken(rx);
    if (info->context_id % GC_CTX_STRIDE == GC_CTX_SYNC) {
        /* The sender's MPI_Ssend may complete now.  msg_seq identifies the
         * message per pair; tags are 31 bits, so is the acknowledgement. */
        struct gc_rc_send *ack;
        if (gc_rc_isend(gc_world.rc, info->src_rank,
                        ctx_base(info->context_id) + GC_CTX_ACK,
                        (int32_t)(info->msg_seq & INT32_MAX), NULL, 0,
                        &ack) != 0)
            gc_fatal_relay("acknowledging a synchronous send");
        gc_rc_send_free(ack);
    }
}

struct op *gc_engine_arrival(struct rx *rx)
{
    for (struct op *op = engine.recvs; op != NULL; op = op->next)
        if (!op->matched && can_match_remote(op) &&
            envelope_matches(op, &rx->info)) {
            match_remote(op, rx);
            return op;
        }
    *engine.unexpected_tail = rx;
    engine.unexpected_tail = &rx->next_unexpected;
    return NULL;
}

static void *on_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    (void)arg;
    if (info->context_id % GC_CTX_STRIDE == GC_CTX_ACK)
        return info->tag < 0 ? gc_rndv_data_alloc(info) : NULL;
    struct rx *rx = calloc(1, sizeof *rx);
    if (rx == NULL)
        gc_fatal_relay("out of memory for an incoming message");
    rx->info = *info;
    rx->next_arriving = engine.arriving;
    engine.arriving = rx;
    struct op *op = gc_engine_arrival(rx);
    if (op != NULL && op->contiguous && info->msg_len <= op->capacity &&
        info->msg_len > 0)
        return op->buf;
    return NULL;
}

static void ack_arrived(const struct gc_rc_msg_info *info)
{
    for (struct op *op = engine.sends; op != NULL; op = op->next)
        if (op->sync && !op->acked &&
            (uint32_t)op->comm->grid_rank[op->peer] == info->src_rank &&
            op->comm->context == ctx_base(info->context_id) &&
            (int32_t)(gc_rc_send_seq(op->wire) & INT32_MAX) == info->tag) {
            op->acked = 1;
            return;
        }
}

void gc_engine_send_ack_context(uint32_t to, uint32_t context, int32_t tag,
                                const void *msg, size_t len)
{
    struct gc_rc_send *wire;
    if (gc_rc_isend(gc_world.rc, to, ctx_base(context) + GC_CTX_ACK, tag, msg,
                    len, &wire) != 0)
        gc_fatal_relay("sending a control message");
    gc_rc_send_free(wire); /* msg is copied (GC_RC_COPIED) */
}

void gc_engine_send_control(uint32_t to, uint32_t context, int32_t tag,
                            enum control control)
{
    unsigned char byte = (unsigned char)control;
    gc_engine_send_ack_context(to, context, tag, &byte, 1);
}

struct op *gc_engine_send_named(const struct gc_rc_msg_info *info)
{
    for (struct op *op = engine.sends; op != NULL; op = op->next)
        if ((uint32_t)op->comm->grid_rank[op->peer] == info->src_rank &&
            op->comm->context == ctx_base(info->context_id) &&
            (int32_t)(gc_rc_send_seq(op->wire) & INT32_MAX) == info->tag)
            return op;
    return NULL;
}

/*
 * The sender of a message to this process cancels it: withdrawn while no
 * receive has it (still unexpected, MPI_Mprobe has not taken it), which
 * the answer says.  The relay keeps the pair's order, so the message was
 * announced before its sender's request.
 */
static void cancel_asked_by_sender(const struct gc_rc_msg_info *ask)
{
    enum control answer = CANCEL_REFUSED;
    for (struct rx **p = &engine.unexpected; *p != NULL;
         p = &(*p)->next_unexpected) {
        struct rx *rx = *p;
        if (rx->info.src_rank != ask->src_rank ||
            (int32_t)(rx->info.msg_seq & INT32_MAX) != ask->tag ||
            ctx_base(rx->info.context_id) != ctx_base(ask->context_id))
            continue;
        *p = rx->next_unexpected;
        if (engine.unexpected_tail == &rx->next_unexpected)
            engine.unexpected_tail = p;
        gc_rndv_taken(rx);
        if (rx->arrived || rx->rndv)
            gc_rx_free(rx); /* an announced one may wait for its data */
        else
            rx->withdrawn = 1; /* on_complete frees it */
        answer = CANCEL_DONE;
        break;
    }
    gc_engine_send_control(ask->src_rank, ask->context_id, ask->tag, answer);
}

static void cancel_answered(const struct gc_rc_msg_info *info, int withdrawn)
{
    for (struct op *op = engine.sends; op != NULL; op = op->next)
        if (op->cancel_sent && !op->cancel_answered &&
            (uint32_t)op->comm->grid_rank[op->peer] == info->src_rank &&
            op->comm->context == ctx_base(info->context_id) &&
            (int32_t)(gc_rc_send_seq(op->wire) & INT32_MAX) == info->tag) {
            op->cancel_answered = 1;
            op->cancelled = withdrawn;
            return;
        }
}

static void on_complete(void *arg, const struct gc_rc_msg_info *info, void *buf,
                        int library_allocated)
{
    (void)arg;
    if (info->context_id % GC_CTX_STRIDE == GC_CTX_ACK) {
        if (info->tag < 0) {
            gc_rndv_data_complete(info, buf, library_allocated);
            return;
        }
        int control = info->msg_len == 1 ? *(unsigned char *)buf : -1;
        int rndv = gc_rndv_control(info, buf);
        if (library_allocated)
            free(buf);
        if (rndv)
            return;
        if (control == CANCEL_ASK)
            cancel_asked_by_sender(info);
        else if (control >= 0)
            cancel_answered(info, control == CANCEL_DONE);
        else
            ack_arrived(info);
        return;
    }
    struct rx **p = &engine.arriving;
    while (*p != NULL && ((*p)->info.src_rank != info->src_rank ||
                          (*p)->info.msg_seq != info->msg_seq))
        p = &(*p)->next_arriving;
    struct rx *rx = *p;
    if (rx == NULL) /* the client calls on_alloc first, always */
        gc_fatal_relay("completion of a message never announced");
    *p = rx->next_arriving;
    gc_rx_arrived(rx, buf, library_allocated);
}

void gc_rx_arrived(struct rx *rx, void *buf, int library_allocated)
{
    rx->arrived = 1;
    rx->data = library_allocated ? buf : NULL;
    if (rx->withdrawn)
        gc_rx_free(rx);
    else if (rx->op != NULL)
        gc_engine_deliver(rx->op, rx);
    /* else unexpected (or probed) with its data */
}

struct rx *gc_engine_find_unexpected(const struct op *probe, int take)
{
    for (struct rx **p = &engine.unexpected; *p != NULL;
         p = &(*p)->next_unexpected) {
        struct rx *rx = *p;
        if (!envelope_matches(probe, &rx->info))
            continue;
        if (take) {
            *p = rx->next_unexpected;
            if (engine.unexpected_tail == &rx->next_unexpected)
                engine.unexpected_tail = p;
        }
        return rx;
    }
    return NULL;
}

const struct gc_rc_msg_info *gc_rx_info(const struct rx *rx)
{
    return &rx->info;
}

void gc_rx_free(struct rx *rx)
{
    if (rx == NULL || (rx->rndv && !rx->arrived && gc_rndv_forget(rx)))
        return;
    free(rx->data);
    free(rx);
}

/* A receive bound to an already announced remote message. */
static void bind_remote(struct op *op, struct rx *rx)
{
    match_remote(op, rx);
    if (rx->arrived)
        gc_engine_deliver(op, rx);
}

/* ---- the progress engine ------------------------------------------------ */

/*
 * A receive naming a source on this site is posted to MPICH at once,
 * unless an earlier unmatched receive of its communicator could take the
 * same message (a wildcard, or one of the same source held back itself):
 * MPI gives the message to the earlier receive, so the later one looks
 * for its messages with a probe until then (take_probed).
 */
static int held_by_earlier(const struct op *op)
{
    for (const struct op *w = engine.recvs; w != NULL && w != op; w = w->next)
        if (!w->matched && !w->coll && w->comm == op->comm &&
            (w->peer == MPI_ANY_SOURCE || w->peer == op->peer) &&
            (w->tag == MPI_ANY_TAG || op->tag == MPI_ANY_TAG ||
             w->tag == op->tag))
            return 1;
    return 0;
}

/* The MPICH receive behind `op` completed with `rc` and `st`. */
static void finish_local(struct op *op, int rc, MPI_Status *st)
{
    int cancelled = 0;
    MPI_Count count = 0;
    PMPI_Test_cancelled(st, &cancelled);
    PMPI_Get_count_c(st, MPI_BYTE, &count);
    op->cancelled = cancelled;
    if (!cancelled) {
        op->source = op->comm->local_to_comm[st->MPI_SOURCE];
        op->result_tag = st->MPI_TAG;
        op->bytes = (size_t)count;
        op->error = rc; /* single-request Test leaves st->MPI_ERROR unset */
    }
    complete_op(op);
}

static int post_local(struct op *op)
{
    op->matched = 1;
    return PMPI_Irecv_c(op->buf, op->count, op->type,
                        op->comm->site_rank[op->peer], op->tag, op->comm->local,
                        &op->local);
}

/*
 * The receive a message from this site (`st`: its site source and tag),
 * found by `op`'s probe, belongs to: the earliest unmatched receive of
 * op's communicator that takes it.  An earlier one probed in this pass
 * too, but the message may have arrived since.
 */
static struct op *first_taker(struct op *op, const MPI_Status *st)
{
    const struct gc_comm *c = op->comm;
    for (struct op *w = engine.recvs; w != op; w = w->next)
        if (!w->matched && !w->coll && w->comm == c &&
            (w->tag == MPI_ANY_TAG || w->tag == st->MPI_TAG) &&
            (w->peer == MPI_ANY_SOURCE ||
             (w->peer >= 0 && is_local_member(c, w->peer) &&
              c->site_rank[w->peer] == st->MPI_SOURCE)))
            return w;
    return op;
}

/*
 * A wildcard or held receive: probe for a message from this site it
 * takes, and hand what is found to the receive it belongs to.  1 when
 * that is op.
 */
static int take_probed(struct op *op)
{
    struct gc_comm *c = op->comm;
    int found = 0;
    MPI_Message message;
    MPI_Status st;
    PMPI_Improbe(op->peer == MPI_ANY_SOURCE ? MPI_ANY_SOURCE
                                            : c->site_rank[op->peer],
                 op->tag, c->local, &found, &message, &st);
    if (!found)
        return 0;
    struct op *taker = first_taker(op, &st);
    taker->matched = 1;
    PMPI_Imrecv_c(taker->buf, taker->count, taker->type, &message,
                  &taker->local);
    return taker == op;
}

/*
 * Local half of matching, in posting order.  Wildcard and held receives
 * look for a message from this site with PMPI_Improbe; receives for a
 * named source use PMPI_Irecv as soon as nothing earlier holds them,
 * which keeps MPICH's ordering (MPICH 4.0 over UCX lets a small message
 * overtake a large one of the same source in Improbe, so a probing
 * receive can in rare cases take them in that order).
 */
static void progress_local_receives(void)
{
    struct op *next;
    for (struct op *op = engine.recvs; op != NULL; op = next) {
        next = op->next;
        struct gc_comm *c = op->comm;
        if (!op->matched && !op->coll &&
            (op->peer == MPI_ANY_SOURCE || is_local_member(c, op->peer))) {
            int mine = op->peer != MPI_ANY_SOURCE && !held_by_earlier(op)
                           ? post_local(op) == MPI_SUCCESS
                           : take_probed(op);
            if (!mine)
                continue; /* a probing receive tries again next pass */
        }
        if (op->local == MPI_REQUEST_NULL)
            continue;
        int done = 0;
        MPI_Status st;
        int rc = PMPI_Test(&op->local, &done, &st);
        if (done)
            finish_local(op, rc, &st);
    }
}

/* MPI_Cancel (request_cancel): a receive nothing has matched is
 * withdrawn; one handed to MPICH is cancelled there, and MPICH decides;
 * a send asks its receiver's engine (cancel_asked_by_sender). */
static void cancel_asked_ops(void)
{
    for (struct op *op = engine.sends; op != NULL; op = op->next)
        if (op->cancel_asked && !op->cancel_sent) {
            op->cancel_sent = 1;
            gc_engine_send_control(
                (uint32_t)op->comm->grid_rank[op->peer], op->comm->context,
                (int32_t)(gc_rc_send_seq(op->wire) & INT32_MAX), CANCEL_ASK);
        }
    struct op *next;
    for (struct op *op = engine.recvs; op != NULL; op = next) {
        next = op->next;
        if (!op->cancel_asked)
            continue;
        op->cancel_asked = 0;
        if (!op->matched) {
            op->cancelled = 1;
            complete_op(op);
        } else if (op->local != MPI_REQUEST_NULL) {
            MPI_Status st;
            PMPI_Cancel(&op->local);
            int rc = PMPI_Wait(&op->local, &st);
            finish_local(op, rc, &st);
        }
    }
}

/* Completes the sends that are on the wire (and acknowledged, when
 * synchronous); returns how many. */
static int progress_sends(void)
{
    int completed = 0;
    struct op *next;
    for (struct op *op = engine.sends; op != NULL; op = next) {
        next = op->next;
        /* A send whose cancel is asked waits for the answer; withdrawn,
         * a synchronous one is never acknowledged. */
        int answered = !op->cancel_sent || op->cancel_answered;
        if (op->rndv ? gc_rndv_send_done(op)
                     : gc_rc_send_done(op->wire) && answered &&
                           (!op->sync || op->acked || op->cancelled)) {
            gc_rc_send_free(op->wire);
            gc_rc_send_free(op->bulk);
            op->wire = NULL;
            op->bulk = NULL;
            complete_op(op);
            completed++;
        }
    }
    return completed;
}

/* Before the relay session is polled: a send the relay client wrote at
 * once (gc_rc_isend) is done now; waiting in poll() first would hold its
 * caller until something else arrives or the timeout ends (a whole
 * timeout when the peer has already answered, as in a barrier). */
static int before_poll(void)
{
    free_released_ops();
    cancel_asked_ops();
    return progress_sends();
}

static void after_poll(void)
{
    progress_local_receives();
    progress_sends();
}

static int pending(void)
{
    return engine.recvs != NULL || engine.sends != NULL ||
           engine.arriving != NULL || engine.freed != NULL;
}

const struct gc_progress_hook gc_p2p_progress_hook = {
    .name = "point-to-point engine",
    .before_poll = before_poll,
    .after_poll = after_poll,
    .pending = pending,
};

/* ---- generalized request callbacks ------------------------------------- */

static int request_query(void *extra, MPI_Status *status)
{
    struct op *op = extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)op->bytes);
    PMPI_Status_set_cancelled(status, op->cancelled);
    status->MPI_SOURCE = op->kind == OP_RECV
                             ? gc_comm_member_peer(op->comm, op->source)
                             : MPI_UNDEFINED;
    status->MPI_TAG = op->kind == OP_RECV ? op->result_tag : MPI_UNDEFINED;
    /* Returned, the code would reach the application as MPI_ERR_OTHER
     * ("user request query function returned ..."), and MPICH does not
     * copy MPI_ERROR out of a request's status: the completion calls
     * (gc_request.c) raise it with its own class instead. */
    if (op->error != MPI_SUCCESS)
        gc_request_failed(op->request, op->error, op->comm->handle);
    return MPI_SUCCESS;
}

/*
 * MPICH calls this when the request is freed: after its completion, or
 * at once on MPI_Request_free, when the operation may still be linked in
 * the engine and data may still land in its buffer (complete_op frees it
 * then).  MPICH holds its global lock around free_fn when the program
 * runs with MPIR_CVAR_ASYNC_PROGRESS, so MPI calls (releasing the
 * datatype, the communicator) wait for the engine's next turn.
 */
static int request_free(void *extra)
{
    struct op *op = extra;
    if (op->done) {
        op->next = engine.freed;
        engine.freed = op;
    } else {
        op->released = 1;
    }
    return MPI_SUCCESS;
}

/*
 * MPICH calls cancel_fn inside PMPI_Cancel, holding its global lock at
 * MPI_THREAD_MULTIPLE (GRIDCOLL_ASYNC_PROGRESS), where a nested MPI call
 * fails an assertion: the engine's next turn withdraws the receive or
 * asks the send's receiver (cancel_asked_ops), before the completion call
 * that follows sees it.
 */
static int request_cancel(void *extra, int complete)
{
    struct op *op = extra;
    if (!complete)
        op->cancel_asked = 1;
    return MPI_SUCCESS;
}

static int request_wait(int count, void **extras, double timeout,
                        MPI_Status *status)
{
    (void)timeout;
    (void)status;
    unsigned idle = 0;
    for (int i = 0; i < count; i++)
        while (!((struct op *)extras[i])->done) {
            gc_progress_from_mpich();
            gc_nap(&idle);
        }
    return MPI_SUCCESS;
}

void gc_op_discard(struct op *op)
{
    MPI_Request request = op->request;
    if (request == MPI_REQUEST_NULL) {
        gc_op_free(op);
        return;
    }
    op->done = 1;
    PMPI_Grequest_complete(request);
    PMPI_Request_free(&request); /* MPICH calls request_free */
}

int gc_op_start_request(struct op *op)
{
    if (!engine.have_request_class) {
        int status = MPIX_Grequest_class_create(
            request_query, request_free, request_cancel, gc_grequest_poll,
            request_wait, &engine.request_class);
        if (status != MPI_SUCCESS)
            return status;
        engine.have_request_class = 1;
    }
    return MPIX_Grequest_class_allocate(engine.request_class, op, &op->request);
}

/* ---- operations ---------------------------------------------------------- */

struct op *gc_op_new(enum op_kind kind, struct gc_comm *c, int peer, int tag,
                     void *buf, MPI_Count count, MPI_Datatype type)
{
    struct op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return NULL;
    op->kind = kind;
    op->request = MPI_REQUEST_NULL;
    op->local = MPI_REQUEST_NULL;
    op->comm = c;
    op->peer = peer;
    op->tag = tag;
    op->buf = buf;
    op->count = count;
    op->type = type;
    op->contiguous = type_is_contiguous(type);
    /* A send is packed (or handed to MPICH) before its call returns; a
     * receive uses its type until it completes. */
    if (gc_packed_size(count, type, &op->capacity) != MPI_SUCCESS ||
        (kind == OP_RECV && gc_type_hold(type, &op->type) != MPI_SUCCESS)) {
        free(op);
        return NULL;
    }
    gc_comm_retain(c);
    return op;
}

/* Last in the FIFO of posted receives (complete_op unlinks it). */
static void append_recv(struct op *op)
{
    op->next = NULL;
    *engine.recvs_tail = op;
    engine.recvs_tail = &op->next;
}

void gc_op_post_recv(struct op *op)
{
    if (can_match_remote(op)) {
        struct rx *rx = gc_engine_find_unexpected(op, 1);
        if (rx != NULL) {
            append_recv(op); /* deliver() unlinks it */
            bind_remote(op, rx);
            return;
        }
    }
    append_recv(op);
    gc_rndv_posted(op);
    if (!op->coll && op->peer != MPI_ANY_SOURCE &&
        is_local_member(op->comm, op->peer) && !held_by_earlier(op)) {
        int status = post_local(op);
        if (status != MPI_SUCCESS) {
            op->matched = 1; /* never matched again: complete it failed */
            op->error = status;
            complete_op(op);
        }
    }
}

void gc_op_post_matched(struct op *op, struct rx *rx)
{
    op->matched = 1;
    append_recv(op);
    if (rx != NULL)
        bind_remote(op, rx);
}

int gc_op_start_remote_send(struct op *op, int copy)
{
    const void *data = op->buf;
    if (op->capacity > GC_MAX_MESSAGE)
        return MPI_ERR_COUNT;
    if (!op->contiguous || copy) {
        op->owned = malloc(op->capacity ? op->capacity : 1);
        if (op->owned == NULL)
            return MPI_ERR_NO_MEM;
        if (op->contiguous) {
            memcpy(op->owned, op->buf, op->capacity);
        } else {
            MPI_Count position = 0;
            int status =
                gc_pack(op->buf, op->count, op->type, op->owned,
                        (MPI_Count)op->capacity, &position, op->comm->local);
            if (status != MPI_SUCCESS)
                return status;
        }
        data = op->owned;
    }
    uint32_t cls = op->coll   ? (uint32_t)op->coll
                   : op->sync ? GC_CTX_SYNC
                              : GC_CTX_P2P;
    int rndv = gc_rndv_choose(op);
    if (rndv && !gc_progress_in_pass()) {
        /* A receive posted at the other end after it sent what this
         * process just received has its credit right behind it: read it
         * rather than pay a round trip (a ping-pong). */
        gc_progress(0);
        rndv = gc_rndv_choose(op);
    }
    if (rndv)
        gc_rndv_start(op, data, cls);
    else if (gc_rc_isend(gc_world.rc, (uint32_t)op->comm->grid_rank[op->peer],
                         op->comm->context + cls, op->tag, data, op->capacity,
                         &op->wire) != 0)
        gc_fatal_relay("sending to another site");
    op->next = engine.sends;
    engine.sends = op;
    return MPI_SUCCESS;
}

/* ---- session callbacks and shutdown ------------------------------------- */

void gc_p2p_callbacks(gc_rc_alloc_fn *on_alloc_fn,
                      gc_rc_complete_fn *on_complete_fn)
{
    *on_alloc_fn = on_alloc;
    *on_complete_fn = on_complete;
}

void gc_engine_shutdown(void)
{
    free_released_ops();
    while (engine.unexpected != NULL) {
        struct rx *rx = engine.unexpected;
        engine.unexpected = rx->next_unexpected;
        gc_rx_free(rx);
    }
    engine.unexpected_tail = &engine.unexpected;
    gc_rndv_shutdown();
    /* Whatever is still arriving belongs to the queue just freed or to a
     * receive the application never completed; the session is closed. */
    engine.arriving = NULL;
    if (engine.self != MPI_COMM_NULL)
        PMPI_Comm_free(&engine.self);
}
