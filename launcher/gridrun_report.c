/*
 * The end of a job: its exit status (docs/gridrun.md, EXIT STATUS) and
 * the lines on stderr that explain it, judged once the ranks stopped
 * while relays and gridwan still run, so that their deliberate stop
 * cannot count; then the warnings about their own shutdown.  Only the
 * cause is named, the most telling first: a program hydra could not
 * start, a relay stopped from outside, the rank that failed.
 */
#include "gridrun_json.h"
#include "gridrun_run.h"
#include "gridrun_service.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* Exit status of a job some of whose ranks never joined the grid. */
#define EXIT_NOT_JOINED 125
/* A program hydra could not start, as a shell reports it. */
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND      127
/* The never-joined ranks a message lists at most (as the relay's ranges). */
#define NEVER_JOINED_SHOWN 160

static bool exited_0(int st)
{
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
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
    gr_describe_status(s->mpi_status, what, sizeof(what));
    if (s->culprit_rank < 0) {
        /* --native has one mpiexec for every site. */
        if (job->native)
            fprintf(stderr, "gridrun: mpiexec %s\n", what);
        else
            fprintf(stderr, "gridrun: site %s: mpiexec %s\n", s->name, what);
        return exit_code_of(s->mpi_status);
    }
    char rank_what[64];
    gr_describe_status(s->culprit_status, rank_what, sizeof(rank_what));
    const struct gr_site *rank_site = s;
    uint64_t rank = (uint64_t)s->culprit_rank;
    if (job->native)
        rank_site = gr_site_of_rank(job, rank);
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
        if (!exited_0(s->mpi_status)) {
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

/* gridrun stops its relays only after the ranks: one that exited 0 while
 * they ran was stopped by a signal from outside (a drained SIGTERM). */
static void report_relay_ended(const struct gr_site *s)
{
    if (exited_0(s->relay_status))
        fprintf(stderr,
                "gridrun: relay of site %s was stopped while ranks ran "
                "(it drained and exited: a signal from outside "
                "gridrun); see %s\n",
                s->name, s->log);
    else
        gr_relay_died(s, "while ranks ran");
}

/* Before teardown stops the relays: a relay that stopped on its own (a
 * drained SIGTERM ends its sessions before it exits) while its ranks were
 * failing, found only now that teardown reaped it, or one still draining
 * is the cause, named first; so is a service that lost the job.  Whether
 * one was (printed). */
static bool report_relay_stopped(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    if (job->services)
        return gr_service_report_lost(job) > 0;
    /* One whose drain ended a moment ago may not be reaped yet, and no
     * longer answers: it gets a second to be. */
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        char *body = s->relay_running ? gr_relay_status(job, s) : NULL;
        for (int tries = 0; s->relay_running && body == NULL && tries < 20;
             tries++) {
            struct timespec pause = {.tv_nsec = 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
            gr_reap(r);
        }
        free(body);
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        if (s->relay_pid <= 0 || s->relay_running)
            continue;
        report_relay_ended(s);
        return true;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        char *body = s->relay_running ? gr_relay_status(job, s) : NULL;
        const char *draining =
            body != NULL ? gr_json_value(body, "draining") : NULL;
        bool is_draining =
            draining != NULL && strncmp(draining, "true", 4) == 0;
        free(body);
        if (is_draining) {
            fprintf(stderr,
                    "gridrun: relay of site %s was stopped while ranks ran "
                    "(it is draining: a signal from outside gridrun); see "
                    "%s\n",
                    s->name, s->log);
            return true;
        }
    }
    return false;
}

int gr_final_status(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    /* Ranks that could not be started never joined and failed their
     * mpiexec: what explains both is the exec failure. */
    if (r->reason == GR_END_MPI_FAILED || r->reason == GR_END_NOT_JOINED) {
        int st = report_exec_failure(job);
        if (st != 0)
            return st;
    }
    char what[64];
    switch (r->reason) {
    case GR_END_SUCCESS: return 0;
    case GR_END_BAD_RELAY_SET: return 2;
    case GR_END_MPI_FAILED: {
        bool relay_stopped = report_relay_stopped(r);
        int st = report_mpi_failure(job, r->failed_site);
        return relay_stopped ? 1 : st;
    }
    case GR_END_NOT_JOINED: report_not_joined(job); return EXIT_NOT_JOINED;
    case GR_END_RELAY_DIED:
        /* Its drain can end before the ranks notice (they may be slow to
         * run, as under a sanitizer on a loaded machine). */
        report_relay_ended(r->failed_site);
        return 1;
    case GR_END_WAN_DIED:
        gr_describe_status(job->wan_status, what, sizeof(what));
        fprintf(stderr, "gridrun: gridwan died while ranks ran (%s); see %s\n",
                what, job->wan_log);
        return 1;
    case GR_END_SIGNAL:
        fprintf(stderr, "gridrun: interrupted\n");
        return 128 + r->signal;
    case GR_END_TIMEOUT:
        fprintf(stderr, "gridrun: timeout after %u s\n", job->timeout_s);
        return 124;
    case GR_END_NONE:
    case GR_END_ERROR: break;
    }
    return 1;
}

void gr_report_shutdown(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    char what[64];
    if (r->reason != GR_END_SUCCESS)
        return;
    if (job->wan_pid > 0 && !exited_0(job->wan_status)) {
        gr_describe_status(job->wan_status, what, sizeof(what));
        fprintf(stderr, "gridrun: warning: gridwan %s on shutdown; see %s\n",
                what, job->wan_log);
        job->keep_job_dir = true;
    }
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        /* Through --rsh, the SIGTERM ends the rsh command itself (ssh, or
         * the shell running the relay): that is a normal stop. */
        bool stopped_rsh = job->rsh_argv != NULL &&
                           WIFSIGNALED(s->relay_status) &&
                           WTERMSIG(s->relay_status) == SIGTERM;
        if (s->relay_pid > 0 && !stopped_rsh && !exited_0(s->relay_status)) {
            gr_describe_status(s->relay_status, what, sizeof(what));
            fprintf(stderr,
                    "gridrun: warning: relay of site %s %s on shutdown; see "
                    "%s\n",
                    s->name, what, s->log);
            job->keep_job_dir = true;
        }
    }
}
