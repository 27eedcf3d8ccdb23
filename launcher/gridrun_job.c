/*
 * Running one gridrun job: job directory, the emulated WAN (--wan),
 * relays, mpiexecs, output forwarding, failure detection and teardown.
 *
 * Everything happens in one poll() loop (pump()): output pipes, a
 * self-pipe the signal handlers write to, and a timeout.  Children are
 * reaped there with waitpid(-1), which also reaps the orphans that reach
 * us as child subreaper.
 */
#include "gridrun_job.h"
#include "gridrun_jobdir.h"
#include "gridrun_mpiexec.h"
#include "gridrun_service.h"
#include "netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAN_STREAMS         4
#define LINE_BYTES          65536
#define RELAY_UP_TIMEOUT_MS 20000
#define MPI_GRACE_MS        3000
#define KILL_WAIT_MS        2000
#define RELAY_GRACE_MS      5000
#define DRAIN_MS            3000
#define WAN_READY_MS        20000
#define WAN_GRACE_MS        5000
#define JOIN_QUERY_TRIES    3
/* Exit status of a job some of whose ranks never joined the grid. */
#define EXIT_NOT_JOINED 125
/* A program hydra could not start, as a shell reports it. */
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND      127
/* The never-joined ranks a message lists at most (as the relay's ranges). */
#define NEVER_JOINED_SHOWN 160
#define UNIX_PATH_MAX      (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

const char *const gr_site_names[GR_MAX_SITES] = {
    "alpha", "beta",  "gamma",  "delta", "epsilon", "zeta", "eta",     "theta",
    "iota",  "kappa", "lambda", "mu",    "nu",      "xi",   "omicron", "pi"};

/* One output pipe of one mpiexec. */
struct outsrc {
    int fd; /* -1 once at EOF */
    struct gr_site *site;
    bool is_err;
    bool in_exit_codes; /* inside hydra's "Exit codes:" lines */
    size_t len;
    char buf[LINE_BYTES];
};

/* Why the job ends; the first reason recorded wins. */
enum end_reason {
    END_NONE = 0,
    END_SUCCESS,
    END_MPI_FAILED,
    END_RELAY_DIED,
    END_WAN_DIED,
    END_SIGNAL,
    END_TIMEOUT,
    END_ERROR,
    END_BAD_RELAY_SET, /* the relay's --check rejected --relay-set */
    END_NOT_JOINED,    /* a site's ranks ran without joining the grid */
};

struct runner {
    struct gr_job *job;
    struct outsrc *out; /* 2 per site */
    int nout;
    enum end_reason reason;
    struct gr_site *failed_site;
    int signal;          /* SIGINT/SIGTERM/SIGHUP that interrupted us */
    int signals;         /* how many arrived: a second one hurries teardown */
    int64_t deadline_ms; /* --timeout, 0 = none */
};

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    /* A full pipe already holds a wake-up; losing this byte is harmless
     * except for its signal number, and SIGCHLD is the one that repeats. */
    if (write(sig_pipe[1], &b, 1) < 0) {
    }
    errno = saved;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* reader gone (EPIPE): output is dropped, job goes on */
        p += w;
        n -= (size_t)w;
    }
}

__attribute__((format(printf, 2, 3))) static void vlog(const struct gr_job *job,
                                                       const char *fmt, ...)
{
    if (!job->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gridrun: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- job directory ---------------------------------------------------- */

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int random_bytes(void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((char *)buf + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

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
        if (random_bytes(&candidate, sizeof(candidate)) != 0)
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
static int pick_ports(struct gr_job *job)
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

static int write_relay_config(const struct gr_job *job, const struct gr_site *s)
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
    char endpoint[PATH_MAX + 8];
    gr_rank_endpoint(s, endpoint, sizeof(endpoint));
    bool unix_ep = is_unix_endpoint(endpoint);
    fprintf(f, ";\nlocal = { %s = ", unix_ep ? "unix" : "tcp");
    put_quoted(f, endpoint);
    /* Listen on wan= only when some peer dials us: a dial-only site's
     * wan= need not be an address its relay host can bind. */
    bool listens = false;
    for (uint32_t i = 0; i < job->site_count; i++)
        if (&job->sites[i] != s && !gr_site_dials(s, &job->sites[i]))
            listens = true;
    fprintf(f, "; };\nwan = { listen = ");
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
    if (job->tls_dir[0] != '\0') {
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
    static const char *const http_written[] = {"listen", NULL};
    static const char *const log_written[] = {"level", "file", NULL};
    const char *level = relay_set_value(job, "log.level");
    fprintf(f, "http = { listen = \"%s:%d\"; ",
            s->http_host[0] != '\0' ? s->http_host : "127.0.0.1", s->http_port);
    put_relay_sets(f, job, "http", http_written);
    fputs("};\nlog = { level = ", f);
    put_quoted(f, level != NULL ? level : "info");
    fputs("; file = ", f);
    put_quoted(f, s->log);
    fputs("; ", f);
    put_relay_sets(f, job, "log", log_written);
    fputs("};\n", f);
    put_other_relay_groups(f, job);
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
    return fclose(f) == 0 ? 0 : -1;
}

/* Shell-quote `word` as '...' into f. */
static void put_shell_quoted(FILE *f, const char *word)
{
    fputc('\'', f);
    for (; *word != '\0'; word++) {
        if (*word == '\'')
            fputs("'\\''", f);
        else
            fputc(*word, f);
    }
    fputc('\'', f);
}

/* A new executable script JOBDIR/NAME for hydra's -launcher-exec, its
 * path in job->rsh_exec: the stream to write it to, or NULL. */
static FILE *create_launcher_script(struct gr_job *job, const char *name)
{
    if (snprintf(job->rsh_exec, sizeof(job->rsh_exec), "%s/%s", job->dir,
                 name) >= (int)sizeof(job->rsh_exec)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = open(job->rsh_exec, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (f == NULL)
        close(fd);
    return f;
}

/* Hydra's -launcher-exec takes one executable: --rsh "ssh -o X" becomes a
 * script in the job directory that runs the whole command. */
static int write_rsh_wrapper(struct gr_job *job)
{
    if (job->rsh_argv[1] == NULL) {
        snprintf(job->rsh_exec, sizeof(job->rsh_exec), "%s", job->rsh_argv[0]);
        return 0;
    }
    FILE *f = create_launcher_script(job, "rsh.sh");
    if (f == NULL)
        return -1;
    fprintf(f, "#!/bin/sh\n# --rsh of gridrun, for hydra's -launcher-exec.\n"
               "exec");
    for (char **w = job->rsh_argv; *w != NULL; w++) {
        fputc(' ', f);
        put_shell_quoted(f, *w);
    }
    fprintf(f, " \"$@\"\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* --native: hydra starts its proxy for "host" NS (a site's namespace) as
 * "SCRIPT -x NS COMMAND", which this script runs inside NS, as ssh would
 * run it on a host.  A private IPC namespace per site keeps UCX's
 * shared-memory transports from reaching the ranks of another site: they
 * would bypass the emulated WAN. */
static int write_netns_launcher(struct gr_job *job)
{
    FILE *f = create_launcher_script(job, "netns-exec.sh");
    if (f == NULL)
        return -1;
    fprintf(f, "#!/bin/sh\n"
               "# gridrun --native: hydra's -launcher-exec, "
               "\"netns-exec.sh [-x] NS COMMAND...\"\n"
               "while [ $# -gt 0 ]; do\n"
               "    case $1 in\n"
               "    -*) shift ;;\n"
               "    *) break ;;\n"
               "    esac\n"
               "done\n"
               "ns=$1\n"
               "shift\n"
               "exec ip netns exec \"$ns\" unshare --ipc sh -c \"$*\"\n");
    return fclose(f) == 0 ? 0 : -1;
}

static int make_job_dir(struct gr_job *job)
{
    const char *tmp = job->job_dir_base;
    if (tmp == NULL)
        tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    if (snprintf(job->dir, sizeof(job->dir), "%s/gridrun-XXXXXX", tmp) >=
            (int)sizeof(job->dir) ||
        mkdtemp(job->dir) == NULL) {
        fprintf(stderr, "gridrun: cannot create job directory in %s: %s\n", tmp,
                strerror(errno));
        job->dir[0] = '\0';
        return -1;
    }
    snprintf(job->dir_base, sizeof(job->dir_base), "%s", tmp);
    job->dir_lock_fd = gr_jobdir_lock(job->dir);
    if (job->dir_lock_fd < 0) {
        fprintf(stderr, "gridrun: %s/%s: %s\n", job->dir, GR_JOBDIR_LOCK,
                strerror(errno));
        return -1;
    }

    unsigned char token[32];
    char token_hex[65];
    if (random_bytes(token, sizeof(token)) != 0 ||
        random_bytes(&job->job_id, sizeof(job->job_id)) != 0) {
        fprintf(stderr, "gridrun: getrandom: %s\n", strerror(errno));
        return -1;
    }
    hex(token, sizeof(token), token_hex);
    if (snprintf(job->token_file, sizeof(job->token_file), "%s/job.token",
                 job->dir) >= (int)sizeof(job->token_file))
        goto too_long;
    int fd =
        open(job->token_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "gridrun: %s: %s\n", job->token_file, strerror(errno));
        return -1;
    }
    token_hex[64] = '\n';
    write_all(fd, token_hex, 65);
    close(fd);

    if (pick_ports(job) != 0)
        return -1;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (snprintf(s->conf, sizeof(s->conf), "%s/%s.conf", job->dir,
                     s->name) >= (int)sizeof(s->conf) ||
            snprintf(s->log, sizeof(s->log), "%s/%s.log", job->dir, s->name) >=
                (int)sizeof(s->log) ||
            snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", job->dir,
                     s->name) >= (int)sizeof(s->sock))
            goto too_long;
        if (job->native)
            continue; /* no relay */
        if (s->local[0] == '\0' && strlen(s->sock) > UNIX_PATH_MAX) {
            fprintf(stderr,
                    "gridrun: socket path %s is too long for a Unix socket; "
                    "set TMPDIR (or --job-dir) to a shorter directory\n",
                    s->sock);
            return -1;
        }
    }
    for (uint32_t i = 0; i < job->site_count && !job->native && !job->services;
         i++) {
        if (write_relay_config(job, &job->sites[i]) != 0) {
            fprintf(stderr, "gridrun: %s: %s\n", job->sites[i].conf,
                    strerror(errno));
            return -1;
        }
    }
    if ((job->rsh_argv != NULL && write_rsh_wrapper(job) != 0) ||
        (job->native && write_netns_launcher(job) != 0)) {
        fprintf(stderr, "gridrun: %s: %s\n", job->rsh_exec, strerror(errno));
        return -1;
    }
    if (job->wan_argv != NULL &&
        snprintf(job->wan_log, sizeof(job->wan_log), "%s/wan.log", job->dir) >=
            (int)sizeof(job->wan_log))
        goto too_long;
    vlog(job, "job directory %s (job id %u)", job->dir, job->job_id);
    return 0;
too_long:
    fprintf(stderr, "gridrun: job directory path %s is too long\n", job->dir);
    return -1;
}

/*
 * The job directory at the end: removed after a successful job (unless
 * --keep-job-dir); after a failed one kept for the user and marked
 * failed, and the failed jobs' directories beyond --keep-failed, oldest
 * first, removed.  --keep-job-dir keeps it unmarked: the user asked for
 * it, so no clean-up removes it.
 */
static void finish_job_dir(struct gr_job *job, int status)
{
    bool failed = status != 0;
    bool keep = job->keep_job_dir || (failed && job->keep_failed > 0);
    if (failed && !job->keep_job_dir && gr_jobdir_mark_failed(job->dir) != 0) {
        fprintf(stderr, "gridrun: warning: %s/%s: %s\n", job->dir,
                GR_JOBDIR_FAILED, strerror(errno));
    }
    if (keep) {
        fprintf(stderr, "gridrun: job directory kept: %s\n", job->dir);
    } else if (gr_jobdir_remove(job->dir_base, job->dir) != 0) {
        fprintf(stderr,
                "gridrun: warning: cannot remove job directory %s: %s\n",
                job->dir, strerror(errno));
    } else if (failed) {
        fprintf(stderr, "gridrun: job directory removed (--keep-failed 0)\n");
    }
    if (failed) {
        int removed = gr_jobdir_prune(
            job->dir_base, keep && !job->keep_job_dir ? job->dir : NULL,
            job->keep_failed);
        if (removed < 0)
            fprintf(stderr, "gridrun: warning: cannot clean up %s: %s\n",
                    job->dir_base, strerror(errno));
        else if (removed > 0)
            /* Only when it removed some: a job that merely keeps its
             * directory says so in one line, as before. */
            fprintf(stderr,
                    job->keep_failed > 0
                        ? "gridrun: removed %d older failed jobs' directories "
                          "from %s; the last %u stay there (--keep-failed N, "
                          "GRIDCOLL_KEEP_FAILED)\n"
                        : "gridrun: removed %d older failed jobs' directories "
                          "from %s (--keep-failed %u)\n",
                    removed, job->dir_base, job->keep_failed);
    }
    /* Held until now: another gridrun's clean-up must not take a
     * directory this job still writes to. */
    close(job->dir_lock_fd);
    job->dir_lock_fd = -1;
}

/* ---- processes ---------------------------------------------------------- */

/* In the child: default signal state, own process group, then exec. */
static void child_exec(char **argv, pid_t parent, int in_fd, int out_fd,
                       int err_fd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    /* Should gridrun die without tearing down (SIGKILL), its children are
     * asked to stop all the same: relays drain, mpiexec ends its ranks,
     * gridwan removes its namespaces.  Checking the parent closes the race
     * with a gridrun that died before the request. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != parent)
        _exit(127);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    execvp(argv[0], argv);
    dprintf(2, "gridrun: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static pid_t spawn(char **argv, int in_fd, int out_fd, int err_fd)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, parent, in_fd, out_fd, err_fd);
    if (pid > 0)
        setpgid(pid, pid); /* also here: no race with our kill(-pid) */
    return pid;
}

/* ip netns exec rather than setns in the child: it also mounts the
 * namespace's own /sys, where UCX looks for the network devices of the
 * ranks' namespace. */
size_t gr_netns_prefix(const struct gr_site *s, char **argv)
{
    if (s->netns[0] == '\0')
        return 0;
    argv[0] = "ip";
    argv[1] = "netns";
    argv[2] = "exec";
    argv[3] = (char *)s->netns;
    return 4;
}

/* With --relay-set: the relay's own validation (gridrelay --check) of the
 * first site's configuration, whose --relay-set part every site shares; its
 * FILE:LINE messages go to stderr.  0 = valid. */
static int check_relay_sets(const struct gr_job *job)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "gridrun: pipe: %s\n", strerror(errno));
        return -1;
    }
    char *argv[] = {(char *)job->relay_bin, "--check",
                    (char *)job->sites[0].conf, NULL};
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = null_fd < 0 ? -1 : spawn(argv, null_fd, fds[1], fds[1]);
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

static int start_relays(struct gr_job *job)
{
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return -1;
    int status = 0;
    for (uint32_t i = 0; i < job->site_count && status == 0; i++) {
        struct gr_site *s = &job->sites[i];
        /* The relay's own stderr (crashes, sanitizer reports, start-up
         * errors before the log opens) goes to its log file too. */
        int log_fd =
            open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            fprintf(stderr, "gridrun: %s: %s\n", s->log, strerror(errno));
            status = -1;
            break;
        }
        /* Through --rsh: RSH... RELAYHOST GRIDRELAY -c CONF. */
        char *argv[64 + 9];
        size_t a = gr_netns_prefix(s, argv);
        if (job->rsh_argv != NULL) {
            for (char **w = job->rsh_argv; *w != NULL && a < 64; w++)
                argv[a++] = *w;
            argv[a++] = s->relay_host;
        }
        argv[a++] = job->relay_bin;
        argv[a++] = "-c";
        argv[a++] = s->conf;
        argv[a] = NULL;
        s->relay_pid = spawn(argv, null_fd, log_fd, log_fd);
        close(log_fd);
        if (s->relay_pid < 0) {
            fprintf(stderr, "gridrun: fork: %s\n", strerror(errno));
            s->relay_pid = 0;
            status = -1;
            break;
        }
        s->relay_running = true;
        if (job->rsh_argv != NULL)
            vlog(job, "relay of site %s on %s: pid %ld", s->name, s->relay_host,
                 (long)s->relay_pid);
        else
            vlog(job, "relay of site %s: pid %ld", s->name, (long)s->relay_pid);
    }
    close(null_fd);
    return status;
}

static void describe_status(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal SIG%s",
                 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
}

static void reap(struct runner *r)
{
    struct gr_job *job = r->job;
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        if (pid == job->wan_pid && job->wan_running) {
            job->wan_running = false;
            job->wan_status = st;
        }
        for (uint32_t i = 0; i < job->site_count; i++) {
            struct gr_site *s = &job->sites[i];
            if (pid == s->relay_pid && s->relay_running) {
                s->relay_running = false;
                s->relay_status = st;
            } else if (pid == s->mpi_pid && s->mpi_running) {
                s->mpi_running = false;
                s->mpi_status = st;
                char what[64];
                describe_status(st, what, sizeof(what));
                vlog(job, "site %s: mpiexec %s", s->name, what);
            }
        }
    }
}

/* ---- output forwarding -------------------------------------------------- */

/* The site of grid rank `rank`; the last one for a rank out of range. */
static const struct gr_site *site_of_rank(const struct gr_job *job,
                                          uint64_t rank)
{
    uint32_t i = 0;
    while (i + 1 < job->site_count && rank >= job->sites[i + 1].offset)
        i++;
    return &job->sites[i];
}

/* How well a rank's wait status explains a failed job: an exit with a
 * nonzero status, then a signal other than the SIGKILL hydra sends the
 * rest of the job when it cleans up, then that SIGKILL. */
static int culprit_rank_priority(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st) != 0 ? 3 : 0;
    if (WIFSIGNALED(st))
        return WTERMSIG(st) != SIGKILL ? 2 : 1;
    return 0;
}

/* One host's part of hydra's per-rank statuses, "[HOST] S,S,...\n": raw
 * wait statuses of its ranks in rank order.  False if the line is not one.
 * `line` ends with its newline, which stops every scan. */
static bool take_rank_statuses(struct gr_site *s, const char *line, size_t len)
{
    const char *p = line[0] == '[' ? memmem(line, len, "] ", 2) : NULL;
    if (p == NULL)
        return false;
    p += 2;
    for (;;) {
        if (*p < '0' || *p > '9')
            return false;
        char *end;
        long st = strtol(p, &end, 10);
        if (st > INT_MAX)
            return false;
        if (culprit_rank_priority((int)st) >
            (s->culprit_rank < 0 ? 0
                                 : culprit_rank_priority(s->culprit_status))) {
            s->culprit_rank = s->statuses_seen;
            s->culprit_status = (int)st;
        }
        s->statuses_seen++;
        p = end;
        if (*p != ',')
            return *p == '\n' || *p == '\r';
        p++;
    }
}

/* gridrun asks mpiexec for the per-rank statuses (a killed rank can hide
 * the exit status of the one that failed in mpiexec's own); they are ours,
 * not the user's output:
 *   [mpiexec@HOST] Exit codes: [HOST1] S,S,...
 *   [HOST2] S,...                                   */
static bool take_hydra_exit_codes(struct outsrc *o, const char *line,
                                  size_t len)
{
    static const char head[] = "[mpiexec@", tag[] = "] Exit codes: ";
    if (o->is_err)
        return false;
    const char *codes =
        len > sizeof(head) && memcmp(line, head, sizeof(head) - 1) == 0
            ? memmem(line, len, tag, sizeof(tag) - 1)
            : NULL;
    if (codes != NULL) {
        codes += sizeof(tag) - 1;
        o->in_exit_codes =
            take_rank_statuses(o->site, codes, len - (size_t)(codes - line));
        return true;
    }
    if (o->in_exit_codes)
        o->in_exit_codes = take_rank_statuses(o->site, line, len);
    return o->in_exit_codes;
}

/* Host number `index` of a site's mpiexec -hosts ("h1:n1,h2:n2"): hydra
 * numbers its proxies in that order, one per host. */
static bool nth_mpi_host(const struct gr_site *s, unsigned long index,
                         char *out, size_t len)
{
    const char *p = s->mpi_hosts;
    for (; p != NULL && index > 0; index--) {
        p = strchr(p, ',');
        if (p != NULL)
            p++;
    }
    if (p == NULL || *p == '\0')
        return false;
    snprintf(out, len, "%.*s", (int)strcspn(p, ":,"), p);
    return true;
}

/*
 * A proxy that cannot start the program says so on mpiexec's stderr,
 *   [proxy:PG:ID@HOST] HYDU_create_process (...): execvp error on file
 *   PROGRAM (REASON)
 * and its ranks then never join the grid, which would blame the wrong
 * things: gridrun reports this instead (report_exec_failure), naming the
 * machine file's host (HOST is the proxy's own hostname, which a host
 * alias of the machine file need not be).  The first failure of a site is
 * kept; the line itself is still forwarded.
 */
static void take_exec_failure(struct gr_site *s, const char *line, size_t len)
{
    static const char head[] = "[proxy:", what[] = " execvp error on file ";
    if (s->exec_prog[0] != '\0' || len <= sizeof(head) ||
        memcmp(line, head, sizeof(head) - 1) != 0)
        return;
    const char *file = memmem(line, len, what, sizeof(what) - 1);
    const char *close = line + len;
    while (close > line && (close[-1] == '\n' || close[-1] == '\r'))
        close--;
    if (file == NULL || close == line || close[-1] != ')')
        return;
    file += sizeof(what) - 1;
    close--;
    /* The reason is the last parenthesis: PROGRAM may contain one. */
    const char *open = NULL;
    for (const char *p = file; p + 1 < close; p++)
        if (p[0] == ' ' && p[1] == '(')
            open = p;
    const char *at = memchr(line, '@', (size_t)(file - line));
    const char *bracket =
        at != NULL ? memchr(at, ']', (size_t)(file - at)) : NULL;
    const char *id = memchr(line + sizeof(head) - 1, ':',
                            (size_t)(file - line) - (sizeof(head) - 1));
    if (open == NULL || open == file || bracket == NULL || id == NULL ||
        id > at)
        return;
    char *end;
    unsigned long proxy = strtoul(id + 1, &end, 10);
    if (end != at ||
        !nth_mpi_host(s, proxy, s->exec_host, sizeof(s->exec_host)))
        snprintf(s->exec_host, sizeof(s->exec_host), "%.*s",
                 (int)(bracket - at - 1), at + 1);
    snprintf(s->exec_reason, sizeof(s->exec_reason), "%.*s",
             (int)(close - open - 2), open + 2);
    snprintf(s->exec_prog, sizeof(s->exec_prog), "%.*s", (int)(open - file),
             file);
}

static void emit_line(struct runner *r, struct outsrc *o, char *line,
                      size_t len)
{
    if (o->is_err)
        take_exec_failure(o->site, line, len);
    int fd = o->is_err ? 2 : 1;
    if (take_hydra_exit_codes(o, line, len)) {
        vlog(r->job, "site %s: hydra: %.*s", o->site->name,
             (int)(len > 0 && line[len - 1] == '\n' ? len - 1 : len), line);
        return;
    }
    if (!r->job->prefix) {
        write_all(fd, line, len);
        return;
    }
    /* Hydra's -l labels rank output "[N] text"; its own messages have no
     * label and get the site alone. */
    char head[96];
    const char *rest = line;
    size_t rest_len = len;
    char *end = NULL;
    unsigned long rank = 0;
    if (len > 3 && line[0] == '[' && line[1] >= '0' && line[1] <= '9') {
        rank = strtoul(line + 1, &end, 10);
        if (end != NULL && end[0] == ']' && end[1] == ' ') {
            rest = end + 2;
            rest_len = len - (size_t)(rest - line);
        } else {
            end = NULL;
        }
    }
    int hl;
    if (end != NULL && r->job->native) {
        /* One MPICH job for every site: its ranks are grid ranks. */
        const struct gr_site *s = site_of_rank(r->job, rank);
        hl = snprintf(head, sizeof(head), "[%s/%lu] ", s->name, rank);
    } else if (end != NULL)
        hl = snprintf(head, sizeof(head), "[%s/%lu] ", o->site->name,
                      (unsigned long)o->site->offset + rank);
    else
        hl = snprintf(head, sizeof(head), "[%s] ", o->site->name);
    /* One write per line, so lines from different sources never mix. */
    char out[LINE_BYTES + sizeof(head)];
    memcpy(out, head, (size_t)hl);
    memcpy(out + hl, rest, rest_len);
    write_all(fd, out, (size_t)hl + rest_len);
}

/* Emit every complete line in o->buf; with `flush`, also the rest. */
static void emit_lines(struct runner *r, struct outsrc *o, bool flush)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(o->buf + start, '\n', o->len - start);
        if (nl == NULL)
            break;
        size_t n = (size_t)(nl - (o->buf + start)) + 1;
        emit_line(r, o, o->buf + start, n);
        start += n;
    }
    /* A line longer than the buffer is cut into buffer-sized lines rather
     * than held without bound. */
    if ((flush || o->len - start == sizeof(o->buf) - 1) && o->len > start) {
        o->buf[o->len] = '\n';
        emit_line(r, o, o->buf + start, o->len - start + 1);
        start = o->len;
    }
    memmove(o->buf, o->buf + start, o->len - start);
    o->len -= start;
}

static void read_output(struct runner *r, struct outsrc *o)
{
    ssize_t n = read(o->fd, o->buf + o->len, sizeof(o->buf) - 1 - o->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(o->fd);
        o->fd = -1;
        emit_lines(r, o, true);
        return;
    }
    o->len += (size_t)n;
    emit_lines(r, o, false);
}

static bool output_open(const struct runner *r)
{
    for (int i = 0; i < r->nout; i++)
        if (r->out[i].fd >= 0)
            return true;
    return false;
}

static void close_output(struct runner *r)
{
    for (int i = 0; i < r->nout; i++) {
        if (r->out[i].fd >= 0) {
            close(r->out[i].fd);
            r->out[i].fd = -1;
            emit_lines(r, &r->out[i], true);
        }
    }
}

/* ---- the loop ----------------------------------------------------------- */

/* Wait up to timeout_ms for output or a signal; handle what came. */
static void pump(struct runner *r, int timeout_ms)
{
    struct pollfd pfd[1 + 2 * GR_MAX_SITES];
    int map[1 + 2 * GR_MAX_SITES];
    int n = 0;
    pfd[n].fd = sig_pipe[0];
    pfd[n].events = POLLIN;
    map[n++] = -1;
    for (int i = 0; i < r->nout; i++) {
        if (r->out[i].fd < 0)
            continue;
        pfd[n].fd = r->out[i].fd;
        pfd[n].events = POLLIN;
        map[n++] = i;
    }
    if (r->deadline_ms > 0) {
        int64_t left = r->deadline_ms - now_ms();
        if (left < timeout_ms)
            timeout_ms = left < 0 ? 0 : (int)left;
    }
    int rc = poll(pfd, (nfds_t)n, timeout_ms);
    if (rc > 0) {
        for (int i = 1; i < n; i++)
            if (pfd[i].revents != 0)
                read_output(r, &r->out[map[i]]);
        if (pfd[0].revents & POLLIN) {
            unsigned char sigs[64];
            ssize_t got = read(sig_pipe[0], sigs, sizeof(sigs));
            for (ssize_t i = 0; i < got; i++) {
                if (sigs[i] == SIGCHLD)
                    continue;
                r->signals++;
                if (r->reason == END_NONE) {
                    r->reason = END_SIGNAL;
                    r->signal = sigs[i];
                }
            }
        }
    }
    reap(r);
    if (r->deadline_ms > 0 && now_ms() >= r->deadline_ms &&
        r->reason == END_NONE)
        r->reason = END_TIMEOUT;
}

/* ---- relay readiness ------------------------------------------------------
 */

/* A socket in site s's namespace with --wan (a socket stays in the
 * namespace it was made in, so gridrun can reach a relay that listens on
 * the loopback of its namespace), else in ours. */
static int site_socket(const struct gr_job *job, const struct gr_site *s,
                       const struct addrinfo *ai)
{
    int type = ai->ai_socktype | SOCK_CLOEXEC;
    if (s->netns_fd < 0)
        return socket(ai->ai_family, type, ai->ai_protocol);
    if (setns(s->netns_fd, CLONE_NEWNET) == -1)
        return -1;
    int fd = socket(ai->ai_family, type, ai->ai_protocol);
    int saved = errno;
    if (setns(job->home_netns, CLONE_NEWNET) == -1) {
        /* Whatever gridrun started next would run in the site's
         * namespace; its children stop with it (PR_SET_PDEATHSIG). */
        fprintf(stderr,
                "gridrun: cannot return to its own network namespace: %s\n",
                strerror(errno));
        abort();
    }
    errno = saved;
    return fd;
}

/* Connect to site s's HTTP endpoint, its host as in a relay config ([v6]
 * in brackets). */
static int http_connect(const struct gr_job *job, const struct gr_site *s)
{
    const char *host = s->http_host[0] != '\0' ? s->http_host : "127.0.0.1";
    char name[MF_HOST_MAX + 1], service[16];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
        snprintf(name, sizeof(name), "%.*s", (int)(n - 2), host + 1);
    else
        snprintf(name, sizeof(name), "%s", host);
    snprintf(service, sizeof(service), "%d", s->http_port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(name, service, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = site_socket(job, s, ai);
        if (fd < 0)
            continue;
        /* A relay that accepts but never answers must not stall the
         * loop. */
        struct timeval tv = {.tv_sec = 1};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* GET /status from a relay; returns the body (malloc'd) or NULL. */
static char *http_status(const struct gr_job *job, const struct gr_site *s)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd = http_connect(job, s);
    if (fd < 0)
        return NULL;
    static const char req[] = "GET /status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
        goto fail;
    for (;;) {
        if (cap - len < 4096) {
            if (cap >= (1u << 24))
                goto fail;
            cap = cap ? 2 * cap : 16384;
            char *nb = realloc(buf, cap);
            if (nb == NULL)
                goto fail;
            buf = nb;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (buf == NULL)
        return NULL;
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 8, " 200", 4) != 0 ||
        body == NULL) {
        free(buf);
        return NULL;
    }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
fail:
    close(fd);
    free(buf);
    return NULL;
}

/* Every link "up" with all of its streams up, and one link per peer.  The
 * JSON is the relay's own fixed layout (docs/gridrelay.md), so a key scan
 * is enough. */
static bool links_up(const char *json, uint32_t peers)
{
    uint32_t seen = 0;
    const char *p = json;
    while ((p = strstr(p, "{\"peer\":\"")) != NULL) {
        p++;
        const char *state = strstr(p, "\"state\":\"");
        const char *up = strstr(p, "\"streams_up\":");
        const char *all = strstr(p, "\"streams\":");
        if (state == NULL || up == NULL || all == NULL)
            return false;
        if (strncmp(state + 9, "up\"", 3) != 0 ||
            atoi(up + 13) != atoi(all + 10) || atoi(all + 10) < 1)
            return false;
        seen++;
    }
    return seen == peers;
}

static void relay_died_message(const struct gr_job *job,
                               const struct gr_site *s, const char *when)
{
    char what[64];
    describe_status(s->relay_status, what, sizeof(what));
    fprintf(stderr, "gridrun: relay of site %s died %s (%s); see %s\n", s->name,
            when, what, s->log);
    (void)job;
}

static int wait_relays_up(struct runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = now_ms() + RELAY_UP_TIMEOUT_MS;
    for (;;) {
        uint32_t ready = 0;
        for (uint32_t i = 0; i < job->site_count; i++) {
            struct gr_site *s = &job->sites[i];
            if (!s->relay_running) {
                relay_died_message(job, s, "while starting");
                r->reason = END_ERROR;
                return -1;
            }
            if (!s->relay_up) {
                char *body = http_status(job, s);
                s->relay_up =
                    body != NULL && links_up(body, job->site_count - 1);
                free(body);
            }
            ready += s->relay_up;
        }
        if (ready == job->site_count) {
            vlog(job, "all relays up");
            return 0;
        }
        if (now_ms() >= deadline) {
            for (uint32_t i = 0; i < job->site_count; i++) {
                if (!job->sites[i].relay_up) {
                    fprintf(stderr,
                            "gridrun: relay of site %s: links not up after "
                            "%d s; see %s\n",
                            job->sites[i].name, RELAY_UP_TIMEOUT_MS / 1000,
                            job->sites[i].log);
                    break;
                }
            }
            r->reason = END_ERROR;
            return -1;
        }
        pump(r, 50);
        if (r->reason != END_NONE)
            return -1;
    }
}

/* Every site's service has the job once the peer services confirmed it
 * to each other (docs/gridrelay.md, "Service mode"). */
static int wait_services_ready(struct runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = now_ms() + RELAY_UP_TIMEOUT_MS;
    for (;;) {
        int ready = gr_service_all_ready(job);
        if (ready == 1) {
            vlog(job, "the job is ready at every site's service");
            return 0;
        }
        if (ready < 0 || now_ms() >= deadline) {
            if (ready == 0)
                fprintf(stderr,
                        "gridrun: the sites' services did not confirm the "
                        "job to each other within %d s (are their links "
                        "up? see their /status)\n",
                        RELAY_UP_TIMEOUT_MS / 1000);
            r->reason = END_ERROR;
            return -1;
        }
        pump(r, 20); /* a poll is one HTTPS request per site */
        if (r->reason != END_NONE)
            return -1;
    }
}

/* ---- the emulated WAN (--wan) -------------------------------------------- */

static int start_wan(struct gr_job *job)
{
    /* gridwan keeps a namespace that exists already: a leftover of a run
     * killed with SIGKILL under the same pid would outlive this one too. */
    for (uint32_t i = 0; i < job->site_count; i++) {
        const char *ns = job->sites[i].netns;
        int exists = netns_exists(ns);
        if (exists != 0) {
            if (exists == 1)
                fprintf(stderr,
                        "gridrun: network namespace %s exists already (left "
                        "by a killed run?); remove it with 'ip netns delete "
                        "%s'\n",
                        ns, ns);
            else
                fprintf(stderr, "gridrun: namespace %s: %s\n", ns,
                        strerror(errno));
            return -1;
        }
    }
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return -1;
    int log_fd =
        open(job->wan_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "gridrun: %s: %s\n", job->wan_log, strerror(errno));
        close(null_fd);
        return -1;
    }
    job->wan_argv[0] = job->wan_bin;
    job->wan_pid = spawn(job->wan_argv, null_fd, log_fd, log_fd);
    close(log_fd);
    close(null_fd);
    if (job->wan_pid < 0) {
        fprintf(stderr, "gridrun: fork: %s\n", strerror(errno));
        job->wan_pid = 0;
        return -1;
    }
    job->wan_running = true;
    vlog(job, "gridwan: pid %ld, log %s", (long)job->wan_pid, job->wan_log);
    return 0;
}

/* Whether gridwan's log holds its whole ready line; if so, its device name
 * (dev=) goes to job->wan_dev. */
static bool wan_ready(struct gr_job *job)
{
    static const char tag[] = "gridwan: ready ";
    char buf[16384];
    int fd = open(job->wan_log, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *line = buf;
    while (strncmp(line, tag, sizeof(tag) - 1) != 0) {
        line = strchr(line, '\n');
        if (line == NULL)
            return false;
        line++;
    }
    char *end = strchr(line, '\n');
    if (end == NULL)
        return false;
    *end = '\0';
    vlog(job, "%s", line);
    const char *dev = strstr(line, " dev=");
    if (dev == NULL)
        return false;
    dev += 5;
    snprintf(job->wan_dev, sizeof(job->wan_dev), "%.*s", (int)strcspn(dev, " "),
             dev);
    return true;
}

/* Wait for gridwan's ready line, then open every site's namespace. */
static int wait_wan_ready(struct runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = now_ms() + WAN_READY_MS;
    while (!wan_ready(job)) {
        if (!job->wan_running) {
            char what[64];
            describe_status(job->wan_status, what, sizeof(what));
            fprintf(stderr, "gridrun: gridwan %s while starting; see %s\n",
                    what, job->wan_log);
            r->reason = END_ERROR;
            return -1;
        }
        if (now_ms() >= deadline) {
            fprintf(stderr, "gridrun: gridwan not ready after %d s; see %s\n",
                    WAN_READY_MS / 1000, job->wan_log);
            r->reason = END_ERROR;
            return -1;
        }
        pump(r, 50);
        if (r->reason != END_NONE)
            return -1;
    }
    job->home_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (job->home_netns < 0) {
        fprintf(stderr, "gridrun: /proc/self/ns/net: %s\n", strerror(errno));
        r->reason = END_ERROR;
        return -1;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        char path[PATH_MAX];
        if (netns_path(s->netns, path, sizeof(path)) != 0 ||
            (s->netns_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "gridrun: namespace %s: %s\n", s->netns,
                    strerror(errno));
            r->reason = END_ERROR;
            return -1;
        }
    }
    return 0;
}

/* Stop gridwan, which removes the namespaces it made; remove them here if
 * it could not. */
static void stop_wan(struct runner *r)
{
    struct gr_job *job = r->job;
    if (job->wan_running) {
        kill(-job->wan_pid, SIGTERM);
        int64_t deadline = now_ms() + WAN_GRACE_MS;
        while (job->wan_running && now_ms() < deadline)
            pump(r, 50);
    }
    if (job->wan_running) {
        fprintf(stderr, "gridrun: gridwan did not stop in %d s; killing it\n",
                WAN_GRACE_MS / 1000);
        kill(-job->wan_pid, SIGKILL);
        if (waitpid(job->wan_pid, &job->wan_status, 0) == job->wan_pid)
            job->wan_running = false;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (s->netns_fd >= 0)
            close(s->netns_fd);
        s->netns_fd = -1;
    }
    if (job->home_netns >= 0)
        close(job->home_netns);
    job->home_netns = -1;
    if (job->wan_pid == 0 ||
        (WIFEXITED(job->wan_status) && WEXITSTATUS(job->wan_status) == 0))
        return;
    for (uint32_t i = 0; i < job->site_count; i++) {
        const char *ns = job->sites[i].netns;
        if (netns_exists(ns) != 1)
            continue;
        if (netns_delete(ns) == 0)
            fprintf(stderr,
                    "gridrun: removed network namespace %s, which gridwan "
                    "left behind\n",
                    ns);
        else
            fprintf(stderr,
                    "gridrun: cannot remove network namespace %s; remove it "
                    "with 'ip netns delete %s'\n",
                    ns, ns);
    }
}

/* ---- the join check ------------------------------------------------------
 *
 * A rank joins the grid in MPI_Init, when libgridcoll's session with the
 * site's relay authenticates; the relay keeps a record of every rank that
 * ever did (docs/gridrelay.md, /status).  A program whose MPI calls never
 * reach libgridcoll (Fortran mpi_f08, libgridcoll not linked in, MPI-4
 * sessions, no MPI_Init at all) runs as one MPI job per site instead of one
 * grid job, and may well exit 0: so once a site's mpiexec has ended, every
 * rank of the site must have joined.
 */

/* The value after "KEY": in the relay's /status JSON, its own fixed layout
 * (docs/gridrelay.md), so a key scan is enough; NULL if absent. */
const char *gr_json_value(const char *json, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\":", key);
    const char *p = strstr(json, pattern);
    return p != NULL ? p + strlen(pattern) : NULL;
}

/* Ask site s's relay which of its ranks ever joined: 0 with
 * s->ranks_joined and s->never_joined set, -1 when the relay does not
 * answer or says nothing about joins (a gridrelay older than gridrun). */
static int query_joined(struct runner *r, struct gr_site *s)
{
    int status = -1;
    char *body = NULL;
    for (int i = 0; i < JOIN_QUERY_TRIES && body == NULL; i++) {
        if (i > 0)
            pump(r, 100);
        body = r->job->services ? gr_service_job_status(r->job, s)
                                : http_status(r->job, s);
    }
    if (body == NULL)
        goto cleanup;
    const char *joined = gr_json_value(body, "ranks_joined");
    const char *never = gr_json_value(body, "ranks_never_joined");
    if (joined == NULL || never == NULL || *never != '"')
        goto cleanup;
    never++;
    size_t len = strcspn(never, "\"");
    if (never[len] != '"')
        goto cleanup;
    s->never_joined = strndup(never, len);
    if (s->never_joined == NULL)
        goto cleanup;
    s->ranks_joined = strtoll(joined, NULL, 10);
    status = 0;
cleanup:
    free(body);
    return status;
}

/* Check, once its mpiexec has ended on its own, that every rank of site s
 * joined the grid; when not, the job ends with END_NOT_JOINED.  Ranks end
 * only after their relay answered their AUTH (the relay records the join
 * first), so the record is complete by the time mpiexec is reaped. */
static void check_joined(struct runner *r, struct gr_site *s)
{
    struct gr_job *job = r->job;
    if (s->join_checked)
        return;
    s->join_checked = true;
    /* With one site libgridcoll leaves everything to MPICH and never
     * calls the relay; --native runs no relays. */
    if (job->no_join_check || job->native || job->site_count < 2 ||
        s->relay_pid <= 0)
        return;
    bool exited_0 = WIFEXITED(s->mpi_status) && WEXITSTATUS(s->mpi_status) == 0;
    if (query_joined(r, s) != 0) {
        /* A relay that died is reported as such while ranks run; a failed
         * mpiexec fails the job anyway. */
        if (exited_0 && s->relay_running)
            fprintf(stderr,
                    "gridrun: warning: site %s: cannot tell whether its ranks "
                    "joined the grid: its relay's /status does not say; see "
                    "%s\n",
                    s->name, s->log);
        return;
    }
    vlog(job, "site %s: %" PRId64 " of %u ranks joined the grid", s->name,
         s->ranks_joined, s->count);
    if (s->ranks_joined >= (int64_t)s->count && s->never_joined[0] == '\0')
        return;
    /* A failed mpiexec some of whose ranks did join is a rank's failure:
     * hydra ends the rest, maybe before they joined. */
    if (!exited_0 && s->ranks_joined > 0)
        return;
    s->join_failed = true;
    if (r->reason == END_NONE) {
        r->reason = END_NOT_JOINED;
        r->failed_site = s;
    }
}

/* ---- mpiexec ------------------------------------------------------------- */

static int start_mpiexecs(struct runner *r)
{
    struct gr_job *job = r->job;
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return -1;
    struct gr_mpiexec_cmd cmd;
    if (gr_mpiexec_cmd_init(&cmd, job) != 0) {
        close(null_fd);
        return -1;
    }
    int status = 0;
    for (uint32_t i = 0; i < job->site_count && status == 0; i++) {
        struct gr_site *s = &job->sites[i];
        char **argv = gr_mpiexec_cmd_site(&cmd, job, i);
        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) != 0) {
            status = -1;
            break;
        }
        if (pipe2(err, O_CLOEXEC) != 0) {
            close(out[0]);
            close(out[1]);
            status = -1;
            break;
        }
        s->mpi_pid = spawn(argv, null_fd, out[1], err[1]);
        close(out[1]);
        close(err[1]);
        struct outsrc *o = &r->out[2 * i];
        o[0].fd = out[0];
        o[0].site = s;
        o[1].fd = err[0];
        o[1].site = s;
        o[1].is_err = true;
        r->nout = 2 * (int)i + 2;
        if (s->mpi_pid < 0) {
            s->mpi_pid = 0;
            status = -1;
            break;
        }
        s->mpi_running = true;
        s->culprit_rank = -1;
        vlog(job, "site %s: mpiexec pid %ld", s->name, (long)s->mpi_pid);
        if (job->native)
            break; /* one mpiexec for every site */
    }
    if (status != 0) {
        fprintf(stderr, "gridrun: cannot start mpiexec: %s\n", strerror(errno));
        r->reason = END_ERROR;
    }
    gr_mpiexec_cmd_free(&cmd);
    close(null_fd);
    return status;
}

/* Watch the running job until it ends one way or another. */
static void watch(struct runner *r)
{
    struct gr_job *job = r->job;
    while (r->reason == END_NONE) {
        pump(r, 1000);
        if (job->services && gr_service_renew_due(job) != 0) {
            r->reason = END_ERROR;
            break;
        }
        bool all_done = true, mpi_failed = false;
        for (uint32_t i = 0; i < job->site_count; i++) {
            const struct gr_site *s = &job->sites[i];
            all_done &= !s->mpi_running;
            mpi_failed |= !s->mpi_running && !(WIFEXITED(s->mpi_status) &&
                                               WEXITSTATUS(s->mpi_status) == 0);
        }
        /* Ranks that lost their relay fail too, often before gridrun
         * reaps the relay's death: a relay dead when a site's ranks
         * failed is what explains the failure, so it is judged first.
         * After every rank is done a relay is no longer needed, so only a
         * death while ranks may use it fails the job. */
        for (uint32_t i = 0; i < job->site_count && r->reason == END_NONE;
             i++) {
            if (job->sites[i].relay_pid > 0 && !job->sites[i].relay_running &&
                (!all_done || mpi_failed)) {
                r->reason = END_RELAY_DIED;
                r->failed_site = &job->sites[i];
            }
        }
        for (uint32_t i = 0; i < job->site_count; i++) {
            struct gr_site *s = &job->sites[i];
            if (s->mpi_running)
                continue;
            /* Every site that ended before the job did: the message names
             * all that never joined, not just the first. */
            if (r->reason == END_NONE || r->reason == END_NOT_JOINED)
                check_joined(r, s);
            if (r->reason == END_NONE && !(WIFEXITED(s->mpi_status) &&
                                           WEXITSTATUS(s->mpi_status) == 0)) {
                r->reason = END_MPI_FAILED;
                r->failed_site = s;
            }
        }
        if (r->reason == END_NONE && job->wan_pid > 0 && !job->wan_running &&
            !all_done)
            r->reason = END_WAN_DIED;
        if (all_done && r->reason == END_NONE)
            r->reason = END_SUCCESS;
    }
}

/* ---- teardown ------------------------------------------------------------ */

/* Processes (with their children) that signal_descendants() leaves
 * alone: gridwan always, since stop_wan() stops it after everything that
 * uses its WAN, and the relays unless with_relays. */
static bool is_spared(const struct gr_job *job, pid_t pid, bool with_relays)
{
    if (job->wan_pid > 0 && pid == job->wan_pid)
        return true;
    for (uint32_t i = 0; i < job->site_count && !with_relays; i++)
        if (job->sites[i].relay_pid == pid)
            return true;
    return false;
}

/* Signal every live process below us except the relays (unless
 * with_relays) and gridwan: hydra's proxies and ranks setsid() away from
 * mpiexec's group, and orphans re-parented to us (subreaper) sit in groups
 * we never made.  Returns how many there were. */
static int signal_descendants(const struct gr_job *job, int sig,
                              bool with_relays)
{
    enum { MAXP = 65536 };
    static pid_t pids[MAXP], ppids[MAXP];
    int n = 0, count = 0;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAXP) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[sizeof(e->d_name) + 16], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and ')'. */
        char *close_paren = strrchr(buf, ')');
        char state;
        int ppid;
        if (close_paren == NULL ||
            sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 ||
            state == 'Z')
            continue;
        pids[n] = (pid_t)atoi(e->d_name);
        ppids[n++] = (pid_t)ppid;
    }
    closedir(d);
    pid_t self = getpid();
    for (int i = 0; i < n; i++) {
        if (is_spared(job, pids[i], with_relays))
            continue;
        /* Walk up the parent chain; bounded in case pids were reused
         * while we read /proc.  A relay's own children (the relay behind
         * an --rsh command) are left to stop_relays(). */
        pid_t p = ppids[i];
        for (int depth = 0; depth < 64 && p > 1 && p != self; depth++) {
            if (is_spared(job, p, with_relays)) {
                p = 0;
                break;
            }
            int k;
            for (k = 0; k < n && pids[k] != p; k++) {
            }
            p = k < n ? ppids[k] : 0;
        }
        if (p == self) {
            kill(pids[i], sig);
            count++;
        }
    }
    return count;
}

static bool mpi_running(const struct gr_job *job)
{
    for (uint32_t i = 0; i < job->site_count; i++)
        if (job->sites[i].mpi_running)
            return true;
    return false;
}

static void stop_ranks(struct runner *r)
{
    struct gr_job *job = r->job;
    int signals_before = r->signals;
    /* mpiexec forwards SIGTERM to its proxies, which end the ranks. */
    for (uint32_t i = 0; i < job->site_count; i++)
        if (job->sites[i].mpi_pid > 0)
            kill(-job->sites[i].mpi_pid, SIGTERM);
    int64_t deadline = now_ms() + MPI_GRACE_MS;
    bool termed_rest = false;
    while (now_ms() < deadline && r->signals == signals_before) {
        if (!mpi_running(job)) {
            /* What is left outlived its mpiexec: ask it once. */
            int left =
                signal_descendants(job, termed_rest ? 0 : SIGTERM, false);
            termed_rest = true;
            if (left == 0)
                break;
        }
        pump(r, 50);
    }
    /* Grace over (or a second signal): force. */
    deadline = now_ms() + KILL_WAIT_MS;
    for (;;) {
        for (uint32_t i = 0; i < job->site_count; i++)
            if (job->sites[i].mpi_pid > 0)
                kill(-job->sites[i].mpi_pid, SIGKILL);
        int left = signal_descendants(job, SIGKILL, false);
        pump(r, left ? 20 : 0);
        if ((left == 0 && !mpi_running(job)) || now_ms() >= deadline)
            break;
    }
    /* Every writer is gone: collect what is still in the pipes. */
    deadline = now_ms() + 500;
    while (output_open(r) && now_ms() < deadline)
        pump(r, 50);
    close_output(r);
}

static void stop_relays(struct runner *r)
{
    struct gr_job *job = r->job;
    for (uint32_t i = 0; i < job->site_count; i++)
        if (job->sites[i].relay_running)
            kill(-job->sites[i].relay_pid, SIGTERM);
    int64_t deadline = now_ms() + RELAY_GRACE_MS;
    for (;;) {
        bool running = false;
        for (uint32_t i = 0; i < job->site_count; i++)
            running |= job->sites[i].relay_running;
        /* A relay started through --rsh on this machine may still be
         * draining after the rsh command ended; re-parented to us, it is
         * still one of our descendants. */
        if (!running && signal_descendants(job, 0, true) == 0)
            return;
        if (now_ms() >= deadline)
            break;
        pump(r, 50);
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (!s->relay_running)
            continue;
        fprintf(stderr,
                "gridrun: relay of site %s did not stop in %d s; "
                "killing it\n",
                s->name, RELAY_GRACE_MS / 1000);
        kill(-s->relay_pid, SIGKILL);
        if (waitpid(s->relay_pid, &s->relay_status, 0) == s->relay_pid)
            s->relay_running = false;
    }
    deadline = now_ms() + KILL_WAIT_MS;
    while (signal_descendants(job, SIGKILL, true) > 0 && now_ms() < deadline)
        pump(r, 20);
}

/* ---- the job ------------------------------------------------------------- */

static int setup_signals(void)
{
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return -1;
    /* A closed stdout must not kill us before we clean up. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int exit_code_of(int st)
{
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* Name the rank (else the mpiexec) that explains site s's failed mpiexec;
 * returns the exit status it stands for. */
static int report_mpi_failure(const struct gr_job *job, const struct gr_site *s)
{
    char what[64];
    describe_status(s->mpi_status, what, sizeof(what));
    if (s->culprit_rank < 0) {
        /* --native has one mpiexec for every site. */
        if (job->native)
            fprintf(stderr, "gridrun: mpiexec %s\n", what);
        else
            fprintf(stderr, "gridrun: site %s: mpiexec %s\n", s->name, what);
        return exit_code_of(s->mpi_status);
    }
    char rank_what[64];
    describe_status(s->culprit_status, rank_what, sizeof(rank_what));
    const struct gr_site *rank_site = s;
    uint64_t rank = (uint64_t)s->culprit_rank;
    if (job->native)
        rank_site = site_of_rank(job, rank);
    else
        rank += s->offset;
    fprintf(stderr, "gridrun: site %s: rank %" PRIu64 " %s", rank_site->name,
            rank, rank_what);
    if (s->culprit_status != s->mpi_status)
        fprintf(stderr, " (mpiexec %s)", what);
    fputc('\n', stderr);
    return exit_code_of(s->culprit_status);
}

/* The sites whose ranks never joined the grid, and why that happens. */
static void report_not_joined(const struct gr_job *job)
{
    bool failed = false;
    const char *prog = NULL; /* the first such site's (first) program */
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        if (!s->join_failed)
            continue;
        for (uint32_t k = 0; k < job->apps.count && prog == NULL; k++)
            if (job->apps.app[k].first + job->apps.app[k].count > s->offset)
                prog = job->apps.app[k].argv[0];
        bool exited_0 =
            WIFEXITED(s->mpi_status) && WEXITSTATUS(s->mpi_status) == 0;
        if (!exited_0) {
            report_mpi_failure(job, s);
            failed = true;
        }
        /* The relay's ranges, cut after a whole range when long. */
        const char *list = s->never_joined;
        int shown = (int)strlen(list);
        const char *more = "";
        if (shown > NEVER_JOINED_SHOWN) {
            shown = NEVER_JOINED_SHOWN;
            while (shown > 0 && list[shown] != ',')
                shown--;
            more = ",...";
        }
        bool one = strpbrk(list, ",-") == NULL;
        fprintf(stderr,
                "gridrun: site %s: %s %.*s%s never joined the grid (no "
                "session with the site's relay from MPI_Init)\n",
                s->name, one ? "rank" : "ranks", shown, list, more);
    }
    fprintf(stderr,
            "gridrun: likely causes%s:\n"
            "gridrun:   - the program uses the Fortran module mpi_f08: "
            "MPICH's Fortran 2008 bindings bypass libgridcoll (not supported "
            "yet; 'use mpi' and mpif.h work)\n"
            "gridrun:   - libgridcoll is not linked into the executable "
            "(check 'ldd %s'): link it as docs/gridcoll.md says "
            "(pkg-config gridcoll, CMake GridColl::gridcoll), or run with "
            "'gridrun --preload'\n"
            "gridrun:   - the program starts MPI with MPI-4 sessions "
            "(MPI_Session_init) instead of MPI_Init\n"
            "gridrun:   - the program does not call MPI_Init at all (not an "
            "MPI program: run it with 'gridrun --no-join-check')\n",
            failed ? " (unless the ranks' own messages above say why they "
                     "stopped)"
                   : "",
            prog);
}

/* Like a shell: 127 for a program not found, 126 for one found but not
 * executable (any other reason of execvp, e.g. ENOEXEC, is the kernel's
 * text).  One line per site whose hosts could not start it; returns the
 * first site's status, 0 when no site had such a failure. */
static int report_exec_failure(const struct gr_job *job)
{
    int status = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        if (s->exec_prog[0] == '\0')
            continue;
        bool missing = strcmp(s->exec_reason, strerror(ENOENT)) == 0;
        bool denied = strcmp(s->exec_reason, strerror(EACCES)) == 0;
        fprintf(stderr,
                "gridrun: site %s: cannot start program %s on host %s: %s\n",
                s->name, s->exec_prog, s->exec_host,
                missing  ? "not found"
                : denied ? "not executable"
                         : s->exec_reason);
        if (status == 0)
            status = missing ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE;
    }
    return status;
}

static int final_status(struct runner *r)
{
    struct gr_job *job = r->job;
    /* Ranks that could not be started never joined and failed their
     * mpiexec: what explains both is the exec failure. */
    if (r->reason == END_MPI_FAILED || r->reason == END_NOT_JOINED) {
        int st = report_exec_failure(job);
        if (st != 0)
            return st;
    }
    char what[64];
    switch (r->reason) {
    case END_SUCCESS: return 0;
    case END_BAD_RELAY_SET: return 2;
    case END_MPI_FAILED:
        /* A relay that stopped on its own (a drained SIGTERM ends its
         * sessions before it exits) while its ranks were failing, found
         * only now that teardown reaped it: the cause, named first.  One
         * whose drain ended a moment ago may not be reaped yet, and no
         * longer answers: it gets a second to be. */
        for (uint32_t i = 0; i < job->site_count && !job->services; i++) {
            struct gr_site *s = &job->sites[i];
            char *body = s->relay_running ? http_status(job, s) : NULL;
            for (int tries = 0; s->relay_running && body == NULL && tries < 20;
                 tries++) {
                struct timespec pause = {.tv_nsec = 50 * 1000 * 1000};
                nanosleep(&pause, NULL);
                reap(r);
            }
            free(body);
        }
        for (uint32_t i = 0; i < job->site_count; i++) {
            const struct gr_site *s = &job->sites[i];
            if (s->relay_pid > 0 && !s->relay_running) {
                /* gridrun stops its relays only after this: one that
                 * exited 0 was stopped by a signal from outside. */
                if (WIFEXITED(s->relay_status) &&
                    WEXITSTATUS(s->relay_status) == 0)
                    fprintf(stderr,
                            "gridrun: relay of site %s was stopped while "
                            "ranks ran (it drained and exited: a signal from "
                            "outside gridrun); see %s\n",
                            s->name, s->log);
                else
                    relay_died_message(job, s, "while ranks ran");
                report_mpi_failure(job, r->failed_site);
                return 1;
            }
        }
        /* Still draining: stopped from outside gridrun (gridrun stops
         * its relays only after this), which ended its sessions. */
        for (uint32_t i = 0; i < job->site_count && !job->services; i++) {
            const struct gr_site *s = &job->sites[i];
            char *body = s->relay_running ? http_status(job, s) : NULL;
            bool draining =
                body != NULL && strstr(body, "\"draining\":true") != NULL;
            free(body);
            if (draining) {
                fprintf(stderr,
                        "gridrun: relay of site %s was stopped while ranks "
                        "ran (it is draining: a signal from outside "
                        "gridrun); see %s\n",
                        s->name, s->log);
                report_mpi_failure(job, r->failed_site);
                return 1;
            }
        }
        if (job->services && gr_service_report_lost(job) > 0) {
            report_mpi_failure(job, r->failed_site);
            return 1;
        }
        return report_mpi_failure(job, r->failed_site);
    case END_NOT_JOINED: report_not_joined(job); return EXIT_NOT_JOINED;
    case END_RELAY_DIED:
        relay_died_message(job, r->failed_site, "while ranks ran");
        return 1;
    case END_WAN_DIED:
        describe_status(job->wan_status, what, sizeof(what));
        fprintf(stderr, "gridrun: gridwan died while ranks ran (%s); see %s\n",
                what, job->wan_log);
        return 1;
    case END_SIGNAL:
        fprintf(stderr, "gridrun: interrupted\n");
        return 128 + r->signal;
    case END_TIMEOUT:
        fprintf(stderr, "gridrun: timeout after %u s\n", job->timeout_s);
        return 124;
    case END_NONE:
    case END_ERROR: break;
    }
    return 1;
}

int gr_job_run(struct gr_job *job)
{
    struct runner r = {.job = job};
    int status = 1;

    job->home_netns = -1;
    job->dir_lock_fd = -1;
    for (uint32_t i = 0; i < job->site_count; i++) {
        job->sites[i].netns_fd = -1;
        job->sites[i].ranks_joined = -1;
    }
    if (job->timeout_s > 0)
        r.deadline_ms = now_ms() + (int64_t)job->timeout_s * 1000;
    /* Orphaned proxies and ranks come to us, so teardown can find them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    r.out = calloc(2 * job->site_count, sizeof(*r.out));
    if (r.out == NULL || setup_signals() != 0) {
        fprintf(stderr, "gridrun: %s\n", strerror(errno));
        goto cleanup;
    }
    if (make_job_dir(job) != 0) {
        r.reason = END_ERROR;
        goto teardown;
    }
    if (job->relay_set_count > 0 && check_relay_sets(job) != 0) {
        r.reason = END_BAD_RELAY_SET;
        goto teardown;
    }
    if (job->wan_argv != NULL) {
        if (start_wan(job) != 0) {
            r.reason = END_ERROR;
            goto teardown;
        }
        if (wait_wan_ready(&r) != 0)
            goto teardown;
    }
    if (job->services) {
        if (gr_service_register_all(job) != 0) {
            r.reason = END_ERROR;
            goto teardown;
        }
        if (wait_services_ready(&r) != 0)
            goto teardown;
    } else if (!job->native) {
        if (start_relays(job) != 0) {
            r.reason = END_ERROR;
            goto teardown;
        }
        if (wait_relays_up(&r) != 0)
            goto teardown;
    }
    if (start_mpiexecs(&r) != 0)
        goto teardown;
    watch(&r);

teardown:
    stop_ranks(&r);
    /* Judge now: relays and gridwan stopped on purpose below must not
     * count. */
    status = final_status(&r);
    if (job->services)
        gr_service_remove_all(job);
    stop_relays(&r);
    stop_wan(&r);
    if (job->wan_pid > 0 && r.reason == END_SUCCESS &&
        !(WIFEXITED(job->wan_status) && WEXITSTATUS(job->wan_status) == 0)) {
        char what[64];
        describe_status(job->wan_status, what, sizeof(what));
        fprintf(stderr, "gridrun: warning: gridwan %s on shutdown; see %s\n",
                what, job->wan_log);
        job->keep_job_dir = true;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        /* Through --rsh, the SIGTERM ends the rsh command itself (ssh,
         * or the shell running the relay): that is a normal stop. */
        bool stopped_rsh = job->rsh_argv != NULL &&
                           WIFSIGNALED(s->relay_status) &&
                           WTERMSIG(s->relay_status) == SIGTERM;
        if (s->relay_pid > 0 && r.reason == END_SUCCESS && !stopped_rsh &&
            !(WIFEXITED(s->relay_status) &&
              WEXITSTATUS(s->relay_status) == 0)) {
            char what[64];
            describe_status(s->relay_status, what, sizeof(what));
            fprintf(stderr,
                    "gridrun: warning: relay of site %s %s on "
                    "shutdown; see %s\n",
                    s->name, what, s->log);
            job->keep_job_dir = true;
        }
    }
    if (job->dir_lock_fd >= 0)
        finish_job_dir(job, status);
    else if (job->dir[0] != '\0')
        fprintf(stderr, "gridrun: job directory kept: %s\n", job->dir);

cleanup:
    for (uint32_t i = 0; i < job->site_count; i++) {
        free(job->sites[i].never_joined);
        job->sites[i].never_joined = NULL;
    }
    free(r.out);
    return status;
}
