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
 * messages"; docs/design/mpi-layer.md, "Point-to-point").  Receives
 * posted for the sender let large messages go eager again (flow control
 * below).
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
 * Flow control, per pair, in bytes counted by eager_cost (each message
 * rounded up to 64, plus 64 for its envelope).  The sender counts what it
 * sent eager and as DATA (`sent`); the receiver what its matching took
 * of those (`taken`) and the capacity of the receives it has posted for
 * that sender that no data has filled yet (`posted`), and tells the
 * sender both
 *   CREDIT receiver -> sender, 24 bytes: RNDV_CREDIT, then the two
 *          totals (u64 each)
 * whenever their sum grew by a threshold-sized message since it last
 * did (fits() gives the rule).  A message up to the threshold goes eager
 * while sent stays within taken + posted + the eager window; a larger
 * one within taken + posted + min(3 posted, window), so a rank that has
 * posted no receive for a sender holds none of its large messages' data,
 * only their envelopes (one that did, at most four times the receives it
 * last told), and at most the window of small ones.  Over a WAN a
 * rendezvous costs a round trip per message and its RTS queues behind
 * the data before it: the posted receives are what lets a stream of large
 * messages into receives posted again as they fill go eager, and a send
 * announced because it outran the credit pushes its data as soon as a
 * CREDIT lets it.  The window (GRIDCOLL_EAGER_WINDOW, default 32M as the
 * relays' flow.rank_credit, which already holds one pair to credit / 2
 * RTT) must cover the bandwidth-delay product for a stream of small
 * messages to keep its speed.
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
#include "p2p/gc_p2p_engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"
#include "gc_util.h"

enum { RTS_BYTES = 16, CREDIT_BYTES = 24, UNIT = 64 };

struct flow {
    /* as the sender: bytes sent to it eager or as DATA, and its last
     * CREDIT */
    uint64_t sent, taken, posted;
    /* as the receiver: those bytes from it taken by matching, capacity of
     * the receives posted for it and not filled, and their sum as last
     * told to it */
    uint64_t took, holds, told;
};

static struct {
    /* announced messages whose data has not all arrived, through
     * rx->next_arriving */
    struct rx *waiting;
    /* flow control (below), per grid rank of the other end, in bytes as
     * counted by eager_cost */
    struct flow *flow;
} rndv;

static uint64_t eager_cost(uint64_t len)
{
    return (len + UNIT - 1) / UNIT * UNIT + UNIT;
}

/*
 * The window in use: the setting, but at least two messages of the
 * threshold, which a ping-pong of that size takes before the receiver's
 * CREDIT (sent every threshold-sized message taken) can come back.
 */
static uint64_t window(void)
{
    uint64_t least = 2 * eager_cost(gc_settings_rndv_threshold());
    uint64_t w = gc_settings_eager_window();
    return w > least ? w : least;
}

static struct flow *flow_of(uint32_t grid_rank)
{
    if (rndv.flow == NULL) {
        rndv.flow = calloc((size_t)gc_world.size, sizeof *rndv.flow);
        if (rndv.flow == NULL)
            gc_fatal_relay("out of memory for the eager window");
    }
    return &rndv.flow[grid_rank];
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

static void put_u64(unsigned char *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
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

/* Whether the receiver's last CREDIT lets op's data go now. */
static int fits(const struct op *op, const struct flow *f)
{
    /* Beyond the posted receives, three times as much again may be in
     * flight, within the window: a stream into a few receives that are
     * posted again as they fill must cover the WAN's round trip and the
     * relays' queues (over 20 ms one way, 1 Gbit/s: eight 1 MiB receives
     * streamed at 102 MB/s with once as much, at the eager 115 with three
     * times, docs/performance/README.md), while a rank that posts no
     * receive for this sender gets nothing but the window for small
     * messages. */
    uint64_t ahead = window();
    if (op->capacity > gc_settings_rndv_threshold() && 3 * f->posted < ahead)
        ahead = 3 * f->posted;
    return f->sent + eager_cost(op->capacity) <= f->taken + f->posted + ahead;
}

static struct flow *flow_to(const struct op *op)
{
    return flow_of((uint32_t)op->comm->grid_rank[op->peer]);
}

int gc_rndv_choose(struct op *op)
{
    /* Collectives post their receives before the data can come: they
     * stay eager, outside the window. */
    if (op->coll)
        return 0;
    struct flow *f = flow_to(op);
    /* Eager only, counted (the receiver counts every eager message): a
     * ready send's receive is posted by definition, and a buffered one
     * must complete without its receive, or MPI_Buffer_detach would wait
     * for a receive that the program posts only after it (an eager send
     * never waited). */
    if (!op->eager_only && !fits(op, f))
        return 1;
    f->sent += eager_cost(op->capacity);
    return 0;
}

/* Tell the sender `from` the receiver's totals once they grew by a
 * threshold-sized message (a posted receive above the threshold always
 * does).  Decreases are not told: a receive matched by an announced
 * message leaves its posted credit with the sender until the next CREDIT,
 * within the bound of the file's comment. */
static void tell(uint32_t from, uint32_t context)
{
    struct flow *f = flow_of(from);
    uint64_t step = eager_cost(gc_settings_rndv_threshold());
    if (window() / 2 < step)
        step = window() / 2;
    if (f->took + f->holds < f->told + step)
        return;
    f->told = f->took + f->holds;
    unsigned char msg[CREDIT_BYTES] = {RNDV_CREDIT};
    put_u64(msg + 8, f->took);
    put_u64(msg + 16, f->holds);
    gc_engine_send_ack_context(from, context, 0, msg, CREDIT_BYTES);
}

void gc_rndv_taken(const struct rx *rx)
{
    uint32_t cls = rx->info.context_id % GC_CTX_STRIDE;
    /* An announced message counts once its data is here (send_data). */
    if ((rx->rndv && !rx->receiving && !rx->arrived) ||
        (cls != GC_CTX_P2P && cls != GC_CTX_SYNC))
        return;
    uint32_t from = rx->info.src_rank;
    if (from >= (uint32_t)gc_world.size)
        return;
    flow_of(from)->took += eager_cost(rx->info.msg_len);
    tell(from, rx->info.context_id);
}

void gc_rndv_posted(struct op *op)
{
    if (op->coll || op->peer == MPI_ANY_SOURCE || op->matched ||
        !can_match_remote(op))
        return;
    uint32_t from = (uint32_t)op->comm->grid_rank[op->peer];
    op->credit = eager_cost(op->capacity);
    flow_of(from)->holds += op->credit;
    tell(from, op->comm->context);
}

void gc_rndv_unposted(struct op *op)
{
    if (op->credit == 0)
        return;
    flow_to(op)->holds -= op->credit;
    op->credit = 0;
}

/* The relay keeps the pair's order: the latest CREDIT is the receiver's
 * latest state, whether its totals grew or not. */
static void credit_arrived(const struct gc_rc_msg_info *info,
                           const unsigned char *p)
{
    if (info->src_rank >= (uint32_t)gc_world.size)
        return;
    struct flow *f = flow_of(info->src_rank);
    f->taken = get_u64(p + 8);
    f->posted = get_u64(p + 16);
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

/* Counted as an eager message's, asked or pushed, and by the receiver as
 * it takes it: data pushed before its receive is held like eager data. */
static void send_data(struct op *op)
{
    int32_t s = seq_tag(gc_rc_send_seq(op->wire));
    if (gc_rc_isend(gc_world.rc, (uint32_t)op->comm->grid_rank[op->peer],
                    op->comm->context + GC_CTX_ACK, data_tag(s), op->rndv_data,
                    op->capacity, &op->bulk) != 0)
        gc_fatal_relay("sending to another site");
    flow_to(op)->sent += eager_cost(op->capacity);
}

int gc_rndv_send_done(struct op *op)
{
    if (!gc_rc_send_done(op->wire))
        return 0;
    /* Not once a cancel is asked: the receiver may withdraw the message,
     * and data after its answer would belong to nothing.  Pushed when the
     * receiver's credit has grown to hold it since the RTS (a stream that
     * outran the CREDIT of the receives posted again meanwhile: waiting
     * for the CTS would cost a round trip behind the data before it), or
     * unasked after GRIDCOLL_RNDV_PUSH_MS. */
    if (op->bulk == NULL && !op->cancel_sent) {
        int push_ms = gc_settings_rndv_push_ms();
        if (fits(op, flow_to(op)) ||
            (!op->rndv_heard && push_ms > 0 &&
             gc_now_ns() - op->rndv_since_ns >= (uint64_t)push_ms * 1000000u))
            send_data(op);
    }
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
    /* The receive stays credit until its data comes (gc_rndv_data_alloc):
     * the sender counts the data as it sends it. */
    if (rx->receiving || rx->arrived) {
        gc_rndv_unposted(rx->op);
        gc_rndv_taken(rx); /* pushed, and here already */
    }
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
    if (info->msg_len == CREDIT_BYTES && p[0] == RNDV_CREDIT) {
        credit_arrived(info, p);
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
    if (op != NULL) {
        gc_rndv_unposted(op);
        gc_rndv_taken(rx);
    }
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
    free(rndv.flow);
    rndv.flow = NULL;
}
