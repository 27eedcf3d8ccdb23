/*
 * The service's control endpoint: launchers register, renew, inspect and
 * remove jobs over HTTPS (docs/gridrelay.md, "Service mode").
 *
 * Why HTTPS with client certificates rather than a Unix socket with peer
 * credentials: gridrun runs on a login node of the site far more often
 * than on the gateway, so the endpoint must take connections from other
 * hosts, and those need TLS anyway.  The certificate's common name is the
 * job's owner: only the owner may renew, inspect or remove its job.  The
 * same endpoint can listen on a Unix socket (still HTTPS) for a launcher on
 * the gateway itself.
 *
 *   POST   /jobs             register (body: libconfig text, see below)
 *   GET    /jobs             the caller's jobs
 *   GET    /jobs/ID          one job (state, ranks joined, counters)
 *   POST   /jobs/ID/renew    the launcher is alive: extend the lease
 *   DELETE /jobs/ID          end the job
 *
 * A registration body reuses the configuration's syntax (libconfig), so
 * errors name a line:
 *
 *   job_id = 4021; token = "<hex>"; lease = 30;
 *   sites = ( { name = "north"; first_rank = 0; rank_count = 4; }, ... );
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <libconfig.h>
#include <openssl/crypto.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gc_log.h"
#include "relay.h"

#define CONTROL_MAX_BODY (64 * 1024)
#define ENDED_KEPT       64 /* recently ended jobs a launcher may ask about */

struct ended_job {
    uint32_t id;
    char owner[128];
    char reason[256];
};

struct control {
    struct relay *relay;
    SSL_CTX *ssl_ctx;
    struct evhttp *http;
    char unix_path[RELAY_PATH_MAX]; /* unlinked at exit; "" for TCP */
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
        [400 - 400] = "Bad Request", [403 - 400] = "Forbidden",
        [404 - 400] = "Not Found",   [405 - 400] = "Method Not Allowed",
        [409 - 400] = "Conflict",    [413 - 400] = "Payload Too Large",
    };
    const char *reason = code >= 400 && code <= 413 && reasons[code - 400]
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
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev =
        conn != NULL ? evhttp_connection_get_bufferevent(conn) : NULL;
    SSL *ssl = bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
    X509 *cert = ssl != NULL ? SSL_get0_peer_certificate(ssl) : NULL;
    if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
        return -1;
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                      NID_commonName, out, (int)len);
    return n > 0 ? 0 : -1;
}

/* ---- registration ----------------------------------------------------- */

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_token(const char *hex, struct job_request *jr)
{
    size_t len = strlen(hex);
    if (len < 32 || len % 2 != 0 || len / 2 > sizeof jr->token)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        jr->token[i] = (uint8_t)(hi << 4 | lo);
    }
    jr->token_len = len / 2;
    return 0;
}

/* A whole number setting within [min, max]; else a message in `err`. */
static int get_number(const config_setting_t *group, const char *name,
                      long long min, long long max, long long *out, char *err,
                      size_t err_len)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    if (s == NULL) {
        int line = config_setting_source_line(group);
        if (line > 0)
            snprintf(err, err_len, "line %d: missing '%s'", line, name);
        else
            snprintf(err, err_len, "missing '%s'", name);
        return -1;
    }
    int type = config_setting_type(s);
    if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64) {
        snprintf(err, err_len, "line %d: '%s' must be an integer",
                 config_setting_source_line(s), name);
        return -1;
    }
    *out = config_setting_get_int64(s);
    if (*out < min || *out > max) {
        snprintf(err, err_len, "line %d: '%s' = %lld is outside %lld..%lld",
                 config_setting_source_line(s), name, *out, min, max);
        return -1;
    }
    return 0;
}

static int parse_sites(const config_setting_t *list, struct job_request *jr,
                       char *err, size_t err_len)
{
    if (list == NULL || config_setting_type(list) != CONFIG_TYPE_LIST ||
        config_setting_length(list) < 1 ||
        config_setting_length(list) > (int)GC_JOB_SITES_MAX) {
        snprintf(err, err_len, "'sites' must be a list of 1 to %u groups",
                 GC_JOB_SITES_MAX);
        return -1;
    }
    jr->site_count = (uint32_t)config_setting_length(list);
    for (uint32_t i = 0; i < jr->site_count; i++) {
        const config_setting_t *g = config_setting_get_elem(list, i);
        struct gc_job_site *site = &jr->sites[i];
        const char *name = NULL;
        long long first, count;
        if (config_setting_type(g) != CONFIG_TYPE_GROUP ||
            !config_setting_lookup_string(g, "name", &name) ||
            strlen(name) == 0 || strlen(name) > GC_NAME_MAX) {
            snprintf(err, err_len, "line %d: sites[%u] needs a name",
                     config_setting_source_line(g), i);
            return -1;
        }
        if (get_number(g, "first_rank", 0, GC_MAX_RANK, &first, err, err_len) !=
                0 ||
            get_number(g, "rank_count", 1, (long long)GC_MAX_RANK + 1, &count,
                       err, err_len) != 0)
            return -1;
        snprintf(site->name, sizeof site->name, "%s", name);
        site->first_rank = (uint32_t)first;
        site->rank_count = (uint32_t)count;
    }
    /* The wire format's own rules: distinct names, disjoint ranges. */
    struct gc_job_frame probe = {.op = GC_JOB_ANNOUNCE,
                                 .site_count = (uint8_t)jr->site_count};
    memcpy(probe.sites, jr->sites, sizeof jr->sites);
    uint8_t scratch[GC_MAX_CONTROL_PAYLOAD];
    if (gc_job_frame_encode(&probe, scratch, sizeof scratch) == 0) {
        snprintf(err, err_len,
                 "sites: names must differ and rank ranges must not overlap "
                 "or pass rank %u",
                 GC_MAX_RANK);
        return -1;
    }
    return 0;
}

static int parse_request(const char *text, struct job_request *jr, char *err,
                         size_t err_len)
{
    int status = -1;
    config_t lc;
    config_init(&lc);
    const char *token = NULL;
    long long id, lease = 0;
    if (config_read_string(&lc, text) != CONFIG_TRUE) {
        snprintf(err, err_len, "line %d: %s", config_error_line(&lc),
                 config_error_text(&lc));
        goto cleanup;
    }
    const config_setting_t *root = config_root_setting(&lc);
    if (get_number(root, "job_id", 1, UINT32_MAX, &id, err, err_len) != 0)
        goto cleanup;
    jr->id = (uint32_t)id;
    const config_setting_t *t = config_setting_get_member(root, "token");
    token = t != NULL ? config_setting_get_string(t) : NULL;
    if (token == NULL || parse_token(token, jr) != 0) {
        snprintf(err, err_len,
                 "line %d: 'token' must be the job token in hex, 16 to %zu "
                 "bytes",
                 t != NULL ? config_setting_source_line(t) : 0,
                 sizeof jr->token);
        goto cleanup;
    }
    if (config_setting_get_member(root, "lease") != NULL &&
        get_number(root, "lease", 1, 86400, &lease, err, err_len) != 0)
        goto cleanup;
    jr->lease_s = (uint32_t)lease;
    if (parse_sites(config_lookup(&lc, "sites"), jr, err, err_len) != 0)
        goto cleanup;
    status = 0;
cleanup:
    config_destroy(&lc);
    return status;
}

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
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
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
    if (memchr(text, '\0', len) != NULL) {
        reply_error(req, 400, "the body is not text");
        goto cleanup;
    }
    if (parse_request(text, jr, err, sizeof err) != 0) {
        gc_log_warn("control: registration from %s refused: %s", owner, err);
        reply_error(req, 400, err);
        goto cleanup;
    }
    snprintf(jr->owner, sizeof jr->owner, "%s", owner);
    struct job *job = job_register(relay, jr, &code, err, sizeof err);
    if (job == NULL) {
        gc_log_warn("control: job %u of %s refused: %s", jr->id, owner, err);
        reply_error(req, code, err);
        goto cleanup;
    }
    char local[RELAY_PATH_MAX + 8];
    rank_endpoint(req, relay, local, sizeof local);
    reply_job(req, 201, "Created", job, local);
cleanup:
    if (jr != NULL)
        OPENSSL_cleanse(jr, sizeof *jr);
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
                   const char *owner, uint32_t id, const char *action)
{
    struct job *job = job_find(ctl->relay, id);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    /* Someone else's job looks like no job at all. */
    if (job == NULL || strcmp(job->owner, owner) != 0) {
        reply_unknown_job(req, ctl, id, owner);
        return;
    }
    if (strcmp(action, "renew") == 0 && cmd == EVHTTP_REQ_POST) {
        job_renew(job);
        reply_job(req, 200, "OK", job, NULL);
    } else if (action[0] == '\0' && cmd == EVHTTP_REQ_GET) {
        reply_job(req, 200, "OK", job, NULL);
    } else if (action[0] == '\0' && cmd == EVHTTP_REQ_DELETE) {
        job_ref(job);
        job_end(job, GC_ERR_JOB_ENDED, 1, "removed by its launcher (%s)",
                owner);
        reply_job(req, 200, "OK", job, NULL);
        job_unref(job);
    } else {
        reply_error(req, 405,
                    "use GET or DELETE /jobs/ID, POST "
                    "/jobs/ID/renew");
    }
}

static void on_jobs_list(struct evhttp_request *req, struct control *ctl,
                         const char *owner)
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
        if (strcmp(job->owner, owner) != 0)
            continue;
        evbuffer_add_printf(body, "%s", sep);
        http_job_json(body, job);
        sep = ",";
    }
    evbuffer_add_printf(body, "]}\n");
    reply(req, 200, "OK", body);
    evbuffer_free(body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct control *ctl = arg;
    char owner[128];
    if (request_owner(req, owner, sizeof owner) != 0) {
        /* TLS refuses a connection without a valid certificate; this is
         * one whose certificate has no common name. */
        reply_error(req, 403, "client certificate without a common name");
        return;
    }
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (path != NULL && strcmp(path, "/jobs") == 0) {
        if (cmd == EVHTTP_REQ_POST)
            on_register(req, ctl, owner);
        else if (cmd == EVHTTP_REQ_GET)
            on_jobs_list(req, ctl, owner);
        else
            reply_error(req, 405, "use POST or GET /jobs");
        return;
    }
    char *end = NULL;
    if (path != NULL && strncmp(path, "/jobs/", 6) == 0 && path[6] >= '0' &&
        path[6] <= '9') {
        unsigned long id = strtoul(path + 6, &end, 10);
        if (id <= UINT32_MAX && (*end == '\0' || strcmp(end, "/renew") == 0)) {
            on_job(req, ctl, owner, (uint32_t)id, *end ? end + 1 : "");
            return;
        }
    }
    reply_error(req, 404, "no such resource (see docs/gridrelay.md)");
}

/* ---- the endpoint ----------------------------------------------------- */

static struct bufferevent *new_tls_bufferevent(struct event_base *base,
                                               void *arg)
{
    struct control *ctl = arg;
    SSL *ssl = SSL_new(ctl->ssl_ctx);
    if (ssl == NULL)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        SSL_free(ssl);
    return bev;
}

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

static SSL_CTX *control_context(const struct relay_config *cfg)
{
    char err[512];
    /* The site's identity, but launchers' certificates come from their
     * own CA (a site's users, not its peer sites). */
    SSL_CTX *ctx = tls_context_new(cfg->tls_cert, cfg->tls_key,
                                   cfg->service_client_ca, err, sizeof err);
    if (ctx == NULL) {
        gc_log_error("service.control: TLS: %s", err);
        return NULL;
    }
    /* Tells clients which CA to pick a certificate from. */
    STACK_OF(X509_NAME) *names =
        SSL_load_client_CA_file(cfg->service_client_ca);
    if (names != NULL)
        SSL_CTX_set_client_CA_list(ctx, names);
    return ctx;
}

int control_reload(struct relay *relay, const struct relay_config *next)
{
    struct control *ctl = relay->control;
    SSL_CTX *ctx = control_context(next);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(ctl->ssl_ctx);
    ctl->ssl_ctx = ctx;
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
    ctl->ssl_ctx = control_context(cfg);
    if (ctl->ssl_ctx == NULL)
        return -1;
    ctl->http = evhttp_new(relay->base);
    if (ctl->http == NULL)
        return -1;
    evhttp_set_allowed_methods(ctl->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                                              EVHTTP_REQ_DELETE);
    evhttp_set_max_body_size(ctl->http, CONTROL_MAX_BODY);
    evhttp_set_timeout(ctl->http, 10);
    evhttp_set_bevcb(ctl->http, new_tls_bufferevent, ctl);
    evhttp_set_gencb(ctl->http, on_request, ctl);
    struct evconnlistener *l =
        relay_listen(relay, cfg->service_control, NULL, "control (https)");
    if (l == NULL)
        return -1;
    if (evhttp_bind_listener(ctl->http, l) == NULL) {
        evconnlistener_free(l);
        return -1;
    }
    const char *path = cfg->service_control;
    if (strncmp(path, "unix:", 5) == 0)
        path += 5;
    if (path[0] == '/')
        snprintf(ctl->unix_path, sizeof ctl->unix_path, "%s", path);
    return 0;
}

void control_free(struct relay *relay)
{
    struct control *ctl = relay->control;
    if (ctl == NULL)
        return;
    if (ctl->http != NULL)
        evhttp_free(ctl->http);
    if (ctl->unix_path[0] != '\0')
        unlink(ctl->unix_path);
    if (ctl->ssl_ctx != NULL)
        SSL_CTX_free(ctl->ssl_ctx);
    free(ctl);
    relay->control = NULL;
}
