/*
 * Links: the WAN side of the relay.  One link per peer site, made of K
 * TCP streams (TLS 1.3 by default).  docs/protocol.md is the contract;
 * this file is its relay-to-relay half.
 *
 * Reliability: every DATA chunk gets a link sequence number and stays in
 * the re-send queue until the peer acknowledges it cumulatively.  When a
 * stream breaks, the chunks it carried go out again on the streams still
 * up (or on the next one to come up); the receiver drops what it already
 * has and re-orders the rest, so each chunk is delivered exactly once and
 * in link order, which keeps every source/destination pair in send order.
 *
 * Flow control: a chunk for remote rank r leaves only within the credit
 * the peer granted for r; the peer returns credit (CREDIT, cumulative
 * totals, so a lost frame is repaired by the next) once r's session took
 * the bytes.  One slow rank therefore never stalls the others.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gc_log.h"
#include "relay.h"

#define REORDER_MAX_AHEAD   (1u << 22) /* chunks beyond recv_cum accepted */
#define HANDSHAKE_TIMEOUT_S 10
#define PONG_MAX_BACKLOG    (4u << 20) /* stream output beyond: no PONG */

/* How a chunk goes out: the first time, again after its stream broke
 * (§8.3 of docs/protocol.md), or as the redundant second copy a lossy
 * link sends in a burst; re-sent chunks and copies carry GC_FLAG_RESENT. */
enum transmit_kind { TRANSMIT_FIRST, TRANSMIT_RESEND, TRANSMIT_COPY };

static void stream_transmit(struct stream *st, struct chunk *c,
                            enum transmit_kind kind);
static void stream_down(struct stream *st, const char *why);
static void stream_dial(struct stream *st);
static void stream_connected(struct stream *st);
static void set_stream_watermark(struct stream *st);
static void on_stream_read(struct bufferevent *bev, void *arg);
static void on_stream_write(struct bufferevent *bev, void *arg);
static void on_stream_event(struct bufferevent *bev, short events, void *arg);
static void send_error(struct stream *st, enum gc_error_code code,
                       const char *text);
static void refuse_pending(struct stream *st);

static const struct relay_config *cfg_of(const struct link *link)
{
    return link->relay->cfg;
}

static uint32_t peer_rank_index(const struct job_peer *jp, uint32_t rank)
{
    return rank - jp->first_rank;
}

/* ---- per-link state --------------------------------------------------- */

static void drop_queues(struct link *link)
{
    struct chunk *c;
    while ((c = TAILQ_FIRST(&link->resend)) != NULL) {
        TAILQ_REMOVE(&link->resend, c, entry);
        chunk_unref(c);
    }
    for (uint64_t i = 0; i < link->reorder_cap; i++) {
        if (link->reorder[i] != NULL) {
            chunk_unref(link->reorder[i]);
            link->reorder[i] = NULL;
        }
    }
    link->unacked_bytes = 0;
    link->reorder_bytes = 0;
}

/* Forget everything about the peer's previous incarnation. */
static void link_reset(struct link *link)
{
    drop_queues(link);
    link->next_link_seq = 1;
    link->recv_cum = 0;
    link->acked_sent = 0;
    link->peer_epoch = 0;
    link->generation++;
    job_link_reset(link);
}

/*
 * The stream with the least data queued in user space; ties go round-robin
 * from the last pick, so a link whose kernel buffers absorb everything
 * (short RTT) still spreads a burst over all its streams.  A stream whose
 * kernel buffer is full (long RTT, loss) keeps data queued here and is
 * passed over until it drains.  `except` (or NULL) is never picked.
 */
static struct stream *least_loaded_stream(struct link *link,
                                          const struct stream *except)
{
    struct stream *best = NULL;
    size_t best_len = SIZE_MAX;
    for (uint32_t n = 1; n <= link->stream_count; n++) {
        uint32_t i = (link->last_stream + n) % link->stream_count;
        struct stream *st = &link->streams[i];
        if (st->state != STREAM_UP || st == except)
            continue;
        size_t len = evbuffer_get_length(bufferevent_get_output(st->bev));
        if (len < best_len) {
            best = st;
            best_len = len;
        }
    }
    if (best != NULL)
        link->last_stream = (uint32_t)best->index;
    return best;
}

int link_streams_up(const struct link *link)
{
    int up = 0;
    for (uint32_t i = 0; i < link->stream_count; i++)
        up += link->streams[i].state == STREAM_UP;
    return up;
}

int link_idle(const struct link *link)
{
    return (TAILQ_EMPTY(&link->resend) && link->sched.bytes == 0) ||
           link->state == LINK_LOST;
}

void link_wake_waiters(struct link *link)
{
    struct session *s;
    while ((s = TAILQ_FIRST(&link->waiters)) != NULL) {
        TAILQ_REMOVE(&link->waiters, s, wait_entry);
        s->blocked_link = NULL;
        session_wake(s);
    }
}

void link_send_control(struct link *link, const struct gc_frame_header *h,
                       const void *payload)
{
    struct stream *st = least_loaded_stream(link, NULL);
    if (st != NULL)
        frame_send(st->bev, h, payload);
}

/* ACK everything delivered in order, and return credit ranks freed. */
static void flush_acks_and_credit(struct link *link, int all_credit)
{
    if (link_streams_up(link) == 0)
        return;
    if (link->recv_cum > link->acked_sent) {
        struct gc_frame_header ack = {.type = GC_FRAME_ACK,
                                      .job_id = link->relay->link_job_id,
                                      .link_seq = link->recv_cum};
        link_send_control(link, &ack, NULL);
        link->acked_sent = link->recv_cum;
    }
    struct job *job;
    TAILQ_FOREACH(job, &link->relay->jobs, entry)
    {
        struct job_peer *jp = job_peer_on_link(job, link);
        if (jp == NULL)
            continue;
        for (uint32_t i = 0; i < job->rank_count; i++) {
            if (jp->returned_total[i] == jp->returned_sent[i] &&
                !(all_credit && jp->returned_total[i] > 0))
                continue;
            struct gc_frame_header credit = {.type = GC_FRAME_CREDIT,
                                             .job_id = job->id,
                                             .dst_rank = job->first_rank + i,
                                             .msg_len = jp->returned_total[i]};
            link_send_control(link, &credit, NULL);
            jp->returned_sent[i] = jp->returned_total[i];
        }
    }
}

static void on_ack_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush_acks_and_credit(arg, 0);
}

static void schedule_ack(struct link *link, int now)
{
    if (now) {
        event_active(link->ack_timer, EV_TIMEOUT, 0);
        return;
    }
    if (!evtimer_pending(link->ack_timer, NULL)) {
        uint32_t ms = cfg_of(link)->ack_interval_ms;
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        evtimer_add(link->ack_timer, &tv);
    }
}

void link_credit_returned(struct job_peer *jp, uint32_t local_rank_index,
                          uint64_t bytes)
{
    jp->returned_total[local_rank_index] += bytes;
    uint64_t unsent = jp->returned_total[local_rank_index] -
                      jp->returned_sent[local_rank_index];
    /* Return big amounts at once so the sender never idles on credit. */
    schedule_ack(jp->link, unsent >= cfg_of(jp->link)->rank_credit / 4);
}

/* ---- sending ---------------------------------------------------------- */

static uint64_t credit_available(const struct job_peer *jp, uint32_t idx)
{
    /* The lone chunk larger than the whole credit that link_can_accept
     * lets go (wan.chunk_size above flow.rank_credit) takes consumed past
     * the limit: no credit is left then.  The plain difference wrapped
     * round to ~2^64 and let every later chunk through without credit (a
     * 256 MiB flood towards a rank that did not read piled up in its
     * relay with flow.rank_credit=64K: integration.mpi_stress). */
    uint64_t limit = jp->link->peer_credit + jp->credit_returned[idx];
    return jp->credit_consumed[idx] >= limit ? 0
                                             : limit - jp->credit_consumed[idx];
}

int link_can_accept(struct job_peer *jp, const struct chunk *c)
{
    struct link *link = jp->link;
    const struct relay_config *cfg = cfg_of(link);
    if (link->peer_epoch == 0)
        return 0; /* the peer has not told us its credit yet */
    uint64_t cost = chunk_cost(c);
    /* Each job queues up to the high watermark for the scheduler; the
     * streams and the window take from the queues (link_pump). */
    if (jp->sched.bytes > 0 &&
        jp->sched.bytes + cost > cfg->link_high_watermark)
        return 0;
    /* The job's budget at the peer bounds all its ranks together. */
    if (jp->job_in_flight > 0 && jp->job_in_flight + cost > jp->job_credit)
        return 0;
    uint32_t idx = peer_rank_index(jp, c->hdr.dst_rank);
    int nothing_in_flight =
        jp->credit_consumed[idx] == jp->credit_returned[idx];
    /* A lone chunk larger than the whole credit may always go. */
    return credit_available(jp, idx) >= cost || nothing_in_flight;
}

/*
 * bbr paces a burst at its bandwidth estimate, the largest delivery rate
 * of the last 10 round trips.  Between a collective's bursts a stream
 * carries small frames, whose samples are all that stays in that window,
 * so the next burst crawls: one-way 64 KiB over 8 streams took 35 ms where
 * 24 suffice on a 20 ms link.  Re-initialising the congestion control of a
 * stream with next to nothing in flight (SIOCOUTQ: at most a few control
 * frames unsent or unacknowledged) starts the burst from STARTUP, paced
 * after the congestion window, which idling did not shrink.  The few
 * frames matter when data flows both ways: the acknowledgements a relay
 * just sent for the peer's burst are still in flight when its own starts,
 * and waiting for none left an exchange of 64 KiB each way at 26 ms on 8
 * streams, 23-24 with them allowed.  Any other congestion control is left
 * alone, and so is a stream whose round trip is too short for pacing to
 * cost a burst more than these system calls.
 */
#define RESTART_MIN_RTT_US 1000
#define RESTART_MAX_OUTQ   1024 /* bytes: a few control frames */

static void restart_idle_bbr(struct stream *st)
{
    struct relay *relay = st->relay;
    if (!relay->cfg->tcp_restart_after_idle || relay->cc_restart_failed ||
        st->tcp_rtt_us < RESTART_MIN_RTT_US ||
        evbuffer_get_length(bufferevent_get_output(st->bev)) > 0)
        return;
    int fd = bufferevent_getfd(st->bev), queued = -1;
    char name[16] = ""; /* the kernel's TCP_CA_NAME_MAX */
    socklen_t len = sizeof name;
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || queued > RESTART_MAX_OUTQ ||
        getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0 ||
        strcmp(name, "bbr") != 0)
        return;
    /* Setting the algorithm a socket has is a no-op: go through reno. */
    const char *failed = NULL;
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4) != 0)
        failed = "switching to reno";
    else if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "bbr", 3) != 0)
        failed = "back to bbr (the stream keeps reno until it reconnects)";
    if (failed != NULL) {
        gc_log_warn("link %s: restarting bbr on an idle stream failed, %s: "
                    "%s; tcp.restart_after_idle is off from now on",
                    st->link->peer->name, failed, strerror(errno));
        relay->cc_restart_failed = 1;
        return;
    }
    st->link->cc_restarts++;
}

/* Send `c` on the least loaded stream but `except`, at once if nothing
 * waits for the link; the stream, or NULL when none is up. */
static struct stream *transmit_now(struct link *link, struct chunk *c,
                                   const struct stream *except,
                                   enum transmit_kind kind)
{
    struct stream *st = least_loaded_stream(link, except);
    if (st == NULL)
        return NULL;
    restart_idle_bbr(st);
    size_t queued_before = evbuffer_get_length(bufferevent_get_output(st->bev));
    stream_transmit(st, c, kind);
    if (TAILQ_EMPTY(&link->waiters))
        relay_write_small_now(st->bev, queued_before);
    return st;
}

/*
 * A burst after a quiet spell is latency-bound: a segment TCP loses in it
 * costs the whole burst a round trip (the loss is noticed a round trip
 * after it happened), unless a second copy of the chunk, on another
 * stream, gets through; random loss rarely hits both.  Worth it only on a
 * link that loses segments at all, while the burst is small enough that
 * the copies use capacity the link would leave idle, and for messages big
 * enough to be hit, or so small that they travel alone: no later segment
 * tells TCP of the loss, so it waits for its tail-loss probe or its
 * retransmission timeout (2 round trips to 200 ms and more), where a
 * second copy costs one more small segment.
 */
#define LONE_SEGMENT_PAYLOAD 1024

static int worth_a_copy(const struct link *link, const struct chunk *c)
{
    const struct relay_config *cfg = cfg_of(link);
    return link->unacked_bytes <= cfg->redundant_bytes &&
           (c->hdr.msg_len >= cfg->redundant_min_message ||
            c->hdr.msg_len <= LONE_SEGMENT_PAYLOAD) &&
           gc_now_ns() < link->lossy_until_ns;
}

/* ---- the scheduler: deficit round robin over jobs (link_drr.c) -------- */

/*
 * A job's turn is worth one quantum, a full chunk.  A bulk chunk goes
 * only to a stream with at most one chunk queued in user space, so what
 * sits in front of a newcomer is bounded; a small chunk (at most
 * RELAY_SMALL_FRAME) needs no room and goes on its job's turn at once, so
 * a job's small messages wait behind another job's bulk for about one
 * chunk per stream, not behind its whole queue.
 */
static uint64_t quantum(const struct link *link)
{
    return (uint64_t)cfg_of(link)->chunk_size + GC_HEADER_SIZE;
}

static int is_small(const struct chunk *c)
{
    return c->hdr.payload_len <= RELAY_SMALL_FRAME;
}

/* A stream that can take a bulk chunk now: the least loaded, if it has
 * less than one chunk queued. */
static int bulk_room(struct link *link)
{
    size_t least = SIZE_MAX;
    for (uint32_t i = 0; i < link->stream_count; i++) {
        const struct stream *st = &link->streams[i];
        if (st->state != STREAM_UP)
            continue;
        size_t len = evbuffer_get_length(bufferevent_get_output(st->bev));
        if (len < least)
            least = len;
    }
    return least < quantum(link);
}

static int window_open(const struct link *link, const struct chunk *c)
{
    return link->unacked_bytes == 0 ||
           link->unacked_bytes + chunk_cost(c) <= cfg_of(link)->link_window;
}

/* Give `c` its link sequence number and a stream (or the re-send queue's
 * care until one is up). */
static void transmit_first(struct link *link, struct chunk *c)
{
    c->hdr.link_seq = link->next_link_seq++;
    c->stream_index = CHUNK_UNSENT;
    link->unacked_bytes += chunk_cost(c);
    TAILQ_INSERT_TAIL(&link->resend, c, entry);
    struct stream *first = transmit_now(link, c, NULL, TRANSMIT_FIRST);
    if (first != NULL && worth_a_copy(link, c))
        transmit_now(link, c, first, TRANSMIT_COPY);
}

/* Sessions whose job's queue drained to the low watermark read again
 * (those waiting for credit too: they check it again). */
static void wake_queue_waiters(struct link *link)
{
    uint64_t low = cfg_of(link)->link_low_watermark;
    struct session *s, *next;
    for (s = TAILQ_FIRST(&link->waiters); s != NULL; s = next) {
        next = TAILQ_NEXT(s, wait_entry);
        const struct job_peer *jp = job_peer_on_link(s->job, link);
        if (jp != NULL && jp->sched.bytes > low)
            continue;
        TAILQ_REMOVE(&link->waiters, s, wait_entry);
        s->blocked_link = NULL;
        session_wake(s);
    }
}

static int may_send(void *arg, const struct chunk *c)
{
    struct link *link = arg;
    return window_open(link, c) && (is_small(c) || bulk_room(link));
}

static void send_first(void *arg, struct chunk *c)
{
    transmit_first(arg, c); /* the queue's reference moves */
}

/* Serve the jobs' queues while the streams and the window have room. */
static void link_pump(struct link *link)
{
    if (link_streams_up(link) == 0)
        return;
    if (drr_serve(&link->sched, quantum(link), may_send, send_first, link))
        wake_queue_waiters(link);
}

void link_send_chunk(struct link *link, struct chunk *c)
{
    struct job_peer *jp = job_peer_on_link(c->job, link);
    chunk_ref(c);
    jp->credit_consumed[peer_rank_index(jp, c->hdr.dst_rank)] += chunk_cost(c);
    jp->job_in_flight += chunk_cost(c);
    jp->bytes_out += c->hdr.payload_len;
    jp->chunks_out++;
    drr_push(&link->sched, &jp->sched, c);
    link_pump(link);
}

void link_drop_job_queue(struct job_peer *jp)
{
    drr_drop(&jp->link->sched, &jp->sched);
}

static void on_stream_written(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    chunk_unref(arg);
}

static void stream_transmit(struct stream *st, struct chunk *c,
                            enum transmit_kind kind)
{
    struct link *link = st->link;
    struct gc_frame_header h = c->hdr;
    h.flags = (uint16_t)((h.flags & GC_FLAG_LAST_CHUNK) |
                         (kind != TRANSMIT_FIRST ? GC_FLAG_RESENT : 0));
    uint8_t raw[GC_HEADER_SIZE];
    gc_header_encode(&h, raw);
    struct evbuffer *out = bufferevent_get_output(st->bev);
    evbuffer_add(out, raw, sizeof raw);
    if (h.payload_len > 0) {
        chunk_ref(c);
        if (evbuffer_add_reference(out, c->data, h.payload_len,
                                   on_stream_written, c) != 0)
            chunk_unref(c);
    }
    st->bytes_out += h.payload_len;
    link->bytes_out += h.payload_len;
    link->chunks_out++;
    /* A copy's stream is not the chunk's: if it breaks, the first copy
     * still carries the chunk. */
    if (kind == TRANSMIT_COPY)
        link->chunks_copied++;
    else
        c->stream_index = st->index;
    if (kind == TRANSMIT_RESEND)
        link->chunks_resent++;
}

/* Send every unacknowledged chunk that is not on a live stream. */
static void resend_orphans(struct link *link)
{
    struct chunk *c;
    TAILQ_FOREACH(c, &link->resend, entry)
    {
        if (c->stream_index != CHUNK_UNSENT &&
            link->streams[c->stream_index].state == STREAM_UP)
            continue;
        struct stream *st = least_loaded_stream(link, NULL);
        if (st == NULL)
            return;
        stream_transmit(st, c,
                        c->stream_index == CHUNK_UNSENT ? TRANSMIT_FIRST
                                                        : TRANSMIT_RESEND);
    }
}

/* ---- receiving -------------------------------------------------------- */

static int reorder_grow(struct link *link, uint64_t ahead)
{
    uint64_t cap = link->reorder_cap;
    while (cap < ahead)
        cap *= 2;
    if (cap == link->reorder_cap)
        return 0;
    struct chunk **ring = calloc(cap, sizeof *ring);
    if (ring == NULL)
        return -1;
    /* Re-index: slot = seq % cap, for the seqs after recv_cum. */
    for (uint64_t i = 0; i < link->reorder_cap; i++) {
        struct chunk *c = link->reorder[i];
        if (c != NULL)
            ring[c->hdr.link_seq & (cap - 1)] = c;
    }
    free(link->reorder);
    link->reorder = ring;
    link->reorder_cap = cap;
    return 0;
}

static void deliver_in_order(struct link *link)
{
    struct relay *relay = link->relay;
    for (;;) {
        uint64_t next = link->recv_cum + 1;
        struct chunk **slot = &link->reorder[next & (link->reorder_cap - 1)];
        struct chunk *c = *slot;
        if (c == NULL || c->hdr.link_seq != next)
            return;
        *slot = NULL;
        link->recv_cum = next;
        link->reorder_bytes -= c->hdr.payload_len;
        /* A chunk of a job that is not (or no longer) here only kept its
         * place in the link order. */
        if (c->job != NULL)
            relay_deliver_local(relay, job_local_slot(c->job, c->hdr.dst_rank),
                                c);
        chunk_unref(c);
    }
}

static int handle_peer_data(struct stream *st, const struct gc_frame_header *h,
                            struct evbuffer *in)
{
    struct link *link = st->link;
    struct relay *relay = link->relay;
    struct job *job = job_find(relay, h->job_id);
    struct job_peer *jp = job != NULL ? job_peer_on_link(job, link) : NULL;
    if (job == NULL && !relay->service) {
        send_error(st, GC_ERR_BAD_FRAME, "DATA for another job");
        stream_down(st, "peer sent DATA for another job");
        return -1;
    }
    /* A job known here must be the peer's job too, between its ranks. */
    if (h->link_seq == 0 ||
        (job != NULL && (jp == NULL || h->src_rank < jp->first_rank ||
                         h->src_rank - jp->first_rank >= jp->rank_count ||
                         job_local_slot(job, h->dst_rank) == NULL))) {
        send_error(st, GC_ERR_BAD_RANK, "DATA with ranks outside the link");
        stream_down(st, "peer sent DATA with ranks outside its range");
        return -1;
    }
    uint64_t seq = h->link_seq;
    if (seq <= link->recv_cum ||
        (seq - link->recv_cum <= link->reorder_cap &&
         link->reorder[seq & (link->reorder_cap - 1)] != NULL &&
         link->reorder[seq & (link->reorder_cap - 1)]->hdr.link_seq == seq)) {
        link->chunks_duplicate++;
        evbuffer_drain(in, GC_HEADER_SIZE + h->payload_len);
        schedule_ack(link, 0); /* copies (wan.redundant_bytes) come twice */
        return 0;
    }
    if (seq - link->recv_cum > REORDER_MAX_AHEAD ||
        reorder_grow(link, seq - link->recv_cum) != 0) {
        stream_down(st, "peer ran too far ahead of the link window");
        return -1;
    }
    /* A service keeps the link order for a job that already ended here
     * (the peer learns it from our JOB withdrawal): the chunk's place,
     * not its bytes. */
    struct gc_frame_header kept = *h;
    if (job == NULL) {
        kept.payload_len = 0;
        relay->chunks_unknown_job++;
    }
    struct chunk *c = chunk_new(relay, job, &kept);
    if (c == NULL) {
        stream_down(st, "out of memory");
        return -1;
    }
    c->origin_link = link;
    c->origin_generation = link->generation;
    evbuffer_drain(in, GC_HEADER_SIZE);
    if (job != NULL)
        evbuffer_remove(in, c->data, h->payload_len);
    else
        evbuffer_drain(in, h->payload_len);
    st->bytes_in += h->payload_len;
    link->bytes_in += h->payload_len;
    link->chunks_in++;
    if (jp != NULL) {
        jp->bytes_in += h->payload_len;
        jp->chunks_in++;
    }
    link->reorder[seq & (link->reorder_cap - 1)] = c;
    link->reorder_bytes += c->hdr.payload_len;
    deliver_in_order(link);
    uint64_t pending = link->recv_cum - link->acked_sent;
    schedule_ack(link, pending >= 64);
    return 0;
}

static void handle_ack(struct link *link, uint64_t acked)
{
    struct chunk *c;
    link->acks_in++;
    while ((c = TAILQ_FIRST(&link->resend)) != NULL &&
           c->hdr.link_seq <= acked) {
        TAILQ_REMOVE(&link->resend, c, entry);
        link->unacked_bytes -= chunk_cost(c);
        chunk_unref(c);
    }
    link_pump(link);
}

static void handle_credit(struct link *link, const struct gc_frame_header *h)
{
    struct job *job = job_find(link->relay, h->job_id);
    struct job_peer *jp = job != NULL ? job_peer_on_link(job, link) : NULL;
    if (jp == NULL || h->dst_rank < jp->first_rank ||
        h->dst_rank - jp->first_rank >= jp->rank_count)
        return;
    uint32_t idx = peer_rank_index(jp, h->dst_rank);
    /* Totals only grow; an older frame arriving late changes nothing. */
    if (h->msg_len > jp->credit_returned[idx] &&
        h->msg_len <= jp->credit_consumed[idx]) {
        jp->job_in_flight -= h->msg_len - jp->credit_returned[idx];
        jp->credit_returned[idx] = h->msg_len;
    }
    link->credits_in++;
    link_wake_waiters(link);
}

/* ---- handshake -------------------------------------------------------- */

/* The dialer proposes a version range (chosen = 0); the answer names the
 * chosen version in both fields. */
static void send_hello(struct stream *st, uint16_t chosen)
{
    struct relay *relay = st->relay;
    const struct relay_config *cfg = relay->cfg;
    const struct link *link = st->link != NULL ? st->link : st->claimed;
    struct gc_hello hello = {
        .version_min = chosen ? chosen : GC_PROTO_VERSION_MIN,
        .version_max = chosen ? chosen : GC_PROTO_VERSION,
        .capabilities = GC_CAPS_ALL,
        .role = GC_ROLE_RELAY,
        .stream_index = (uint32_t)st->index,
        .stream_count = link != NULL ? link->stream_count : 0,
        .max_chunk = cfg->chunk_size,
        .epoch = link != NULL ? link->local_epoch : 0,
        .credit = cfg->rank_credit,
    };
    memcpy(hello.nonce, st->my_nonce, GC_NONCE_SIZE);
    snprintf(hello.name, sizeof hello.name, "%s", cfg->site_name);
    frame_send_hello(st->bev, relay->link_job_id, 0, &hello);
}

static void send_error(struct stream *st, enum gc_error_code code,
                       const char *text)
{
    uint8_t frame[GC_HEADER_SIZE + 256];
    size_t n =
        gc_error_frame(st->relay->link_job_id, code, text, frame, sizeof frame);
    bufferevent_write(st->bev, frame, n);
    st->error_sent = 1;
}

/* The peer's incarnation: a new one means its old state is gone. */
static void adopt_peer_epoch(struct link *link, const struct gc_hello *hello)
{
    if (link->peer_epoch == hello->epoch)
        return;
    if (link->peer_epoch != 0) {
        gc_log_warn("link %s: peer relay restarted or reset the link; "
                    "data in flight is lost",
                    link->peer->name);
        job_link_lost(link, 1, "peer relay restarted");
        for (uint32_t i = 0; i < link->stream_count; i++)
            if (link->streams[i].state == STREAM_UP)
                stream_down(&link->streams[i], "stale after peer restart");
        link_reset(link);
    }
    link->peer_epoch = hello->epoch;
    link->peer_credit = hello->credit;
}

static void stream_up(struct stream *st)
{
    struct link *link = st->link;
    st->state = STREAM_UP;
    st->backoff_ms = 0;
    st->retrans_seen = 0; /* a new socket counts from 0 */
    st->tcp_rtt_us = 0;
    st->last_rx_ns = gc_now_ns();
    bufferevent_set_timeouts(st->bev, NULL, NULL);
    if (link->state != LINK_UP) {
        gc_log_info("link %s up (%s)", link->peer->name,
                    link->relay->transport->name);
        link->state = LINK_UP;
        job_announce_all(link);
    }
    gc_log_debug("link %s: stream %d up", link->peer->name, st->index);
    /* A new stream may be the first that can carry what waited. */
    resend_orphans(link);
    flush_acks_and_credit(link, 1);
    link_pump(link);
    /* Sessions that waited for the peer's credit (link_can_accept). */
    link_wake_waiters(link);
}

/* An accepted stream's HELLO names a site: may it speak for that site?
 * The link, or NULL with an ERROR queued.  Nothing changes yet. */
static struct link *claim_link(struct stream *pending,
                               const struct gc_hello *hello)
{
    struct relay *relay = pending->relay;
    struct link *link = relay_link_by_name(relay, hello->name);
    if (link == NULL) {
        gc_log_warn("WAN connection from %s: unknown site '%s'",
                    pending->peer_addr, hello->name);
        send_error(pending, GC_ERR_AUTH, "unknown site");
        return NULL;
    }
    if (link->dialer) {
        gc_log_warn("WAN connection from %s claims site '%s', which we dial",
                    pending->peer_addr, hello->name);
        send_error(pending, GC_ERR_PROTOCOL, "this relay dials you");
        return NULL;
    }
    if (!relay->transport->peer_matches(pending->bev, hello->name)) {
        gc_log_warn("WAN connection from %s: certificate does not match site "
                    "'%s'",
                    pending->peer_addr, hello->name);
        send_error(pending, GC_ERR_AUTH, "certificate does not match site");
        return NULL;
    }
    if (hello->stream_index >= 64 || hello->stream_count == 0 ||
        hello->stream_count > 64 ||
        hello->stream_index >= hello->stream_count) {
        send_error(pending, GC_ERR_PROTOCOL, "bad stream index");
        return NULL;
    }
    return link;
}

/*
 * The accepted stream proved the peer (AUTH): only now does it take its
 * place in the link, replacing a stream of the same index, and only now
 * may its HELLO's epoch reset the link.  Before, one unauthenticated
 * HELLO with a fresh epoch read as "peer relay restarted" and ended every
 * job on the link.
 */
static struct stream *attach_accepted(struct stream *pending)
{
    struct relay *relay = pending->relay;
    struct link *link = pending->claimed;
    const struct gc_hello *hello = &pending->peer_hello;
    struct stream *st = &link->streams[hello->stream_index];
    if (st->state != STREAM_DOWN)
        stream_down(st, "replaced by a new connection");
    if (link->stream_count < hello->stream_count)
        link->stream_count = hello->stream_count;
    TAILQ_REMOVE(&relay->pending_streams, pending, pending_entry);
    relay->handshakes--;
    st->bev = pending->bev;
    st->state = STREAM_HANDSHAKE;
    st->is_dialer = 0;
    st->peer_hello = *hello;
    memcpy(st->peer_nonce, pending->peer_nonce, GC_NONCE_SIZE);
    memcpy(st->my_nonce, pending->my_nonce, GC_NONCE_SIZE);
    snprintf(st->peer_addr, sizeof st->peer_addr, "%s", pending->peer_addr);
    free(pending);
    bufferevent_setcb(st->bev, on_stream_read, on_stream_write, on_stream_event,
                      st);
    set_stream_watermark(st);
    adopt_peer_epoch(link, &st->peer_hello);
    return st;
}

/*
 * 0: go on (with *next, which differs from `st` once an accepted stream
 * joined its link), -1: the stream was closed, -2: the unattached accepted
 * stream must be refused (its ERROR, if any, is queued).
 */
static int handle_handshake(struct stream *st, const struct gc_frame_header *h,
                            const uint8_t *payload, struct stream **next)
{
    *next = st;
    struct relay *relay = st->relay;
    struct link *link = st->link != NULL ? st->link : st->claimed;
    struct gc_hello hello;
    uint8_t mac[GC_MAC_SIZE];
    if (h->type == GC_FRAME_ERROR) {
        gc_log_error("peer %s refused the stream: %s: %.*s", st->peer_addr,
                     gc_error_code_name((unsigned)h->tag), (int)h->payload_len,
                     (const char *)payload);
        goto fail;
    }
    if (h->type == GC_FRAME_HELLO && link == NULL) {
        /* An accepted stream's first frame. */
        if (gc_hello_decode(payload, h->payload_len, &hello) != 0 ||
            hello.role != GC_ROLE_RELAY) {
            send_error(st, GC_ERR_PROTOCOL, "malformed relay HELLO");
            goto fail;
        }
        if (hello.version_max < GC_PROTO_VERSION_MIN ||
            hello.version_min > GC_PROTO_VERSION) {
            send_error(st, GC_ERR_VERSION, "no common protocol version");
            goto fail;
        }
        st->claimed = claim_link(st, &hello);
        if (st->claimed == NULL)
            return -2;
        st->peer_hello = hello;
        st->index = (int)hello.stream_index;
        memcpy(st->peer_nonce, hello.nonce, GC_NONCE_SIZE);
        if (gc_random_bytes(st->my_nonce, GC_NONCE_SIZE) != 0) {
            send_error(st, GC_ERR_INTERNAL, "no randomness");
            return -2;
        }
        send_hello(st, hello.version_max < GC_PROTO_VERSION
                           ? hello.version_max
                           : (uint16_t)GC_PROTO_VERSION);
        return 0;
    }
    if (h->type == GC_FRAME_HELLO && st->is_dialer &&
        st->peer_hello.version_max == 0) {
        if (gc_hello_decode(payload, h->payload_len, &hello) != 0 ||
            hello.role != GC_ROLE_RELAY ||
            hello.version_max < GC_PROTO_VERSION_MIN ||
            hello.version_min > GC_PROTO_VERSION) {
            send_error(st, GC_ERR_PROTOCOL, "malformed relay HELLO");
            goto fail;
        }
        if (strcmp(hello.name, link->peer->name) != 0) {
            gc_log_error("link %s: peer answered as site '%s'",
                         link->peer->name, hello.name);
            send_error(st, GC_ERR_AUTH, "not the site dialled");
            goto fail;
        }
        st->peer_hello = hello;
        memcpy(st->peer_nonce, hello.nonce, GC_NONCE_SIZE);
        gc_auth_mac(relay->token, relay->token_len, GC_AUTH_LABEL_INITIATOR,
                    st->my_nonce, st->peer_nonce, 0, mac);
        struct gc_frame_header auth = {.type = GC_FRAME_AUTH,
                                       .job_id = relay->link_job_id,
                                       .payload_len = GC_MAC_SIZE};
        frame_send(st->bev, &auth, mac);
        return 0;
    }
    if (h->type == GC_FRAME_AUTH && st->claimed != NULL) {
        gc_auth_mac(relay->token, relay->token_len, GC_AUTH_LABEL_INITIATOR,
                    st->peer_nonce, st->my_nonce, 0, mac);
        if (!gc_auth_mac_equal(mac, payload)) {
            gc_log_warn("link %s: peer stream from %s has the wrong job token",
                        link->peer->name, st->peer_addr);
            send_error(st, GC_ERR_AUTH, "wrong job token");
            return -2;
        }
        st = *next = attach_accepted(st);
        gc_auth_mac(relay->token, relay->token_len, GC_AUTH_LABEL_RESPONDER,
                    st->peer_nonce, st->my_nonce, 0, mac);
        struct gc_frame_header ok = {.type = GC_FRAME_AUTH_OK,
                                     .job_id = relay->link_job_id,
                                     .payload_len = GC_MAC_SIZE};
        frame_send(st->bev, &ok, mac);
        stream_up(st);
        return 0;
    }
    if (h->type == GC_FRAME_AUTH_OK && st->is_dialer &&
        st->peer_hello.version_max != 0) {
        gc_auth_mac(relay->token, relay->token_len, GC_AUTH_LABEL_RESPONDER,
                    st->my_nonce, st->peer_nonce, 0, mac);
        if (!gc_auth_mac_equal(mac, payload)) {
            gc_log_error("link %s: peer failed to prove the job token",
                         link->peer->name);
            send_error(st, GC_ERR_AUTH, "wrong job token");
            goto fail;
        }
        adopt_peer_epoch(link, &st->peer_hello);
        stream_up(st);
        return 0;
    }
    send_error(st, GC_ERR_PROTOCOL, "unexpected frame during handshake");
fail:
    if (st->link == NULL)
        return -2;
    stream_down(st, "handshake failed");
    return -1;
}

/* ---- stream I/O ------------------------------------------------------- */

static int handle_up_frame(struct stream *st, const struct gc_frame_header *h,
                           struct evbuffer *in)
{
    struct link *link = st->link;
    if (h->type == GC_FRAME_DATA)
        return handle_peer_data(st, h, in);
    uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
    if (h->payload_len > sizeof payload) {
        stream_down(st, "oversized control frame");
        return -1;
    }
    evbuffer_drain(in, GC_HEADER_SIZE);
    evbuffer_remove(in, payload, h->payload_len);
    switch (h->type) {
    case GC_FRAME_ACK: handle_ack(link, h->link_seq); return 0;
    case GC_FRAME_CREDIT: handle_credit(link, h); return 0;
    case GC_FRAME_JOB: job_handle_frame(link, h, payload); return 0;
    case GC_FRAME_PING: {
        /* A peer that sends PINGs and does not read would grow our output
         * without bound; while it is backed up, the peer's own reads
         * (any byte) are what tells it we live. */
        if (evbuffer_get_length(bufferevent_get_output(st->bev)) >
            PONG_MAX_BACKLOG)
            return 0;
        struct gc_frame_header pong = {
            .type = GC_FRAME_PONG, .job_id = h->job_id, .msg_seq = h->msg_seq};
        frame_send(st->bev, &pong, NULL);
        return 0;
    }
    case GC_FRAME_PONG:
        if (st->ping_sent_ns != 0 && h->msg_seq == st->ping_sent_ns) {
            st->rtt_ns = gc_now_ns() - st->ping_sent_ns;
            st->ping_sent_ns = 0;
        }
        return 0;
    case GC_FRAME_ERROR:
        gc_log_error("link %s: peer reports %s: %.*s", link->peer->name,
                     gc_error_code_name((unsigned)h->tag), (int)h->payload_len,
                     (const char *)payload);
        stream_down(st, "peer reported an error");
        return -1;
    case GC_FRAME_BYE: stream_down(st, "peer said BYE"); return -1;
    default: stream_down(st, "unexpected frame type"); return -1;
    }
}

static void on_stream_read(struct bufferevent *bev, void *arg)
{
    struct stream *st = arg;
    struct relay *relay = st->relay;
    struct evbuffer *in = bufferevent_get_input(bev);
    st->rx_seen = 1;
    for (;;) {
        struct gc_frame_header h;
        enum gc_decode_status status;
        int r = frame_peek(in, &h, &status);
        if (r == 0)
            return;
        /* DATA, CREDIT and JOB frames name their job (checked by their
         * handlers); the link's own frames carry the link's job id. */
        int job_frame = h.type == GC_FRAME_DATA || h.type == GC_FRAME_CREDIT ||
                        h.type == GC_FRAME_JOB;
        if (r < 0 || (!job_frame && h.job_id != relay->link_job_id)) {
            char why[128];
            snprintf(why, sizeof why, "bad frame from peer: %s",
                     r < 0 ? gc_decode_status_str(status) : "wrong job id");
            relay->frames_rejected++;
            send_error(st,
                       r < 0 && status == GC_DECODE_BAD_VERSION
                           ? GC_ERR_VERSION
                           : GC_ERR_BAD_FRAME,
                       why);
            if (st->link == NULL) {
                gc_log_warn("WAN connection from %s: %s", st->peer_addr, why);
                refuse_pending(st);
            } else {
                stream_down(st, why);
            }
            return;
        }
        if (h.payload_len > GC_MAX_CONTROL_PAYLOAD && st->state != STREAM_UP) {
            relay->frames_rejected++;
            send_error(st, GC_ERR_PROTOCOL,
                       "DATA before the handshake finished");
            if (st->link == NULL)
                refuse_pending(st);
            else
                stream_down(st, "DATA before the handshake finished");
            return;
        }
        if (!frame_complete(bev, &h, 0))
            return;
        if (st->state == STREAM_UP) {
            if (handle_up_frame(st, &h, in) != 0)
                return;
            continue;
        }
        uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
        evbuffer_drain(in, GC_HEADER_SIZE);
        evbuffer_remove(in, payload, h.payload_len);
        struct stream *next;
        int rc = handle_handshake(st, &h, payload, &next);
        if (rc == -2) {
            refuse_pending(st);
            return;
        }
        if (rc != 0)
            return;
        st = next; /* an accepted stream now lives in its link */
    }
}

static void on_stream_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct stream *st = arg;
    if (st->link != NULL)
        link_pump(st->link);
}

static void log_tls_errors(struct stream *st, const char *what)
{
    char reason[512];
    int any = 0;
    while (st->relay->transport->next_failure(st->bev, reason, sizeof reason)) {
        gc_log_warn("%s %s: TLS: %s", what, st->peer_addr, reason);
        any = 1;
    }
    if (!any && EVUTIL_SOCKET_ERROR() != 0)
        gc_log_debug("%s %s: %s", what, st->peer_addr,
                     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void on_stream_event(struct bufferevent *bev, short events, void *arg)
{
    (void)bev;
    struct stream *st = arg;
    if (events & BEV_EVENT_CONNECTED) {
        if (st->is_dialer && st->state == STREAM_CONNECTING)
            stream_connected(st);
        return; /* TLS finished its handshake: HELLO is already queued */
    }
    if (st->link == NULL) {
        if (events & BEV_EVENT_ERROR)
            log_tls_errors(st, "WAN connection from");
        else if (events & BEV_EVENT_TIMEOUT)
            gc_log_warn("WAN connection from %s: no HELLO in time",
                        st->peer_addr);
        link_free_pending_stream(st);
        return;
    }
    if (events & BEV_EVENT_ERROR)
        log_tls_errors(st, st->is_dialer ? "stream to" : "stream from");
    stream_down(st, (events & BEV_EVENT_EOF)       ? "closed by peer"
                    : (events & BEV_EVENT_TIMEOUT) ? "handshake timeout"
                                                   : "connection error");
}

/* ---- stream lifecycle ------------------------------------------------- */

static void stream_down(struct stream *st, const char *why)
{
    struct link *link = st->link;
    int was_up = st->state == STREAM_UP;
    if (st->state == STREAM_DOWN)
        return;
    if (was_up)
        gc_log_warn("link %s: stream %d down: %s", link->peer->name, st->index,
                    why);
    else if (st->backoff_ms == 0) /* first failure; retries go to debug */
        gc_log_info("link %s: stream %d failed: %s", link->peer->name,
                    st->index, why);
    else
        gc_log_debug("link %s: stream %d failed again: %s", link->peer->name,
                     st->index, why);
    /* Safe inside this bufferevent's own callback: libevent defers the
     * final release until the callback returns.  An ERROR we queued still
     * goes out first. */
    if (st->bev != NULL && st->error_sent)
        relay_close_after_flush(link->relay, st->bev);
    else if (st->bev != NULL)
        bufferevent_free(st->bev);
    st->bev = NULL;
    st->error_sent = 0;
    if (st->connect_fd >= 0) {
        close(st->connect_fd);
        st->connect_fd = -1;
    }
    st->state = STREAM_DOWN;
    st->ping_sent_ns = 0;
    if (was_up)
        st->breaks++;
    if (link_streams_up(link) == 0 && link->state == LINK_UP) {
        link->state = LINK_DOWN;
        link->down_since_ns = gc_now_ns();
        gc_log_warn("link %s down: no stream left", link->peer->name);
    }
    resend_orphans(link);
    /* A relay on its way out (goodbyes sent) does not dial again. */
    if (st->is_dialer && !link->relay->exiting) {
        uint32_t min = cfg_of(link)->reconnect_min_ms;
        uint32_t max = cfg_of(link)->reconnect_max_ms;
        st->backoff_ms = st->backoff_ms == 0 ? min : st->backoff_ms * 2;
        if (st->backoff_ms > max)
            st->backoff_ms = max;
        struct timeval tv = {st->backoff_ms / 1000,
                             (st->backoff_ms % 1000) * 1000};
        evtimer_add(st->redial_timer, &tv);
    }
}

static void on_redial(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    stream_dial(arg);
}

static void set_stream_watermark(struct stream *st)
{
    const struct relay_config *cfg = cfg_of(st->link);
    /* on_stream_write fires when the stream can take a bulk chunk again
     * (link_pump). */
    bufferevent_setwatermark(st->bev, EV_WRITE, cfg->chunk_size / 2, 0);
}

/* TCP is up: wrap it in the transport (TLS) and start the handshake. */
static void stream_connected(struct stream *st)
{
    struct relay *relay = st->relay;
    evutil_socket_t fd = st->connect_fd;
    bufferevent_free(st->bev);
    st->connect_fd = -1;
    st->bev = relay->transport->wrap(relay, fd, 0, st->link->peer->name);
    if (st->bev == NULL) {
        close(fd);
        stream_down(st, "cannot set up the transport");
        return;
    }
    bufferevent_setcb(st->bev, on_stream_read, on_stream_write, on_stream_event,
                      st);
    set_stream_watermark(st);
    struct timeval hs = {HANDSHAKE_TIMEOUT_S, 0};
    bufferevent_set_timeouts(st->bev, &hs, NULL);
    bufferevent_enable(st->bev, EV_READ | EV_WRITE);
    st->state = STREAM_HANDSHAKE;
    /* A fresh nonce per dial: the peer's AUTH_OK proof covers it, so an
     * answer recorded from an earlier handshake cannot be replayed. */
    memset(&st->peer_hello, 0, sizeof st->peer_hello);
    if (gc_random_bytes(st->my_nonce, GC_NONCE_SIZE) != 0) {
        stream_down(st, "no randomness for the handshake");
        return;
    }
    send_hello(st, 0); /* TLS queues it until its own handshake is done */
}

static void stream_dial(struct stream *st)
{
    struct link *link = st->link;
    struct relay *relay = link->relay;
    char err[256];
    st->is_dialer = 1;
    st->state = STREAM_CONNECTING;
    gc_endpoint_format(&link->peer_endpoint, st->peer_addr,
                       sizeof st->peer_addr);
    /* Our own socket, so buffer sizes and congestion control are set
     * before the SYN (window scaling is negotiated there). */
    st->connect_fd =
        socket(link->peer_endpoint.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (st->connect_fd < 0) {
        stream_down(st, strerror(errno));
        return;
    }
    if (tune_wan_socket(relay->cfg, st->connect_fd, err, sizeof err) != 0) {
        stream_down(st, err);
        return;
    }
    evutil_make_socket_nonblocking(st->connect_fd);
    st->bev = bufferevent_socket_new(relay->base, st->connect_fd, 0);
    if (st->bev == NULL) {
        stream_down(st, "out of memory");
        return;
    }
    bufferevent_setcb(st->bev, NULL, NULL, on_stream_event, st);
    struct timeval hs = {HANDSHAKE_TIMEOUT_S, 0};
    bufferevent_set_timeouts(st->bev, &hs, &hs);
    bufferevent_enable(st->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(st->bev,
                                   (struct sockaddr *)&link->peer_endpoint.addr,
                                   (int)link->peer_endpoint.addr_len) != 0)
        stream_down(st, strerror(errno));
}

void link_wan_accept(struct relay *relay, evutil_socket_t fd,
                     const char *peer_addr)
{
    char err[256];
    if (!relay_admit_handshake(relay, "WAN connection", peer_addr)) {
        close(fd);
        return;
    }
    if (tune_wan_socket(relay->cfg, fd, err, sizeof err) != 0)
        gc_log_warn("WAN connection from %s: %s", peer_addr, err);
    evutil_make_socket_nonblocking(fd);
    struct stream *st = calloc(1, sizeof *st);
    if (st == NULL) {
        relay->handshakes--;
        close(fd);
        return;
    }
    st->relay = relay;
    st->index = -1;
    st->connect_fd = -1;
    snprintf(st->peer_addr, sizeof st->peer_addr, "%s", peer_addr);
    st->bev = relay->transport->wrap(relay, fd, 1, NULL);
    if (st->bev == NULL) {
        relay->handshakes--;
        close(fd);
        free(st);
        return;
    }
    TAILQ_INSERT_TAIL(&relay->pending_streams, st, pending_entry);
    struct timeval hs = {HANDSHAKE_TIMEOUT_S, 0};
    bufferevent_set_timeouts(st->bev, &hs, NULL);
    bufferevent_setcb(st->bev, on_stream_read, NULL, on_stream_event, st);
    bufferevent_enable(st->bev, EV_READ | EV_WRITE);
}

/* An accepted stream leaves the handshake table: closed at once, or
 * (refused) once the ERROR frame queued on it has left. */
static void drop_pending(struct stream *st, int flush)
{
    struct relay *relay = st->relay;
    TAILQ_REMOVE(&relay->pending_streams, st, pending_entry);
    relay->handshakes--;
    if (flush)
        relay_close_after_flush(relay, st->bev);
    else
        bufferevent_free(st->bev);
    free(st);
}

void link_free_pending_stream(struct stream *st)
{
    drop_pending(st, 0);
}

static void refuse_pending(struct stream *st)
{
    drop_pending(st, 1);
}

/* ---- link lifecycle --------------------------------------------------- */

/*
 * Every rank of a grid job may be waiting on the lost site, directly or
 * not, so every session of the jobs the link carries learns of it: an
 * error now instead of a hang.
 */
void link_fail_sessions(struct link *link, enum gc_error_code code,
                        const char *fmt, ...)
{
    struct relay *relay = link->relay;
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct session *s, *next;
    for (s = TAILQ_FIRST(&relay->sessions); s != NULL; s = next) {
        next = TAILQ_NEXT(s, entry);
        if (s->state == SESSION_ACTIVE &&
            job_peer_on_link(s->job, link) != NULL)
            session_fail(s, code, "%s", text);
    }
    link_wake_waiters(link);
}

/* How long one retransmission marks the link lossy (worth_a_copy). */
#define LOSSY_HOLD_NS (60ull * 1000000000ull)

/* What the kernel knows of a stream's socket (TLS or not, it is TCP):
 * retransmissions (worth_a_copy) and the smoothed RTT (restart_idle_bbr),
 * which unlike PING's is measured while data flows. */
static void sample_tcp_info(struct stream *st, uint64_t now)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    if (getsockopt(bufferevent_getfd(st->bev), IPPROTO_TCP, TCP_INFO, &info,
                   &len) != 0)
        return;
    if (info.tcpi_total_retrans > st->retrans_seen)
        st->link->lossy_until_ns = now + LOSSY_HOLD_NS;
    st->retrans_seen = info.tcpi_total_retrans;
    st->tcp_rtt_us = info.tcpi_rtt;
}

void link_tick(struct link *link, uint64_t now)
{
    const struct relay_config *cfg = cfg_of(link);
    uint64_t ping_ns = (uint64_t)cfg->ping_interval_ms * 1000000ull;
    uint64_t timeout_ns = (uint64_t)cfg->stream_timeout_ms * 1000000ull;
    for (uint32_t i = 0; i < link->stream_count; i++) {
        struct stream *st = &link->streams[i];
        if (st->state != STREAM_UP)
            continue;
        if (st->rx_seen) {
            st->last_rx_ns = now;
            st->rx_seen = 0;
        }
        if (now - st->last_rx_ns > timeout_ns) {
            stream_down(st, "no traffic within stream_timeout_ms");
            continue;
        }
        if (cfg->redundant_bytes > 0 || cfg->tcp_restart_after_idle)
            sample_tcp_info(st, now);
        if (st->ping_sent_ns == 0 && now - st->last_rx_ns >= ping_ns / 2) {
            st->ping_sent_ns = now;
            struct gc_frame_header ping = {.type = GC_FRAME_PING,
                                           .job_id = link->relay->link_job_id,
                                           .msg_seq = now};
            frame_send(st->bev, &ping, NULL);
        } else if (st->ping_sent_ns != 0 && now - st->ping_sent_ns > ping_ns) {
            st->ping_sent_ns = 0; /* lost with a broken peer: try again */
        }
    }
    /* Also a peer that never came up: senders waiting on it must not hang.
     * A stream that timed out above went down after `now` was taken, so
     * down_since_ns may be later than `now`: that is no time down at all
     * (the difference wrapped and gave a link up on the spot). */
    uint64_t down_ns = link->state == LINK_DOWN && now > link->down_since_ns
                           ? now - link->down_since_ns
                           : 0;
    if (down_ns > (uint64_t)cfg->peer_give_up_ms * 1000000ull) {
        char why[160];
        snprintf(why, sizeof why,
                 "link %s down for %.1f s (liveness.peer_give_up_ms = %u)",
                 link->peer->name, (double)down_ns / 1e9, cfg->peer_give_up_ms);
        gc_log_error("%s; giving the peer up", why);
        link->state = LINK_LOST;
        job_link_lost(link, 0, why);
        link_reset(link);
        link->local_epoch++;
    }
}

void link_say_bye(struct link *link)
{
    /* What the link cost, for the operator (the counters die with us). */
    gc_log_info("link %s: sent %llu chunks (%llu copies, %llu re-sent), "
                "received %llu (%llu duplicates), %llu bbr restarts",
                link->peer->name, (unsigned long long)link->chunks_out,
                (unsigned long long)link->chunks_copied,
                (unsigned long long)link->chunks_resent,
                (unsigned long long)link->chunks_in,
                (unsigned long long)link->chunks_duplicate,
                (unsigned long long)link->cc_restarts);
    struct gc_frame_header bye = {.type = GC_FRAME_BYE,
                                  .job_id = link->relay->link_job_id};
    for (uint32_t i = 0; i < link->stream_count; i++)
        if (link->streams[i].state == STREAM_UP)
            frame_send(link->streams[i].bev, &bye, NULL);
}

int link_break_stream(struct link *link, int index)
{
    if (index < 0) {
        for (uint32_t i = 0; i < link->stream_count && index < 0; i++)
            if (link->streams[i].state == STREAM_UP)
                index = (int)i;
    }
    if (index < 0 || (uint32_t)index >= link->stream_count ||
        link->streams[index].state != STREAM_UP)
        return -1;
    stream_down(&link->streams[index], "broken on purpose (fault injection)");
    return index;
}

int link_init(struct relay *relay, struct link *link,
              const struct relay_peer_config *peer, int index)
{
    const struct relay_config *cfg = relay->cfg;
    char err[256];
    memset(link, 0, sizeof *link);
    link->relay = relay;
    link->peer = peer;
    link->index = index;
    link->dialer = relay_config_peer_mode(cfg, peer) == RELAY_CONNECT_DIAL;
    link->state = LINK_DOWN;
    link->down_since_ns = gc_now_ns();
    link->local_epoch = relay->epoch;
    link->next_link_seq = 1;
    link->stream_count = link->dialer ? cfg->streams : 0;
    TAILQ_INIT(&link->resend);
    TAILQ_INIT(&link->waiters);
    drr_init(&link->sched);
    if (link->dialer && gc_endpoint_parse(peer->address, &link->peer_endpoint,
                                          err, sizeof err) != 0) {
        gc_log_error("peer %s: %s", peer->name, err);
        return -1;
    }
    link->reorder_cap = 1024;
    link->reorder = calloc(link->reorder_cap, sizeof *link->reorder);
    link->ack_timer = evtimer_new(relay->base, on_ack_timer, link);
    if (link->reorder == NULL || link->ack_timer == NULL)
        return -1;
    for (int i = 0; i < 64; i++) {
        struct stream *st = &link->streams[i];
        st->relay = relay;
        st->link = link;
        st->index = i;
        st->connect_fd = -1;
        st->redial_timer = evtimer_new(relay->base, on_redial, st);
        if (st->redial_timer == NULL)
            return -1;
    }
    return 0;
}

int link_set_address(struct link *link, const char *address)
{
    char err[256];
    struct relay_peer_config *peer = &link->relay->cfg->peers[link->index];
    if (link->dialer && gc_endpoint_parse(address, &link->peer_endpoint, err,
                                          sizeof err) != 0) {
        gc_log_error("peer %s: %s", peer->name, err);
        return -1;
    }
    snprintf(peer->address, sizeof peer->address, "%s", address);
    return 0;
}

void link_start(struct link *link)
{
    if (!link->dialer) {
        gc_log_info("link %s: waiting for the peer to dial", link->peer->name);
        return;
    }
    gc_log_info("link %s: dialling %s with %u streams", link->peer->name,
                link->peer->address, link->stream_count);
    for (uint32_t i = 0; i < link->stream_count; i++)
        stream_dial(&link->streams[i]);
}

void link_free(struct link *link)
{
    for (int i = 0; i < 64; i++) {
        struct stream *st = &link->streams[i];
        if (st->bev != NULL)
            bufferevent_free(st->bev);
        if (st->connect_fd >= 0)
            close(st->connect_fd);
        if (st->redial_timer != NULL)
            event_free(st->redial_timer);
    }
    if (link->reorder != NULL)
        drop_queues(link);
    if (link->ack_timer != NULL)
        event_free(link->ack_timer);
    free(link->reorder);
}
