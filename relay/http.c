/*
 * Operations endpoint: Prometheus text at /metrics, JSON at /status, and
 * (only with http.admin = true) POST /admin/break-stream for fault tests.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>

#include "gc_log.h"
#include "relay.h"

static const char *link_state_name(enum link_state state)
{
    switch (state) {
    case LINK_UP: return "up";
    case LINK_DOWN: return "down";
    case LINK_LOST: return "lost";
    }
    return "?";
}

static size_t session_queue_bytes(const struct relay *relay)
{
    size_t total = 0;
    const struct session *s;
    TAILQ_FOREACH(s, &relay->sessions, entry)
    total += evbuffer_get_length(bufferevent_get_output(s->bev));
    return total;
}

static size_t stream_queue_bytes(const struct stream *st)
{
    return st->bev ? evbuffer_get_length(bufferevent_get_output(st->bev)) : 0;
}

/* The local ranks that never joined (no session ever authenticated), as
 * grid rank ranges "2-3,5"; nothing when every rank joined. */
static void add_never_joined(struct evbuffer *out, const struct relay *relay)
{
    const struct rank_slot *slots = relay->slots;
    uint32_t count = relay->cfg->rank_count;
    const char *sep = "";
    uint32_t i = 0;
    while (i < count) {
        if (slots[i].joins != 0) {
            i++;
            continue;
        }
        uint32_t first = i;
        while (i < count && slots[i].joins == 0)
            i++;
        if (i - 1 == first)
            evbuffer_add_printf(out, "%s%u", sep, slots[first].rank);
        else
            evbuffer_add_printf(out, "%s%u-%u", sep, slots[first].rank,
                                slots[i - 1].rank);
        sep = ",";
    }
}

static void send_ok(struct evhttp_request *req, const char *content_type,
                    struct evbuffer *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      content_type);
    evhttp_send_reply(req, HTTP_OK, "OK", body);
    evbuffer_free(body);
}

static void add_link_metric(struct evbuffer *out, const char *name,
                            const char *peer, uint64_t value)
{
    evbuffer_add_printf(out, "gridrelay_%s{peer=\"%s\"} %llu\n", name, peer,
                        (unsigned long long)value);
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct relay *relay = arg;
    struct evbuffer *out = evbuffer_new();
    if (out == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evbuffer_add_printf(
        out,
        "# HELP gridrelay_sessions Rank sessions currently connected.\n"
        "# TYPE gridrelay_sessions gauge\ngridrelay_sessions %u\n"
        "# TYPE gridrelay_sessions_refused_total counter\n"
        "gridrelay_sessions_refused_total %llu\n"
        "# TYPE gridrelay_frames_rejected_total counter\n"
        "gridrelay_frames_rejected_total %llu\n"
        "# TYPE gridrelay_session_queue_bytes gauge\n"
        "gridrelay_session_queue_bytes %zu\n"
        "# HELP gridrelay_ranks Local ranks of the job (rank_count).\n"
        "# TYPE gridrelay_ranks gauge\ngridrelay_ranks %u\n"
        "# HELP gridrelay_ranks_joined Local ranks that ever had a session "
        "(joined the job).\n"
        "# TYPE gridrelay_ranks_joined gauge\ngridrelay_ranks_joined %u\n",
        relay->session_count, (unsigned long long)relay->sessions_refused,
        (unsigned long long)relay->frames_rejected, session_queue_bytes(relay),
        relay->cfg->rank_count, relay->ranks_joined);
    for (uint32_t i = 0; i < relay->cfg->peer_count; i++) {
        const struct link *l = &relay->links[i];
        const char *p = l->peer->name;
        add_link_metric(out, "link_up", p, l->state == LINK_UP);
        add_link_metric(out, "link_streams_up", p,
                        (uint64_t)link_streams_up(l));
        add_link_metric(out, "link_bytes_sent_total", p, l->bytes_out);
        add_link_metric(out, "link_bytes_received_total", p, l->bytes_in);
        add_link_metric(out, "link_chunks_sent_total", p, l->chunks_out);
        add_link_metric(out, "link_chunks_received_total", p, l->chunks_in);
        add_link_metric(out, "link_chunks_resent_total", p, l->chunks_resent);
        add_link_metric(out, "link_chunks_copied_total", p, l->chunks_copied);
        add_link_metric(out, "link_bbr_restarts_total", p, l->cc_restarts);
        add_link_metric(out, "link_chunks_duplicate_total", p,
                        l->chunks_duplicate);
        add_link_metric(out, "link_acks_received_total", p, l->acks_in);
        add_link_metric(out, "link_credits_received_total", p, l->credits_in);
        add_link_metric(out, "link_unacked_bytes", p, l->unacked_bytes);
        add_link_metric(out, "link_reorder_bytes", p, l->reorder_bytes);
        for (uint32_t k = 0; k < l->stream_count; k++) {
            const struct stream *st = &l->streams[k];
            evbuffer_add_printf(
                out,
                "gridrelay_stream_up{peer=\"%s\",stream=\"%u\"} %d\n"
                "gridrelay_stream_bytes_sent_total{peer=\"%s\",stream=\"%u\"} "
                "%llu\n"
                "gridrelay_stream_queue_bytes{peer=\"%s\",stream=\"%u\"} %zu\n"
                "gridrelay_stream_rtt_seconds{peer=\"%s\",stream=\"%u\"} %.6f\n"
                "gridrelay_stream_breaks_total{peer=\"%s\",stream=\"%u\"} "
                "%llu\n",
                p, k, st->state == STREAM_UP, p, k,
                (unsigned long long)st->bytes_out, p, k, stream_queue_bytes(st),
                p, k, (double)st->rtt_ns / 1e9, p, k,
                (unsigned long long)st->breaks);
        }
    }
    send_ok(req, "text/plain; version=0.0.4", out);
}

static void on_status(struct evhttp_request *req, void *arg)
{
    struct relay *relay = arg;
    const struct relay_config *cfg = relay->cfg;
    struct evbuffer *out = evbuffer_new();
    if (out == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    /* Site and peer names are restricted to [A-Za-z0-9_-] by the config,
     * so they need no JSON escaping. */
    evbuffer_add_printf(
        out,
        "{\"site\":\"%s\",\"job_id\":%u,\"first_rank\":%u,\"rank_count\":%u,"
        "\"transport\":\"%s\",\"draining\":%s,\"uptime_s\":%.3f,"
        "\"sessions\":%u,\"sessions_refused\":%llu,\"frames_rejected\":%llu,"
        "\"session_queue_bytes\":%zu,\"ranks_joined\":%u,"
        "\"ranks_never_joined\":\"",
        cfg->site_name, cfg->job_id, cfg->first_rank, cfg->rank_count,
        relay->transport->name, relay->draining ? "true" : "false",
        (double)(gc_now_ns() - relay->started_ns) / 1e9, relay->session_count,
        (unsigned long long)relay->sessions_refused,
        (unsigned long long)relay->frames_rejected, session_queue_bytes(relay),
        relay->ranks_joined);
    add_never_joined(out, relay);
    evbuffer_add_printf(out, "\",\"links\":[");
    for (uint32_t i = 0; i < cfg->peer_count; i++) {
        const struct link *l = &relay->links[i];
        evbuffer_add_printf(
            out,
            "%s{\"peer\":\"%s\",\"state\":\"%s\",\"role\":\"%s\","
            "\"streams_up\":%d,\"streams\":%u,\"bytes_sent\":%llu,"
            "\"bytes_received\":%llu,\"chunks_sent\":%llu,"
            "\"chunks_received\":%llu,\"chunks_resent\":%llu,"
            "\"chunks_copied\":%llu,"
            "\"chunks_duplicate\":%llu,\"unacked_bytes\":%llu,"
            "\"reorder_bytes\":%llu,\"stream_detail\":[",
            i ? "," : "", l->peer->name, link_state_name(l->state),
            l->dialer ? "dial" : "listen", link_streams_up(l), l->stream_count,
            (unsigned long long)l->bytes_out, (unsigned long long)l->bytes_in,
            (unsigned long long)l->chunks_out, (unsigned long long)l->chunks_in,
            (unsigned long long)l->chunks_resent,
            (unsigned long long)l->chunks_copied,
            (unsigned long long)l->chunks_duplicate,
            (unsigned long long)l->unacked_bytes,
            (unsigned long long)l->reorder_bytes);
        for (uint32_t k = 0; k < l->stream_count; k++) {
            const struct stream *st = &l->streams[k];
            evbuffer_add_printf(
                out,
                "%s{\"index\":%u,\"up\":%s,\"rtt_ms\":%.3f,"
                "\"bytes_sent\":%llu,\"bytes_received\":%llu,"
                "\"queue_bytes\":%zu,\"breaks\":%llu}",
                k ? "," : "", k, st->state == STREAM_UP ? "true" : "false",
                (double)st->rtt_ns / 1e6, (unsigned long long)st->bytes_out,
                (unsigned long long)st->bytes_in, stream_queue_bytes(st),
                (unsigned long long)st->breaks);
        }
        evbuffer_add_printf(out, "]}");
    }
    evbuffer_add_printf(out, "],\"ranks\":[");
    const char *sep = "";
    for (uint32_t i = 0; i < cfg->rank_count; i++) {
        const struct rank_slot *slot = &relay->slots[i];
        const struct session *s = slot->session;
        if (s == NULL && slot->chunks_dropped == 0 &&
            TAILQ_EMPTY(&slot->pending))
            continue;
        uint64_t pending = 0;
        const struct chunk *c;
        TAILQ_FOREACH(c, &slot->pending, entry)
        pending += c->hdr.payload_len;
        evbuffer_add_printf(
            out,
            "%s{\"rank\":%u,\"connected\":%s,\"bytes_sent\":%llu,"
            "\"bytes_received\":%llu,\"queue_bytes\":%zu,"
            "\"pending_bytes\":%llu,\"chunks_dropped\":%llu,\"joins\":%llu}",
            sep, slot->rank, s != NULL ? "true" : "false",
            (unsigned long long)(s ? s->bytes_in : 0),
            (unsigned long long)(s ? s->bytes_out : 0),
            s ? evbuffer_get_length(bufferevent_get_output(s->bev)) : 0,
            (unsigned long long)pending,
            (unsigned long long)slot->chunks_dropped,
            (unsigned long long)slot->joins);
        sep = ",";
    }
    evbuffer_add_printf(out, "]}\n");
    send_ok(req, "application/json", out);
}

static void on_break_stream(struct evhttp_request *req, void *arg)
{
    struct relay *relay = arg;
    if (!relay->cfg->admin_enabled) {
        evhttp_send_error(req, HTTP_NOTFOUND, "admin endpoints disabled");
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_send_error(req, HTTP_BADMETHOD, "POST only");
        return;
    }
    struct evkeyvalq query;
    TAILQ_INIT(&query);
    const char *uri_query =
        evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    if (uri_query != NULL)
        evhttp_parse_query_str(uri_query, &query);
    const char *peer = evhttp_find_header(&query, "peer");
    const char *stream = evhttp_find_header(&query, "stream");
    struct link *link = NULL;
    if (peer != NULL)
        link = relay_link_by_name(relay, peer);
    else if (relay->cfg->peer_count > 0)
        link = &relay->links[0];
    int index = stream != NULL ? atoi(stream) : -1;
    int broken = link != NULL ? link_break_stream(link, index) : -1;
    evhttp_clear_headers(&query);
    if (broken < 0) {
        evhttp_send_error(req, HTTP_NOTFOUND, "no such peer or stream up");
        return;
    }
    struct evbuffer *out = evbuffer_new();
    if (out != NULL)
        evbuffer_add_printf(out, "{\"peer\":\"%s\",\"stream\":%d}\n",
                            link->peer->name, broken);
    gc_log_warn("admin: broke stream %d of link %s", broken, link->peer->name);
    evhttp_send_reply(req, HTTP_OK, "OK", out);
    if (out != NULL)
        evbuffer_free(out);
}

int http_start(struct relay *relay)
{
    struct gc_endpoint ep;
    char err[256];
    if (gc_endpoint_parse(relay->cfg->http_listen, &ep, err, sizeof err) != 0 ||
        ep.family == AF_UNIX) {
        gc_log_error("http.listen: %s", err);
        return -1;
    }
    relay->http = evhttp_new(relay->base);
    if (relay->http == NULL)
        return -1;
    evhttp_set_allowed_methods(relay->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_cb(relay->http, "/metrics", on_metrics, relay);
    evhttp_set_cb(relay->http, "/status", on_status, relay);
    evhttp_set_cb(relay->http, "/admin/break-stream", on_break_stream, relay);
    /* Split host and port again: evhttp binds by name. */
    char host[256];
    gc_endpoint_format(&ep, host, sizeof host);
    char *colon = strrchr(host, ':');
    *colon = '\0';
    unsigned port = (unsigned)atoi(colon + 1);
    char *bare = host[0] == '[' ? host + 1 : host;
    if (bare != host)
        bare[strlen(bare) - 1] = '\0';
    if (evhttp_bind_socket(relay->http, bare, (ev_uint16_t)port) != 0) {
        gc_log_error("http.listen: cannot bind %s", relay->cfg->http_listen);
        return -1;
    }
    gc_log_info("http endpoint on %s", relay->cfg->http_listen);
    return 0;
}
