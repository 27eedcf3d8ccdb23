/*
 * The job's processes: spawning them (each in a process group of its own,
 * asked to stop should gridrun die) and reaping them, the relays' and the
 * mpiexecs' start.  Their ends are recorded in the job by gr_reap(), which
 * gr_pump() calls after every wait.
 */
#include "gridrun_mpiexec.h"
#include "gridrun_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

pid_t gr_spawn(char **argv, int in_fd, int out_fd, int err_fd)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, parent, in_fd, out_fd, err_fd);
    if (pid > 0)
        setpgid(pid, pid); /* also here: no race with our kill(-pid) */
    return pid;
}

pid_t gr_spawn_logged(char **argv, const char *log)
{
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return -1;
    int log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "gridrun: %s: %s\n", log, strerror(errno));
        close(null_fd);
        return -1;
    }
    pid_t pid = gr_spawn(argv, null_fd, log_fd, log_fd);
    if (pid < 0)
        fprintf(stderr, "gridrun: fork: %s\n", strerror(errno));
    close(log_fd);
    close(null_fd);
    return pid;
}

/* Site s's relay.  Its own stderr (crashes, sanitizer reports, start-up
 * errors before the log opens) goes to its log file too. */
static int start_relay(struct gr_job *job, struct gr_site *s)
{
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
    s->relay_pid = gr_spawn_logged(argv, s->log);
    if (s->relay_pid < 0) {
        s->relay_pid = 0;
        return -1;
    }
    s->relay_running = true;
    if (job->rsh_argv != NULL)
        gr_vlog(job, "relay of site %s on %s: pid %ld", s->name, s->relay_host,
                (long)s->relay_pid);
    else
        gr_vlog(job, "relay of site %s: pid %ld", s->name, (long)s->relay_pid);
    return 0;
}

int gr_relays_start(struct gr_job *job)
{
    int status = 0;
    for (uint32_t i = 0; i < job->site_count && status == 0; i++)
        status = start_relay(job, &job->sites[i]);
    return status;
}

void gr_describe_status(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal SIG%s",
                 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
}

void gr_reap(struct gr_runner *r)
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
                gr_describe_status(st, what, sizeof(what));
                gr_vlog(job, "site %s: mpiexec %s", s->name, what);
            }
        }
    }
}

/* Site i's mpiexec, its stdout and stderr into r->out[2i] and [2i+1]. */
static int start_mpiexec(struct gr_runner *r, uint32_t i, char **argv,
                         int null_fd)
{
    struct gr_site *s = &r->job->sites[i];
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    s->mpi_pid = gr_spawn(argv, null_fd, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    struct gr_outsrc *o = &r->out[2 * i];
    o[0].fd = out[0];
    o[0].site = s;
    o[1].fd = err[0];
    o[1].site = s;
    o[1].is_err = true;
    r->nout = 2 * (int)i + 2;
    if (s->mpi_pid < 0) {
        s->mpi_pid = 0;
        return -1;
    }
    s->mpi_running = true;
    s->culprit_rank = -1;
    gr_vlog(r->job, "site %s: mpiexec pid %ld", s->name, (long)s->mpi_pid);
    return 0;
}

int gr_mpiexecs_start(struct gr_runner *r)
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
    /* --native: one mpiexec for every site. */
    uint32_t count = job->native ? 1 : job->site_count;
    for (uint32_t i = 0; i < count && status == 0; i++)
        status =
            start_mpiexec(r, i, gr_mpiexec_cmd_site(&cmd, job, i), null_fd);
    if (status != 0) {
        fprintf(stderr, "gridrun: cannot start mpiexec: %s\n", strerror(errno));
        r->reason = GR_END_ERROR;
    }
    gr_mpiexec_cmd_free(&cmd);
    close(null_fd);
    return status;
}
