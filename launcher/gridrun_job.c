/*
 * Running one gridrun job (gridrun_job.h): the order of its steps and the
 * one loop everything waits in.  The steps themselves live in the files
 * gridrun_run.h lists.
 *
 * Everything happens in one poll() loop (gr_pump()): output pipes, a
 * self-pipe the signal handlers write to, and a timeout.  Children are
 * reaped there with waitpid(-1), which also reaps the orphans that reach
 * us as child subreaper.
 */
#include "gridrun_run.h"
#include "gridrun_service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const gr_site_names[GR_MAX_SITES] = {
    "alpha", "beta",  "gamma",  "delta", "epsilon", "zeta", "eta",     "theta",
    "iota",  "kappa", "lambda", "mu",    "nu",      "xi",   "omicron", "pi"};

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

int64_t gr_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gr_vlog(const struct gr_job *job, const char *fmt, ...)
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

/* The signal numbers the self-pipe holds. */
static void take_signals(struct gr_runner *r)
{
    unsigned char sigs[64];
    ssize_t got = read(sig_pipe[0], sigs, sizeof(sigs));
    for (ssize_t i = 0; i < got; i++) {
        if (sigs[i] == SIGCHLD)
            continue;
        r->signals++;
        if (r->reason == GR_END_NONE) {
            r->reason = GR_END_SIGNAL;
            r->signal = sigs[i];
        }
    }
}

void gr_pump(struct gr_runner *r, int timeout_ms)
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
        int64_t left = r->deadline_ms - gr_now_ms();
        if (left < timeout_ms)
            timeout_ms = left < 0 ? 0 : (int)left;
    }
    int rc = poll(pfd, (nfds_t)n, timeout_ms);
    if (rc > 0) {
        for (int i = 1; i < n; i++)
            if (pfd[i].revents != 0)
                gr_output_read(r, &r->out[map[i]]);
        if (pfd[0].revents & POLLIN)
            take_signals(r);
    }
    gr_reap(r);
    if (r->deadline_ms > 0 && gr_now_ms() >= r->deadline_ms &&
        r->reason == GR_END_NONE)
        r->reason = GR_END_TIMEOUT;
}

static bool exited_0(int st)
{
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* One look at the running job: the first reason it must end, if any. */
static void judge(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    bool all_done = true, mpi_failed = false;
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        all_done &= !s->mpi_running;
        mpi_failed |= !s->mpi_running && !exited_0(s->mpi_status);
    }
    /* Ranks that lost their relay fail too, often before gridrun reaps
     * the relay's death: a relay dead when a site's ranks failed is what
     * explains the failure, so it is judged first.  After every rank is
     * done a relay is no longer needed, so only a death while ranks may
     * use it fails the job. */
    for (uint32_t i = 0; i < job->site_count && r->reason == GR_END_NONE; i++) {
        if (job->sites[i].relay_pid > 0 && !job->sites[i].relay_running &&
            (!all_done || mpi_failed)) {
            r->reason = GR_END_RELAY_DIED;
            r->failed_site = &job->sites[i];
        }
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (s->mpi_running)
            continue;
        /* Every site that ended before the job did: the message names all
         * that never joined, not just the first. */
        if (r->reason == GR_END_NONE || r->reason == GR_END_NOT_JOINED)
            gr_check_joined(r, s);
        if (r->reason == GR_END_NONE && !exited_0(s->mpi_status)) {
            r->reason = GR_END_MPI_FAILED;
            r->failed_site = s;
        }
    }
    if (r->reason == GR_END_NONE && job->wan_pid > 0 && !job->wan_running &&
        !all_done)
        r->reason = GR_END_WAN_DIED;
    if (all_done && r->reason == GR_END_NONE)
        r->reason = GR_END_SUCCESS;
}

/* Watch the running job until it ends one way or another. */
static void watch(struct gr_runner *r)
{
    while (r->reason == GR_END_NONE) {
        gr_pump(r, 1000);
        if (r->job->services && gr_service_renew_due(r->job) != 0) {
            r->reason = GR_END_ERROR;
            break;
        }
        judge(r);
    }
}

static int fail(struct gr_runner *r, enum gr_end_reason reason)
{
    r->reason = reason;
    return -1;
}

/* Everything up to the running ranks, in order; 0, or -1 with r->reason
 * set.  The waits set it themselves: a signal or the timeout may be what
 * ends them. */
static int start(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    if (gr_jobfiles_make(job) != 0)
        return fail(r, GR_END_ERROR);
    if (job->relay_set_count > 0 && gr_relayconf_check(job) != 0)
        return fail(r, GR_END_BAD_RELAY_SET);
    if (job->wan_argv != NULL) {
        if (gr_wan_start(job) != 0)
            return fail(r, GR_END_ERROR);
        if (gr_wan_wait_ready(r) != 0)
            return -1;
    }
    if (job->services) {
        if (gr_service_register_all(job) != 0)
            return fail(r, GR_END_ERROR);
        if (gr_services_wait_ready(r) != 0)
            return -1;
    } else if (!job->native) {
        if (gr_relays_start(job) != 0)
            return fail(r, GR_END_ERROR);
        if (gr_relays_wait_up(r) != 0)
            return -1;
    }
    return gr_mpiexecs_start(r);
}

int gr_job_run(struct gr_job *job)
{
    struct gr_runner r = {.job = job};
    int status = 1;

    job->home_netns = -1;
    job->dir_lock_fd = -1;
    for (uint32_t i = 0; i < job->site_count; i++) {
        job->sites[i].netns_fd = -1;
        job->sites[i].ranks_joined = -1;
    }
    if (job->timeout_s > 0)
        r.deadline_ms = gr_now_ms() + (int64_t)job->timeout_s * 1000;
    /* Orphaned proxies and ranks come to us, so teardown can find them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    r.out = calloc(2 * job->site_count, sizeof(*r.out));
    if (r.out == NULL || setup_signals() != 0) {
        fprintf(stderr, "gridrun: %s\n", strerror(errno));
        goto cleanup;
    }
    if (start(&r) == 0)
        watch(&r);

    gr_stop_ranks(&r);
    /* Judge now: relays and gridwan stopped on purpose below must not
     * count. */
    status = gr_final_status(&r);
    if (job->services)
        gr_service_remove_all(job);
    gr_stop_relays(&r);
    gr_wan_stop(&r);
    gr_report_shutdown(&r);
    if (job->dir_lock_fd >= 0)
        gr_jobfiles_finish(job, status);
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
