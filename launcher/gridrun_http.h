/*
 * gridrun's HTTP client: one HTTP/1.0 request per connection, to a
 * relay's HTTP endpoint (GET /status) or a site service's control
 * endpoint (docs/gridrelay.md), both answered by gridrelay.  Bounded in
 * time (every socket operation, connect included, within the request's
 * timeout) and in the reply's size; the reply is the status code and the
 * body.  TLS comes in through a transport (the services'), so both kinds
 * of endpoint share the request's and the reply's code.
 */
#ifndef GRIDRUN_HTTP_H
#define GRIDRUN_HTTP_H

#include <stddef.h>
#include <sys/types.h>

/* What carries the request over the connected socket; plain TCP when a
 * request has none.  Every call gets the transport's `arg`. */
struct gr_http_transport {
    /* Take over socket fd: a session for the calls below, or NULL with
     * the reason in err. */
    void *(*start)(void *arg, int fd, char *err, size_t err_len);
    /* All len bytes; 0, or -1 with the reason in err. */
    int (*send)(void *session, const char *buf, size_t len, char *err,
                size_t err_len);
    /* Some bytes, or 0 once the peer is done; -1 with the reason in err. */
    ssize_t (*recv)(void *session, char *buf, size_t len, char *err,
                    size_t err_len);
    void (*end)(void *session);
    /* Said after "no reply" when the peer closes without one. */
    const char *no_reply_hint;
    void *arg;
};

struct gr_http_request {
    const char *endpoint; /* host:port, [v6]:port, unix:/path or /path */
    const char *host;     /* the Host header */
    const char *method;   /* GET, POST, DELETE */
    const char *path;
    const char *body; /* NULL = none; sent as text/plain */
    int timeout_s;
    size_t max_reply; /* a reply this long (headers included) is refused */
    /* A stream socket of the endpoint's address family, e.g. in another
     * network namespace; NULL = socket(2) in gridrun's own. */
    int (*open_socket)(void *arg, int family);
    void *socket_arg;
    const struct gr_http_transport *transport; /* NULL = plain TCP */
};

/* Returns the reply's HTTP status, with its body in *body (malloc'd, NUL
 * terminated), or -1 with *body NULL and the reason in err. */
int gr_http_request(const struct gr_http_request *req, char **body, char *err,
                    size_t err_len);

#endif
