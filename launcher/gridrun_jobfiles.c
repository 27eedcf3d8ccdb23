/*
 * One job's directory and the files in it: the job token, the relays'
 * configurations (gridrun_relayconf.c), their logs and sockets, and the
 * launcher scripts hydra runs; made before anything starts, and at the
 * end removed, or kept for the user after a failure.  How a directory is
 * locked, marked and removed safely is gridrun_jobdir.c's.
 */
#include "gridrun_jobdir.h"
#include "gridrun_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int gr_random_bytes(void *buf, size_t n)
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

/* A fresh gridrun-XXXXXX in --job-dir, $TMPDIR or /tmp, locked. */
static int create_dir(struct gr_job *job)
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
    return 0;
}

/* The job id and job.token, the secret every rank and relay shows. */
static int write_token(struct gr_job *job)
{
    unsigned char token[32];
    char token_hex[65];
    if (gr_random_bytes(token, sizeof(token)) != 0 ||
        gr_random_bytes(&job->job_id, sizeof(job->job_id)) != 0) {
        fprintf(stderr, "gridrun: getrandom: %s\n", strerror(errno));
        return -1;
    }
    hex(token, sizeof(token), token_hex);
    int fd =
        open(job->token_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "gridrun: %s: %s\n", job->token_file, strerror(errno));
        return -1;
    }
    token_hex[64] = '\n';
    gr_write_all(fd, token_hex, 65);
    close(fd);
    return 0;
}

/* Every file's path in the job directory; -1 when one does not fit. */
static int name_files(struct gr_job *job)
{
    if (snprintf(job->token_file, sizeof(job->token_file), "%s/job.token",
                 job->dir) >= (int)sizeof(job->token_file))
        return -1;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (snprintf(s->conf, sizeof(s->conf), "%s/%s.conf", job->dir,
                     s->name) >= (int)sizeof(s->conf) ||
            snprintf(s->log, sizeof(s->log), "%s/%s.log", job->dir, s->name) >=
                (int)sizeof(s->log) ||
            snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", job->dir,
                     s->name) >= (int)sizeof(s->sock))
            return -1;
    }
    if (job->wan_argv != NULL &&
        snprintf(job->wan_log, sizeof(job->wan_log), "%s/wan.log", job->dir) >=
            (int)sizeof(job->wan_log))
        return -1;
    return 0;
}

/* The relays' Unix sockets must fit sun_path (their own socket file
 * unless local= names another endpoint). */
static int check_socket_paths(const struct gr_job *job)
{
    for (uint32_t i = 0; i < job->site_count && !job->native; i++) {
        const struct gr_site *s = &job->sites[i];
        if (s->local[0] == '\0' && strlen(s->sock) > UNIX_PATH_MAX) {
            fprintf(stderr,
                    "gridrun: socket path %s is too long for a Unix socket; "
                    "set TMPDIR (or --job-dir) to a shorter directory\n",
                    s->sock);
            return -1;
        }
    }
    return 0;
}

int gr_jobfiles_make(struct gr_job *job)
{
    if (create_dir(job) != 0)
        return -1;
    if (name_files(job) != 0) {
        fprintf(stderr, "gridrun: job directory path %s is too long\n",
                job->dir);
        return -1;
    }
    if (write_token(job) != 0 || gr_relayconf_ports(job) != 0 ||
        check_socket_paths(job) != 0)
        return -1;
    for (uint32_t i = 0; i < job->site_count && !job->native && !job->services;
         i++) {
        if (gr_relayconf_write(job, &job->sites[i]) != 0) {
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
    gr_vlog(job, "job directory %s (job id %u)", job->dir, job->job_id);
    return 0;
}

/*
 * The job directory at the end: removed after a successful job (unless
 * --keep-job-dir); after a failed one kept for the user and marked
 * failed, and the failed jobs' directories beyond --keep-failed, oldest
 * first, removed.  --keep-job-dir keeps it unmarked: the user asked for
 * it, so no clean-up removes it.
 */
void gr_jobfiles_finish(struct gr_job *job, int status)
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
