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
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "gc_util.h"
#include "gridrun_job.h"

#define IO_TIMEOUT_S    10
#define MAX_REPLY_BYTES (1 << 20)

/* Monotonic milliseconds, for the lease renewals. */
static int64_t now_ms(void)
{
    return (int64_t)(gc_now_ns() / 1000000u);
}

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

static int connect_to(const char *endpoint, char *err, size_t err_len)
{
    struct gc_endpoint ep;
    if (gc_endpoint_parse(endpoint, &ep, err, err_len) != 0)
        return -1;
    int fd = socket(ep.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return -1;
    }
    /* On Linux the send timeout also bounds connect(). */
    struct timeval tv = {IO_TIMEOUT_S, 0};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        connect(fd, (struct sockaddr *)&ep.addr, ep.addr_len) != 0) {
        snprintf(err, err_len, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * One request to site `s`'s service.  Returns the HTTP status, with the
 * body in *reply (malloc'd, NUL terminated), or -1 with `err` set.
 */
static int https_request(const struct gr_job *job, const struct gr_site *s,
                         const char *method, const char *path, const char *body,
                         char **reply, char *err, size_t err_len)
{
    int code = -1, fd = -1;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    char *buf = NULL, *request = NULL;
    size_t len = 0;
    *reply = NULL;
    if ((ctx = client_context(job, err, err_len)) == NULL ||
        (fd = connect_to(s->service, err, err_len)) < 0)
        goto cleanup;
    if ((ssl = SSL_new(ctx)) == NULL || SSL_set_fd(ssl, fd) != 1 ||
        SSL_set1_host(ssl, s->name) != 1 ||
        SSL_set_tlsext_host_name(ssl, s->name) != 1) {
        tls_reason(err, err_len, "TLS");
        goto cleanup;
    }
    if (SSL_connect(ssl) != 1) {
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK)
            snprintf(err, err_len, "TLS: the service's certificate: %s",
                     X509_verify_cert_error_string(verify));
        else
            tls_reason(err, err_len, "TLS handshake");
        goto cleanup;
    }
    size_t body_len = body != NULL ? strlen(body) : 0;
    int n = asprintf(&request,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                     "text/plain\r\nContent-Length: %zu\r\nConnection: "
                     "close\r\n\r\n%s",
                     method, path, s->name, body_len, body ? body : "");
    if (n < 0) {
        request = NULL;
        snprintf(err, err_len, "out of memory");
        goto cleanup;
    }
    if (SSL_write(ssl, request, n) != n) {
        tls_reason(err, err_len, "sending the request");
        goto cleanup;
    }
    buf = malloc(MAX_REPLY_BYTES + 1);
    if (buf == NULL) {
        snprintf(err, err_len, "out of memory");
        goto cleanup;
    }
    for (;;) {
        int got = SSL_read(ssl, buf + len, (int)(MAX_REPLY_BYTES - len));
        if (got <= 0)
            break; /* the service closes after its reply */
        len += (size_t)got;
        if (len == MAX_REPLY_BYTES)
            break;
    }
    buf[len] = '\0';
    const char *start = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) != 0 || len < 12 || start == NULL) {
        if (len == 0)
            snprintf(err, err_len, "no reply (refused our certificate?)");
        else
            snprintf(err, err_len, "not an HTTP reply");
        goto cleanup;
    }
    code = atoi(buf + 9);
    *reply = strdup(start + 4);
    if (*reply == NULL) {
        code = -1;
        snprintf(err, err_len, "out of memory");
    }
cleanup:
    if (ssl != NULL)
        SSL_free(ssl);
    if (ctx != NULL)
        SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
    free(buf);
    free(request);
    return code;
}

/* The service's {"error":"..."} text, or the whole body. */
static void print_refusal(const struct gr_site *s, const char *what, int code,
                          const char *reply)
{
    const char *e = reply != NULL ? gr_json_value(reply, "error") : NULL;
    int len = e != NULL && *e == '"' ? (int)strcspn(e + 1, "\"") : -1;
    fprintf(stderr, "gridrun: site %s's service (%s) %s: HTTP %d: %.*s\n",
            s->name, s->service, what, code, len >= 0 ? len : 200,
            len >= 0 ? e + 1 : (reply != NULL ? reply : ""));
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
    OPENSSL_cleanse(token, sizeof token);
    return 0;
}

/* The service's {"error":"..."} text into `out`, else the body's start. */
static void refusal_text(const char *reply, char *out, size_t len)
{
    const char *e = reply != NULL ? gr_json_value(reply, "error") : NULL;
    if (e != NULL && *e == '"')
        snprintf(out, len, "%.*s", (int)strcspn(e + 1, "\""), e + 1);
    else
        snprintf(out, len, "%.200s", reply != NULL ? reply : "");
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
    OPENSSL_cleanse(hex, sizeof hex);
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
            s->service_renew_ms = now_ms() + GR_SERVICE_LEASE_S * 1000 / 3;
            const char *local = gr_json_value(reply, "local");
            /* The machine file's local= wins: the service only knows how
             * it was reached, not how the ranks' hosts see it. */
            if (s->local[0] == '\0' && local != NULL && *local == '"')
                snprintf(s->local, sizeof s->local, "%.*s",
                         (int)strcspn(local + 1, "\""), local + 1);
        }
        free(reply);
    }
    OPENSSL_cleanse(body, sizeof body);
    return status;
}

/* A job id other than `old`, from the kernel's random pool. */
static int fresh_job_id(uint32_t old, uint32_t *out)
{
    do {
        if (getrandom(out, sizeof(*out), 0) != (ssize_t)sizeof(*out)) {
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
    int64_t now = now_ms();
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
