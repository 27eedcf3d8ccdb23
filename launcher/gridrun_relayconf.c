/*
 * Each site's relay as gridrun configures it: the free loopback ports of
 * local mode, the endpoints its ranks and its peers use, which side of
 * each link dials, and SITE.conf in the job directory (docs/gridrelay.md)
 * with the --relay-set keys merged in; gridrelay --check judges those
 * before anything starts.
 */
#include "gridrun_run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAN_STREAMS 4

/* Write a libconfig string literal. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The lowest port the kernel hands to outgoing connections, or 0. */
static unsigned ephemeral_port_low(void)
{
    unsigned low = 0, high = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%u %u", &low, &high) != 2)
        low = 0;
    fclose(f);
    return low;
}

/* Bind a loopback socket to a free port and return it (fd or -1).  Ports
 * come from below the ephemeral range when it starts above LOWEST: the
 * relays dial each other while some of them are still starting, and a
 * kernel-chosen port could become one of those connections' source port
 * before its relay binds it. */
static int bind_free_port(unsigned ephemeral_low, uint16_t *port)
{
    enum { LOWEST = 10000, TRIES = 200 };
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    for (int t = 0; ephemeral_low > LOWEST && t < TRIES; t++) {
        uint16_t candidate;
        if (gr_random_bytes(&candidate, sizeof(candidate)) != 0)
            break;
        a.sin_port =
            htons((uint16_t)(LOWEST + candidate % (ephemeral_low - LOWEST)));
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            goto bound;
    }
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        goto fail;
bound:
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        goto fail;
    *port = ntohs(a.sin_port);
    return fd;
fail:
    close(fd);
    return -1;
}

/* Free loopback ports: every site's HTTP port, and a WAN port for each site
 * without a wan= address (local mode).  All sockets stay bound until every
 * port is chosen, so the ports are distinct; another process may still take
 * one before the relay binds it, which then shows as a relay start
 * failure. */
int gr_relayconf_ports(struct gr_job *job)
{
    int fds[2 * GR_MAX_SITES];
    int n = 0, status = -1;
    unsigned ephemeral_low = ephemeral_port_low();
    for (uint32_t i = 0; i < 2 * job->site_count; i++) {
        struct gr_site *s = &job->sites[i / 2];
        uint16_t port;
        if (i % 2 == 0 && s->wan[0] != '\0')
            continue;
        if ((fds[n] = bind_free_port(ephemeral_low, &port)) < 0)
            goto cleanup;
        n++;
        if (i % 2 == 0)
            snprintf(s->wan, sizeof(s->wan), "127.0.0.1:%u", port);
        else
            s->http_port = port;
    }
    status = 0;
cleanup:
    if (status != 0)
        fprintf(stderr, "gridrun: cannot pick a free port: %s\n",
                strerror(errno));
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return status;
}

bool gr_site_dials(const struct gr_site *s, const struct gr_site *peer)
{
    if (s->connect != MF_CONNECT_AUTO)
        return s->connect == MF_CONNECT_DIAL;
    if (peer->connect != MF_CONNECT_AUTO)
        return peer->connect == MF_CONNECT_LISTEN;
    return strcmp(s->name, peer->name) < 0;
}

static bool is_unix_endpoint(const char *ep)
{
    return ep[0] == '/' || strncmp(ep, "unix:", 5) == 0;
}

void gr_rank_endpoint(const struct gr_site *s, char *out, size_t len)
{
    if (s->local[0] == '\0')
        snprintf(out, len, "unix:%s", s->sock);
    else if (s->local[0] == '/')
        snprintf(out, len, "unix:%s", s->local);
    else
        snprintf(out, len, "%s", s->local);
}

/* The value --relay-set gives `key` (GROUP.NAME), or NULL: the last one. */
static const char *relay_set_value(const struct gr_job *job, const char *key)
{
    const char *value = NULL;
    size_t len = strlen(key);
    for (int i = 0; i < job->relay_set_count; i++)
        if (strncmp(job->relay_set[i], key, len) == 0 &&
            job->relay_set[i][len] == '=')
            value = job->relay_set[i] + len + 1;
    return value;
}

/* A --relay-set value in libconfig syntax: integers and booleans bare, so
 * int, size and bool keys take them; anything else as a string (sizes such
 * as 1M, names, enums).  The relay's own table judges the result. */
static void put_setting_value(FILE *f, const char *value)
{
    const char *digits = value[0] == '-' ? value + 1 : value;
    bool integer =
        digits[0] != '\0' && strspn(digits, "0123456789") == strlen(digits);
    if (integer || strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
        fputs(value, f);
    else
        put_quoted(f, value);
}

/* "NAME = VALUE; " for every --relay-set key of `group` but the names in
 * `written` (NULL-terminated: gridrun writes them itself, taking the
 * --relay-set value into account), each key once. */
static void put_relay_sets(FILE *f, const struct gr_job *job, const char *group,
                           const char *const *written)
{
    size_t glen = strlen(group);
    for (int i = 0; i < job->relay_set_count; i++) {
        const char *item = job->relay_set[i];
        if (strncmp(item, group, glen) != 0 || item[glen] != '.')
            continue;
        const char *name = item + glen + 1;
        size_t nlen = strcspn(name, "=");
        bool skip = false;
        for (const char *const *w = written; *w != NULL && !skip; w++)
            skip = strlen(*w) == nlen && strncmp(*w, name, nlen) == 0;
        /* Only the last item of a key is written. */
        for (int j = i + 1; j < job->relay_set_count && !skip; j++)
            skip = strncmp(job->relay_set[j], item, glen + 1 + nlen + 1) == 0;
        if (skip)
            continue;
        fprintf(f, "%.*s = ", (int)nlen, name);
        put_setting_value(f, name + nlen + 1);
        fputs("; ", f);
    }
}

/* The groups of --relay-set keys that gridrun's own configuration has no
 * group for, each as "GROUP = { ... };". */
static void put_other_relay_groups(FILE *f, const struct gr_job *job)
{
    static const char *const own[] = {"local", "wan", "http", "log"};
    static const char *const none[] = {NULL};
    for (int i = 0; i < job->relay_set_count; i++) {
        const char *item = job->relay_set[i];
        size_t glen = strcspn(item, ".");
        bool skip = false;
        for (size_t k = 0; k < sizeof(own) / sizeof(own[0]) && !skip; k++)
            skip = strlen(own[k]) == glen && strncmp(own[k], item, glen) == 0;
        /* A group once, where its first key comes. */
        for (int j = 0; j < i && !skip; j++)
            skip = strncmp(job->relay_set[j], item, glen + 1) == 0;
        if (skip)
            continue;
        char group[64];
        snprintf(group, sizeof(group), "%.*s", (int)glen, item);
        fprintf(f, "%s = { ", group);
        put_relay_sets(f, job, group, none);
        fputs("};\n", f);
    }
}

void gr_relayconf_http(const struct gr_site *s, char *out, size_t len)
{
    snprintf(out, len, "%s:%d",
             s->http_host[0] != '\0' ? s->http_host : "127.0.0.1",
             s->http_port);
}

/* "local = { unix|tcp = ENDPOINT; };": where the site's ranks connect. */
static void put_local_group(FILE *f, const struct gr_site *s)
{
    char endpoint[PATH_MAX + 8];
    gr_rank_endpoint(s, endpoint, sizeof(endpoint));
    fprintf(f, "local = { %s = ", is_unix_endpoint(endpoint) ? "unix" : "tcp");
    put_quoted(f, endpoint);
    fputs("; };\n", f);
}

static void put_wan_group(FILE *f, const struct gr_job *job,
                          const struct gr_site *s)
{
    /* Listen on wan= only when some peer dials us: a dial-only site's
     * wan= need not be an address its relay host can bind. */
    bool listens = false;
    for (uint32_t i = 0; i < job->site_count; i++)
        if (&job->sites[i] != s && !gr_site_dials(s, &job->sites[i]))
            listens = true;
    fprintf(f, "wan = { listen = ");
    put_quoted(f, listens ? s->wan : "");
    /* Without --tls-dir the streams are plaintext: in local mode because
     * they stay on 127.0.0.1, in machine-file mode only on request
     * (--plaintext-wan). */
    static const char *const wan_written[] = {"listen", "streams", "plaintext",
                                              NULL};
    const char *streams = relay_set_value(job, "wan.streams");
    const char *plaintext = relay_set_value(job, "wan.plaintext");
    fprintf(f, "; streams = ");
    if (streams != NULL)
        put_setting_value(f, streams);
    else
        fprintf(f, "%d", WAN_STREAMS);
    fprintf(f, "; plaintext = ");
    if (plaintext != NULL)
        put_setting_value(f, plaintext);
    else
        fputs(job->tls_dir[0] == '\0' ? "true" : "false", f);
    fputs("; ", f);
    put_relay_sets(f, job, "wan", wan_written);
    fputs("};\n", f);
}

static void put_tls_group(FILE *f, const struct gr_job *job,
                          const struct gr_site *s)
{
    char path[PATH_MAX + 80];
    fprintf(f, "tls = { cert = ");
    snprintf(path, sizeof(path), "%s/%s.crt", job->tls_dir, s->name);
    put_quoted(f, path);
    fprintf(f, "; key = ");
    snprintf(path, sizeof(path), "%s/%s.key", job->tls_dir, s->name);
    put_quoted(f, path);
    fprintf(f, "; ca = ");
    snprintf(path, sizeof(path), "%s/ca.crt", job->tls_dir);
    put_quoted(f, path);
    fprintf(f, "; };\n");
}

/* "http = { ... };" and "log = { ... };", gridrun's keys first. */
static void put_http_log_groups(FILE *f, const struct gr_job *job,
                                const struct gr_site *s)
{
    static const char *const http_written[] = {"listen", NULL};
    static const char *const log_written[] = {"level", "file", NULL};
    char http[MF_HOST_MAX + 16];
    const char *level = relay_set_value(job, "log.level");
    gr_relayconf_http(s, http, sizeof(http));
    fprintf(f, "http = { listen = \"%s\"; ", http);
    put_relay_sets(f, job, "http", http_written);
    fputs("};\nlog = { level = ", f);
    put_quoted(f, level != NULL ? level : "info");
    fputs("; file = ", f);
    put_quoted(f, s->log);
    fputs("; ", f);
    put_relay_sets(f, job, "log", log_written);
    fputs("};\n", f);
}

static void put_peers(FILE *f, const struct gr_job *job,
                      const struct gr_site *s)
{
    fprintf(f, "peers = (\n");
    const char *sep = "";
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *p = &job->sites[i];
        if (p == s)
            continue;
        bool dials = gr_site_dials(s, p);
        fprintf(f,
                "%s  { name = \"%s\"; first_rank = %u; rank_count = %u; "
                "address = ",
                sep, p->name, p->offset, p->count);
        put_quoted(f, dials ? p->wan : "");
        fprintf(f, "; connect = \"%s\"; }", dials ? "dial" : "listen");
        sep = ",\n";
    }
    fprintf(f, "\n);\n");
}

int gr_relayconf_write(const struct gr_job *job, const struct gr_site *s)
{
    FILE *f = fopen(s->conf, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "# gridrelay of site %s, written by gridrun.\n"
            "site = \"%s\";\njob_id = %u;\nfirst_rank = %u;\n"
            "rank_count = %u;\ntoken_file = ",
            s->name, s->name, job->job_id, s->offset, s->count);
    put_quoted(f, job->token_file);
    fputs(";\n", f);
    put_local_group(f, s);
    put_wan_group(f, job, s);
    if (job->tls_dir[0] != '\0')
        put_tls_group(f, job, s);
    put_http_log_groups(f, job, s);
    put_other_relay_groups(f, job);
    put_peers(f, job, s);
    return fclose(f) == 0 ? 0 : -1;
}

/* With --relay-set: the relay's own validation (gridrelay --check) of the
 * first site's configuration, whose --relay-set part every site shares; its
 * FILE:LINE messages go to stderr.  0 = valid. */
int gr_relayconf_check(const struct gr_job *job)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "gridrun: pipe: %s\n", strerror(errno));
        return -1;
    }
    char *argv[] = {(char *)job->relay_bin, "--check",
                    (char *)job->sites[0].conf, NULL};
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = null_fd < 0 ? -1 : gr_spawn(argv, null_fd, fds[1], fds[1]);
    if (null_fd >= 0)
        close(null_fd);
    close(fds[1]);
    if (pid < 0) {
        fprintf(stderr, "gridrun: cannot run %s: %s\n", job->relay_bin,
                strerror(errno));
        close(fds[0]);
        return -1;
    }
    char out[8192];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0 ||
           (n < 0 && errno == EINTR))
        len += n > 0 ? (size_t)n : 0;
    close(fds[0]);
    out[len] = '\0';
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        continue;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    fprintf(stderr,
            "gridrun: --relay-set: gridrelay rejects the "
            "configuration:\n%s",
            out);
    return -1;
}
