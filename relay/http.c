/*
 * Operations endpoint: Prometheus text at /metrics, JSON at /status, and
 * (only with http.admin = true) POST /admin/break-stream for fault tests;
 * and the HTTP server both it and the control endpoint run on.
 *
 * Who sees what (docs/gridrelay.md, "Threat model"): a service's jobs
 * belong to tenants, so on a TCP http.listen, which anyone who reaches the
 * port may read, a service shows only aggregate figures; every job is
 * shown on a Unix socket http.listen (the operator's: it keeps the umask's
 * mode) and to the operators named in service.admins on the control
 * endpoint; a tenant sees its own jobs there.  A per-job relay's endpoint
 * shows its one job: the relay is its launcher's.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static void add_never_joined(struct evbuffer *out, const struct job *job)
{
    const struct rank_slot *slots = job->slots;
    uint32_t count = job->rank_count;
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

static const char *job_state_name(enum job_state state)
{
    switch (state) {
    case JOB_WAITING: return "waiting";
    case JOB_READY: return "ready";
    case JOB_ENDED: return "ended";
    }
    return "?";
}

/* Bytes waiting for the job's local ranks: queued here, or in their
 * sessions' output. */
static uint64_t job_queue_bytes(const struct job *job, uint32_t *sessions)
{
    uint64_t total = 0;
    *sessions = 0;
    for (uint32_t i = 0; i < job->rank_count; i++) {
        const struct rank_slot *slot = &job->slots[i];
        const struct chunk *c;
        TAILQ_FOREACH(c, &slot->pending, entry)
        total += chunk_cost(c);
        if (slot->session != NULL) {
            total +=
                evbuffer_get_length(bufferevent_get_output(slot->session->bev));
            (*sessions)++;
        }
    }
    return total;
}

/* JSON strings the relay did not make (owner, reason) get escaped. */
static void add_json_string(struct evbuffer *out, const char *s)
{
    evbuffer_add(out, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            evbuffer_add_printf(out, "\\%c", c);
        else if (c < 0x20)
            evbuffer_add_printf(out, "\\u%04x", c);
        else
            evbuffer_add(out, &c, 1);
    }
    evbuffer_add(out, "\"", 1);
}

void http_job_json(struct evbuffer *out, const struct job *job)
{
    uint32_t sessions;
    uint64_t queued = job_queue_bytes(job, &sessions);
    uint64_t now = gc_now_ns();
    evbuffer_add_printf(out, "{\"job_id\":%u,\"owner\":", job->id);
    add_json_string(out, job->owner);
    evbuffer_add_printf(
        out,
        ",\"state\":\"%s\",\"first_rank\":%u,\"rank_count\":%u,"
        "\"age_s\":%.3f,\"lease_s\":%.3f,\"sessions\":%u,"
        "\"sessions_refused\":%llu,\"ranks_joined\":%u,"
        "\"ranks_never_joined\":\"",
        job_state_name(job->state), job->first_rank, job->rank_count,
        (double)(now - job->registered_ns) / 1e9,
        job->lease_ns == 0 || job->lease_deadline_ns < now
            ? 0.0
            : (double)(job->lease_deadline_ns - now) / 1e9,
        sessions, (unsigned long long)job->sessions_refused, job->ranks_joined);
    add_never_joined(out, job);
    evbuffer_add_printf(
        out,
        "\",\"bytes_from_ranks\":%llu,\"bytes_to_ranks\":%llu,"
        "\"messages_from_ranks\":%llu,\"queue_bytes\":%llu,\"reason\":",
        (unsigned long long)job->bytes_in, (unsigned long long)job->bytes_out,
        (unsigned long long)job->messages_in, (unsigned long long)queued);
    add_json_string(out, job->end_reason);
    evbuffer_add_printf(out, ",\"peers\":[");
    for (uint32_t i = 0; i < job->peer_count; i++) {
        const struct job_peer *jp = &job->peers[i];
        evbuffer_add_printf(
            out,
            "%s{\"site\":\"%s\",\"first_rank\":%u,\"rank_count\":%u,"
            "\"confirmed\":%s,\"bytes_sent\":%llu,\"bytes_received\":%llu,"
            "\"chunks_sent\":%llu,\"chunks_received\":%llu,\"conflict\":",
            i ? "," : "", jp->name, jp->first_rank, jp->rank_count,
            jp->confirmed ? "true" : "false", (unsigned long long)jp->bytes_out,
            (unsigned long long)jp->bytes_in,
            (unsigned long long)jp->chunks_out,
            (unsigned long long)jp->chunks_in);
        add_json_string(out, jp->conflict);
        evbuffer_add_printf(out, "}");
    }
    evbuffer_add_printf(out, "]}");
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

#define JOB_METRIC(name, type, help)                                           \
    "# HELP gridrelay_job_" name " " help "\n# TYPE gridrelay_job_" name       \
    " " type "\n"

/* One series per job (label job="ID"), and per job and peer site. */
static void add_job_metrics(struct evbuffer *out, const struct relay *relay,
                            const struct http_view *view)
{
    static const char *const heads[] = {
        JOB_METRIC("ranks", "gauge", "This site's ranks of the job."),
        JOB_METRIC("ranks_joined", "gauge",
                   "Ranks of the job that ever had a session."),
        JOB_METRIC("sessions", "gauge", "Rank sessions of the job now."),
        JOB_METRIC("ready", "gauge", "1 once every site of the job has it."),
        JOB_METRIC("bytes_from_ranks_total", "counter",
                   "Payload bytes the job's local ranks sent."),
        JOB_METRIC("bytes_to_ranks_total", "counter",
                   "Payload bytes handed to the job's local ranks."),
        JOB_METRIC("messages_from_ranks_total", "counter",
                   "Messages the job's local ranks sent."),
        JOB_METRIC("queue_bytes", "gauge",
                   "Bytes waiting for the job's local ranks."),
        JOB_METRIC("link_bytes_sent_total", "counter",
                   "Payload bytes of the job sent to a peer site."),
        JOB_METRIC("link_bytes_received_total", "counter",
                   "Payload bytes of the job received from a peer site."),
    };
    enum {
        RANKS,
        JOINED,
        SESSIONS,
        READY,
        FROM,
        TO,
        MSGS,
        QUEUE,
        LSENT,
        LRECV
    };
    for (size_t m = 0; m < sizeof heads / sizeof heads[0]; m++) {
        evbuffer_add_printf(out, "%s", heads[m]);
        const struct job *job;
        TAILQ_FOREACH(job, &relay->jobs, entry)
        {
            if (!http_view_has(view, job))
                continue;
            uint32_t sessions;
            uint64_t queued = job_queue_bytes(job, &sessions), value = 0;
            const char *name = heads[m] + strlen("# HELP ");
            int len = (int)strcspn(name, " ");
            switch (m) {
            case RANKS: value = job->rank_count; break;
            case JOINED: value = job->ranks_joined; break;
            case SESSIONS: value = sessions; break;
            case READY: value = job->state == JOB_READY; break;
            case FROM: value = job->bytes_in; break;
            case TO: value = job->bytes_out; break;
            case MSGS: value = job->messages_in; break;
            case QUEUE: value = queued; break;
            default:
                for (uint32_t i = 0; i < job->peer_count; i++)
                    evbuffer_add_printf(
                        out, "%.*s{job=\"%u\",peer=\"%s\"} %llu\n", len, name,
                        job->id, job->peers[i].name,
                        (unsigned long long)(m == LSENT
                                                 ? job->peers[i].bytes_out
                                                 : job->peers[i].bytes_in));
                continue;
            }
            evbuffer_add_printf(out, "%.*s{job=\"%u\"} %llu\n", len, name,
                                job->id, (unsigned long long)value);
        }
    }
}

int http_view_has(const struct http_view *view, const struct job *job)
{
    return view->all ||
           (view->owner != NULL && strcmp(job->owner, view->owner) == 0);
}

/* Per owner: what each tenant holds of the service (its quotas). */
static void add_owner_metrics(struct evbuffer *out, const struct relay *relay,
                              const struct http_view *view)
{
    evbuffer_add_printf(
        out, "# HELP gridrelay_owner_jobs Jobs an owner has registered "
             "(service.owner_jobs).\n# TYPE gridrelay_owner_jobs gauge\n"
             "# HELP gridrelay_owner_ranks This site's ranks of an owner's "
             "jobs (service.owner_ranks).\n"
             "# TYPE gridrelay_owner_ranks gauge\n"
             "# HELP gridrelay_owner_queue_bytes Bytes waiting for an "
             "owner's ranks.\n# TYPE gridrelay_owner_queue_bytes gauge\n");
    const struct job *job, *other;
    TAILQ_FOREACH(job, &relay->jobs, entry)
    {
        int first = 1;
        TAILQ_FOREACH(other, &relay->jobs, entry)
        {
            if (other == job)
                break;
            if (strcmp(other->owner, job->owner) == 0)
                first = 0;
        }
        if (!first || !http_view_has(view, job))
            continue;
        uint64_t jobs = 0, ranks = 0, queued = 0;
        TAILQ_FOREACH(other, &relay->jobs, entry)
        {
            if (strcmp(other->owner, job->owner) != 0)
                continue;
            uint32_t sessions;
            jobs++;
            ranks += other->rank_count;
            queued += job_queue_bytes(other, &sessions);
        }
        /* Owners are certificate names: escape them as label values. */
        static const char *const names[] = {"jobs", "ranks", "queue_bytes"};
        const uint64_t values[] = {jobs, ranks, queued};
        for (size_t i = 0; i < 3; i++) {
            evbuffer_add_printf(out, "gridrelay_owner_%s{owner=", names[i]);
            add_json_string(out, job->owner);
            evbuffer_add_printf(out, "} %llu\n", (unsigned long long)values[i]);
        }
    }
}

void http_metrics(struct evbuffer *out, const struct relay *relay,
                  const struct http_view *view)
{
    uint32_t ready = 0;
    const struct job *job;
    TAILQ_FOREACH(job, &relay->jobs, entry)
    ready += job->state == JOB_READY;
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
        "# HELP gridrelay_jobs Jobs registered (or configured).\n"
        "# TYPE gridrelay_jobs gauge\ngridrelay_jobs %u\n"
        "# HELP gridrelay_chunks_unknown_job_total Chunks from peers for "
        "jobs not (or no longer) here, dropped.\n"
        "# TYPE gridrelay_chunks_unknown_job_total counter\n"
        "gridrelay_chunks_unknown_job_total %llu\n",
        relay->session_count, (unsigned long long)relay->sessions_refused,
        (unsigned long long)relay->frames_rejected, session_queue_bytes(relay),
        relay->job_count, (unsigned long long)relay->chunks_unknown_job);
    evbuffer_add_printf(
        out,
        "# HELP gridrelay_jobs_ready Jobs every site has.\n"
        "# TYPE gridrelay_jobs_ready gauge\ngridrelay_jobs_ready %u\n"
        "# HELP gridrelay_bytes_from_ranks_total Payload bytes local ranks "
        "sent, every job.\n"
        "# TYPE gridrelay_bytes_from_ranks_total counter\n"
        "gridrelay_bytes_from_ranks_total %llu\n"
        "# HELP gridrelay_bytes_to_ranks_total Payload bytes handed to local "
        "ranks, every job.\n"
        "# TYPE gridrelay_bytes_to_ranks_total counter\n"
        "gridrelay_bytes_to_ranks_total %llu\n"
        "# HELP gridrelay_handshakes Connections in their handshake "
        "(limits.handshakes).\n"
        "# TYPE gridrelay_handshakes gauge\ngridrelay_handshakes %u\n"
        "# HELP gridrelay_connections_refused_total Connections closed at "
        "accept: limits.handshakes was reached.\n"
        "# TYPE gridrelay_connections_refused_total counter\n"
        "gridrelay_connections_refused_total %llu\n"
        "# HELP gridrelay_registrations_refused_total Job registrations "
        "refused (malformed, quota, conflict).\n"
        "# TYPE gridrelay_registrations_refused_total counter\n"
        "gridrelay_registrations_refused_total %llu\n"
        "# HELP gridrelay_http_connections Connections open on an HTTP "
        "endpoint (limits.http_connections each).\n"
        "# TYPE gridrelay_http_connections gauge\n"
        "gridrelay_http_connections{endpoint=\"operations\"} %u\n"
        "gridrelay_http_connections{endpoint=\"control\"} %u\n",
        ready, (unsigned long long)relay->bytes_from_ranks,
        (unsigned long long)relay->bytes_to_ranks, relay->handshakes,
        (unsigned long long)relay->connections_refused,
        (unsigned long long)relay->registrations_refused, relay->ops.open,
        control_connections(relay));
    if (view->all || view->owner != NULL) {
        add_owner_metrics(out, relay, view);
        add_job_metrics(out, relay, view);
    }
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
}

/* GET of a whole report: what `render` writes for the server's view. */
static void send_report(struct evhttp_request *req,
                        const struct http_server *srv,
                        void (*render)(struct evbuffer *, const struct relay *,
                                       const struct http_view *),
                        const char *content_type)
{
    struct evbuffer *out = evbuffer_new();
    if (out == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    render(out, srv->relay, &srv->view);
    send_ok(req, content_type, out);
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    send_report(req, arg, http_metrics, "text/plain; version=0.0.4");
}

static void add_ranks(struct evbuffer *out, const struct job *job)
{
    const char *sep = "";
    for (uint32_t i = 0; i < job->rank_count; i++) {
        const struct rank_slot *slot = &job->slots[i];
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
}

void http_status(struct evbuffer *out, const struct relay *relay,
                 const struct http_view *view)
{
    const struct relay_config *cfg = relay->cfg;
    /* Site and peer names are restricted to [A-Za-z0-9_-] by the config,
     * so they need no JSON escaping. */
    evbuffer_add_printf(
        out,
        "{\"site\":\"%s\",\"mode\":\"%s\",\"transport\":\"%s\","
        "\"draining\":%s,\"uptime_s\":%.3f,"
        "\"sessions\":%u,\"sessions_refused\":%llu,\"frames_rejected\":%llu,"
        "\"chunks_unknown_job\":%llu,\"session_queue_bytes\":%zu,",
        cfg->site_name, relay->service ? "service" : "job",
        relay->transport->name, relay->draining ? "true" : "false",
        (double)(gc_now_ns() - relay->started_ns) / 1e9, relay->session_count,
        (unsigned long long)relay->sessions_refused,
        (unsigned long long)relay->frames_rejected,
        (unsigned long long)relay->chunks_unknown_job,
        session_queue_bytes(relay));
    /* A per-job relay describes its job at the top level, as launchers
     * and tests have always read it. */
    const struct job *only =
        relay->service || !view->all ? NULL : TAILQ_FIRST(&relay->jobs);
    if (only != NULL) {
        evbuffer_add_printf(out,
                            "\"job_id\":%u,\"first_rank\":%u,\"rank_count\":%u,"
                            "\"ranks_joined\":%u,\"ranks_never_joined\":\"",
                            only->id, only->first_rank, only->rank_count,
                            only->ranks_joined);
        add_never_joined(out, only);
        evbuffer_add_printf(out, "\",\"ranks\":[");
        add_ranks(out, only);
        evbuffer_add_printf(out, "],");
    }
    evbuffer_add_printf(out, "\"job_count\":%u,\"jobs\":[", relay->job_count);
    const struct job *job;
    const char *sep = "";
    TAILQ_FOREACH(job, &relay->jobs, entry)
    {
        if (!http_view_has(view, job))
            continue;
        evbuffer_add_printf(out, "%s", sep);
        http_job_json(out, job);
        sep = ",";
    }
    evbuffer_add_printf(out, "],\"links\":[");
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
    evbuffer_add_printf(out, "]}\n");
}

static void on_status(struct evhttp_request *req, void *arg)
{
    send_report(req, arg, http_status, "application/json");
}

static void on_break_stream(struct evhttp_request *req, void *arg)
{
    struct relay *relay = ((struct http_server *)arg)->relay;
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

/* ---- the server ------------------------------------------------------- */

/*
 * libevent 2.1's evhttp tells nobody when it closes a connection, so the
 * server keeps a reference to each connection's bufferevent: once evhttp
 * has freed it (its callbacks are gone), http_server_tick drops ours and
 * the descriptor closes.  With that count the number of open connections
 * is bounded (limits.http_connections): the listener pauses at the limit,
 * so further connections wait in the kernel's backlog instead of using
 * descriptors.
 */
struct http_conn {
    struct bufferevent *bev;
    TAILQ_ENTRY(http_conn) entry;
};

static struct bufferevent *new_connection(struct event_base *base, void *arg)
{
    struct http_server *srv = arg;
    struct bufferevent *bev = NULL;
    struct http_conn *conn = calloc(1, sizeof *conn);
    if (conn == NULL)
        return NULL;
    if (srv->tls != NULL)
        bev = tls_accept(base, -1, *srv->tls);
    else
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        free(conn);
        return NULL;
    }
    /* evhttp checks the header limit on what it has buffered, but the
     * socket is read whatever the parser found: a 46 MiB header line was
     * 13 MB resident before the 400.  Reading stops at what a request may
     * hold. */
    bufferevent_setwatermark(bev, EV_READ, 0, srv->read_max);
    bufferevent_incref(bev);
    conn->bev = bev;
    TAILQ_INSERT_TAIL(&srv->conns, conn, entry);
    if (++srv->open >= srv->relay->cfg->http_max_connections && !srv->paused) {
        srv->paused = 1;
        evconnlistener_disable(srv->listener);
        gc_log_warn("%s: %u connections open (limits.http_connections): "
                    "not accepting more until one closes",
                    srv->what, srv->open);
    }
    return bev;
}

void http_server_tick(struct http_server *srv)
{
    struct http_conn *conn, *next;
    for (conn = TAILQ_FIRST(&srv->conns); conn != NULL; conn = next) {
        next = TAILQ_NEXT(conn, entry);
        bufferevent_data_cb readcb = NULL;
        bufferevent_event_cb eventcb = NULL;
        bufferevent_getcb(conn->bev, &readcb, NULL, &eventcb, NULL);
        if (readcb != NULL || eventcb != NULL)
            continue; /* evhttp still has it */
        TAILQ_REMOVE(&srv->conns, conn, entry);
        bufferevent_decref(conn->bev);
        free(conn);
        srv->open--;
    }
    if (srv->paused && srv->open < srv->relay->cfg->http_max_connections) {
        srv->paused = 0;
        evconnlistener_enable(srv->listener);
    }
}

struct bufferevent *http_connection_tls(struct evhttp_request *req)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    return conn != NULL ? evhttp_connection_get_bufferevent(conn) : NULL;
}

#define HTTP_TIMEOUT_S   10
#define HTTP_MAX_HEADERS 8192

int http_server_start(struct http_server *srv, struct relay *relay,
                      const char *addr, const char *what,
                      struct tls_context **tls, size_t max_body)
{
    srv->relay = relay;
    srv->tls = tls;
    TAILQ_INIT(&srv->conns);
    snprintf(srv->what, sizeof srv->what, "%s", what);
    srv->http = evhttp_new(relay->base);
    if (srv->http == NULL)
        return -1;
    /* A client gets 10 s per request and for an idle connection, 8 KiB
     * of headers and the body its endpoint needs: nothing it sends makes
     * the relay hold more. */
    evhttp_set_timeout(srv->http, HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(srv->http, HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)max_body);
    srv->read_max = HTTP_MAX_HEADERS + max_body + 4096;
    evhttp_set_bevcb(srv->http, new_connection, srv);
    srv->listener = relay_listen(relay, addr, NULL, what, tls != NULL);
    if (srv->listener == NULL)
        return -1;
    if (evhttp_bind_listener(srv->http, srv->listener) == NULL) {
        evconnlistener_free(srv->listener);
        srv->listener = NULL;
        return -1;
    }
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr;
    if (path[0] == '/')
        snprintf(srv->unix_path, sizeof srv->unix_path, "%s", path);
    return 0;
}

void http_server_free(struct http_server *srv)
{
    /* evhttp_free frees the bound listener and its open connections;
     * then our references go. */
    if (srv->http != NULL)
        evhttp_free(srv->http);
    srv->http = NULL;
    struct http_conn *conn;
    while ((conn = TAILQ_FIRST(&srv->conns)) != NULL) {
        TAILQ_REMOVE(&srv->conns, conn, entry);
        bufferevent_decref(conn->bev);
        free(conn);
    }
    srv->open = 0;
    if (srv->unix_path[0] != '\0')
        unlink(srv->unix_path);
    srv->unix_path[0] = '\0';
}

int http_start(struct relay *relay)
{
    struct http_server *srv = &relay->ops;
    /* A service's TCP endpoint is anyone's: aggregates only.  The
     * operator's Unix socket, and a per-job relay's endpoint, show all. */
    srv->view.all = !relay->service ||
                    strncmp(relay->cfg->http_listen, "unix:", 5) == 0 ||
                    relay->cfg->http_listen[0] == '/';
    srv->view.owner = NULL;
    if (http_server_start(srv, relay, relay->cfg->http_listen, "http", NULL,
                          1024) != 0)
        return -1;
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_cb(srv->http, "/metrics", on_metrics, srv);
    evhttp_set_cb(srv->http, "/status", on_status, srv);
    evhttp_set_cb(srv->http, "/admin/break-stream", on_break_stream, srv);
    return 0;
}
