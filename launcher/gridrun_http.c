/*
 * gridrun's HTTP client (gridrun_http.h).  HTTP/1.0, so the server closes
 * the connection after its reply and never chunks it: the reply is what
 * arrives until the end of the stream, no more than max_reply bytes.
 * gridrelay writes both endpoints' replies with a Content-Length, but
 * reading to the end needs no header parsing at all.
 */
#include "gridrun_http.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "gc_util.h"

/* Plain TCP: the session is the socket, held in the transport's arg. */
static void *plain_start(void *arg, int fd, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    *(int *)arg = fd;
    return arg;
}

static int plain_send(void *session, const char *buf, size_t len, char *err,
                      size_t err_len)
{
    int fd = *(int *)session;
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, err_len, "sending the request: %s", strerror(errno));
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static ssize_t plain_recv(void *session, char *buf, size_t len, char *err,
                          size_t err_len)
{
    ssize_t n;
    while ((n = read(*(int *)session, buf, len)) < 0 && errno == EINTR)
        continue;
    if (n < 0)
        snprintf(err, err_len, "reading the reply: %s", strerror(errno));
    return n;
}

static void plain_end(void *session)
{
    (void)session;
}

static int connect_endpoint(const struct gr_http_request *req, char *err,
                            size_t err_len)
{
    struct gc_endpoint ep;
    if (gc_endpoint_parse(req->endpoint, &ep, err, err_len) != 0)
        return -1;
    int fd = req->open_socket != NULL
                 ? req->open_socket(req->socket_arg, ep.family)
                 : socket(ep.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return -1;
    }
    /* On Linux the send timeout also bounds connect(). */
    struct timeval tv = {req->timeout_s, 0};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        connect(fd, (struct sockaddr *)&ep.addr, ep.addr_len) != 0) {
        snprintf(err, err_len, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int send_request(const struct gr_http_request *req,
                        const struct gr_http_transport *t, void *session,
                        char *err, size_t err_len)
{
    char *text = NULL;
    int n = asprintf(&text,
                     "%s %s HTTP/1.0\r\nHost: %s\r\n%sContent-Length: "
                     "%zu\r\n\r\n%s",
                     req->method, req->path, req->host,
                     req->body != NULL ? "Content-Type: text/plain\r\n" : "",
                     req->body != NULL ? strlen(req->body) : 0,
                     req->body != NULL ? req->body : "");
    if (n < 0) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int status = t->send(session, text, (size_t)n, err, err_len);
    /* The body may hold the job's token. */
    explicit_bzero(text, (size_t)n);
    free(text);
    return status;
}

/* Everything the server sends, NUL terminated, in *out (malloc'd); its
 * length, or -1. */
static ssize_t read_reply(const struct gr_http_request *req,
                          const struct gr_http_transport *t, void *session,
                          char **out, char *err, size_t err_len)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len <= 1) {
            if (cap > req->max_reply) {
                snprintf(err, err_len, "reply longer than %zu bytes",
                         req->max_reply);
                goto fail;
            }
            size_t ncap = cap > 0 ? 2 * cap : 16384;
            ncap = ncap > req->max_reply + 1 ? req->max_reply + 1 : ncap;
            char *nb = realloc(buf, ncap);
            if (nb == NULL) {
                snprintf(err, err_len, "out of memory");
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = t->recv(session, buf + len, cap - len - 1, err, err_len);
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    return (ssize_t)len;
fail:
    free(buf);
    return -1;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* "HTTP/1.x NNN ...\r\n...\r\n\r\nBODY": NNN, with buf turned into the
 * body; -1 with err when it is not such a reply. */
static int parse_reply(char *buf, size_t len, const char *no_reply_hint,
                       char *err, size_t err_len)
{
    char *start = strstr(buf, "\r\n\r\n");
    if (len == 0) {
        snprintf(err, err_len, "no reply%s%s", no_reply_hint ? " " : "",
                 no_reply_hint ? no_reply_hint : "");
        return -1;
    }
    if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
        !is_digit(buf[9]) || !is_digit(buf[10]) || !is_digit(buf[11]) ||
        start == NULL) {
        snprintf(err, err_len, "not an HTTP reply");
        return -1;
    }
    int code = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    memmove(buf, start + 4, len - (size_t)(start + 4 - buf) + 1);
    return code;
}

int gr_http_request(const struct gr_http_request *req, char **body, char *err,
                    size_t err_len)
{
    int plain_fd = -1;
    const struct gr_http_transport plain = {
        .start = plain_start,
        .send = plain_send,
        .recv = plain_recv,
        .end = plain_end,
        .arg = &plain_fd,
    };
    const struct gr_http_transport *t =
        req->transport != NULL ? req->transport : &plain;
    int code = -1;
    void *session = NULL;
    char *buf = NULL;
    *body = NULL;
    int fd = connect_endpoint(req, err, err_len);
    if (fd < 0)
        goto cleanup;
    session = t->start(t->arg, fd, err, err_len);
    if (session == NULL || send_request(req, t, session, err, err_len) != 0)
        goto cleanup;
    ssize_t len = read_reply(req, t, session, &buf, err, err_len);
    if (len < 0)
        goto cleanup;
    code = parse_reply(buf, (size_t)len, t->no_reply_hint, err, err_len);
    if (code >= 0) {
        *body = buf;
        buf = NULL;
    }
cleanup:
    if (session != NULL)
        t->end(session);
    if (fd >= 0)
        close(fd);
    free(buf);
    return code;
}
