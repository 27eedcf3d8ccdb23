/*
 * The mpiexecs' output, forwarded line by line to gridrun's own stdout
 * and stderr: whole lines only (one write each, so lines of different
 * sources never mix), with --prefix labelled [SITE/GRIDRANK].  Two kinds
 * of hydra's lines are gridrun's to read on the way: the per-rank wait
 * statuses it asks for (-print-all-exitcodes, not forwarded), which name
 * the rank behind a failed mpiexec, and a proxy's exec failure, which
 * explains ranks that never started.
 */
#include "gridrun_run.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void gr_write_all(int fd, const char *p, size_t n)
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

/* The site of grid rank `rank`; the last one for a rank out of range. */
const struct gr_site *gr_site_of_rank(const struct gr_job *job, uint64_t rank)
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
static bool take_hydra_exit_codes(struct gr_outsrc *o, const char *line,
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

/* With --prefix: the line with its [SITE/GRIDRANK] or [SITE] label.
 * Hydra's -l labels rank output "[N] text"; its own messages have no
 * label and get the site alone. */
static void write_prefixed(const struct gr_job *job, const struct gr_outsrc *o,
                           int fd, const char *line, size_t len)
{
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
    if (end != NULL && job->native) {
        /* One MPICH job for every site: its ranks are grid ranks. */
        const struct gr_site *s = gr_site_of_rank(job, rank);
        hl = snprintf(head, sizeof(head), "[%s/%lu] ", s->name, rank);
    } else if (end != NULL)
        hl = snprintf(head, sizeof(head), "[%s/%lu] ", o->site->name,
                      (unsigned long)o->site->offset + rank);
    else
        hl = snprintf(head, sizeof(head), "[%s] ", o->site->name);
    /* One write per line, so lines from different sources never mix. */
    char out[GR_LINE_BYTES + sizeof(head)];
    memcpy(out, head, (size_t)hl);
    memcpy(out + hl, rest, rest_len);
    gr_write_all(fd, out, (size_t)hl + rest_len);
}

static void emit_line(struct gr_runner *r, struct gr_outsrc *o, char *line,
                      size_t len)
{
    if (o->is_err)
        take_exec_failure(o->site, line, len);
    int fd = o->is_err ? 2 : 1;
    if (take_hydra_exit_codes(o, line, len)) {
        gr_vlog(r->job, "site %s: hydra: %.*s", o->site->name,
                (int)(len > 0 && line[len - 1] == '\n' ? len - 1 : len), line);
        return;
    }
    if (r->job->prefix)
        write_prefixed(r->job, o, fd, line, len);
    else
        gr_write_all(fd, line, len);
}

/* Emit every complete line in o->buf; with `flush`, also the rest. */
static void emit_lines(struct gr_runner *r, struct gr_outsrc *o, bool flush)
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

void gr_output_read(struct gr_runner *r, struct gr_outsrc *o)
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

bool gr_output_open(const struct gr_runner *r)
{
    for (int i = 0; i < r->nout; i++)
        if (r->out[i].fd >= 0)
            return true;
    return false;
}

void gr_output_close(struct gr_runner *r)
{
    for (int i = 0; i < r->nout; i++) {
        if (r->out[i].fd >= 0) {
            close(r->out[i].fd);
            r->out[i].fd = -1;
            emit_lines(r, &r->out[i], true);
        }
    }
}
