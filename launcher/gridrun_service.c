/*
 * gridrun and the sites' gridrelay services: one HTTPS request per call,
 * blocking with a timeout (gridrun does nothing else meanwhile but wait),
 * authenticated both ways: the service shows the site's certificate
 * (checked against --service-ca and the site's name), gridrun shows the
 * user's (--service-cert/--service-key), whose common name becomes the
 * job's owner.
 */
#include "gridrun_service.h"

#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_proto.h"
#include "gc_util.h"
#include "gridrun_http.h"
#include "gridrun_json.h"
#include "gridrun_run.h"

#define IO_TIMEOUT_S    10
#define MAX_REPLY_BYTES (1 << 20)

static void tls_reason(char *err, size_t err_len, const char *what)
{
    char reason[256] = "unknown error";
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof reason);
    snprintf(err, err_len, "%.200s: %s", what, reason);
    ERR_clear_error();
}

static SSL_CTX *client_context(const struct gr_job *job, char *err,
                               size_t err_len)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        tls_reason(err, err_len, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, job->service_cert) != 1) {
        tls_reason(err, err_len, job->service_cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, job->service_key, SSL_FILETYPE_PEM) !=
        1) {
        tls_reason(err, err_len, job->service_key);
        goto fail;
    }
    if (SSL_CTX_load_verify_locations(ctx, job->service_ca, NULL) != 1) {
        tls_reason(err, err_len, job->service_ca);
        goto fail;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/* The HTTP client's TLS transport: the service must show the certificate
 * of the site it serves. */
struct tls_peer {
    SSL_CTX *ctx;
    const char *site;
};

static void *tls_start(void *arg, int fd, char *err, size_t err_len)
{
    const struct tls_peer *peer = arg;
    SSL *ssl = SSL_new(peer->ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
        SSL_set1_host(ssl, peer->site) != 1 ||
        SSL_set_tlsext_host_name(ssl, peer->site) != 1) {
        tls_reason(err, err_len, "TLS");
        goto fail;
    }
    if (SSL_connect(ssl) != 1) {
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK)
            snprintf(err, err_len, "TLS: the service's certificate: %s",
                     X509_verify_cert_error_string(verify));
        else
            tls_reason(err, err_len, "TLS handshake");
        goto fail;
    }
    return ssl;
fail:
    SSL_free(ssl);
    return NULL;
}

static int tls_send(void *ssl, const char *buf, size_t len, char *err,
                    size_t err_len)
{
    if (SSL_write(ssl, buf, (int)len) == (int)len)
        return 0;
    tls_reason(err, err_len, "sending the request");
    return -1;
}

static ssize_t tls_recv(void *ssl, char *buf, size_t len, char *err,
                        size_t err_len)
{
    (void)err;
    (void)err_len;
    int got = SSL_read(ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
    return got > 0 ? got : 0; /* the service closes after its reply */
}

static void tls_end(void *ssl)
{
    SSL_free(ssl);
}

/*
 * One request to site `s`'s service.  Returns the HTTP status, with the
 * body in *reply (malloc'd, NUL terminated), or -1 with `err` set.
 */
static int https_request(const struct gr_job *job, const struct gr_site *s,
                         const char *method, const char *path, const char *body,
                         char **reply, char *err, size_t err_len)
{
    struct tls_peer peer = {.site = s->name};
    const struct gr_http_transport tls = {
        .start = tls_start,
        .send = tls_send,
        .recv = tls_recv,
        .end = tls_end,
        .no_reply_hint = "(refused our certificate?)",
        .arg = &peer,
    };
    const struct gr_http_request req = {
        .endpoint = s->service,
        .host = s->name,
        .method = method,
        .path = path,
        .body = body,
        .timeout_s = IO_TIMEOUT_S,
        .max_reply = MAX_REPLY_BYTES,
        .transport = &tls,
    };
    *reply = NULL;
    peer.ctx = client_context(job, err, err_len);
    if (peer.ctx == NULL)
        return -1;
    int code = gr_http_request(&req, reply, err, err_len);
    SSL_CTX_free(peer.ctx);
    return code;
}

/* The service's {"error":"..."} text into `out`, else the body's start. */
static void refusal_text(const char *reply, char *out, size_t len)
{
    size_t n = 0;
    const char *e = reply != NULL ? gr_json_string(reply, "error", &n) : NULL;
    if (e != NULL)
        snprintf(out, len, "%.*s", (int)n, e);
    else
        snprintf(out, len, "%.200s", reply != NULL ? reply : "");
}

static void print_refusal(const struct gr_site *s, const char *what, int code,
                          const char *reply)
{
    char text[512];
    refusal_text(reply, text, sizeof text);
    fprintf(stderr, "gridrun: site %s's service (%s) %s: HTTP %d: %s\n",
            s->name, s->service, what, code, text);
}

/* The job token as the ranks read it (gc_token_read_file), in hex. */
static int read_token_hex(const struct gr_job *job, char *hex, size_t len)
{
    uint8_t token[GC_TOKEN_MAX];
    char err[256];
    int n = gc_token_read_file(job->token_file, token, sizeof token, err,
                               sizeof err);
    if (n <= 0 || (size_t)n * 2 + 1 > len) {
        fprintf(stderr, "gridrun: %s\n", n < 0 ? err : "empty job token");
        return -1;
    }
    for (int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", token[i]);
    gc_secret_wipe(token, sizeof token);
    return 0;
}

/*
 * One registration of the job, under job->job_id, at every site in turn.
 * 0 when every site has it; 1 when a site answered 409, the id being in
 * use there (by another job), with that site in *busy and its reason in
 * `why`, the job then being registered at the sites before it; -1 on any
 * other failure (printed).
 */
static int register_once(struct gr_job *job, struct gr_site **busy, char *why,
                         size_t why_len)
{
    char hex[GC_TOKEN_MAX * 2 + 2], err[512], body[8192];
    if (read_token_hex(job, hex, sizeof hex) != 0)
        return -1;
    int n = snprintf(body, sizeof body,
                     "job_id = %uL;\ntoken = \"%s\";\nlease = %d;\nsites = (",
                     job->job_id, hex, GR_SERVICE_LEASE_S);
    for (uint32_t i = 0; i < job->site_count && n < (int)sizeof body; i++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%s\n  { name = \"%s\"; first_rank = %u; rank_count = "
                      "%u; }",
                      i ? "," : "", job->sites[i].name, job->sites[i].offset,
                      job->sites[i].count);
    if (n < (int)sizeof body)
        n += snprintf(body + n, sizeof body - (size_t)n, "\n);\n");
    gc_secret_wipe(hex, sizeof hex);
    if (n >= (int)sizeof body)
        return -1;
    int status = 0;
    for (uint32_t i = 0; i < job->site_count && status == 0; i++) {
        struct gr_site *s = &job->sites[i];
        char *reply = NULL;
        int code = https_request(job, s, "POST", "/jobs", body, &reply, err,
                                 sizeof err);
        if (code < 0) {
            fprintf(stderr, "gridrun: site %s's service (%s): %s\n", s->name,
                    s->service, err);
            status = -1;
        } else if (code == 409) {
            /* relay/job.c answers 409 only for an id taken there: by a
             * job registered under it, or one its peers announced. */
            *busy = s;
            refusal_text(reply, why, why_len);
            status = 1;
        } else if (code != 201) {
            print_refusal(s, "refused the job", code, reply);
            status = -1;
        } else {
            s->service_registered = true;
            s->service_renew_ms = gr_now_ms() + GR_SERVICE_LEASE_S * 1000 / 3;
            size_t local_len = 0;
            const char *local = gr_json_string(reply, "local", &local_len);
            /* The machine file's local= wins: the service only knows how
             * it was reached, not how the ranks' hosts see it. */
            if (s->local[0] == '\0' && local != NULL)
                snprintf(s->local, sizeof s->local, "%.*s", (int)local_len,
                         local);
        }
        free(reply);
    }
    gc_secret_wipe(body, sizeof body);
    return status;
}

/* A job id other than `old`, from the kernel's random pool. */
static int fresh_job_id(uint32_t old, uint32_t *out)
{
    do {
        if (gr_random_bytes(out, sizeof(*out)) != 0) {
            fprintf(stderr, "gridrun: getrandom: %s\n", strerror(errno));
            return -1;
        }
    } while (*out == old);
    return 0;
}

/*
 * Job ids are random 32-bit numbers that every site's service shares
 * among all users' jobs, so one may be taken at some site (409): then
 * the job is withdrawn where it got in and registered again under a fresh
 * id, at most GR_SERVICE_REGISTER_ATTEMPTS ids in all.  Random ids that
 * collide that often mean something else is wrong (a job replaying our
 * ids?), so gridrun then gives up with the service's message.
 */
int gr_service_register_all(struct gr_job *job)
{
    char why[512];
    for (int attempt = 1;; attempt++) {
        struct gr_site *busy = NULL;
        int status = register_once(job, &busy, why, sizeof why);
        if (status <= 0)
            return status;
        gr_service_remove_all(job);
        if (attempt == GR_SERVICE_REGISTER_ATTEMPTS) {
            fprintf(stderr,
                    "gridrun: site %s's service (%s) refused the job: HTTP "
                    "409: %s\n"
                    "gridrun: giving up after %d job ids, each in use at some "
                    "site\n",
                    busy->name, busy->service, why, attempt);
            return -1;
        }
        uint32_t old = job->job_id;
        if (fresh_job_id(old, &job->job_id) != 0)
            return -1;
        fprintf(stderr,
                "gridrun: job id %u is in use at site %s (HTTP 409: %s); "
                "registering under job id %u instead (attempt %d of %d)\n",
                old, busy->name, why, job->job_id, attempt + 1,
                GR_SERVICE_REGISTER_ATTEMPTS);
    }
}

char *gr_service_job_status(const struct gr_job *job, const struct gr_site *s)
{
    char path[64], err[512], *reply = NULL;
    snprintf(path, sizeof path, "/jobs/%u", job->job_id);
    if (https_request(job, s, "GET", path, NULL, &reply, err, sizeof err) !=
        200) {
        free(reply);
        return NULL;
    }
    return reply;
}

int gr_service_all_ready(struct gr_job *job)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/jobs/%u", job->job_id);
    int ready = 1;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (s->relay_up)
            continue;
        char *reply = NULL;
        int code =
            https_request(job, s, "GET", path, NULL, &reply, err, sizeof err);
        const char *state = code == 200 ? gr_json_value(reply, "state") : NULL;
        if (code < 0) {
            fprintf(stderr, "gridrun: site %s's service (%s): %s\n", s->name,
                    s->service, err);
            ready = -1;
        } else if (code != 200) {
            print_refusal(s, "lost the job", code, reply);
            ready = -1;
        } else if (state != NULL && strncmp(state, "\"ready\"", 7) == 0) {
            s->relay_up = true;
        } else if (ready == 1) {
            ready = 0;
        }
        free(reply);
        if (ready < 0)
            break;
    }
    return ready;
}

int gr_service_renew_due(struct gr_job *job)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/jobs/%u/renew", job->job_id);
    int64_t now = gr_now_ms();
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (!s->service_registered || now < s->service_renew_ms)
            continue;
        char *reply = NULL;
        int code =
            https_request(job, s, "POST", path, NULL, &reply, err, sizeof err);
        if (code == 200) {
            s->service_renew_ms = now + GR_SERVICE_LEASE_S * 1000 / 3;
        } else if (code < 0) {
            /* A hiccup is not fatal: the lease lasts three renewals. */
            fprintf(stderr,
                    "gridrun: warning: renewing the job at site %s "
                    "(%s): %s\n",
                    s->name, s->service, err);
            s->service_renew_ms = now + 1000;
        } else {
            print_refusal(s, "lost the job", code, reply);
            s->service_registered = false;
            free(reply);
            return -1;
        }
        free(reply);
    }
    return 0;
}

int gr_service_report_lost(struct gr_job *job)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/jobs/%u", job->job_id);
    int lost = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (!s->service_registered)
            continue;
        char *reply = NULL;
        int code =
            https_request(job, s, "GET", path, NULL, &reply, err, sizeof err);
        if (code < 0) {
            fprintf(stderr,
                    "gridrun: site %s's service (%s) is gone while ranks ran: "
                    "%s\n",
                    s->name, s->service, err);
            s->service_registered = false; /* nothing to remove there */
            lost++;
        } else if (code != 200) {
            print_refusal(s, "lost the job while ranks ran", code, reply);
            lost++;
        }
        free(reply);
    }
    return lost;
}

void gr_service_remove_all(struct gr_job *job)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/jobs/%u", job->job_id);
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (!s->service_registered)
            continue;
        char *reply = NULL;
        int code = https_request(job, s, "DELETE", path, NULL, &reply, err,
                                 sizeof err);
        /* 404: another site's withdrawal ended it here first. */
        if (code < 0)
            fprintf(stderr,
                    "gridrun: warning: removing the job at site %s (%s): %s; "
                    "its lease ends it\n",
                    s->name, s->service, err);
        else if (code != 200 && code != 404)
            print_refusal(s, "did not remove the job", code, reply);
        s->service_registered = false;
        free(reply);
    }
}
