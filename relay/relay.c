/*
 * Relay lifecycle, routing between rank sessions and links, and the
 * helpers every connection shares (chunks, frames, drain on SIGTERM).
 */
#include "relay.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gc_log.h"
#include "gc_util.h"

#define TICK_MS          100
#define DRAIN_TIMEOUT_NS (10ull * 1000000000ull)

/* ---- chunks ----------------------------------------------------------- */

struct chunk *chunk_new(struct relay *relay, struct job *job,
                        const struct gc_frame_header *hdr)
{
    struct chunk *c = malloc(sizeof *c + hdr->payload_len);
    if (c == NULL)
        return NULL;
    c->refs = 1;
    c->relay = relay;
    c->job = job;
    if (job != NULL)
        job_ref(job);
    c->hdr = *hdr;
    c->origin_link = NULL;
    c->stream_index = CHUNK_UNSENT;
    return c;
}

void chunk_ref(struct chunk *c)
{
    c->refs++;
}

void chunk_unref(struct chunk *c)
{
    if (--c->refs != 0)
        return;
    if (c->job != NULL)
        job_unref(c->job);
    free(c);
}

/* ---- frames ----------------------------------------------------------- */

int frame_peek(struct evbuffer *in, struct gc_frame_header *h,
               enum gc_decode_status *status)
{
    uint8_t raw[GC_HEADER_SIZE];
    if (evbuffer_copyout(in, raw, GC_HEADER_SIZE) != GC_HEADER_SIZE)
        return 0;
    *status = gc_header_decode(raw, h);
    return *status == GC_DECODE_OK ? 1 : -1;
}

int frame_complete(struct bufferevent *bev, const struct gc_frame_header *h,
                   size_t read_high)
{
    size_t need = GC_HEADER_SIZE + (size_t)h->payload_len;
    int complete = evbuffer_get_length(bufferevent_get_input(bev)) >= need;
    /* Wake the read callback once per whole frame, not per arrival. */
    bufferevent_setwatermark(bev, EV_READ, complete ? 0 : need, read_high);
    return complete;
}

void relay_tune_bufferevent(struct bufferevent *bev)
{
    /* libevent moves at most 16 KiB per read() or write() by default; a
     * data mover wants far fewer, larger system calls. */
    bufferevent_set_max_single_read(bev, RELAY_MAX_SINGLE_IO);
    bufferevent_set_max_single_write(bev, RELAY_MAX_SINGLE_IO);
}

void relay_write_small_now(struct bufferevent *bev, size_t queued_before)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    /* TLS bufferevents own their socket; bulk data and anything queued
     * behind other data keep libevent's pacing and write callbacks. */
    if (queued_before != 0 || evbuffer_get_length(out) > RELAY_SMALL_FRAME ||
        tls_bufferevent(bev))
        return;
    evbuffer_write(out, bufferevent_getfd(bev));
}

int frame_send_hello(struct bufferevent *bev, uint32_t job_id,
                     uint32_t src_rank, const struct gc_hello *hello)
{
    uint8_t payload[GC_HELLO_SIZE];
    gc_hello_encode(hello, payload, sizeof payload);
    struct gc_frame_header h = {.type = GC_FRAME_HELLO,
                                .job_id = job_id,
                                .src_rank = src_rank,
                                .payload_len = GC_HELLO_SIZE};
    return frame_send(bev, &h, payload);
}

int frame_send(struct bufferevent *bev, const struct gc_frame_header *h,
               const void *payload)
{
    uint8_t raw[GC_HEADER_SIZE];
    gc_header_encode(h, raw);
    struct evbuffer *out = bufferevent_get_output(bev);
    if (evbuffer_add(out, raw, sizeof raw) != 0)
        return -1;
    if (h->payload_len > 0 && evbuffer_add(out, payload, h->payload_len) != 0)
        return -1;
    return 0;
}

/* ---- closing connections -------------------------------------------- */

/* A connection refused or failed by us: its last frame (an ERROR saying
 * why) still has to reach the peer, which protocol §4 promises. */
struct closing {
    struct relay *relay;
    struct bufferevent *bev;
    TAILQ_ENTRY(closing) entry;
};

#define CLOSING_FLUSH_S 2

static void closing_free(struct closing *c)
{
    TAILQ_REMOVE(&c->relay->closing, c, entry);
    c->relay->handshakes--;
    bufferevent_free(c->bev);
    free(c);
}

static void on_closing_write(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        closing_free(arg);
}

static void on_closing_event(struct bufferevent *bev, short events, void *arg)
{
    (void)bev;
    (void)events;
    closing_free(arg); /* hung up, error, or not reading within the limit */
}

void relay_close_after_flush(struct relay *relay, struct bufferevent *bev)
{
    struct closing *c = calloc(1, sizeof *c);
    if (c == NULL || evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        free(c);
        bufferevent_free(bev);
        return;
    }
    c->relay = relay;
    c->bev = bev;
    TAILQ_INSERT_TAIL(&relay->closing, c, entry);
    relay->handshakes++; /* it holds a descriptor like one */
    struct timeval limit = {CLOSING_FLUSH_S, 0};
    bufferevent_disable(bev, EV_READ);
    bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
    bufferevent_set_timeouts(bev, NULL, &limit);
    bufferevent_setcb(bev, NULL, on_closing_write, on_closing_event, c);
    bufferevent_enable(bev, EV_WRITE);
}

int relay_admit_handshake(struct relay *relay, const char *what,
                          const char *peer_addr)
{
    if (relay->handshakes < relay->cfg->max_handshakes) {
        relay->handshakes++;
        return 1;
    }
    /* Logged once per second at most: the refusals may be a flood. */
    uint64_t now = gc_now_ns();
    relay->connections_refused++;
    if (now - relay->refusal_logged_ns > 1000000000ull) {
        relay->refusal_logged_ns = now;
        gc_log_warn("%s from %s closed: %u connections in their handshake "
                    "(limits.handshakes); %llu refused so far",
                    what, peer_addr, relay->handshakes,
                    (unsigned long long)relay->connections_refused);
    }
    return 0;
}

/* ---- routing ---------------------------------------------------------- */

struct link *relay_link_by_name(struct relay *relay, const char *name)
{
    for (uint32_t i = 0; i < relay->cfg->peer_count; i++)
        if (strcmp(relay->links[i].peer->name, name) == 0)
            return &relay->links[i];
    return NULL;
}

void relay_deliver_local(struct relay *relay, struct rank_slot *slot,
                         struct chunk *c)
{
    (void)relay;
    if (slot->departed || slot->job->state == JOB_ENDED) {
        /* Nobody will read it; give the budget back so senders go on. */
        slot->chunks_dropped++;
        gc_log_debug("job %u rank %u has left: dropping a chunk from rank %u",
                     slot->job->id, slot->rank, c->hdr.src_rank);
        relay_credit_returned(c);
        return;
    }
    chunk_ref(c);
    TAILQ_INSERT_TAIL(&slot->pending, c, entry);
    if (slot->session != NULL && slot->session->state == SESSION_ACTIVE)
        session_flush_pending(slot->session);
}

void relay_credit_returned(struct chunk *c)
{
    struct job *job = c->job;
    if (job == NULL || job->state == JOB_ENDED)
        return;
    struct rank_slot *slot = job_local_slot(job, c->hdr.dst_rank);
    if (slot == NULL)
        return;
    if (c->origin_link != NULL) {
        /* Credit granted before a link reset means nothing to the peer. */
        struct job_peer *jp = job_peer_on_link(job, c->origin_link);
        if (jp != NULL && c->origin_generation == c->origin_link->generation)
            link_credit_returned(jp, (uint32_t)(slot - job->slots),
                                 chunk_cost(c));
        return;
    }
    slot->local_credit_used -= chunk_cost(c);
    struct session *s;
    while ((s = TAILQ_FIRST(&slot->waiters)) != NULL) {
        TAILQ_REMOVE(&slot->waiters, s, wait_entry);
        s->blocked_slot = NULL;
        session_wake(s);
    }
}

/* ---- listeners -------------------------------------------------------- */

static void format_peer(const struct sockaddr *sa, int len, char *out,
                        size_t out_len)
{
    struct gc_endpoint ep = {0};
    if (len <= 0 || (size_t)len > sizeof ep.addr) {
        snprintf(out, out_len, "?");
        return;
    }
    memcpy(&ep.addr, sa, (size_t)len);
    ep.addr_len = (socklen_t)len;
    ep.family = sa->sa_family;
    if (ep.family == AF_UNIX)
        snprintf(out, out_len, "local-unix");
    else
        gc_endpoint_format(&ep, out, out_len);
}

static void on_local_accept(struct evconnlistener *listener, evutil_socket_t fd,
                            struct sockaddr *sa, int len, void *arg)
{
    (void)listener;
    struct relay *relay = arg;
    char peer[128];
    format_peer(sa, len, peer, sizeof peer);
    if (relay->draining) {
        evutil_closesocket(fd);
        return;
    }
    session_accept(relay, fd, peer);
}

static void on_wan_accept(struct evconnlistener *listener, evutil_socket_t fd,
                          struct sockaddr *sa, int len, void *arg)
{
    (void)listener;
    struct relay *relay = arg;
    char peer[128];
    format_peer(sa, len, peer, sizeof peer);
    link_wan_accept(relay, fd, peer);
}

static void on_listener_error(struct evconnlistener *listener, void *arg)
{
    (void)listener;
    (void)arg;
    /* EMFILE and friends: keep serving existing connections. */
    gc_log_error("accept failed: %s",
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/*
 * A socket file left by a crashed relay would make bind fail, so it is
 * removed; one a running relay listens on is not (a second gridrelay
 * started on a live service's configuration unlinked the live rank
 * socket, cutting the service off from every new rank): 0, or -1 logged.
 */
static int unix_socket_in_use(const struct gc_endpoint *ep, const char *what,
                              const char *text)
{
    const char *path = ((const struct sockaddr_un *)&ep->addr)->sun_path;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        gc_log_error("%s listener on %s: socket: %s", what, text,
                     strerror(errno));
        return -1;
    }
    int live = connect(fd, (const struct sockaddr *)&ep->addr, ep->addr_len);
    int err = errno;
    close(fd);
    if (live == 0) {
        gc_log_error("%s listener on %s: another relay is listening there",
                     what, text);
        return -1;
    }
    if (err != ECONNREFUSED)
        gc_log_warn("%s listener: %s is not answering (%s); replacing it", what,
                    path, strerror(err));
    if (unlink(path) != 0 && errno != ENOENT) {
        gc_log_error("%s listener: unlink %s: %s", what, path, strerror(errno));
        return -1;
    }
    return 0;
}

struct evconnlistener *relay_listen(struct relay *relay, const char *text,
                                    evconnlistener_cb cb, const char *what,
                                    int anyone)
{
    struct gc_endpoint ep;
    char err[256];
    if (gc_endpoint_parse(text, &ep, err, sizeof err) != 0) {
        gc_log_error("%s listener: %s", what, err);
        return NULL;
    }
    if (ep.family == AF_UNIX && unix_socket_in_use(&ep, what, text) != 0)
        return NULL;
    struct evconnlistener *l = evconnlistener_new_bind(
        relay->base, cb, relay,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
        (struct sockaddr *)&ep.addr, (int)ep.addr_len);
    if (l == NULL) {
        gc_log_error("%s listener on %s: %s", what, text, strerror(errno));
        return NULL;
    }
    /* Any local user's ranks and launchers may connect (the relay runs
     * as its own user, under UMask=0077): the job token and the client
     * certificate are what keeps strangers out.  The operator's socket
     * (http.listen) keeps the umask's mode. */
    if (ep.family == AF_UNIX && anyone &&
        chmod(((struct sockaddr_un *)&ep.addr)->sun_path, 0666) != 0)
        gc_log_warn("%s listener: chmod 0666 %s: %s", what,
                    ((struct sockaddr_un *)&ep.addr)->sun_path,
                    strerror(errno));
    evconnlistener_set_error_cb(l, on_listener_error);
    gc_log_info("%s listener on %s", what, text);
    return l;
}

/* ---- drain and signals ------------------------------------------------ */

static int relay_drained(const struct relay *relay)
{
    for (uint32_t i = 0; i < relay->cfg->peer_count; i++)
        if (!link_idle(&relay->links[i]))
            return 0;
    const struct session *s;
    TAILQ_FOREACH(s, &relay->sessions, entry)
    if (evbuffer_get_length(bufferevent_get_output(s->bev)) > 0)
        return 0;
    return 1;
}

#define GOODBYE_FLUSH_MS 200

/* Tell ranks and peers why we go, then give the frames time to leave. */
static void say_goodbye_and_exit(struct relay *relay)
{
    struct session *s, *next;
    for (s = TAILQ_FIRST(&relay->sessions); s != NULL; s = next) {
        next = TAILQ_NEXT(s, entry);
        if (s->state != SESSION_CLOSING)
            session_fail(s, GC_ERR_SHUTDOWN, "relay is shutting down");
    }
    for (uint32_t i = 0; i < relay->cfg->peer_count; i++)
        link_say_bye(&relay->links[i]);
    /* Peers that see our BYE re-dial; nothing new is taken on now. */
    if (relay->wan_listener != NULL)
        evconnlistener_disable(relay->wan_listener);
    struct timeval flush = {0, GOODBYE_FLUSH_MS * 1000};
    event_base_loopexit(relay->base, &flush);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct relay *relay = arg;
    uint64_t now = gc_now_ns();
    for (uint32_t i = 0; i < relay->cfg->peer_count; i++)
        link_tick(&relay->links[i], now);
    job_tick(relay, now);
    if (relay->ops.http != NULL)
        http_server_tick(&relay->ops);
    if (relay->control != NULL)
        control_tick(relay);
    if (!relay->draining)
        return;
    if (relay->exiting)
        return;
    if (relay_drained(relay)) {
        gc_log_info("drained; exiting");
        relay->exiting = 1;
        say_goodbye_and_exit(relay);
    } else if (now > relay->drain_deadline_ns) {
        gc_log_warn("drain timed out; exiting with data still queued");
        relay->exiting = 1;
        say_goodbye_and_exit(relay);
    }
}

static void start_drain(struct relay *relay, const char *why)
{
    if (relay->draining) {
        gc_log_warn("%s again: exiting now", why);
        event_base_loopexit(relay->base, NULL);
        return;
    }
    gc_log_info("%s: draining (no new sessions, flushing queued data)", why);
    relay->draining = 1;
    /* A service's jobs cannot outlive it: their ranks and the peer sites
     * learn why now, instead of from a broken connection. */
    struct job *job;
    while (relay->service && (job = TAILQ_FIRST(&relay->jobs)) != NULL)
        job_end(job, GC_ERR_SHUTDOWN, 1,
                "the gridrelay service of site %s is stopping (%s)",
                relay->cfg->site_name, why);
    relay->drain_deadline_ns = gc_now_ns() + DRAIN_TIMEOUT_NS;
    if (relay->local_unix_listener != NULL)
        evconnlistener_disable(relay->local_unix_listener);
    if (relay->local_tcp_listener != NULL)
        evconnlistener_disable(relay->local_tcp_listener);
}

/* ---- reload (SIGHUP) --------------------------------------------------- */

static void warn_unreloadable(const char *key, void *arg)
{
    (void)arg;
    gc_log_warn("SIGHUP: %s changed; it takes effect when the relay "
                "restarts",
                key);
}

/* Peers: a changed address is dialled next time, a new peer gets its link
 * now; a peer gone from the file keeps its link (and its jobs) until the
 * relay restarts. */
static void reload_peers(struct relay *relay, const struct relay_config *next)
{
    struct relay_config *cfg = relay->cfg;
    for (uint32_t i = 0; i < next->peer_count; i++) {
        const struct relay_peer_config *p = &next->peers[i];
        struct link *link = relay_link_by_name(relay, p->name);
        if (link == NULL) {
            struct relay_peer_config *slot = &cfg->peers[cfg->peer_count];
            *slot = *p;
            if (link_init(relay, &relay->links[cfg->peer_count], slot,
                          (int)cfg->peer_count) != 0) {
                link_free(&relay->links[cfg->peer_count]);
                gc_log_error("SIGHUP: cannot add peer %s", p->name);
                continue;
            }
            gc_log_info("SIGHUP: new peer %s", p->name);
            link_start(&relay->links[cfg->peer_count++]);
            continue;
        }
        struct relay_peer_config *mine = &cfg->peers[link->index];
        if (p->connect != mine->connect)
            gc_log_warn("SIGHUP: peers %s: connect changed; it takes effect "
                        "when the relay restarts",
                        p->name);
        if (strcmp(p->address, mine->address) != 0 &&
            link_set_address(link, p->address) == 0)
            gc_log_info("SIGHUP: peer %s: next dials go to %s", p->name,
                        p->address);
    }
    for (uint32_t i = 0; i < cfg->peer_count; i++) {
        int kept = 0;
        for (uint32_t j = 0; j < next->peer_count && !kept; j++)
            kept = strcmp(cfg->peers[i].name, next->peers[j].name) == 0;
        if (!kept)
            gc_log_warn("SIGHUP: peer %s is no longer configured; its link "
                        "stays until the relay restarts",
                        cfg->peers[i].name);
    }
}

/*
 * Re-read the configuration and apply what can change under running jobs:
 * log level and file, certificates and CAs (new connections use them;
 * streams up keep their session), the service's limits, and the peers.
 * A file with errors changes nothing.
 */
static void relay_reload(struct relay *relay)
{
    struct relay_config *cfg = relay->cfg;
    struct relay_config *next = malloc(sizeof *next);
    struct tls_context *ctx = NULL;
    char err[512];
    if (next == NULL)
        return;
    char *errors = NULL;
    size_t errors_len = 0;
    FILE *mem = open_memstream(&errors, &errors_len);
    int loaded =
        mem != NULL ? relay_config_load(cfg->source_file, next, mem) : -1;
    if (mem != NULL)
        fclose(mem);
    if (loaded != 0) {
        /* Each problem as its own log line, file:line first. */
        for (char *line = errors, *end; line != NULL && *line != '\0';
             line = end + 1) {
            end = strchr(line, '\n');
            if (end == NULL)
                end = line + strlen(line) - 1;
            gc_log_error("SIGHUP: %.*s", (int)(end - line + (*end != '\n')),
                         line);
        }
        gc_log_error("SIGHUP: %s has errors; nothing changed",
                     cfg->source_file);
        free(errors);
        goto cleanup;
    }
    free(errors);
    if (strcmp(next->site_name, cfg->site_name) != 0 ||
        next->service != cfg->service) {
        gc_log_error("SIGHUP: site or mode changed; restart the relay for "
                     "that: nothing changed");
        goto cleanup;
    }
    if (!cfg->wan_plaintext) {
        ctx = tls_context_new(next->tls_cert, next->tls_key, next->tls_ca, err,
                              sizeof err);
        if (ctx == NULL) {
            gc_log_error("SIGHUP: TLS: %s; nothing changed", err);
            goto cleanup;
        }
    }
    if (cfg->service && control_reload(relay, next) != 0)
        goto cleanup;
    relay_config_unreloadable(cfg, next, warn_unreloadable, NULL);
    if (ctx != NULL) {
        /* Streams up keep the old context until they close. */
        tls_context_free(relay->tls);
        relay->tls = ctx;
        ctx = NULL;
    }
    memcpy(cfg->tls_cert, next->tls_cert, sizeof cfg->tls_cert);
    memcpy(cfg->tls_key, next->tls_key, sizeof cfg->tls_key);
    memcpy(cfg->tls_ca, next->tls_ca, sizeof cfg->tls_ca);
    memcpy(cfg->service_client_ca, next->service_client_ca,
           sizeof cfg->service_client_ca);
    cfg->service_lease_s = next->service_lease_s;
    cfg->service_max_jobs = next->service_max_jobs;
    cfg->service_job_memory = next->service_job_memory;
    cfg->service_owner_jobs = next->service_owner_jobs;
    cfg->service_max_ranks = next->service_max_ranks;
    cfg->service_owner_ranks = next->service_owner_ranks;
    memcpy(cfg->service_admins, next->service_admins,
           sizeof cfg->service_admins);
    cfg->max_handshakes = next->max_handshakes;
    cfg->http_max_connections = next->http_max_connections;
    reload_peers(relay, next);
    if (strcmp(next->log_file, cfg->log_file) != 0) {
        if (next->log_file[0] != '\0' && gc_log_open_file(next->log_file) != 0)
            gc_log_error("SIGHUP: cannot open log file %s", next->log_file);
        else
            memcpy(cfg->log_file, next->log_file, sizeof cfg->log_file);
    } else if (cfg->log_file[0] != '\0') {
        /* logrotate moved the file away: write to a new one. */
        if (gc_log_reopen() != 0)
            gc_log_error("SIGHUP: cannot reopen log file %s", cfg->log_file);
        else
            gc_log_info("SIGHUP: log file reopened");
    }
    memcpy(cfg->log_level, next->log_level, sizeof cfg->log_level);
    gc_log_set_level((enum gc_log_level)gc_log_level_parse(cfg->log_level));
    gc_log_info("SIGHUP: reloaded %s (log level %s, %s, %u peer(s), %u "
                "job(s) kept)",
                cfg->source_file, cfg->log_level,
                cfg->wan_plaintext ? "plaintext" : "certificates re-read",
                cfg->peer_count, relay->job_count);
cleanup:
    tls_context_free(ctx);
    free(next);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct relay *relay = arg;
    if (sig == SIGHUP) {
        relay_reload(relay);
        return;
    }
    start_drain(relay, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* ---- lifecycle -------------------------------------------------------- */

int relay_init(struct relay *relay, struct relay_config *cfg)
{
    int status = -1;
    char err[512];
    memset(relay, 0, sizeof *relay);
    relay->cfg = cfg;
    relay->service = cfg->service;
    relay->link_job_id = cfg->service ? 0 : cfg->job_id;
    TAILQ_INIT(&relay->sessions);
    TAILQ_INIT(&relay->pending_streams);
    TAILQ_INIT(&relay->closing);
    TAILQ_INIT(&relay->jobs);
    TAILQ_INIT(&relay->early_announces);
    relay->started_ns = gc_now_ns();
    if (gc_random_bytes((uint8_t *)&relay->epoch, sizeof relay->epoch) != 0)
        goto cleanup;
    relay->epoch |= 1; /* 0 means "no epoch seen" on the peer side */

    /* The links' handshake proves the job token (a per-job relay); a
     * service's links are shared by every job, and certificates alone
     * authenticate them (the empty key keeps the handshake's shape). */
    if (!cfg->service) {
        int token_len =
            gc_token_read_file(cfg->token_file, relay->token,
                               sizeof relay->token, err, sizeof err);
        if (token_len < 0) {
            gc_log_error("%s", err);
            goto cleanup;
        }
        relay->token_len = (size_t)token_len;
    }

    if (cfg->wan_plaintext) {
        gc_log_warn("wan.plaintext = true: WAN streams are NOT encrypted or "
                    "authenticated by certificate");
        relay->transport = &transport_plain;
    } else {
        relay->tls = tls_context_new(cfg->tls_cert, cfg->tls_key, cfg->tls_ca,
                                     err, sizeof err);
        if (relay->tls == NULL) {
            gc_log_error("TLS: %s", err);
            goto cleanup;
        }
        relay->transport = &transport_tls;
    }

    relay->base = event_base_new();
    if (relay->base == NULL)
        goto cleanup;

    /* Room for every peer a reload may add: links never move. */
    relay->links = calloc(RELAY_MAX_PEERS, sizeof *relay->links);
    if (relay->links == NULL)
        goto cleanup;
    for (uint32_t i = 0; i < cfg->peer_count; i++)
        if (link_init(relay, &relay->links[i], &cfg->peers[i], (int)i) != 0)
            goto cleanup;
    if (!cfg->service && job_from_config(relay) == NULL)
        goto cleanup;

    if (cfg->local_unix[0] != '\0') {
        relay->local_unix_listener = relay_listen(
            relay, cfg->local_unix, on_local_accept, "local unix", 1);
        if (relay->local_unix_listener == NULL)
            goto cleanup;
    }
    if (cfg->local_tcp[0] != '\0') {
        relay->local_tcp_listener = relay_listen(
            relay, cfg->local_tcp, on_local_accept, "local tcp", 1);
        if (relay->local_tcp_listener == NULL)
            goto cleanup;
    }
    if (cfg->wan_listen[0] != '\0') {
        relay->wan_listener =
            relay_listen(relay, cfg->wan_listen, on_wan_accept, "wan", 1);
        if (relay->wan_listener == NULL)
            goto cleanup;
    }
    if (cfg->http_listen[0] != '\0' && http_start(relay) != 0)
        goto cleanup;
    if (cfg->service && control_start(relay) != 0)
        goto cleanup;

    relay->tick_timer = event_new(relay->base, -1, EV_PERSIST, on_tick, relay);
    relay->sigterm_event = evsignal_new(relay->base, SIGTERM, on_signal, relay);
    relay->sigint_event = evsignal_new(relay->base, SIGINT, on_signal, relay);
    relay->sighup_event = evsignal_new(relay->base, SIGHUP, on_signal, relay);
    if (relay->tick_timer == NULL || relay->sigterm_event == NULL ||
        relay->sigint_event == NULL || relay->sighup_event == NULL)
        goto cleanup;
    struct timeval tick = {0, TICK_MS * 1000};
    event_add(relay->tick_timer, &tick);
    event_add(relay->sigterm_event, NULL);
    event_add(relay->sigint_event, NULL);
    event_add(relay->sighup_event, NULL);
    signal(SIGPIPE, SIG_IGN);

    for (uint32_t i = 0; i < cfg->peer_count; i++)
        link_start(&relay->links[i]);
    status = 0;
cleanup:
    return status;
}

int relay_run(struct relay *relay)
{
    if (relay->service)
        gc_log_info("site %s: service for jobs on %s, %u peer(s), %s WAN",
                    relay->cfg->site_name, relay->cfg->service_control,
                    relay->cfg->peer_count, relay->transport->name);
    else
        gc_log_info("site %s serving ranks %u..%u of job %u, %u peer(s), %s "
                    "WAN",
                    relay->cfg->site_name, relay->cfg->first_rank,
                    relay->cfg->first_rank + relay->cfg->rank_count - 1,
                    relay->cfg->job_id, relay->cfg->peer_count,
                    relay->transport->name);
    return event_base_dispatch(relay->base) < 0 ? -1 : 0;
}

void relay_free(struct relay *relay)
{
    struct session *s;
    while ((s = TAILQ_FIRST(&relay->sessions)) != NULL)
        session_free(s);
    struct stream *st;
    while ((st = TAILQ_FIRST(&relay->pending_streams)) != NULL)
        link_free_pending_stream(st);
    struct closing *c;
    while ((c = TAILQ_FIRST(&relay->closing)) != NULL)
        closing_free(c);
    if (relay->links != NULL)
        for (uint32_t i = 0; i < relay->cfg->peer_count; i++)
            link_free(&relay->links[i]);
    job_free_all(relay);
    control_free(relay);
    if (relay->local_unix_listener != NULL) {
        evconnlistener_free(relay->local_unix_listener);
        unlink(relay->cfg->local_unix[0] == '/' ? relay->cfg->local_unix
                                                : relay->cfg->local_unix + 5);
    }
    if (relay->local_tcp_listener != NULL)
        evconnlistener_free(relay->local_tcp_listener);
    if (relay->wan_listener != NULL)
        evconnlistener_free(relay->wan_listener);
    http_server_free(&relay->ops);
    struct event *events[] = {relay->tick_timer, relay->sigterm_event,
                              relay->sigint_event, relay->sighup_event};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (events[i] != NULL)
            event_free(events[i]);
    free(relay->links);
    if (relay->base != NULL)
        event_base_free(relay->base);
    tls_context_free(relay->tls);
    gc_secret_wipe(relay->token, sizeof relay->token);
}
