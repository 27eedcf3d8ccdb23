/*
 * The service's control endpoint: launchers register, renew, inspect and
 * remove jobs over HTTPS (docs/gridrelay.md, "Service mode").
 *
 * Why HTTPS with client certificates rather than a Unix socket with peer
 * credentials: gridrun runs on a login node of the site far more often
 * than on the gateway, so the endpoint must take connections from other
 * hosts, and those need TLS anyway.  The certificate's common name is the
 * job's owner: only the owner may renew, inspect or remove its job, and
 * the operators named in service.admins may inspect and remove any.  The
 * same endpoint can listen on a Unix socket (still HTTPS) for a launcher
 * on the gateway itself.
 *
 *   POST   /jobs             register (body: control_request.c)
 *   GET    /jobs             the caller's jobs (an operator: all)
 *   GET    /jobs/ID          one job (state, ranks joined, counters)
 *   POST   /jobs/ID/renew    the launcher is alive: extend the lease
 *   DELETE /jobs/ID          end the job
 *   GET    /status, /metrics as on http.listen, with the caller's jobs
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gc_log.h"
#include "relay.h"

#define ENDED_KEPT 64 /* recently ended jobs a launcher may ask about */

struct ended_job {
    uint32_t id;
    char owner[128];
    char reason[256];
};

struct control {
    struct relay *relay;
    struct tls_context *tls;
    struct http_server server;
    struct ended_job ended[ENDED_KEPT];
    unsigned ended_next;
};

/* ---- replies ---------------------------------------------------------- */

static void reply(struct evhttp_request *req, int code, const char *reason,
                  struct evbuffer *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    evhttp_send_reply(req, code, reason, body);
}

static void reply_error(struct evhttp_request *req, int code, const char *text)
{
    struct evbuffer *body = evbuffer_new();
    static const char *const reasons[] = {
        [400 - 400] = "Bad Request",       [403 - 400] = "Forbidden",
        [404 - 400] = "Not Found",         [405 - 400] = "Method Not Allowed",
        [409 - 400] = "Conflict",          [413 - 400] = "Payload Too Large",
        [429 - 400] = "Too Many Requests",
    };
    const char *reason = code >= 400 && code <= 429 && reasons[code - 400]
                             ? reasons[code - 400]
                             : "Service Unavailable";
    if (body == NULL) {
        evhttp_send_error(req, code, reason);
        return;
    }
    evbuffer_add_printf(body, "{\"error\":\"");
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            evbuffer_add(body, "\\", 1);
        evbuffer_add(body, (unsigned char)*p < 0x20 ? " " : p, 1);
    }
    evbuffer_add_printf(body, "\"}\n");
    reply(req, code, reason, body);
    evbuffer_free(body);
}

/* ---- who is asking ---------------------------------------------------- */

/* The client certificate's common name; TLS already checked its chain. */
static int request_owner(struct evhttp_request *req, char *out, size_t len)
{
    int n = tls_peer_common_name(http_connection_tls(req), out, len);
    /* A name with a NUL or control bytes in it would read as another. */
    if (n <= 0 || (size_t)n >= len || strlen(out) != (size_t)n)
        return -1;
    for (int i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            return -1;
    return 0;
}

/* Is `owner` one of service.admins (comma-separated names)? */
static int is_admin(const struct relay_config *cfg, const char *owner)
{
    size_t len = strlen(owner);
    for (const char *p = cfg->service_admins; *p != '\0';) {
        p += strspn(p, ", ");
        size_t n = strcspn(p, ",");
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == len && n > 0 && strncmp(p, owner, n) == 0)
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}

/* ---- registration ----------------------------------------------------- */

/* Where this site's ranks reach the relay, as seen by the launcher that
 * asked: a wildcard TCP address becomes the address it connected to. */
static void rank_endpoint(struct evhttp_request *req, const struct relay *relay,
                          char *out, size_t len)
{
    const struct relay_config *cfg = relay->cfg;
    struct gc_endpoint ep;
    char err[256];
    if (cfg->local_tcp[0] == '\0' ||
        gc_endpoint_parse(cfg->local_tcp, &ep, err, sizeof err) != 0) {
        snprintf(out, len, "%s%s",
                 strncmp(cfg->local_unix, "unix:", 5) == 0 ? "" : "unix:",
                 cfg->local_unix);
        return;
    }
    int wildcard =
        (ep.family == AF_INET &&
         ((struct sockaddr_in *)&ep.addr)->sin_addr.s_addr == INADDR_ANY) ||
        (ep.family == AF_INET6 &&
         IN6_IS_ADDR_UNSPECIFIED(
             &((struct sockaddr_in6 *)&ep.addr)->sin6_addr));
    if (!wildcard) {
        snprintf(out, len, "%s", cfg->local_tcp);
        return;
    }
    struct bufferevent *bev = http_connection_tls(req);
    struct gc_endpoint here = {0};
    here.addr_len = sizeof here.addr;
    uint16_t port = ep.family == AF_INET
                        ? ((struct sockaddr_in *)&ep.addr)->sin_port
                        : ((struct sockaddr_in6 *)&ep.addr)->sin6_port;
    if (getsockname(bufferevent_getfd(bev), (struct sockaddr *)&here.addr,
                    &here.addr_len) == 0 &&
        (here.addr.ss_family == AF_INET || here.addr.ss_family == AF_INET6)) {
        here.family = here.addr.ss_family;
        if (here.family == AF_INET)
            ((struct sockaddr_in *)&here.addr)->sin_port = port;
        else
            ((struct sockaddr_in6 *)&here.addr)->sin6_port = port;
        gc_endpoint_format(&here, out, len);
    } else if (cfg->local_unix[0] != '\0') {
        snprintf(out, len, "%s%s",
                 strncmp(cfg->local_unix, "unix:", 5) == 0 ? "" : "unix:",
                 cfg->local_unix);
    } else {
        snprintf(out, len, "127.0.0.1:%u", (unsigned)ntohs(port));
    }
}

static void reply_job(struct evhttp_request *req, int code, const char *reason,
                      const struct job *job, const char *local)
{
    struct evbuffer *body = evbuffer_new();
    if (body == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    /* A registration also says where this site's ranks connect. */
    if (local != NULL)
        evbuffer_add_printf(body, "{\"local\":\"%s\",\"job\":", local);
    http_job_json(body, job);
    evbuffer_add_printf(body, "%s\n", local != NULL ? "}" : "");
    reply(req, code, reason, body);
    evbuffer_free(body);
}

static void on_register(struct evhttp_request *req, struct control *ctl,
                        const char *owner)
{
    struct relay *relay = ctl->relay;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *text = malloc(len + 1);
    struct job_request *jr = calloc(1, sizeof *jr);
    char err[512];
    int code = 0;
    if (text == NULL || jr == NULL) {
        reply_error(req, 503, "out of memory");
        goto cleanup;
    }
    evbuffer_copyout(in, text, len);
    text[len] = '\0';
    if (control_request_parse(text, len, jr, err, sizeof err) != 0) {
        relay->registrations_refused++;
        gc_log_warn("control: registration from %s refused: %s", owner, err);
        reply_error(req, 400, err);
        goto cleanup;
    }
    snprintf(jr->owner, sizeof jr->owner, "%s", owner);
    struct job *job = job_register(relay, jr, &code, err, sizeof err);
    if (job == NULL) {
        relay->registrations_refused++;
        gc_log_warn("control: job %u of %s refused: %s", jr->id, owner, err);
        reply_error(req, code, err);
        goto cleanup;
    }
    char local[RELAY_PATH_MAX + 8];
    rank_endpoint(req, relay, local, sizeof local);
    reply_job(req, 201, "Created", job, local);
cleanup:
    if (jr != NULL)
        gc_secret_wipe(jr, sizeof *jr);
    free(jr);
    free(text);
}

/* ---- one job ---------------------------------------------------------- */

static void reply_unknown_job(struct evhttp_request *req, struct control *ctl,
                              uint32_t id, const char *owner)
{
    char text[400];
    for (unsigned i = 0; i < ENDED_KEPT; i++) {
        const struct ended_job *e = &ctl->ended[i];
        if (e->id == id && e->id != 0 && strcmp(e->owner, owner) == 0) {
            snprintf(text, sizeof text, "job %u ended: %s", id, e->reason);
            reply_error(req, 404, text);
            return;
        }
    }
    snprintf(text, sizeof text, "no job %u of %s here", id, owner);
    reply_error(req, 404, text);
}

static void on_job(struct evhttp_request *req, struct control *ctl,
                   const struct http_view *view, uint32_t id, int renew)
{
    struct job *job = job_find(ctl->relay, id);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    /* Someone else's job looks like no job at all. */
    if (job == NULL || !http_view_has(view, job)) {
        reply_unknown_job(req, ctl, id, view->owner);
        return;
    }
    /* Only its launcher keeps a job alive. */
    if (renew && cmd == EVHTTP_REQ_POST &&
        strcmp(job->owner, view->owner) == 0) {
        job_renew(job);
        reply_job(req, 200, "OK", job, NULL);
    } else if (!renew && cmd == EVHTTP_REQ_GET) {
        reply_job(req, 200, "OK", job, NULL);
    } else if (!renew && cmd == EVHTTP_REQ_DELETE) {
        job_ref(job);
        if (strcmp(job->owner, view->owner) == 0)
            job_end(job, GC_ERR_JOB_ENDED, 1, "removed by its launcher (%s)",
                    view->owner);
        else
            job_end(job, GC_ERR_JOB_ENDED, 1,
                    "removed by the site's operator (%s)", view->owner);
        reply_job(req, 200, "OK", job, NULL);
        job_unref(job);
    } else {
        reply_error(req, 405,
                    "use GET or DELETE /jobs/ID, POST "
                    "/jobs/ID/renew");
    }
}

static void on_jobs_list(struct evhttp_request *req, struct control *ctl,
                         const struct http_view *view)
{
    struct evbuffer *body = evbuffer_new();
    if (body == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evbuffer_add_printf(body, "{\"jobs\":[");
    const char *sep = "";
    const struct job *job;
    TAILQ_FOREACH(job, &ctl->relay->jobs, entry)
    {
        if (!http_view_has(view, job))
            continue;
        evbuffer_add_printf(body, "%s", sep);
        http_job_json(body, job);
        sep = ",";
    }
    evbuffer_add_printf(body, "]}\n");
    reply(req, 200, "OK", body);
    evbuffer_free(body);
}

/* GET /status and /metrics: the operations endpoint's, with the jobs the
 * caller may see. */
static void on_report(struct evhttp_request *req, struct control *ctl,
                      const struct http_view *view, int metrics)
{
    struct evbuffer *body = evbuffer_new();
    if (body == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    if (metrics)
        http_metrics(body, ctl->relay, view);
    else
        http_status(body, ctl->relay, view);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      metrics ? "text/plain; version=0.0.4"
                              : "application/json");
    evhttp_send_reply(req, HTTP_OK, "OK", body);
    evbuffer_free(body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct control *ctl = arg;
    char owner[128];
    if (request_owner(req, owner, sizeof owner) != 0) {
        /* TLS refuses a connection without a valid certificate; this is
         * one whose certificate has no usable common name. */
        reply_error(req, 403, "client certificate without a common name");
        return;
    }
    struct http_view view = {.all = is_admin(ctl->relay->cfg, owner),
                             .owner = owner};
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    uint32_t id = 0;
    enum control_route route = control_route_parse(path, &id);
    switch (route) {
    case ROUTE_JOBS:
        if (cmd == EVHTTP_REQ_POST)
            on_register(req, ctl, owner);
        else if (cmd == EVHTTP_REQ_GET)
            on_jobs_list(req, ctl, &view);
        else
            reply_error(req, 405, "use POST or GET /jobs");
        return;
    case ROUTE_JOB: on_job(req, ctl, &view, id, 0); return;
    case ROUTE_RENEW: on_job(req, ctl, &view, id, 1); return;
    case ROUTE_STATUS:
    case ROUTE_METRICS:
        if (cmd != EVHTTP_REQ_GET)
            reply_error(req, 405, "use GET");
        else
            on_report(req, ctl, &view, route == ROUTE_METRICS);
        return;
    case ROUTE_NONE: break;
    }
    reply_error(req, 404, "no such resource (see docs/gridrelay.md)");
}

/* ---- the endpoint ----------------------------------------------------- */

void control_job_ended(struct relay *relay, const struct job *job)
{
    struct control *ctl = relay->control;
    if (ctl == NULL || job->lease_ns == 0)
        return;
    struct ended_job *e = &ctl->ended[ctl->ended_next++ % ENDED_KEPT];
    e->id = job->id;
    snprintf(e->owner, sizeof e->owner, "%s", job->owner);
    snprintf(e->reason, sizeof e->reason, "%s", job->end_reason);
}

static struct tls_context *control_context(const struct relay_config *cfg)
{
    char err[512];
    /* The site's identity, but launchers' certificates come from their
     * own CA (a site's users, not its peer sites). */
    struct tls_context *ctx = tls_context_new(
        cfg->tls_cert, cfg->tls_key, cfg->service_client_ca, err, sizeof err);
    if (ctx == NULL) {
        gc_log_error("service.control: TLS: %s", err);
        return NULL;
    }
    tls_context_name_cas(ctx, cfg->service_client_ca);
    return ctx;
}

int control_reload(struct relay *relay, const struct relay_config *next)
{
    struct control *ctl = relay->control;
    struct tls_context *ctx = control_context(next);
    if (ctx == NULL)
        return -1;
    tls_context_free(ctl->tls);
    ctl->tls = ctx;
    return 0;
}

int control_start(struct relay *relay)
{
    const struct relay_config *cfg = relay->cfg;
    struct control *ctl = calloc(1, sizeof *ctl);
    if (ctl == NULL)
        return -1;
    relay->control = ctl;
    ctl->relay = relay;
    ctl->tls = control_context(cfg);
    if (ctl->tls == NULL)
        return -1;
    if (http_server_start(&ctl->server, relay, cfg->service_control,
                          "control (https)", &ctl->tls, CONTROL_MAX_BODY) != 0)
        return -1;
    evhttp_set_allowed_methods(
        ctl->server.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
    evhttp_set_gencb(ctl->server.http, on_request, ctl);
    return 0;
}

void control_tick(struct relay *relay)
{
    http_server_tick(&relay->control->server);
}

unsigned control_connections(const struct relay *relay)
{
    return relay->control != NULL ? relay->control->server.open : 0;
}

void control_free(struct relay *relay)
{
    struct control *ctl = relay->control;
    if (ctl == NULL)
        return;
    http_server_free(&ctl->server);
    tls_context_free(ctl->tls);
    free(ctl);
    relay->control = NULL;
}
