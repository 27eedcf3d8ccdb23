/* Small helpers shared by the relay, the client library and the tools. */
#ifndef GC_UTIL_H
#define GC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/*
 * Parse a byte count with an optional K, M or G suffix (powers of 1024,
 * optionally followed by "B" or "iB").  Returns 0 or -1 on syntax error or
 * overflow.
 */
int gc_parse_size(const char *text, uint64_t *out);

/*
 * An endpoint is "unix:/path", "/path" (a Unix socket), "host:port" or
 * "[v6addr]:port".  Resolves numerically or through getaddrinfo.
 */
struct gc_endpoint {
    struct sockaddr_storage addr;
    socklen_t addr_len;
    int family; /* AF_UNIX, AF_INET or AF_INET6 */
};
/* 0, or -1 with a reason in `err` (err may be NULL). */
int gc_endpoint_parse(const char *text, struct gc_endpoint *ep, char *err,
                      size_t err_len);
/* "host:port" or "unix:/path" for logs. */
void gc_endpoint_format(const struct gc_endpoint *ep, char *out, size_t len);

/* Monotonic clock in nanoseconds. */
uint64_t gc_now_ns(void);

/*
 * Read a job token: the file's bytes with trailing whitespace removed.
 * Returns the length (>= 1) or -1 with a reason in `err`.
 */
int gc_token_read_file(const char *path, uint8_t *token, size_t cap, char *err,
                       size_t err_len);

#define GC_TOKEN_MAX 256

/*
 * `text` as lines of at most 76 columns, each indented by `indent`
 * spaces, broken at spaces (reference listings: gridrelay --help,
 * gridcoll-info --settings).
 */
void gc_print_wrapped(FILE *out, const char *text, int indent);
/* `text` as one cell of a generated Markdown table: '|' escaped, so a
 * doc text may contain one, and '<', so that <COLL> is not taken for an
 * HTML tag. */
void gc_print_markdown_cell(FILE *out, const char *text);

#endif
