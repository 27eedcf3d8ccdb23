/*
 * Rendezvous for large point-to-point messages to another site: the
 * message announces itself (RTS) and its data crosses the WAN only once
 * the receiver's engine has matched it (CTS), as MPICH's ch4 layer does
 * for messages above its eager limit (MPIDI_CH4 "rndv" protocols; the
 * MPI standard allows a standard-mode send to wait for its match, MPI
 * 4.1, 3.4 "Communication Modes").  An eager message that nobody receives
 * is buffered whole by the receiving library; an announced one costs the
 * receiver its envelope, so a rank that does not receive holds at most
 * GRIDCOLL_RNDV_THRESHOLD per message (docs/protocol.md, "Library
 * messages"; docs/design/mpi-layer.md, "Point-to-point").
 *
 * Messages, all on the communicator's acknowledgement context:
 *   RTS   sender -> receiver, 16 bytes: RNDV_RTS, the context class
 *         (P2P or SYNC), the tag and the length; its msg_seq names the
 *         rendezvous from then on (S below).
 *   HOLD  receiver -> sender, one byte, tag S: the RTS was read and is
 *         unexpected.
 *   CTS   receiver -> sender, one byte, tag S: a receive has it (also the
 *         acknowledgement of a synchronous send).
 *   DATA  sender -> receiver, tag -1 - S: the message's bytes, landing in
 *         the receive buffer when it is contiguous and large enough.
 * A cancel (CANCEL_ASK) names S too, so a send still unmatched is
 * withdrawn without its data ever moving.
 *
 * The eager window bounds a flood of small messages the same way: per
 * pair the sender counts the eager bytes it sent (each message rounded up
 * to 64 bytes, plus 64 for its envelope), the receiver those its matching
 * took, and tells the sender every half window
 *   CREDIT receiver -> sender, one byte, tag: the total in 64-byte units
 *          (31 bits; the sender restores the rest from its own count).
 * A message that would overfill the window goes by rendezvous, whatever
 * its size, so the window never stops a sender, it only delays; one that
 * fits goes eager.  Above the threshold a message always waits for its
 * receive unless GRIDCOLL_EAGER_WINDOW (by default the threshold) is set
 * to hold it; the window in use is at least two messages of the threshold
 * (window()), the most a rank that does not receive then holds per
 * sender in eager messages.  Over
 * a WAN the rendezvous costs a round trip per message, which a stream of
 * large messages to a receiver that keeps up need not pay.
 *
 * Matching happens when the RTS arrives, in the pair's order, like an
 * eager message's first chunk: a small eager message sent after a large
 * one is matched after it (MPI 4.1, 3.5, non-overtaking).
 *
 * Progress: the receiver answers an RTS only while its library drives the
 * relay session.  A receiver blocked in a call MPICH runs alone (on a
 * communicator of its own site) after posting the receive would leave the
 * sender waiting, where the eager send would have completed: a sender
 * that has heard nothing (no HOLD or CTS) for GRIDCOLL_RNDV_PUSH_MS sends
 * its data unasked, and the receiver takes it like an eager message.
 */
#include "gc_p2p_engine.h"

#include <stdlib.h>
#include <string.h>

#include "gc_settings.h"
#include "gc_util.h"

enum { RTS_BYTES = 16, UNIT = 64 };

static struct {
    /* announced messages whose data has not all arrived, through
     * rx->next_arriving */
    struct rx *waiting;
    /* eager window, per grid rank of the other end, in bytes as counted
     * by eager_cost: sent to it, of those taken by its matching (as it
     * said), received from it and taken here, of those told to it */
    uint64_t *sent, *taken, *received, *told;
} rndv;

static uint64_t eager_cost(uint64_t len)
{
    return (len + UNIT - 1) / UNIT * UNIT + UNIT;
}

/*
 * The window in use: the setting, but at least two messages of the
 * threshold.  The receiver reports every half window, so up to half of it
 * may be taken but not yet reported; a message of the threshold must
 * still fit then, or a ping-pong of that size would go by rendezvous
 * after a few empty messages (each counts UNIT).
 */
static uint64_t window(void)
{
    uint64_t least = 2 * eager_cost(gc_settings_rndv_threshold());
    uint64_t w = gc_settings_eager_window();
    return w > least ? w : least;
}

static void window_ready(void)
{
    if (rndv.sent != NULL)
        return;
    size_t n = (size_t)gc_world.size;
    rndv.sent = calloc(4 * n, sizeof *rndv.sent);
    if (rndv.sent == NULL)
        gc_fatal_relay("out of memory for the eager window");
    rndv.taken = rndv.sent + n;
    rndv.received = rndv.taken + n;
    rndv.told = rndv.received + n;
}

/* ---- wire format --------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static int32_t seq_tag(uint64_t seq)
{
    return (int32_t)(seq & INT32_MAX);
}

/* DATA's tag: negative, so no control message (tag S >= 0) is taken for
 * data. */
static int32_t data_tag(int32_t s)
{
    return -1 - s;
}

/* ---- sender -------------------------------------------------------------- */

int gc_rndv_choose(struct op *op)
{
    /* Collectives post their receives before the data can come: they
     * stay eager, outside the window. */
    if (op->coll)
        return 0;
    window_ready();
    uint32_t to = (uint32_t)op->comm->grid_rank[op->peer];
    uint64_t cost = eager_cost(op->capacity);
    /* Eager while the message fits in what the receiver has not taken
     * yet of the window.  Above the threshold only when the window set
     * (GRIDCOLL_EAGER_WINDOW, by default the threshold) holds the message
     * itself: with the defaults such a message always waits for its
     * receive; a larger window lets large messages go eager to a
     * receiver that keeps up.  Eager only, counted (the receiver counts
     * every eager message): a ready send's receive is posted by
     * definition, and a buffered one must complete without its receive,
     * or MPI_Buffer_detach would wait for a receive that the program
     * posts only after it (an eager send never waited). */
    int large = op->capacity > gc_settings_rndv_threshold() &&
                cost > gc_settings_eager_window();
    if (!op->eager_only &&
        (large || rndv.sent[to] - rndv.taken[to] + cost > window()))
        return 1;
    rndv.sent[to] += cost;
    return 0;
}

void gc_rndv_taken(const struct rx *rx)
{
    uint32_t cls = rx->info.context_id % GC_CTX_STRIDE;
    if (rx->rndv || (cls != GC_CTX_P2P && cls != GC_CTX_SYNC))
        return;
    window_ready();
    uint32_t from = rx->info.src_rank;
    if (from >= (uint32_t)gc_world.size)
        return;
    rndv.received[from] += eager_cost(rx->info.msg_len);
    if (rndv.received[from] - rndv.told[from] < window() / 2)
        return;
    rndv.told[from] = rndv.received[from];
    gc_engine_send_control(from, rx->info.context_id,
                           (int32_t)((rndv.told[from] / UNIT) & INT32_MAX),
                           RNDV_CREDIT);
}

/* The receiver's total restored from its low 31 bits (in units): the
 * latest value not above what was sent; the window is far below the
 * 128 GiB that 31 bits of units span. */
static void credit_arrived(const struct gc_rc_msg_info *info)
{
    window_ready();
    uint32_t from = info->src_rank;
    if (from >= (uint32_t)gc_world.size)
        return;
    uint64_t sent = rndv.sent[from] / UNIT;
    uint64_t behind = (sent - (uint64_t)info->tag) & INT32_MAX;
    uint64_t taken = (sent - behind) * UNIT;
    if (taken > rndv.taken[from])
        rndv.taken[from] = taken;
}

void gc_rndv_start(struct op *op, const void *data, uint32_t cls)
{
    uint64_t len = op->capacity;
    memset(op->rts, 0, sizeof op->rts);
    op->rts[0] = RNDV_RTS;
    op->rts[1] = (unsigned char)cls;
    put_u32(op->rts + 4, (uint32_t)op->tag);
    put_u32(op->rts + 8, (uint32_t)len);
    put_u32(op->rts + 12, (uint32_t)(len >> 32));
    op->rndv = 1;
    op->rndv_data = data;
    op->rndv_since_ns = gc_now_ns();
    if (gc_rc_isend(gc_world.rc, (uint32_t)op->comm->grid_rank[op->peer],
                    op->comm->context + GC_CTX_ACK, 0, op->rts, RTS_BYTES,
                    &op->wire) != 0)
        gc_fatal_relay("announcing a message to another site");
}

static void send_data(struct op *op)
{
    int32_t s = seq_tag(gc_rc_send_seq(op->wire));
    if (gc_rc_isend(gc_world.rc, (uint32_t)op->comm->grid_rank[op->peer],
                    op->comm->context + GC_CTX_ACK, data_tag(s), op->rndv_data,
                    op->capacity, &op->bulk) != 0)
        gc_fatal_relay("sending to another site");
}

int gc_rndv_send_done(struct op *op)
{
    if (!gc_rc_send_done(op->wire))
        return 0;
    int push_ms = gc_settings_rndv_push_ms();
    /* Not once a cancel is asked: the receiver may withdraw the message,
     * and data after its answer would belong to nothing. */
    if (op->bulk == NULL && !op->rndv_heard && !op->cancel_sent &&
        push_ms > 0 &&
        gc_now_ns() - op->rndv_since_ns >= (uint64_t)push_ms * 1000000u)
        send_data(op);
    if (op->cancel_sent && !op->cancel_answered)
        return 0;
    if (op->bulk != NULL && !gc_rc_send_done(op->bulk))
        return 0; /* its bytes are still read from the buffer */
    if (op->cancelled)
        return 1;
    return op->bulk != NULL && (!op->sync || op->acked);
}

/* ---- receiver ------------------------------------------------------------ */

static void rts_arrived(const struct gc_rc_msg_info *info,
                        const unsigned char *p)
{
    struct rx *rx = calloc(1, sizeof *rx);
    if (rx == NULL)
        gc_fatal_relay("out of memory for an incoming message");
    rx->rndv = 1;
    rx->info = *info; /* src, dst, msg_seq: the RTS's */
    rx->info.context_id = gc_ctx_base(info->context_id) + p[1];
    rx->info.tag = (int32_t)get_u32(p + 4);
    rx->info.msg_len = (uint64_t)get_u32(p + 8) | (uint64_t)get_u32(p + 12)
                                                      << 32;
    rx->next_arriving = rndv.waiting;
    rndv.waiting = rx;
    /* A match sends the CTS (gc_rndv_matched); otherwise the sender hears
     * that it must wait rather than push. */
    if (gc_engine_arrival(rx) == NULL)
        gc_engine_send_control(info->src_rank, info->context_id,
                               seq_tag(info->msg_seq), RNDV_HOLD);
}

void gc_rndv_matched(struct rx *rx)
{
    gc_engine_send_control(rx->info.src_rank, rx->info.context_id,
                           seq_tag(rx->info.msg_seq), RNDV_CTS);
}

int gc_rndv_control(const struct gc_rc_msg_info *info, const void *buf)
{
    const unsigned char *p = buf;
    if (info->msg_len == RTS_BYTES && p[0] == RNDV_RTS) {
        rts_arrived(info, p);
        return 1;
    }
    if (info->msg_len == 1 && p[0] == RNDV_CREDIT) {
        credit_arrived(info);
        return 1;
    }
    if (info->msg_len != 1 || (p[0] != RNDV_HOLD && p[0] != RNDV_CTS))
        return 0;
    struct op *op = gc_engine_send_named(info);
    if (op == NULL || !op->rndv)
        return 1; /* a send completed (pushed, cancelled) meanwhile */
    op->rndv_heard = 1;
    if (p[0] == RNDV_CTS) {
        op->acked = 1;
        if (op->bulk == NULL) /* not pushed already */
            send_data(op);
    }
    return 1;
}

static struct rx **find_waiting(const struct gc_rc_msg_info *info)
{
    int32_t s = -1 - info->tag;
    for (struct rx **p = &rndv.waiting; *p != NULL; p = &(*p)->next_arriving)
        if ((*p)->info.src_rank == info->src_rank &&
            seq_tag((*p)->info.msg_seq) == s &&
            gc_ctx_base((*p)->info.context_id) == gc_ctx_base(info->context_id))
            return p;
    gc_fatal_relay("data of a rendezvous never announced");
    return NULL;
}

void *gc_rndv_data_alloc(const struct gc_rc_msg_info *info)
{
    struct rx *rx = *find_waiting(info);
    struct op *op = rx->op;
    rx->receiving = 1;
    if (info->msg_len != rx->info.msg_len)
        gc_fatal_relay("rendezvous data of another length than announced");
    if (op != NULL && op->contiguous && info->msg_len <= op->capacity &&
        info->msg_len > 0)
        return op->buf;
    return NULL;
}

void gc_rndv_data_complete(const struct gc_rc_msg_info *info, void *buf,
                           int library_allocated)
{
    struct rx **p = find_waiting(info);
    struct rx *rx = *p;
    *p = rx->next_arriving;
    /* Pushed before its receive: unexpected with its data, as an eager
     * message. */
    gc_rx_arrived(rx, buf, library_allocated);
}

int gc_rndv_forget(struct rx *rx)
{
    if (rx->receiving) {
        rx->withdrawn = 1; /* gc_rndv_data_complete frees it */
        return 1;
    }
    for (struct rx **p = &rndv.waiting; *p != NULL; p = &(*p)->next_arriving)
        if (*p == rx) {
            *p = rx->next_arriving;
            break;
        }
    return 0;
}

void gc_rndv_shutdown(void)
{
    /* The unexpected ones were freed with the engine's queue; left are
     * withdrawn ones and those of receives never completed. */
    while (rndv.waiting != NULL) {
        struct rx *rx = rndv.waiting;
        rndv.waiting = rx->next_arriving;
        if (rx->withdrawn) {
            free(rx->data);
            free(rx);
        }
    }
    /* A new session counts from 0 at both ends. */
    free(rndv.sent);
    rndv.sent = rndv.taken = rndv.received = rndv.told = NULL;
}
