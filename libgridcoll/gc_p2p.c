/*
 * Point-to-point on grid communicators, and the progress engine that
 * drives the relay session (docs/design/mpi-layer.md, "Point-to-point").
 *
 * A destination on this site is reached through MPICH on the
 * communicator's `local` part; a destination on another site through the
 * relay.  Receives are always the engine's: one FIFO of posted receives
 * per process, matched against
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
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gc_mpi.h"
#include "gc_relay_client.h"

enum op_kind { OP_RECV, OP_SEND };

/* A message from another site, from its first chunk until it is received. */
struct rx {
    struct rx *next_arriving;   /* engine.arriving: bytes still coming */
    struct rx *next_unexpected; /* engine.unexpected: no receive yet */
    struct gc_rc_msg_info info;
    void *data; /* library buffer, NULL when landing in the receive's */
    int arrived;
    struct op *op; /* the matching receive, NULL while unexpected */
};

struct op {
    struct op *next; /* engine.recvs or engine.sends */
    enum op_kind kind;
    MPI_Request request; /* generalized request; NULL for internal ones */
    struct gc_comm *comm;
    int coll; /* collective context (gc_xfer_*) instead of user p2p */
    int peer; /* comm rank; MPI_ANY_SOURCE for wildcard receives */
    int tag;  /* MPI_ANY_TAG for wildcard receives */
    void *buf;
    int count;
    MPI_Datatype type; /* a receive's own reference (gc_type_hold) */
    size_t capacity;   /* bytes the receive buffer holds, packed */
    int contiguous;
    int exact_length; /* internal transfer: any other length is an error */
    /* receive */
    int matched;
    struct rx *rx;
    MPI_Request local; /* PMPI_Imrecv of a message from this site */
    /* send */
    struct gc_rc_send *wire;
    void *owned; /* packed or buffered copy sent instead of buf */
    int sync;
    int acked;
    int released; /* MPI_Request_free while pending: free when done */
    /* result */
    int done;
    int source;
    int result_tag;
    int error;
    int cancelled;
    size_t bytes;
};

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
    int in_progress;
    struct message *messages; /* MPI_Message handles made by Mprobe */
    unsigned next_message_id;
    MPI_Comm self; /* private MPI_COMM_SELF for unpacking partial elements */
} engine = {.recvs_tail = &engine.recvs,
            .unexpected_tail = &engine.unexpected,
            .self = MPI_COMM_NULL};

/* ---- small helpers ------------------------------------------------------ */

static uint32_t ctx_base(uint32_t context)
{
    return context - context % GC_CTX_STRIDE;
}

static int is_local_member(const struct gc_comm *c, int rank)
{
    return c->site[rank] == gc_world.site_index;
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

static void free_op(struct op *op)
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
        free_op(op);
    }
}

/* Unlink, record completion and tell MPICH.  An operation whose request
 * the application released with MPI_Request_free (MPICH has called
 * free_fn already, request_free) is freed here, after MPICH drops the
 * request. */
static void complete_op(struct op *op)
{
    list_remove_op(op->kind == OP_RECV ? &engine.recvs : &engine.sends, op);
    op->done = 1;
    if (op->request != MPI_REQUEST_NULL)
        PMPI_Grequest_complete(op->request);
    if (op->released)
        free_op(op);
}

/* A status of a probe or of an empty receive.  MPI_ERROR is left alone:
 * MPI sets it only in the multiple-completion calls (MPI 4.1, 3.2.5). */
static void set_probe_status(MPI_Status *status, int source, int tag,
                             MPI_Count bytes)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = source;
    status->MPI_TAG = tag;
    PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(status, 0);
}

/* ---- receiving from other sites ---------------------------------------- */

static int envelope_matches(const struct op *op,
                            const struct gc_rc_msg_info *info)
{
    uint32_t cls = info->context_id % GC_CTX_STRIDE;
    if (ctx_base(info->context_id) != op->comm->context)
        return 0;
    if (op->coll ? cls != GC_CTX_COLL : cls != GC_CTX_P2P && cls != GC_CTX_SYNC)
        return 0;
    if (op->peer == MPI_ANY_SOURCE) {
        if (info->src_rank >= (uint32_t)gc_world.size ||
            op->comm->comm_rank_of_grid[info->src_rank] < 0)
            return 0;
    } else if ((uint32_t)op->comm->grid_rank[op->peer] != info->src_rank) {
        return 0;
    }
    return op->tag == MPI_ANY_TAG || op->tag == info->tag;
}

static int can_match_remote(const struct op *op)
{
    return op->peer == MPI_ANY_SOURCE || !is_local_member(op->comm, op->peer);
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
        PMPI_Comm_dup(MPI_COMM_SELF, &engine.self);
    PMPI_Sendrecv_c(data, (MPI_Count)op->bytes, MPI_PACKED, 0, 0, op->buf,
                    op->count, op->type, 0, 0, engine.self, MPI_STATUS_IGNORE);
}

static void deliver(struct op *op, struct rx *rx)
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

static void *on_alloc(void *arg, const struct gc_rc_msg_info *info)
{
    (void)arg;
    if (info->context_id % GC_CTX_STRIDE == GC_CTX_ACK)
        return NULL;
    struct rx *rx = calloc(1, sizeof *rx);
    if (rx == NULL)
        gc_fatal_relay("out of memory for an incoming message");
    rx->info = *info;
    rx->next_arriving = engine.arriving;
    engine.arriving = rx;
    for (struct op *op = engine.recvs; op != NULL; op = op->next)
        if (!op->matched && can_match_remote(op) &&
            envelope_matches(op, info)) {
            match_remote(op, rx);
            if (op->contiguous && info->msg_len <= op->capacity &&
                info->msg_len > 0)
                return op->buf;
            return NULL;
        }
    *engine.unexpected_tail = rx;
    engine.unexpected_tail = &rx->next_unexpected;
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

static void on_complete(void *arg, const struct gc_rc_msg_info *info, void *buf,
                        int library_allocated)
{
    (void)arg;
    if (info->context_id % GC_CTX_STRIDE == GC_CTX_ACK) {
        if (library_allocated)
            free(buf);
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
    rx->arrived = 1;
    rx->data = library_allocated ? buf : NULL;
    if (rx->op != NULL)
        deliver(rx->op, rx);
}

static struct rx *take_unexpected(const struct op *op)
{
    for (struct rx **p = &engine.unexpected; *p != NULL;
         p = &(*p)->next_unexpected) {
        struct rx *rx = *p;
        if (!envelope_matches(op, &rx->info))
            continue;
        *p = rx->next_unexpected;
        if (engine.unexpected_tail == &rx->next_unexpected)
            engine.unexpected_tail = p;
        return rx;
    }
    return NULL;
}

/* A receive bound to an already announced remote message. */
static void bind_remote(struct op *op, struct rx *rx)
{
    match_remote(op, rx);
    if (rx->arrived)
        deliver(op, rx);
}

/* ---- the progress engine ------------------------------------------------ */

/*
 * A receive naming a source on this site is posted to MPICH at once,
 * unless an earlier wildcard receive of its communicator could still take
 * the same message: MPI gives the message to the earlier receive, so the
 * later one waits here until the wildcard is matched.
 */
static int held_by_wildcard(const struct op *op)
{
    for (const struct op *w = engine.recvs; w != NULL && w != op; w = w->next)
        if (!w->matched && !w->coll && w->peer == MPI_ANY_SOURCE &&
            w->comm == op->comm &&
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
    return PMPI_Irecv(op->buf, op->count, op->type,
                      op->comm->site_rank[op->peer], op->tag, op->comm->local,
                      &op->local);
}

/*
 * Local half of matching, in posting order.  Wildcard receives look for a
 * message from this site with PMPI_Improbe; receives for a named source
 * use PMPI_Irecv, which keeps MPICH's ordering (MPICH 4.0 over UCX lets a
 * small message overtake a large one of the same source in Improbe, so a
 * wildcard can in rare cases take them in that order).
 */
static void progress_local_receives(void)
{
    struct op *next;
    for (struct op *op = engine.recvs; op != NULL; op = next) {
        next = op->next;
        struct gc_comm *c = op->comm;
        if (!op->matched && !op->coll && op->peer == MPI_ANY_SOURCE) {
            int found = 0;
            MPI_Message message;
            MPI_Status st;
            PMPI_Improbe(MPI_ANY_SOURCE, op->tag, c->local, &found, &message,
                         &st);
            if (!found)
                continue;
            op->matched = 1;
            PMPI_Imrecv(op->buf, op->count, op->type, &message, &op->local);
        } else if (!op->matched && !op->coll && is_local_member(c, op->peer)) {
            if (held_by_wildcard(op) || post_local(op) != MPI_SUCCESS)
                continue;
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

/* Completes the sends that are on the wire (and acknowledged, when
 * synchronous); returns how many. */
static int progress_sends(void)
{
    int completed = 0;
    struct op *next;
    for (struct op *op = engine.sends; op != NULL; op = next) {
        next = op->next;
        if (gc_rc_send_done(op->wire) && (!op->sync || op->acked)) {
            gc_rc_send_free(op->wire);
            op->wire = NULL;
            complete_op(op);
            completed++;
        }
    }
    return completed;
}

void gc_progress(int timeout_ms)
{
    /* MPICH calls poll_fn from inside PMPI_Test, which the engine itself
     * calls: one level is enough. */
    if (engine.in_progress || !gc_world.active)
        return;
    engine.in_progress = 1;
    free_released_ops();
    /* A send the relay client wrote at once (gc_rc_isend) is done now;
     * waiting in poll() first would hold its caller until something
     * else arrives or the timeout ends (a whole timeout when the peer
     * has already answered, as in a barrier). */
    if (progress_sends() > 0)
        timeout_ms = 0;
    if (gc_rc_progress(gc_world.rc, timeout_ms) < 0)
        gc_fatal_relay("relay session");
    progress_local_receives();
    progress_sends();
    engine.in_progress = 0;
}

#define GC_SPIN_POLLS 100

void gc_idle(unsigned *idle_polls)
{
    static const struct timespec nap = {0, 50 * 1000};
    if (*idle_polls < GC_SPIN_POLLS) {
        ++*idle_polls;
        sched_yield();
    } else {
        nanosleep(&nap, NULL);
    }
}

/* ---- generalized request callbacks ------------------------------------- */

static int request_query(void *extra, MPI_Status *status)
{
    struct op *op = extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)op->bytes);
    PMPI_Status_set_cancelled(status, op->cancelled);
    status->MPI_SOURCE = op->kind == OP_RECV ? op->source : MPI_UNDEFINED;
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

static int request_cancel(void *extra, int complete)
{
    struct op *op = extra;
    /* Only a receive nothing has matched can be withdrawn; a send to
     * another site is on the wire at once (MPI 4.1 deprecates cancelling
     * sends). */
    if (complete || op->kind != OP_RECV)
        return MPI_SUCCESS;
    if (!op->matched) {
        op->cancelled = 1;
        complete_op(op);
    } else if (op->local != MPI_REQUEST_NULL) {
        /* Posted to MPICH: its cancel decides, at once. */
        MPI_Status st;
        PMPI_Cancel(&op->local);
        int rc = PMPI_Wait(&op->local, &st);
        finish_local(op, rc, &st);
    }
    return MPI_SUCCESS;
}

static int request_poll(void *extra, MPI_Status *status)
{
    (void)extra;
    (void)status;
    gc_progress(0);
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
            gc_progress(0);
            gc_idle(&idle);
        }
    return MPI_SUCCESS;
}

/* Release an operation that failed before the application saw it. */
static void discard_op(struct op *op)
{
    MPI_Request request = op->request;
    if (request == MPI_REQUEST_NULL) {
        free_op(op);
        return;
    }
    op->done = 1;
    PMPI_Grequest_complete(request);
    PMPI_Request_free(&request); /* MPICH calls request_free */
}

static int start_request(struct op *op)
{
    if (!engine.have_request_class) {
        int status = MPIX_Grequest_class_create(
            request_query, request_free, request_cancel, request_poll,
            request_wait, &engine.request_class);
        if (status != MPI_SUCCESS)
            return status;
        engine.have_request_class = 1;
    }
    return MPIX_Grequest_class_allocate(engine.request_class, op, &op->request);
}

/* ---- operations ---------------------------------------------------------- */

static struct op *new_op(enum op_kind kind, struct gc_comm *c, int peer,
                         int tag, void *buf, int count, MPI_Datatype type)
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

static void post_recv(struct op *op)
{
    if (can_match_remote(op)) {
        struct rx *rx = take_unexpected(op);
        if (rx != NULL) {
            op->next = NULL;
            *engine.recvs_tail = op; /* deliver() unlinks it */
            engine.recvs_tail = &op->next;
            bind_remote(op, rx);
            return;
        }
    }
    op->next = NULL;
    *engine.recvs_tail = op;
    engine.recvs_tail = &op->next;
    if (!op->coll && op->peer != MPI_ANY_SOURCE &&
        is_local_member(op->comm, op->peer) && !held_by_wildcard(op)) {
        int status = post_local(op);
        if (status != MPI_SUCCESS) {
            op->matched = 1; /* never matched again: complete it failed */
            op->error = status;
            complete_op(op);
        }
    }
}

/* Put a send to another site on the wire (packed or copied if needed). */
static int start_remote_send(struct op *op, int copy)
{
    const void *data = op->buf;
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
    uint32_t cls = op->coll ? GC_CTX_COLL : op->sync ? GC_CTX_SYNC : GC_CTX_P2P;
    if (gc_rc_isend(gc_world.rc, (uint32_t)op->comm->grid_rank[op->peer],
                    op->comm->context + cls, op->tag, data, op->capacity,
                    &op->wire) != 0)
        gc_fatal_relay("sending to another site");
    op->next = engine.sends;
    engine.sends = op;
    return MPI_SUCCESS;
}

enum send_mode { MODE_STANDARD, MODE_SYNC, MODE_READY, MODE_BUFFERED };

static int check_rank(struct gc_comm *c, int rank, int wildcard_ok,
                      const char *function)
{
    if (rank == MPI_PROC_NULL || (wildcard_ok && rank == MPI_ANY_SOURCE) ||
        (rank >= 0 && rank < c->size))
        return MPI_SUCCESS;
    char detail[128];
    snprintf(detail, sizeof detail, "%s: rank %d is not in 0..%d", function,
             rank, c->size - 1);
    return gc_error(c->handle, MPI_ERR_RANK, detail);
}

/* MPI_TAG_UB of MPI_COMM_WORLD: MPICH's, which the relay's 32-bit tag
 * field holds too. */
static int tag_ub(void)
{
    static int ub = -1;
    if (ub < 0) {
        int *value, flag = 0;
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
        ub = flag ? *value : 32767; /* the least MPI allows */
    }
    return ub;
}

static int check_tag(struct gc_comm *c, int tag, int wildcard_ok,
                     const char *function)
{
    if ((tag >= 0 && tag <= tag_ub()) || (wildcard_ok && tag == MPI_ANY_TAG))
        return MPI_SUCCESS;
    char detail[128];
    snprintf(detail, sizeof detail, "%s: invalid tag %d (0..%d)", function, tag,
             tag_ub());
    return gc_error(c->handle, MPI_ERR_TAG, detail);
}

/*
 * The checks MPICH makes on a send or receive, made before the engine
 * takes it: a bad argument found later, on the wire or at completion,
 * would leave the peer waiting.
 */
static int check_args(struct gc_comm *c, const void *buf, int count,
                      MPI_Datatype type, int tag, int wildcard_ok,
                      const char *function)
{
    char detail[128];
    if (count < 0) {
        snprintf(detail, sizeof detail, "%s: negative count %d", function,
                 count);
        return gc_error(c->handle, MPI_ERR_COUNT, detail);
    }
    if (gc_type_check(type) != MPI_SUCCESS) {
        snprintf(detail, sizeof detail, "%s: %s", function,
                 type == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL"
                                           : "datatype not committed");
        return gc_error(c->handle, MPI_ERR_TYPE, detail);
    }
    /* NULL is MPI_BOTTOM, valid with a type of absolute addresses only. */
    if (buf == NULL && count > 0 && gc_type_is_named(type)) {
        snprintf(detail, sizeof detail, "%s: null buffer", function);
        return gc_error(c->handle, MPI_ERR_BUFFER, detail);
    }
    return check_tag(c, tag, wildcard_ok, function);
}

static int grid_isend(struct gc_comm *c, const void *buf, int count,
                      MPI_Datatype type, int dst, int tag, enum send_mode mode,
                      MPI_Request *request, const char *function)
{
    int status = check_rank(c, dst, 0, function);
    if (status == MPI_SUCCESS)
        status = check_args(c, buf, count, type, tag, 0, function);
    if (status != MPI_SUCCESS)
        return status;
    if (dst == MPI_PROC_NULL || is_local_member(c, dst)) {
        int to = dst == MPI_PROC_NULL ? MPI_PROC_NULL : c->site_rank[dst];
        switch (mode) {
        case MODE_SYNC:
            return PMPI_Issend(buf, count, type, to, tag, c->local, request);
        case MODE_READY:
            return PMPI_Irsend(buf, count, type, to, tag, c->local, request);
        case MODE_BUFFERED:
            return PMPI_Ibsend(buf, count, type, to, tag, c->local, request);
        default:
            return PMPI_Isend(buf, count, type, to, tag, c->local, request);
        }
    }
    struct op *op = new_op(OP_SEND, c, dst, tag, (void *)buf, count, type);
    if (op == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function);
    op->sync = mode == MODE_SYNC;
    status = start_request(op);
    if (status == MPI_SUCCESS)
        status = start_remote_send(op, mode == MODE_BUFFERED);
    if (status != MPI_SUCCESS) {
        discard_op(op);
        return gc_error(c->handle, status, function);
    }
    *request = op->request;
    return MPI_SUCCESS;
}

static int grid_irecv(struct gc_comm *c, void *buf, int count,
                      MPI_Datatype type, int src, int tag, MPI_Request *request,
                      const char *function)
{
    int status = check_rank(c, src, 1, function);
    if (status == MPI_SUCCESS)
        status = check_args(c, buf, count, type, tag, 1, function);
    if (status != MPI_SUCCESS)
        return status;
    if (src == MPI_PROC_NULL)
        return PMPI_Irecv(buf, count, type, MPI_PROC_NULL, tag, c->local,
                          request);
    struct op *op = new_op(OP_RECV, c, src, tag, buf, count, type);
    if (op == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function);
    status = start_request(op);
    if (status != MPI_SUCCESS) {
        discard_op(op);
        return gc_error(c->handle, status, function);
    }
    *request = op->request;
    post_recv(op);
    return MPI_SUCCESS;
}

/* ---- internal transfers for collectives -------------------------------- */

int gc_xfer_isend(struct gc_comm *c, int dst, int tag, const void *buf,
                  size_t len, struct gc_xfer **req)
{
    *req = NULL;
    if (len > INT_MAX)
        return MPI_ERR_COUNT;
    struct op *op =
        new_op(OP_SEND, c, dst, tag, (void *)buf, (int)len, MPI_BYTE);
    if (op == NULL)
        return MPI_ERR_NO_MEM;
    op->coll = 1;
    int status = start_remote_send(op, 0);
    if (status != MPI_SUCCESS) {
        free_op(op);
        return status;
    }
    gc_coll_account_wan(len);
    *req = (struct gc_xfer *)op;
    return MPI_SUCCESS;
}

int gc_xfer_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
                  struct gc_xfer **req)
{
    *req = NULL;
    if (len > INT_MAX)
        return MPI_ERR_COUNT;
    struct op *op = new_op(OP_RECV, c, src, tag, buf, (int)len, MPI_BYTE);
    if (op == NULL)
        return MPI_ERR_NO_MEM;
    op->coll = 1;
    op->exact_length = 1;
    post_recv(op);
    *req = (struct gc_xfer *)op;
    return MPI_SUCCESS;
}

/*
 * A transfer's result.  A length other than the expected one means the
 * members called the collective with different sizes (an erroneous
 * program): the phase goes on with the bytes that came, so every member
 * finishes the collective instead of some waiting forever, and coll_run
 * reports MPI_ERR_TRUNCATE at the end (gc_coll_note_mismatch).
 */
static int xfer_result(const struct op *op)
{
    if (op->error != MPI_ERR_TRUNCATE)
        return op->error;
    gc_coll_note_mismatch();
    return MPI_SUCCESS;
}

int gc_xfer_waitall(int count, struct gc_xfer **reqs)
{
    int status = MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        struct op *op = (struct op *)reqs[i];
        if (op == NULL)
            continue;
        /* Only the relay can finish these: sleep in poll() on its socket
         * rather than spin against local ranks for the CPU.  Look before
         * sleeping: a send the relay client wrote out at once finishes
         * without anything arriving to wake the poll. */
        gc_progress(0);
        while (!op->done)
            gc_progress(10);
        int error = xfer_result(op);
        if (error != MPI_SUCCESS && status == MPI_SUCCESS)
            status = error;
        free_op(op);
        reqs[i] = NULL;
    }
    return status;
}

int gc_xfer_test(struct gc_xfer **req, int *done)
{
    struct op *op = (struct op *)*req;
    *done = op->done;
    if (!op->done)
        return MPI_SUCCESS;
    int status = xfer_result(op);
    free_op(op);
    *req = NULL;
    return status;
}

int gc_xfer_send(struct gc_comm *c, int dst, int tag, const void *buf,
                 size_t len)
{
    struct gc_xfer *req;
    int status = gc_xfer_isend(c, dst, tag, buf, len, &req);
    if (status != MPI_SUCCESS)
        return status;
    return gc_xfer_waitall(1, &req);
}

int gc_xfer_recv(struct gc_comm *c, int src, int tag, void *buf, size_t len)
{
    struct gc_xfer *req;
    int status = gc_xfer_irecv(c, src, tag, buf, len, &req);
    if (status != MPI_SUCCESS)
        return status;
    return gc_xfer_waitall(1, &req);
}

/* ---- probes and matched messages ---------------------------------------- */

/* Handles for messages from other sites taken by MPI_Mprobe: values with
 * MPICH's "invalid" handle kind (top two bits 00), which it never makes. */
#define GRID_MESSAGE_BASE 0x0d000000
#define GRID_MESSAGE_MASK 0x00ffffff

struct message {
    struct message *next;
    MPI_Message handle;
    struct gc_comm *comm;
    struct rx *rx; /* NULL: an MPICH message from this site */
};

static int remember_message(MPI_Message handle, struct gc_comm *c,
                            struct rx *rx)
{
    struct message *m = malloc(sizeof *m);
    if (m == NULL)
        return MPI_ERR_NO_MEM;
    m->handle = handle;
    m->comm = c;
    m->rx = rx;
    m->next = engine.messages;
    engine.messages = m;
    return MPI_SUCCESS;
}

static struct message *take_message(MPI_Message handle)
{
    for (struct message **p = &engine.messages; *p != NULL; p = &(*p)->next)
        if ((*p)->handle == handle) {
            struct message *m = *p;
            *p = m->next;
            return m;
        }
    return NULL;
}

/*
 * One look for a message matching (src, tag) on c, remote then local.
 * With `message` non-NULL the message is taken out of matching (Mprobe).
 */
static int grid_iprobe(struct gc_comm *c, int src, int tag, int *flag,
                       MPI_Message *message, MPI_Status *status)
{
    *flag = 0;
    if (src == MPI_PROC_NULL) {
        *flag = 1;
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
        if (message != NULL)
            *message = MPI_MESSAGE_NO_PROC;
        return MPI_SUCCESS;
    }
    gc_progress(0);
    struct op probe = {.comm = c, .peer = src, .tag = tag};
    if (can_match_remote(&probe)) {
        for (struct rx *rx = engine.unexpected; rx != NULL;
             rx = rx->next_unexpected) {
            if (!envelope_matches(&probe, &rx->info))
                continue;
            *flag = 1;
            set_probe_status(status, c->comm_rank_of_grid[rx->info.src_rank],
                             rx->info.tag, (MPI_Count)rx->info.msg_len);
            if (message == NULL)
                return MPI_SUCCESS;
            rx = take_unexpected(&probe);
            *message = GRID_MESSAGE_BASE |
                       (int)(engine.next_message_id++ & GRID_MESSAGE_MASK);
            return remember_message(*message, c, rx);
        }
    }
    if (src != MPI_ANY_SOURCE && !is_local_member(c, src))
        return MPI_SUCCESS;
    MPI_Status st;
    int local_src = src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->site_rank[src];
    int rc = message == NULL
                 ? PMPI_Iprobe(local_src, tag, c->local, flag, &st)
                 : PMPI_Improbe(local_src, tag, c->local, flag, message, &st);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    MPI_Count count;
    PMPI_Get_count_c(&st, MPI_BYTE, &count);
    set_probe_status(status, c->local_to_comm[st.MPI_SOURCE], st.MPI_TAG,
                     count);
    return message == NULL ? MPI_SUCCESS : remember_message(*message, c, NULL);
}

static int grid_probe(struct gc_comm *c, int src, int tag, MPI_Message *message,
                      MPI_Status *status)
{
    unsigned idle = 0;
    for (;;) {
        int flag;
        int rc = grid_iprobe(c, src, tag, &flag, message, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        gc_idle(&idle);
    }
}

static int grid_imrecv(struct message *m, void *buf, int count,
                       MPI_Datatype type, MPI_Message *message,
                       MPI_Request *request)
{
    struct op *op =
        new_op(OP_RECV, m->comm, MPI_ANY_SOURCE, MPI_ANY_TAG, buf, count, type);
    int status = op != NULL ? start_request(op) : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS && m->rx == NULL)
        status = PMPI_Imrecv(buf, count, type, message, &op->local);
    if (status != MPI_SUCCESS) {
        if (op != NULL)
            discard_op(op);
        free(m);
        return gc_error(MPI_COMM_WORLD, status, "MPI_Imrecv");
    }
    op->matched = 1;
    op->next = NULL;
    *engine.recvs_tail = op;
    engine.recvs_tail = &op->next;
    *request = op->request;
    *message = MPI_MESSAGE_NULL;
    if (m->rx != NULL)
        bind_remote(op, m->rx);
    free(m);
    return MPI_SUCCESS;
}

/* ---- the MPI functions ----------------------------------------------------
 */

static int grid_send(struct gc_comm *c, const void *buf, int count,
                     MPI_Datatype type, int dst, int tag, enum send_mode mode,
                     const char *function)
{
    MPI_Request request;
    int status =
        grid_isend(c, buf, count, type, dst, tag, mode, &request, function);
    if (status != MPI_SUCCESS)
        return status;
    return gc_request_wait(&request, MPI_STATUS_IGNORE);
}

#define GRID_SEND(NAME, MODE)                                                  \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dst,     \
                   int tag, MPI_Comm comm)                                     \
    {                                                                          \
        struct gc_comm *c = gc_comm_find(comm);                                \
        if (c == NULL)                                                         \
            return PMPI_##NAME(buf, count, type, dst, tag, comm);              \
        return grid_send(c, buf, count, type, dst, tag, MODE, "MPI_" #NAME);   \
    }
#define GRID_ISEND(NAME, MODE)                                                 \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dst,     \
                   int tag, MPI_Comm comm, MPI_Request *request)               \
    {                                                                          \
        struct gc_comm *c = gc_comm_find(comm);                                \
        if (c == NULL)                                                         \
            return PMPI_##NAME(buf, count, type, dst, tag, comm, request);     \
        return grid_isend(c, buf, count, type, dst, tag, MODE, request,        \
                          "MPI_" #NAME);                                       \
    }

GRID_SEND(Send, MODE_STANDARD)
GRID_SEND(Ssend, MODE_SYNC)
GRID_SEND(Rsend, MODE_READY)
GRID_SEND(Bsend, MODE_BUFFERED)
GRID_ISEND(Isend, MODE_STANDARD)
GRID_ISEND(Issend, MODE_SYNC)
GRID_ISEND(Irsend, MODE_READY)
GRID_ISEND(Ibsend, MODE_BUFFERED)

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Irecv(buf, count, type, src, tag, comm, request);
    return grid_irecv(c, buf, count, type, src, tag, request, "MPI_Irecv");
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Recv(buf, count, type, src, tag, comm, status);
    if (src == MPI_PROC_NULL) {
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
        return MPI_SUCCESS;
    }
    MPI_Request request;
    int rc = grid_irecv(c, buf, count, type, src, tag, &request, "MPI_Recv");
    return rc != MPI_SUCCESS ? rc : gc_request_wait(&request, status);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dst, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int src, int recvtag, MPI_Comm comm,
                 MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dst, sendtag,
                             recvbuf, recvcount, recvtype, src, recvtag, comm,
                             status);
    MPI_Request recv_request, send_request;
    int rc = grid_irecv(c, recvbuf, recvcount, recvtype, src, recvtag,
                        &recv_request, "MPI_Sendrecv");
    if (rc != MPI_SUCCESS)
        return rc;
    rc = grid_isend(c, sendbuf, sendcount, sendtype, dst, sendtag,
                    MODE_STANDARD, &send_request, "MPI_Sendrecv");
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&recv_request);
        PMPI_Request_free(&recv_request);
        return rc;
    }
    int send_rc = gc_request_wait(&send_request, MPI_STATUS_IGNORE);
    rc = gc_request_wait(&recv_request, status);
    /* MPICH 4.0's request for a receive from MPI_PROC_NULL reports source
     * 0; MPI_Sendrecv (its own, and this one) says MPI_PROC_NULL. */
    if (src == MPI_PROC_NULL)
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    return rc != MPI_SUCCESS ? rc : send_rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dst,
                         int sendtag, int src, int recvtag, MPI_Comm comm,
                         MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Sendrecv_replace(buf, count, type, dst, sendtag, src,
                                     recvtag, comm, status);
    /* The outgoing data is packed first so the receive can land in buf. */
    size_t bytes;
    int rc = gc_packed_size(count, type, &bytes);
    if (rc != MPI_SUCCESS || bytes > INT_MAX)
        return gc_error(comm, rc != MPI_SUCCESS ? rc : MPI_ERR_COUNT,
                        "MPI_Sendrecv_replace: message too large");
    void *packed = malloc(bytes ? bytes : 1);
    if (packed == NULL)
        return gc_error(comm, MPI_ERR_NO_MEM, "MPI_Sendrecv_replace");
    int position = 0;
    rc = PMPI_Pack(buf, count, type, packed, (int)bytes, &position, c->local);
    if (rc == MPI_SUCCESS)
        rc = MPI_Sendrecv(packed, position, MPI_PACKED, dst, sendtag, buf,
                          count, type, src, recvtag, comm, status);
    free(packed);
    return rc;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Iprobe(src, tag, comm, flag, status);
    int rc = check_rank(c, src, 1, "MPI_Iprobe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Iprobe");
    return rc != MPI_SUCCESS ? rc
                             : grid_iprobe(c, src, tag, flag, NULL, status);
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Probe(src, tag, comm, status);
    int rc = check_rank(c, src, 1, "MPI_Probe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Probe");
    return rc != MPI_SUCCESS ? rc : grid_probe(c, src, tag, NULL, status);
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag,
                MPI_Message *message, MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Improbe(src, tag, comm, flag, message, status);
    int rc = check_rank(c, src, 1, "MPI_Improbe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Improbe");
    return rc != MPI_SUCCESS ? rc
                             : grid_iprobe(c, src, tag, flag, message, status);
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message,
               MPI_Status *status)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Mprobe(src, tag, comm, message, status);
    int rc = check_rank(c, src, 1, "MPI_Mprobe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Mprobe");
    return rc != MPI_SUCCESS ? rc : grid_probe(c, src, tag, message, status);
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
               MPI_Request *request)
{
    struct message *m = gc_world.active ? take_message(*message) : NULL;
    if (m == NULL)
        return PMPI_Imrecv(buf, count, type, message, request);
    return grid_imrecv(m, buf, count, type, message, request);
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
              MPI_Status *status)
{
    struct message *m = gc_world.active ? take_message(*message) : NULL;
    if (m == NULL)
        return PMPI_Mrecv(buf, count, type, message, status);
    MPI_Request request;
    int rc = grid_imrecv(m, buf, count, type, message, &request);
    return rc != MPI_SUCCESS ? rc : gc_request_wait(&request, status);
}

/* ---- session callbacks and shutdown ------------------------------------- */

void gc_p2p_callbacks(gc_rc_alloc_fn *on_alloc_fn,
                      gc_rc_complete_fn *on_complete_fn)
{
    *on_alloc_fn = on_alloc;
    *on_complete_fn = on_complete;
}

void gc_p2p_shutdown(void)
{
    free_released_ops();
    while (engine.unexpected != NULL) {
        struct rx *rx = engine.unexpected;
        engine.unexpected = rx->next_unexpected;
        free(rx->data);
        free(rx);
    }
    engine.unexpected_tail = &engine.unexpected;
    while (engine.messages != NULL) {
        struct message *m = take_message(engine.messages->handle);
        if (m->rx != NULL) {
            free(m->rx->data);
            free(m->rx);
        }
        free(m);
    }
    /* Whatever is still arriving belongs to the queue just freed or to a
     * receive the application never completed; the session is closed. */
    engine.arriving = NULL;
    if (engine.self != MPI_COMM_NULL)
        PMPI_Comm_free(&engine.self);
}
