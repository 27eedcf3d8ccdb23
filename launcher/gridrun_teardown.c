/*
 * Teardown, in the order that lets each part end cleanly: the ranks first
 * (mpiexec, then whatever outlived it), then the relays, which drain what
 * the ranks sent, and last gridwan (gridrun_wan.c), which carries the
 * relays' traffic.  Every wait goes through gr_pump(), so output keeps
 * flowing and a second signal hurries the grace periods.
 *
 * Hydra's proxies and ranks setsid() away from mpiexec's process group,
 * so a kill of the group does not reach them: a /proc scan finds every
 * descendant (gridrun is their subreaper) instead.
 */
#include "gridrun_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MPI_GRACE_MS   3000
#define KILL_WAIT_MS   2000
#define RELAY_GRACE_MS 5000

/* Processes (with their children) that signal_descendants() leaves
 * alone: gridwan always, since gr_wan_stop() stops it after everything that
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

/* Every live process: its pid and its parent's, at most `max`; how many. */
static int list_processes(pid_t *pids, pid_t *ppids, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
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
    return n;
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
    int n = list_processes(pids, ppids, MAXP), count = 0;
    pid_t self = getpid();
    for (int i = 0; i < n; i++) {
        if (is_spared(job, pids[i], with_relays))
            continue;
        /* Walk up the parent chain; bounded in case pids were reused
         * while we read /proc.  A relay's own children (the relay behind
         * an --rsh command) are left to gr_stop_relays(). */
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

void gr_stop_ranks(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    int signals_before = r->signals;
    /* mpiexec forwards SIGTERM to its proxies, which end the ranks. */
    for (uint32_t i = 0; i < job->site_count; i++)
        if (job->sites[i].mpi_pid > 0)
            kill(-job->sites[i].mpi_pid, SIGTERM);
    int64_t deadline = gr_now_ms() + MPI_GRACE_MS;
    bool termed_rest = false;
    while (gr_now_ms() < deadline && r->signals == signals_before) {
        if (!mpi_running(job)) {
            /* What is left outlived its mpiexec: ask it once. */
            int left =
                signal_descendants(job, termed_rest ? 0 : SIGTERM, false);
            termed_rest = true;
            if (left == 0)
                break;
        }
        gr_pump(r, 50);
    }
    /* Grace over (or a second signal): force. */
    deadline = gr_now_ms() + KILL_WAIT_MS;
    for (;;) {
        for (uint32_t i = 0; i < job->site_count; i++)
            if (job->sites[i].mpi_pid > 0)
                kill(-job->sites[i].mpi_pid, SIGKILL);
        int left = signal_descendants(job, SIGKILL, false);
        gr_pump(r, left ? 20 : 0);
        if ((left == 0 && !mpi_running(job)) || gr_now_ms() >= deadline)
            break;
    }
    /* Every writer is gone: collect what is still in the pipes. */
    deadline = gr_now_ms() + 500;
    while (gr_output_open(r) && gr_now_ms() < deadline)
        gr_pump(r, 50);
    gr_output_close(r);
}

void gr_stop_relays(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    for (uint32_t i = 0; i < job->site_count; i++)
        if (job->sites[i].relay_running)
            kill(-job->sites[i].relay_pid, SIGTERM);
    int64_t deadline = gr_now_ms() + RELAY_GRACE_MS;
    for (;;) {
        bool running = false;
        for (uint32_t i = 0; i < job->site_count; i++)
            running |= job->sites[i].relay_running;
        /* A relay started through --rsh on this machine may still be
         * draining after the rsh command ended; re-parented to us, it is
         * still one of our descendants. */
        if (!running && signal_descendants(job, 0, true) == 0)
            return;
        if (gr_now_ms() >= deadline)
            break;
        gr_pump(r, 50);
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
    deadline = gr_now_ms() + KILL_WAIT_MS;
    while (signal_descendants(job, SIGKILL, true) > 0 && gr_now_ms() < deadline)
        gr_pump(r, 20);
}
