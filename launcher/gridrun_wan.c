/*
 * The emulated WAN (--wan): gridwan, which makes a network namespace per
 * site and joins them, started before the relays and stopped after
 * everything that uses it; the namespaces' descriptors gridrun opens once
 * gridwan is ready, to reach each relay's HTTP endpoint inside its own.
 * gridwan removes the namespaces when it stops; gridrun removes them
 * itself when it could not.
 */
#include "gridrun_run.h"
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAN_READY_MS 20000
#define WAN_GRACE_MS 5000

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

/* A socket stays in the namespace it was made in, so gridrun can reach a
 * relay that listens on the loopback of its site's namespace. */
int gr_site_socket(const struct gr_job *job, const struct gr_site *s,
                   int family)
{
    int type = SOCK_STREAM | SOCK_CLOEXEC;
    if (s->netns_fd < 0)
        return socket(family, type, 0);
    if (setns(s->netns_fd, CLONE_NEWNET) == -1)
        return -1;
    int fd = socket(family, type, 0);
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

int gr_wan_start(struct gr_job *job)
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
    job->wan_argv[0] = job->wan_bin;
    job->wan_pid = gr_spawn_logged(job->wan_argv, job->wan_log);
    if (job->wan_pid < 0) {
        job->wan_pid = 0;
        return -1;
    }
    job->wan_running = true;
    gr_vlog(job, "gridwan: pid %ld, log %s", (long)job->wan_pid, job->wan_log);
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
    gr_vlog(job, "%s", line);
    const char *dev = strstr(line, " dev=");
    if (dev == NULL)
        return false;
    dev += 5;
    snprintf(job->wan_dev, sizeof(job->wan_dev), "%.*s", (int)strcspn(dev, " "),
             dev);
    return true;
}

/* Descriptors of gridrun's own namespace and of every site's, for
 * gr_site_socket(); 0, or -1 with a message printed. */
static int open_namespaces(struct gr_job *job)
{
    job->home_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (job->home_netns < 0) {
        fprintf(stderr, "gridrun: /proc/self/ns/net: %s\n", strerror(errno));
        return -1;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        char path[PATH_MAX];
        if (netns_path(s->netns, path, sizeof(path)) != 0 ||
            (s->netns_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "gridrun: namespace %s: %s\n", s->netns,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Wait for gridwan's ready line, then open every site's namespace. */
int gr_wan_wait_ready(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = gr_now_ms() + WAN_READY_MS;
    while (!wan_ready(job)) {
        if (!job->wan_running) {
            char what[64];
            gr_describe_status(job->wan_status, what, sizeof(what));
            fprintf(stderr, "gridrun: gridwan %s while starting; see %s\n",
                    what, job->wan_log);
            r->reason = GR_END_ERROR;
            return -1;
        }
        if (gr_now_ms() >= deadline) {
            fprintf(stderr, "gridrun: gridwan not ready after %d s; see %s\n",
                    WAN_READY_MS / 1000, job->wan_log);
            r->reason = GR_END_ERROR;
            return -1;
        }
        gr_pump(r, 50);
        if (r->reason != GR_END_NONE)
            return -1;
    }
    if (open_namespaces(job) != 0) {
        r->reason = GR_END_ERROR;
        return -1;
    }
    return 0;
}

static void close_namespaces(struct gr_job *job)
{
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (s->netns_fd >= 0)
            close(s->netns_fd);
        s->netns_fd = -1;
    }
    if (job->home_netns >= 0)
        close(job->home_netns);
    job->home_netns = -1;
}

/* The namespaces a gridwan that failed left behind. */
static void remove_namespaces(const struct gr_job *job)
{
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

/* Stop gridwan, which removes the namespaces it made; remove them here if
 * it could not. */
void gr_wan_stop(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    if (job->wan_running) {
        kill(-job->wan_pid, SIGTERM);
        int64_t deadline = gr_now_ms() + WAN_GRACE_MS;
        while (job->wan_running && gr_now_ms() < deadline)
            gr_pump(r, 50);
    }
    if (job->wan_running) {
        fprintf(stderr, "gridrun: gridwan did not stop in %d s; killing it\n",
                WAN_GRACE_MS / 1000);
        kill(-job->wan_pid, SIGKILL);
        if (waitpid(job->wan_pid, &job->wan_status, 0) == job->wan_pid)
            job->wan_running = false;
    }
    close_namespaces(job);
    if (job->wan_pid != 0 &&
        !(WIFEXITED(job->wan_status) && WEXITSTATUS(job->wan_status) == 0))
        remove_namespaces(job);
}
