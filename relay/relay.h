/*
 * gridrelay internals.  One libevent loop owns everything below; no locks.
 *
 * Data path:  rank session --DATA--> relay A --link (K streams)--> relay B
 *             --> destination rank session.
 *
 * A chunk is read once from its producer into a refcounted buffer and is
 * then handed by reference to every output that needs it (a WAN stream, the
 * re-send queue, a rank session), so the relay copies each byte once.
 *
 * Bounded memory comes from three budgets that every producer must obtain
 * before a chunk is accepted (else the producer stops being read):
 *   - credit per (source, destination rank), granted by the relay that
 *     owns the destination: bounds what waits for one slow rank;
 *   - the link window: bytes sent but not yet acknowledged by the peer;
 *   - the link high watermark: bytes queued on the link's streams.
 */
#ifndef RELAY_H
#define RELAY_H

#include <event2/event.h>
#include <event2/listener.h>
#include <stdint.h>
#include <sys/queue.h>

#include "control_request.h"
#include "gc_proto.h"
#include "gc_util.h"
#include "relay_config.h"

struct relay;
struct evbuffer;
struct bufferevent;
struct link;
struct session;
struct job;
struct control;
struct evhttp_request;
struct closing;
struct http_conn;

/* ---- chunks ----------------------------------------------------------- */

#define CHUNK_UNSENT (-1) /* stream_index of a chunk waiting for a stream */

struct chunk {
    int refs;
    struct relay *relay;
    struct job *job;            /* holds a reference; NULL: job unknown here */
    struct gc_frame_header hdr; /* link_seq set when sent on a link */
    struct link *origin_link;   /* NULL: produced by a local session */
    uint32_t origin_generation; /* origin_link->generation when received */
    int stream_index;           /* link stream carrying it, or CHUNK_UNSENT */
    TAILQ_ENTRY(chunk) entry;   /* re-send queue or pending-delivery queue */
    uint8_t data[];             /* hdr.payload_len bytes */
};
TAILQ_HEAD(chunk_queue, chunk);

/* A chunk of `job` (may be NULL: see handle_peer_data); takes a job ref. */
struct chunk *chunk_new(struct relay *relay, struct job *job,
                        const struct gc_frame_header *hdr);
void chunk_ref(struct chunk *c);
void chunk_unref(struct chunk *c);
/* Budget a chunk consumes: payload plus one header. */
static inline uint64_t chunk_cost(const struct chunk *c)
{
    return (uint64_t)c->hdr.payload_len + GC_HEADER_SIZE;
}

/* ---- the link's scheduler (link_drr.c) ------------------------------- */

/*
 * Jobs share a link through per-job queues served in deficit round robin
 * (Shreedhar and Varghese, "Efficient fair queuing using deficit round
 * robin", SIGCOMM 1995): each turn a job with chunks queued may send up to
 * one quantum of bytes more, so jobs with data waiting get equal shares of
 * the link whatever their number of ranks or the size of their chunks.
 * Only the bookkeeping lives here, with no sockets: link.c says whether a
 * chunk may leave now and sends it.
 */
struct drr_queue {
    struct chunk_queue chunks;
    uint64_t bytes; /* their chunk_cost */
    uint64_t deficit;
    int active; /* has chunks: in drr->active */
    TAILQ_ENTRY(drr_queue) entry;
};

struct drr {
    TAILQ_HEAD(, drr_queue) active; /* queues with chunks, in turn order */
    uint64_t bytes;                 /* in every queue */
};

void drr_init(struct drr *drr);
void drr_queue_init(struct drr_queue *q);
/* Append `c` to `q` (its turn comes after the others'); takes the
 * caller's reference. */
void drr_push(struct drr *drr, struct drr_queue *q, struct chunk *c);
/* Drop what `q` holds; it leaves the turns. */
void drr_drop(struct drr *drr, struct drr_queue *q);
/*
 * Give the queues their turns while their chunks can go: `may_send` says
 * whether the chunk at the head of a queue may leave now, `send` takes it
 * with the queue's reference.  A queue whose head may not go keeps its
 * deficit and its place.  1 when a chunk went.
 */
int drr_serve(struct drr *drr, uint64_t quantum,
              int (*may_send)(void *arg, const struct chunk *c),
              void (*send)(void *arg, struct chunk *c), void *arg);

/* ---- transports (transport.c; TLS: transport_tls.c) ------------------- */

/* What TLS 1.3 on one endpoint presents and accepts: a certificate and
 * key, and the CA a peer's certificate must chain to.  transport_tls.c is
 * the one file that speaks to OpenSSL. */
struct tls_context;

/* How a WAN stream's bytes are carried: plain TCP or TLS 1.3. */
struct transport_ops {
    const char *name;
    /* Wrap a connected socket; `accepting` is 1 on the listening side. */
    struct bufferevent *(*wrap)(struct relay *relay, evutil_socket_t fd,
                                int accepting, const char *peer_name);
    /* After HELLO names the peer: does its certificate match that name? */
    int (*peer_matches)(struct bufferevent *bev, const char *peer_name);
    /* Why the stream on `bev` failed, as the transport saw it: 1 with the
     * next reason in `out`, 0 when there is none (left). */
    int (*next_failure)(struct bufferevent *bev, char *out, size_t len);
};
extern const struct transport_ops transport_plain;
extern const struct transport_ops transport_tls;

/* TLS 1.3, presenting `cert`/`key`, requiring a peer certificate that
 * chains to `ca`. */
struct tls_context *tls_context_new(const char *cert, const char *key,
                                    const char *ca, char *err, size_t err_len);
/* Name the certificates of `ca` to clients, which pick theirs by them. */
void tls_context_name_cas(struct tls_context *ctx, const char *ca);
/* Connections made with `ctx` keep using it until they close. */
void tls_context_free(struct tls_context *ctx);
/* The accepting end of a TLS connection on `fd` (-1: evhttp sets it). */
struct bufferevent *tls_accept(struct event_base *base, evutil_socket_t fd,
                               struct tls_context *ctx);
/* 1 when `bev` is TLS: it makes its socket's reads and writes itself. */
int tls_bufferevent(struct bufferevent *bev);
/* The common name in the peer's verified certificate, into `out`: its
 * length as the certificate has it (a NUL in it makes strlen differ), or
 * -1 without one. */
int tls_peer_common_name(struct bufferevent *bev, char *out, size_t len);
/* Apply tcp.* options; -1 with `err` when the kernel refuses one. */
int tune_wan_socket(const struct relay_config *cfg, evutil_socket_t fd,
                    char *err, size_t err_len);

/* ---- rank slots: one per local grid rank ------------------------------ */

struct rank_slot {
    struct job *job;
    uint32_t rank;
    struct session *session;       /* NULL while the rank is not connected */
    struct chunk_queue pending;    /* waiting for the session to connect */
    uint64_t local_credit_used;    /* bytes from local sources not yet out */
    TAILQ_HEAD(, session) waiters; /* local sessions blocked on our credit */
    int departed; /* the rank said goodbye: late chunks are dropped */
    uint64_t chunks_dropped; /* arrived after the rank said BYE */
    /* Sessions of this rank that authenticated, ever: a rank has joined
     * the job once this is nonzero, whether still connected or not
     * (gridrun checks it after the rank's mpiexec ended). */
    uint64_t joins;
};

/* ---- links ------------------------------------------------------------ */

enum stream_state {
    STREAM_DOWN = 0,
    STREAM_CONNECTING, /* TCP/TLS connect in progress */
    STREAM_HANDSHAKE,  /* HELLO/AUTH in progress */
    STREAM_UP,
};

struct stream {
    struct relay *relay;
    struct link *link; /* NULL while an accepted stream has not said HELLO */
    int index;
    TAILQ_ENTRY(stream) pending_entry; /* relay->pending_streams */
    char peer_addr[128];
    enum stream_state state;
    struct bufferevent *bev;
    evutil_socket_t connect_fd; /* owned while the TCP connect runs */
    struct event *redial_timer;
    uint32_t backoff_ms;
    int is_dialer;
    uint8_t my_nonce[GC_NONCE_SIZE];
    uint8_t peer_nonce[GC_NONCE_SIZE];
    /* The peer's HELLO, acted on only once its AUTH (or AUTH_OK) proved
     * it: which link and stream an accepted stream takes, the peer's
     * epoch and credit.  `claimed` is that link while an accepted stream
     * waits for AUTH. */
    struct gc_hello peer_hello;
    struct link *claimed;
    int error_sent;      /* an ERROR is queued: flush it before closing */
    uint64_t last_rx_ns; /* refreshed by the tick when rx_seen */
    int rx_seen;
    uint64_t ping_sent_ns; /* 0 when no PING outstanding */
    uint64_t rtt_ns;
    uint32_t retrans_seen; /* tcpi_total_retrans at the last tick */
    uint32_t tcp_rtt_us;   /* tcpi_rtt at the last tick */
    uint64_t bytes_out, bytes_in;
    uint64_t breaks;
};

enum link_state {
    LINK_DOWN = 0, /* no stream up (yet, or again) */
    LINK_UP,       /* at least one stream up */
    LINK_LOST,     /* down longer than peer_give_up_ms, or peer restarted */
};

struct link {
    struct relay *relay;
    const struct relay_peer_config *peer;
    int index;
    int dialer;
    struct gc_endpoint peer_endpoint; /* resolved once, when dialing */
    enum link_state state;
    /* Our incarnation of this link, announced in HELLO.  Bumped when we
     * give the peer up, so the peer knows to reset its side as well. */
    uint64_t local_epoch;
    uint32_t generation; /* bumped on every reset; stale credit ignored */
    uint64_t down_since_ns;
    uint32_t stream_count; /* streams in use (ours if dialing) */
    uint32_t last_stream;  /* last stream picked, for round-robin ties */
    struct stream streams[64];
    uint64_t peer_epoch; /* 0 until the first handshake */

    /* sending side */
    uint64_t next_link_seq;
    struct chunk_queue resend; /* unacknowledged, in link_seq order */
    uint64_t unacked_bytes;
    uint64_t peer_credit;          /* per-rank credit the peer grants */
    TAILQ_HEAD(, session) waiters; /* sessions blocked on this link */
    struct drr sched;              /* the jobs' queues (link_drr.c) */

    /* receiving side */
    uint64_t recv_cum;      /* every link_seq <= recv_cum delivered */
    struct chunk **reorder; /* ring indexed by link_seq - recv_cum - 1 */
    uint64_t reorder_cap;   /* power of two */
    uint64_t reorder_bytes;
    uint64_t acked_sent;     /* last cumulative ACK we sent */
    struct event *ack_timer; /* flushes ACK and CREDIT frames */

    /* counters */
    uint64_t bytes_out, bytes_in, chunks_out, chunks_in;
    uint64_t lossy_until_ns; /* TCP retransmitted lately: copies pay */
    uint64_t chunks_resent, chunks_copied, chunks_duplicate, cc_restarts;
    uint64_t acks_in, credits_in;
};

/* ---- sessions (one per connected rank) -------------------------------- */

enum session_state {
    SESSION_HELLO = 0, /* waiting for HELLO */
    SESSION_AUTH,      /* waiting for AUTH */
    SESSION_ACTIVE,
    SESSION_CLOSING, /* flushing an ERROR/BYE, then freed */
};

struct session {
    struct relay *relay;
    struct job *job; /* set by HELLO; holds a reference */
    struct bufferevent *bev;
    enum session_state state;
    char peer_addr[128];
    uint32_t rank;
    struct rank_slot *slot;
    uint8_t client_nonce[GC_NONCE_SIZE];
    uint8_t relay_nonce[GC_NONCE_SIZE];
    /* Blocked on a budget: stays off EV_READ until the resource frees. */
    struct link *blocked_link;
    struct rank_slot *blocked_slot;
    int blocked_output; /* our answers pile up unread: wait for on_write */
    int in_handshake;   /* counted in relay->handshakes */
    TAILQ_ENTRY(session) wait_entry;
    struct event *resume_event;
    TAILQ_ENTRY(session) entry; /* relay->sessions */
    uint64_t bytes_in, bytes_out;
};

/* ---- jobs ------------------------------------------------------------- */

/*
 * A job the relay serves: the one of its configuration (a per-job relay),
 * or one of those launchers registered with the service (job.c).  Frames
 * carry the job id; a rank session belongs to one job and reaches only the
 * job's ranks, and a peer link carries a job only between the job's sites.
 *
 * A job is reference counted (chunks and sessions hold references), so an
 * ended job's memory goes only once nothing points at it any more.
 */
enum job_state {
    JOB_WAITING = 0, /* registered; not every peer site confirmed it yet */
    JOB_READY,       /* every site has it: ranks may connect */
    JOB_ENDED,       /* removed from the table; freed with its last ref */
};

/* One other site of a job, and the job's state on the link to it. */
struct job_peer {
    char name[RELAY_NAME_MAX + 1];
    uint32_t first_rank, rank_count;
    struct link *link;
    int confirmed; /* the peer's relay announced the same job */
    /* Another job under this id at the peer, for the launcher to see. */
    char conflict[256];
    /* sending side: credit per peer rank (bytes, cumulative) */
    uint64_t *credit_consumed;
    uint64_t *credit_returned;
    /* The job's budget at the peer (its service.job_memory, from its JOB
     * announcement; unlimited for a per-job relay) and what of it is used:
     * bytes sent whose credit has not come back, all ranks together. */
    uint64_t job_credit;
    uint64_t job_in_flight;
    /* Chunks accepted from the job's ranks, not yet given a stream: the
     * job's queue in the link's scheduler. */
    struct drr_queue sched;
    /* receiving side: per local rank, bytes handed to ranks, and the last
     * total reported back in CREDIT */
    uint64_t *returned_total;
    uint64_t *returned_sent;
    uint64_t bytes_out, bytes_in, chunks_out, chunks_in;
};

struct job {
    struct relay *relay;
    int refs;
    uint32_t id;
    enum job_state state;
    char owner[128]; /* launcher certificate's subject CN, or "config" */
    uint8_t token[GC_TOKEN_MAX];
    size_t token_len;
    uint8_t token_hash[GC_JOB_HASH_SIZE];
    uint32_t first_rank, rank_count; /* this site's ranks of the job */
    struct rank_slot *slots;         /* rank_count entries */
    uint32_t peer_count;
    struct job_peer peers[RELAY_MAX_PEERS];
    uint64_t lease_ns;          /* 0: no lease (the configuration's job) */
    uint64_t lease_deadline_ns; /* launcher must renew before this */
    uint64_t registered_ns;
    uint32_t ranks_joined; /* slots whose `joins` is nonzero */
    uint64_t sessions_refused;
    uint64_t bytes_in, bytes_out, messages_in; /* from and to local ranks */
    char end_reason[256];
    TAILQ_ENTRY(job) entry; /* relay->jobs while not ended */
};
TAILQ_HEAD(job_list, job);

/* job.c */
/* The job of a per-job relay's configuration (token from token_file). */
struct job *job_from_config(struct relay *relay);
/* Register a job with the service; NULL with an HTTP status (400, 409,
 * 429 for an owner's quota, 503) and a message in `err` when refused;
 * nothing changes then, here or at the peers. */
struct job *job_register(struct relay *relay, const struct job_request *req,
                         int *http_status, char *err, size_t err_len);
/* The launcher is still there: push the lease deadline back. */
void job_renew(struct job *job);
struct job *job_find(struct relay *relay, uint32_t id);
void job_ref(struct job *job);
void job_unref(struct job *job);
struct rank_slot *job_local_slot(struct job *job, uint32_t rank);
struct job_peer *job_peer_for_rank(struct job *job, uint32_t rank);
struct job_peer *job_peer_on_link(struct job *job, const struct link *link);
/* End a job: its sessions get `code` and `reason`, queued data is
 * dropped, peers are told (unless `tell_peers` is 0), and it leaves the
 * table. */
void job_end(struct job *job, enum gc_error_code code, int tell_peers,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A link (re)came up: announce every job that spans its peer. */
void job_announce_all(struct link *link);
/* A JOB frame arrived on `link`. */
void job_handle_frame(struct link *link, const struct gc_frame_header *h,
                      const uint8_t *payload);
/* The link's peer was given up (`restarted` 0) or restarted: the jobs it
 * carried cannot go on (those it never confirmed survive a restart). */
void job_link_lost(struct link *link, int restarted, const char *why);
/* Forget every job's credit state on `link` (link reset). */
void job_link_reset(struct link *link);
/* Expire leases; called from the relay's tick. */
void job_tick(struct relay *relay, uint64_t now_ns);
/* At exit: drop every job (sessions and links are gone already). */
void job_free_all(struct relay *relay);

/* ---- HTTP endpoints (http.c) ------------------------------------------ */

/* Which jobs a request may see: every one (the operator), one owner's
 * (`owner`), or none (NULL owner: aggregate figures only). */
struct http_view {
    int all;
    const char *owner;
};

/* An HTTP server of the relay: the operations endpoint, or the control
 * endpoint (TLS).  Bounded: connections, time, header and body size. */
struct http_server {
    struct relay *relay;
    struct evhttp *http;
    struct evconnlistener *listener;
    struct tls_context **tls;      /* NULL: plain HTTP; else kept current */
    struct http_view view;         /* the operations endpoint's */
    TAILQ_HEAD(, http_conn) conns; /* open connections (http.c) */
    unsigned open;                 /* how many */
    int paused;                    /* listener off: limits.http_connections */
    size_t read_max;               /* input one connection may buffer */
    char what[32];
    char unix_path[RELAY_PATH_MAX]; /* unlinked at exit; "" for TCP */
};

/* ---- the relay -------------------------------------------------------- */

struct relay {
    struct relay_config *cfg;
    struct event_base *base;
    uint8_t token[GC_TOKEN_MAX];
    size_t token_len;
    uint64_t epoch;
    const struct transport_ops *transport;
    struct tls_context *tls; /* the WAN's; NULL with wan.plaintext */

    struct evconnlistener *local_unix_listener;
    struct evconnlistener *local_tcp_listener;
    struct evconnlistener *wan_listener;
    struct http_server ops; /* http.listen */
    struct event *tick_timer;
    struct event *sigterm_event, *sigint_event, *sighup_event;

    int service; /* jobs come from the control endpoint */
    /* Job id of the frames the relay sends outside any job (handshake,
     * ACK, PING): the configuration's job_id, 0 in service mode. */
    uint32_t link_job_id;
    struct job_list jobs;
    uint32_t job_count;
    TAILQ_HEAD(, early_announce) early_announces; /* job.c */
    struct link *links;                           /* cfg->peer_count entries */
    TAILQ_HEAD(, session) sessions;
    uint32_t session_count;
    TAILQ_HEAD(, stream) pending_streams; /* accepted, before AUTH */
    /* Connections that have not proven who they are yet (accepted WAN
     * streams, rank sessions before AUTH_OK): limits.handshakes. */
    uint32_t handshakes;
    uint64_t connections_refused; /* closed at accept: a limit was hit */
    uint64_t refusal_logged_ns;
    TAILQ_HEAD(, closing) closing; /* relay_close_after_flush */
    int draining;
    int exiting;           /* goodbyes sent, loop ends after a short flush */
    int cc_restart_failed; /* tcp.restart_after_idle refused: stop trying */
    uint64_t drain_deadline_ns;
    uint64_t started_ns;
    uint64_t sessions_refused;
    uint64_t frames_rejected;
    uint64_t registrations_refused;
    uint64_t bytes_from_ranks, bytes_to_ranks; /* every job, ever */
    uint64_t
        chunks_unknown_job;  /* from peers, for jobs not (or no more) here */
    struct control *control; /* service mode: control.c */
};

/* relay.c */
int relay_init(struct relay *relay, struct relay_config *cfg);
/* Free `bev` once its queued output (an ERROR) left, within a few
 * seconds; it no longer reads. */
void relay_close_after_flush(struct relay *relay, struct bufferevent *bev);
/* May one more connection start its handshake (limits.handshakes)?  1
 * and counted in relay->handshakes, or 0 (logged, counted as refused):
 * close it. */
int relay_admit_handshake(struct relay *relay, const char *what,
                          const char *peer_addr);
/* Bind `text` (host:port or a Unix socket path); `cb` gets the relay.  A
 * Unix socket is made usable by `anyone` on the host, or keeps the umask. */
struct evconnlistener *relay_listen(struct relay *relay, const char *text,
                                    evconnlistener_cb cb, const char *what,
                                    int anyone);
int relay_run(struct relay *relay);
void relay_free(struct relay *relay);
struct link *relay_link_by_name(struct relay *relay, const char *name);
/* Hand a chunk to a local rank (queue or session output); takes a ref. */
void relay_deliver_local(struct relay *relay, struct rank_slot *slot,
                         struct chunk *c);
/* Credit for a chunk delivered to its rank is free again. */
void relay_credit_returned(struct chunk *c);

/* session.c */
void session_accept(struct relay *relay, evutil_socket_t fd,
                    const char *peer_addr);
void session_free(struct session *s);
void session_fail(struct session *s, enum gc_error_code code, const char *fmt,
                  ...) __attribute__((format(printf, 3, 4)));
/* Schedule a blocked session to retry its head frame. */
void session_wake(struct session *s);
/* Move queued chunks of a rank into its session output. */
void session_flush_pending(struct session *s);
void session_send_chunk(struct session *s, struct chunk *c);

/* link.c */
int link_init(struct relay *relay, struct link *link,
              const struct relay_peer_config *peer, int index);
void link_free(struct link *link);
void link_start(struct link *link);
/* Can `jp`'s link take chunk `c` of jp's job now?  1 yes, 0 blocked. */
int link_can_accept(struct job_peer *jp, const struct chunk *c);
/* Takes a ref; queues `c` for the link's scheduler, which assigns its
 * link_seq when it gives it a stream. */
void link_send_chunk(struct link *link, struct chunk *c);
/* Drop what `jp` has queued (its job ended, or the link was reset). */
void link_drop_job_queue(struct job_peer *jp);
void link_wake_waiters(struct link *link);
void link_wan_accept(struct relay *relay, evutil_socket_t fd,
                     const char *peer_addr);
void link_tick(struct link *link, uint64_t now_ns);
/* Local rank `local_rank_index` of jp's job drained `bytes` that came
 * from jp's link. */
void link_credit_returned(struct job_peer *jp, uint32_t local_rank_index,
                          uint64_t bytes);
/* Queue a control frame on the least loaded stream up (none: dropped). */
void link_send_control(struct link *link, const struct gc_frame_header *h,
                       const void *payload);
/* Fail the ACTIVE sessions of the jobs `link` carries. */
void link_fail_sessions(struct link *link, enum gc_error_code code,
                        const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A reload changed the peer's address: dial it from now on. */
int link_set_address(struct link *link, const char *address);
/* Fault injection: break stream `index` (or any up stream if < 0). */
int link_break_stream(struct link *link, int index);
/* Orderly close of every stream up (relay shutting down). */
void link_say_bye(struct link *link);
int link_streams_up(const struct link *link);
int link_idle(const struct link *link);
void link_free_pending_stream(struct stream *st);

/* http.c */
int http_start(struct relay *relay);
int http_server_start(struct http_server *srv, struct relay *relay,
                      const char *addr, const char *what,
                      struct tls_context **tls, size_t max_body);
void http_server_free(struct http_server *srv);
/* From the relay's tick: account for the connections evhttp closed. */
void http_server_tick(struct http_server *srv);
/* The bufferevent of a request's connection (TLS on the control
 * endpoint). */
struct bufferevent *http_connection_tls(struct evhttp_request *req);
int http_view_has(const struct http_view *view, const struct job *job);
/* /metrics and /status as `view` may see them. */
void http_metrics(struct evbuffer *out, const struct relay *relay,
                  const struct http_view *view);
void http_status(struct evbuffer *out, const struct relay *relay,
                 const struct http_view *view);
/* One job as a JSON object (/status, and the control endpoint). */
void http_job_json(struct evbuffer *out, const struct job *job);

/* control.c: the service's HTTPS endpoint for launchers */
int control_start(struct relay *relay);
void control_free(struct relay *relay);
void control_tick(struct relay *relay);
/* Connections open on the control endpoint (0 without one). */
unsigned control_connections(const struct relay *relay);
/* SIGHUP: the launchers' CA (and the site's certificate) from `next`;
 * -1 (logged) keeps the old ones. */
int control_reload(struct relay *relay, const struct relay_config *next);
/* Remember why a registered job ended, for its launcher's next request. */
void control_job_ended(struct relay *relay, const struct job *job);

/*
 * Decode the frame header at the front of `in`: 1 when `h` holds a valid
 * header (its payload may still be on the way: see frame_complete), 0 when
 * fewer than GC_HEADER_SIZE bytes are buffered, -1 on a bad header
 * (`status` says why).  Limits can thus be enforced before waiting for a
 * payload that may never come.
 */
int frame_peek(struct evbuffer *in, struct gc_frame_header *h,
               enum gc_decode_status *status);
/* 1 when the payload is buffered too; else sets the read low watermark so
 * the read callback next runs when it is ( `read_high` is kept). */
int frame_complete(struct bufferevent *bev, const struct gc_frame_header *h,
                   size_t read_high);
#define RELAY_MAX_SINGLE_IO (1u << 20)
/* Size of the reads and writes libevent may make on `bev`. */
void relay_tune_bufferevent(struct bufferevent *bev);
/*
 * Latency: libevent writes queued output only on its next loop pass, one
 * more epoll_wait later.  A small frame that found `bev`'s output empty
 * (`queued_before` == 0) is written at once instead (plain sockets only).
 */
#define RELAY_SMALL_FRAME (16u * 1024u)
void relay_write_small_now(struct bufferevent *bev, size_t queued_before);
/* Append one control frame (header + optional payload). */
int frame_send(struct bufferevent *bev, const struct gc_frame_header *h,
               const void *payload);
int frame_send_hello(struct bufferevent *bev, uint32_t job_id,
                     uint32_t src_rank, const struct gc_hello *hello);

#endif
