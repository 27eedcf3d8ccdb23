#include "gc_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int gc_parse_size(const char *text, uint64_t *out)
{
    if (text == NULL || !isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    uint64_t scale = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        scale = 1ull << 10;
        end++;
        break;
    case 'M':
        scale = 1ull << 20;
        end++;
        break;
    case 'G':
        scale = 1ull << 30;
        end++;
        break;
    default: break;
    }
    if (scale > 1 && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
        end += strlen(end);
    else if (scale == 1 && strcasecmp(end, "B") == 0)
        end++;
    if (*end != '\0')
        return -1;
    if (value > UINT64_MAX / scale)
        return -1;
    *out = value * scale;
    return 0;
}

__attribute__((format(printf, 3, 4))) static void
set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (err == NULL || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

int gc_endpoint_parse(const char *text, struct gc_endpoint *ep, char *err,
                      size_t err_len)
{
    memset(ep, 0, sizeof *ep);
    const char *path = NULL;
    if (strncmp(text, "unix:", 5) == 0)
        path = text + 5;
    else if (text[0] == '/')
        path = text;
    if (path != NULL) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ep->addr;
        if (path[0] == '\0' || strlen(path) >= sizeof un->sun_path) {
            set_err(err, err_len, "bad Unix socket path '%s'", text);
            return -1;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, path);
        ep->addr_len = (socklen_t)sizeof *un;
        ep->family = AF_UNIX;
        return 0;
    }

    char host[256];
    const char *port;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':' ||
            (size_t)(close - text - 1) >= sizeof host) {
            set_err(err, err_len, "bad address '%s' (want [v6]:port)", text);
            return -1;
        }
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof host ||
            colon == text) {
            set_err(err, err_len, "bad address '%s' (want host:port)", text);
            return -1;
        }
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        port = colon + 1;
    }
    char *end = NULL;
    long port_num = strtol(port, &end, 10);
    if (*port == '\0' || *end != '\0' || port_num < 0 || port_num > 65535) {
        set_err(err, err_len, "bad port in '%s'", text);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL) {
        set_err(err, err_len, "cannot resolve '%s'", text);
        return -1;
    }
    memcpy(&ep->addr, res->ai_addr, res->ai_addrlen);
    ep->addr_len = res->ai_addrlen;
    ep->family = res->ai_family;
    freeaddrinfo(res);
    return 0;
}

void gc_endpoint_format(const struct gc_endpoint *ep, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (ep->family == AF_UNIX) {
        snprintf(out, len, "unix:%s",
                 ((const struct sockaddr_un *)&ep->addr)->sun_path);
    } else if (ep->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ep->addr;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, len, "%s:%u", host, ntohs(in->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ep->addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, len, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
}

uint64_t gc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int gc_token_read_file(const char *path, uint8_t *token, size_t cap, char *err,
                       size_t err_len)
{
    int status = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, err_len, "cannot open token file '%s'", path);
        return -1;
    }
    ssize_t n = read(fd, token, cap);
    if (n < 0) {
        set_err(err, err_len, "cannot read token file '%s'", path);
        goto cleanup;
    }
    while (n > 0 && isspace(token[n - 1]))
        n--;
    if (n == 0 || (size_t)n >= cap) {
        set_err(err, err_len, "token file '%s' is empty or too long", path);
        goto cleanup;
    }
    status = (int)n;
cleanup:
    close(fd);
    return status;
}

void gc_print_wrapped(FILE *out, const char *text, int indent)
{
    const int width = 76;
    int col = 0;
    const char *p = text;
    while (*p != '\0') {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (len == 0)
            break;
        if (col > 0 && col + 1 + (int)len > width) {
            fputc('\n', out);
            col = 0;
        }
        if (col == 0)
            col = fprintf(out, "%*s%.*s", indent, "", (int)len, p);
        else
            col += fprintf(out, " %.*s", (int)len, p);
        p += len;
    }
    fputc('\n', out);
}

void gc_print_markdown_cell(FILE *out, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '|' || *p == '<')
            fputc('\\', out);
        fputc(*p, out);
    }
}
