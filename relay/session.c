/*
 * Rank sessions: the local side of the relay.  A session authenticates
 * with the job token (HELLO, AUTH, AUTH_OK; docs/protocol.md), then feeds
 * DATA chunks into links or local ranks and receives the chunks addressed
 * to its rank.  A session whose next chunk has no budget stops being read
 * until the budget frees; that is the only backpressure towards ranks.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gc_log.h"
#include "relay.h"

#define SESSION_TIMEOUT_S 10 /* handshake, and flushing a final ERROR */

static void session_process_input(struct session *s);

/* Read ahead at most a couple of chunks: the rest waits in the kernel. */
static size_t session_read_high(const struct relay *relay)
{
    return 2 * ((size_t)relay->cfg->chunk_size + GC_HEADER_SIZE);
}

static void on_delivered(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    struct chunk *c = arg;
    relay_credit_returned(c);
    chunk_unref(c);
}

void session_send_chunk(struct session *s, struct chunk *c)
{
    struct gc_frame_header h = c->hdr;
    h.link_seq = 0;
    h.flags &= (uint16_t)~GC_FLAG_RESENT;
    uint8_t raw[GC_HEADER_SIZE];
    gc_header_encode(&h, raw);
    struct evbuffer *out = bufferevent_get_output(s->bev);
    evbuffer_add(out, raw, sizeof raw);
    s->bytes_out += h.payload_len;
    s->job->bytes_out += h.payload_len;
    s->relay->bytes_to_ranks += h.payload_len;
    if (h.payload_len == 0) {
        relay_credit_returned(c);
        return;
    }
    /* By reference: the budget returns only once the kernel has the bytes. */
    chunk_ref(c);
    if (evbuffer_add_reference(out, c->data, h.payload_len, on_delivered, c) !=
        0) {
        relay_credit_returned(c);
        chunk_unref(c);
    }
}

void session_flush_pending(struct session *s)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);
    uint64_t high = s->relay->cfg->session_high_watermark;
    size_t queued_before = evbuffer_get_length(out);
    struct chunk *c;
    /* Above the high watermark chunks wait in `pending`; on_write refills
     * the output once it has drained to the low watermark. */
    while (evbuffer_get_length(out) < high &&
           (c = TAILQ_FIRST(&s->slot->pending)) != NULL) {
        TAILQ_REMOVE(&s->slot->pending, c, entry);
        session_send_chunk(s, c);
        chunk_unref(c);
    }
    if (TAILQ_EMPTY(&s->slot->pending))
        relay_write_small_now(s->bev, queued_before);
}

static void unblock(struct session *s)
{
    if (s->blocked_link != NULL)
        TAILQ_REMOVE(&s->blocked_link->waiters, s, wait_entry);
    if (s->blocked_slot != NULL)
        TAILQ_REMOVE(&s->blocked_slot->waiters, s, wait_entry);
    s->blocked_link = NULL;
    s->blocked_slot = NULL;
}

void session_free(struct session *s)
{
    struct relay *relay = s->relay;
    unblock(s);
    TAILQ_REMOVE(&relay->sessions, s, entry);
    relay->session_count--;
    if (s->in_handshake)
        relay->handshakes--;
    if (s->slot != NULL && s->slot->session == s)
        s->slot->session = NULL;
    if (s->resume_event != NULL)
        event_free(s->resume_event);
    /* Freeing the output runs on_delivered for chunks never written; they
     * return their budget, which is right: they will never be read. */
    bufferevent_free(s->bev);
    if (s->job != NULL)
        job_unref(s->job);
    free(s);
}

static void on_closing_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    session_free(arg);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    (void)bev;
    struct session *s = arg;
    if (events & BEV_EVENT_TIMEOUT) {
        gc_log_warn("session from %s timed out (%s)", s->peer_addr,
                    s->state == SESSION_CLOSING ? "not reading its ERROR"
                                                : "no handshake");
        session_free(s);
        return;
    }
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (s->state == SESSION_ACTIVE && s->slot->departed)
            gc_log_info("job %u rank %u left", s->job->id, s->rank);
        else if (s->state == SESSION_ACTIVE)
            gc_log_warn("job %u rank %u disconnected without BYE (%s)",
                        s->job->id, s->rank,
                        (events & BEV_EVENT_ERROR) ? strerror(errno) : "EOF");
        session_free(s);
    }
}

void session_fail(struct session *s, enum gc_error_code code, const char *fmt,
                  ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    uint32_t job_id = s->job != NULL ? s->job->id : s->relay->link_job_id;
    if (s->state == SESSION_ACTIVE)
        gc_log_warn("job %u rank %u (%s): %s: %s", job_id, s->rank,
                    s->peer_addr, gc_error_code_name(code), text);
    else
        gc_log_warn("session from %s refused: %s: %s", s->peer_addr,
                    gc_error_code_name(code), text);
    uint8_t frame[GC_HEADER_SIZE + 512];
    size_t n = gc_error_frame(job_id, code, text, frame, sizeof frame);
    unblock(s);
    s->state = SESSION_CLOSING;
    bufferevent_disable(s->bev, EV_READ);
    evbuffer_add(bufferevent_get_output(s->bev), frame, n);
    /* Free once the ERROR is on the wire, the peer hangs up, or it does
     * not read for SESSION_TIMEOUT_S. */
    struct timeval limit = {SESSION_TIMEOUT_S, 0};
    bufferevent_set_timeouts(s->bev, NULL, &limit);
    bufferevent_setwatermark(s->bev, EV_WRITE, 0, 0);
    bufferevent_setcb(s->bev, NULL, on_closing_write, on_event, s);
}

void session_wake(struct session *s)
{
    event_active(s->resume_event, 0, 0);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct session *s = arg;
    if (s->state == SESSION_CLOSING)
        return;
    session_process_input(s);
    if (s->state != SESSION_CLOSING && s->blocked_link == NULL &&
        s->blocked_slot == NULL && !s->blocked_output)
        bufferevent_enable(s->bev, EV_READ);
}

static int handle_hello(struct session *s, const struct gc_frame_header *h,
                        const uint8_t *payload)
{
    struct relay *relay = s->relay;
    const struct relay_config *cfg = relay->cfg;
    struct gc_hello hello;
    if (h->type != GC_FRAME_HELLO ||
        gc_hello_decode(payload, h->payload_len, &hello) != 0) {
        session_fail(s, GC_ERR_PROTOCOL, "expected a valid HELLO");
        return -1;
    }
    if (hello.role != GC_ROLE_RANK) {
        session_fail(s, GC_ERR_PROTOCOL, "local endpoint is for ranks only");
        return -1;
    }
    if (hello.version_max < GC_PROTO_VERSION_MIN ||
        hello.version_min > GC_PROTO_VERSION) {
        session_fail(s, GC_ERR_VERSION, "no common protocol version (%u-%u)",
                     hello.version_min, hello.version_max);
        return -1;
    }
    struct job *job = job_find(relay, h->job_id);
    if (job == NULL) {
        relay->sessions_refused++;
        if (relay->service)
            session_fail(s, GC_ERR_AUTH, "no job %u at site %s", h->job_id,
                         cfg->site_name);
        else
            session_fail(s, GC_ERR_BAD_FRAME,
                         "frame for job %u, this is job %u", h->job_id,
                         relay->link_job_id);
        return -1;
    }
    if (job->state != JOB_READY) {
        relay->sessions_refused++;
        session_fail(s, GC_ERR_AUTH,
                     "job %u is not ready at site %s: not every site has "
                     "registered it",
                     h->job_id, cfg->site_name);
        return -1;
    }
    job_ref(job);
    s->job = job;
    s->rank = h->src_rank;
    s->slot = job_local_slot(job, h->src_rank);
    if (s->slot == NULL) {
        session_fail(s, GC_ERR_BAD_RANK,
                     "rank %u is not served by site %s in job %u", h->src_rank,
                     cfg->site_name, job->id);
        return -1;
    }
    memcpy(s->client_nonce, hello.nonce, GC_NONCE_SIZE);
    if (gc_random_bytes(s->relay_nonce, GC_NONCE_SIZE) != 0) {
        session_fail(s, GC_ERR_INTERNAL, "no randomness");
        return -1;
    }
    uint16_t version = hello.version_max < GC_PROTO_VERSION
                           ? hello.version_max
                           : (uint16_t)GC_PROTO_VERSION;
    struct gc_hello answer = {
        .version_min = version,
        .version_max = version,
        .capabilities = hello.capabilities & GC_CAPS_ALL,
        .role = GC_ROLE_RELAY,
        .stream_count = cfg->streams, /* a hint for cutting messages */
        .max_chunk = cfg->chunk_size,
        .epoch = s->relay->epoch,
        .credit = cfg->rank_credit,
    };
    memcpy(answer.nonce, s->relay_nonce, GC_NONCE_SIZE);
    snprintf(answer.name, sizeof answer.name, "%s", cfg->site_name);
    frame_send_hello(s->bev, job->id, s->rank, &answer);
    s->state = SESSION_AUTH;
    return 0;
}

static int handle_auth(struct session *s, const struct gc_frame_header *h,
                       const uint8_t *payload)
{
    struct relay *relay = s->relay;
    struct job *job = s->job;
    if (h->type != GC_FRAME_AUTH || h->src_rank != s->rank) {
        session_fail(s, GC_ERR_PROTOCOL, "expected AUTH for rank %u", s->rank);
        return -1;
    }
    uint8_t expected[GC_MAC_SIZE];
    if (gc_auth_mac(job->token, job->token_len, GC_AUTH_LABEL_INITIATOR,
                    s->client_nonce, s->relay_nonce, s->rank, expected) != 0) {
        session_fail(s, GC_ERR_INTERNAL, "HMAC failed");
        return -1;
    }
    if (!gc_auth_mac_equal(expected, payload)) {
        relay->sessions_refused++;
        job->sessions_refused++;
        session_fail(s, GC_ERR_AUTH, "wrong job token for rank %u of job %u",
                     s->rank, job->id);
        return -1;
    }
    if (s->slot->session != NULL) {
        relay->sessions_refused++;
        job->sessions_refused++;
        session_fail(s, GC_ERR_DUPLICATE_RANK, "rank %u already has a session",
                     s->rank);
        return -1;
    }
    /* Recorded before AUTH_OK goes out: by the time the rank can have
     * finished and its mpiexec ended, /status says it joined. */
    if (s->slot->joins++ == 0)
        job->ranks_joined++;
    uint8_t proof[GC_MAC_SIZE];
    gc_auth_mac(job->token, job->token_len, GC_AUTH_LABEL_RESPONDER,
                s->client_nonce, s->relay_nonce, s->rank, proof);
    struct gc_frame_header reply = {.type = GC_FRAME_AUTH_OK,
                                    .job_id = job->id,
                                    .src_rank = s->rank,
                                    .payload_len = GC_MAC_SIZE};
    frame_send(s->bev, &reply, proof);
    s->state = SESSION_ACTIVE;
    s->in_handshake = 0;
    relay->handshakes--;
    bufferevent_set_timeouts(s->bev, NULL, NULL); /* ranks may compute long */
    s->slot->session = s;
    s->slot->departed = 0;
    gc_log_info("job %u rank %u connected from %s", job->id, s->rank,
                s->peer_addr);
    session_flush_pending(s);
    return 0;
}

/* Reserve the budget for one chunk; 0 when the session must wait. */
static int reserve_budget(struct session *s, const struct gc_frame_header *h,
                          struct rank_slot *local, struct job_peer *jp)
{
    uint64_t cost = (uint64_t)h->payload_len + GC_HEADER_SIZE;
    if (local != NULL) {
        /* A lone oversized chunk may always go, else it could never. */
        if (local->local_credit_used == 0 ||
            local->local_credit_used + cost <= s->relay->cfg->rank_credit)
            return 1;
        s->blocked_slot = local;
        TAILQ_INSERT_TAIL(&local->waiters, s, wait_entry);
        return 0;
    }
    struct chunk probe = {.job = s->job, .hdr = *h};
    if (link_can_accept(jp, &probe))
        return 1;
    s->blocked_link = jp->link;
    TAILQ_INSERT_TAIL(&jp->link->waiters, s, wait_entry);
    return 0;
}

/* 1: consumed, 0: blocked (frame left in place), -1: session failed. */
static int handle_data(struct session *s, const struct gc_frame_header *h)
{
    struct relay *relay = s->relay;
    struct job *job = s->job;
    struct evbuffer *in = bufferevent_get_input(s->bev);
    if (h->src_rank != s->rank) {
        session_fail(s, GC_ERR_BAD_RANK, "DATA claims source rank %u",
                     h->src_rank);
        return -1;
    }
    struct rank_slot *local = job_local_slot(job, h->dst_rank);
    struct job_peer *jp = local ? NULL : job_peer_for_rank(job, h->dst_rank);
    if (local == NULL && jp == NULL) {
        session_fail(s, GC_ERR_BAD_RANK,
                     "destination rank %u is not in the job (job %u)",
                     h->dst_rank, job->id);
        return -1;
    }
    if (jp != NULL && jp->link->state == LINK_LOST) {
        session_fail(s, GC_ERR_PEER_UNREACHABLE, "site %s is unreachable",
                     jp->name);
        return -1;
    }
    if (!reserve_budget(s, h, local, jp))
        return 0;

    struct chunk *c = chunk_new(relay, job, h);
    if (c == NULL) {
        session_fail(s, GC_ERR_INTERNAL, "out of memory");
        return -1;
    }
    evbuffer_drain(in, GC_HEADER_SIZE);
    evbuffer_remove(in, c->data, h->payload_len);
    s->bytes_in += h->payload_len;
    job->bytes_in += h->payload_len;
    relay->bytes_from_ranks += h->payload_len;
    job->messages_in += (h->flags & GC_FLAG_LAST_CHUNK) != 0;
    if (local != NULL) {
        local->local_credit_used += chunk_cost(c);
        relay_deliver_local(relay, local, c);
    } else {
        link_send_chunk(jp->link, c);
    }
    chunk_unref(c);
    return 1;
}

static void session_process_input(struct session *s)
{
    struct relay *relay = s->relay;
    struct evbuffer *in = bufferevent_get_input(s->bev);
    while (s->state != SESSION_CLOSING && s->blocked_link == NULL &&
           s->blocked_slot == NULL && !s->blocked_output) {
        struct gc_frame_header h;
        enum gc_decode_status st;
        int r = frame_peek(in, &h, &st);
        if (r == 0)
            return;
        if (r < 0) {
            relay->frames_rejected++;
            session_fail(s,
                         st == GC_DECODE_BAD_VERSION ? GC_ERR_VERSION
                                                     : GC_ERR_BAD_FRAME,
                         "bad frame: %s", gc_decode_status_str(st));
            return;
        }
        /* A session speaks for one job, named by its HELLO. */
        if (s->job != NULL && h.job_id != s->job->id) {
            relay->frames_rejected++;
            session_fail(s, GC_ERR_BAD_FRAME,
                         "frame for job %u, this session is job %u", h.job_id,
                         s->job->id);
            return;
        }
        if (h.type == GC_FRAME_DATA && h.payload_len > relay->cfg->chunk_size) {
            relay->frames_rejected++;
            session_fail(s, GC_ERR_BAD_FRAME, "chunk of %u bytes exceeds %u",
                         h.payload_len, relay->cfg->chunk_size);
            return;
        }
        if (!frame_complete(s->bev, &h, session_read_high(relay)))
            return;
        if (h.type == GC_FRAME_DATA && s->state == SESSION_ACTIVE) {
            if (handle_data(s, &h) <= 0) {
                if (s->state != SESSION_CLOSING)
                    bufferevent_disable(s->bev, EV_READ);
                return;
            }
            continue;
        }
        if (h.type == GC_FRAME_PING && s->state == SESSION_ACTIVE &&
            evbuffer_get_length(bufferevent_get_output(s->bev)) >=
                relay->cfg->session_high_watermark) {
            /* A rank that sends PINGs and never reads the answers would
             * grow our output without bound: its frames wait in its
             * socket until it has read (on_write). */
            s->blocked_output = 1;
            bufferevent_disable(s->bev, EV_READ);
            return;
        }
        uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
        if (h.payload_len > sizeof payload) {
            session_fail(s, GC_ERR_PROTOCOL, "%s frame not valid here",
                         gc_frame_type_name(h.type));
            return;
        }
        evbuffer_drain(in, GC_HEADER_SIZE);
        evbuffer_remove(in, payload, h.payload_len);
        int rc = 0;
        switch (s->state) {
        case SESSION_HELLO: rc = handle_hello(s, &h, payload); break;
        case SESSION_AUTH: rc = handle_auth(s, &h, payload); break;
        case SESSION_ACTIVE:
            if (h.type == GC_FRAME_PING) {
                struct gc_frame_header pong = {.type = GC_FRAME_PONG,
                                               .job_id = s->job->id,
                                               .msg_seq = h.msg_seq};
                frame_send(s->bev, &pong, NULL);
            } else if (h.type == GC_FRAME_BYE) {
                s->slot->departed = 1;
            } else {
                session_fail(s, GC_ERR_PROTOCOL, "%s frame not valid here",
                             gc_frame_type_name(h.type));
                rc = -1;
            }
            break;
        case SESSION_CLOSING: break;
        }
        if (rc != 0)
            return;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    session_process_input(arg);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct session *s = arg;
    if (s->state != SESSION_ACTIVE)
        return;
    session_flush_pending(s);
    if (s->blocked_output) {
        s->blocked_output = 0;
        session_wake(s);
    }
}

void session_accept(struct relay *relay, evutil_socket_t fd,
                    const char *peer_addr)
{
    if (!relay_admit_handshake(relay, "rank connection", peer_addr)) {
        evutil_closesocket(fd);
        return;
    }
    struct session *s = calloc(1, sizeof *s);
    if (s == NULL) {
        relay->handshakes--;
        evutil_closesocket(fd);
        return;
    }
    s->relay = relay;
    s->in_handshake = 1;
    snprintf(s->peer_addr, sizeof s->peer_addr, "%s", peer_addr);
    evutil_make_socket_nonblocking(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* TCP only */
    s->bev = bufferevent_socket_new(relay->base, fd, BEV_OPT_CLOSE_ON_FREE);
    s->resume_event = event_new(relay->base, -1, 0, on_resume, s);
    if (s->bev == NULL || s->resume_event == NULL) {
        if (s->bev != NULL)
            bufferevent_free(s->bev);
        else
            evutil_closesocket(fd);
        if (s->resume_event != NULL)
            event_free(s->resume_event);
        free(s);
        relay->handshakes--;
        return;
    }
    relay_tune_bufferevent(s->bev);
    TAILQ_INSERT_TAIL(&relay->sessions, s, entry);
    relay->session_count++;
    bufferevent_setwatermark(s->bev, EV_READ, 0, session_read_high(relay));
    bufferevent_setwatermark(s->bev, EV_WRITE,
                             relay->cfg->session_low_watermark, 0);
    bufferevent_setcb(s->bev, on_read, on_write, on_event, s);
    struct timeval handshake = {SESSION_TIMEOUT_S, 0};
    bufferevent_set_timeouts(s->bev, &handshake, NULL);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}
