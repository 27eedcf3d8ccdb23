/*
 * One running job, inside gr_job_run: the state its pieces share and what
 * each piece offers the others.  Only the job's own files include this;
 * gridrun.c sees gridrun_job.h alone.
 *
 *   gridrun_job.c        gr_job_run, the poll() loop and the watch
 *   gridrun_jobfiles.c   the job directory's files, made and finished
 *   gridrun_relayconf.c  ports, endpoints and each relay's SITE.conf
 *   gridrun_proc.c       starting and reaping relays and mpiexecs
 *   gridrun_output.c     the mpiexecs' output, line by line
 *   gridrun_relays.c     the relays over HTTP: links up, ranks joined
 *   gridrun_wan.c        gridwan and the sites' namespaces (--wan)
 *   gridrun_teardown.c   stopping what is left, in order
 *   gridrun_report.c     the job's exit status and what explains it
 */
#ifndef GRIDRUN_RUN_H
#define GRIDRUN_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gridrun_job.h"

#define GR_LINE_BYTES 65536

/* One output pipe of one mpiexec. */
struct gr_outsrc {
    int fd; /* -1 once at EOF */
    struct gr_site *site;
    bool is_err;
    bool in_exit_codes; /* inside hydra's "Exit codes:" lines */
    size_t len;
    char buf[GR_LINE_BYTES];
};

/* Why the job ends; the first reason recorded wins. */
enum gr_end_reason {
    GR_END_NONE = 0,
    GR_END_SUCCESS,
    GR_END_MPI_FAILED,
    GR_END_RELAY_DIED,
    GR_END_WAN_DIED,
    GR_END_SIGNAL,
    GR_END_TIMEOUT,
    GR_END_ERROR,
    GR_END_BAD_RELAY_SET, /* the relay's --check rejected --relay-set */
    GR_END_NOT_JOINED,    /* a site's ranks ran without joining the grid */
};

struct gr_runner {
    struct gr_job *job;
    struct gr_outsrc *out; /* 2 per site */
    int nout;
    enum gr_end_reason reason;
    struct gr_site *failed_site;
    int signal;          /* SIGINT/SIGTERM/SIGHUP that interrupted us */
    int signals;         /* how many arrived: a second one hurries teardown */
    int64_t deadline_ms; /* --timeout, 0 = none */
};

/* ---- gridrun_job.c --------------------------------------------------------
 */

/* Monotonic milliseconds. */
int64_t gr_now_ms(void);

/* With --verbose: "gridrun: MESSAGE" on stderr. */
__attribute__((format(printf, 2, 3))) void gr_vlog(const struct gr_job *job,
                                                   const char *fmt, ...);

/* Wait up to timeout_ms for output or a signal and handle what came,
 * reaping children and noting the --timeout; every wait of the job goes
 * through here, so output keeps flowing while gridrun waits. */
void gr_pump(struct gr_runner *r, int timeout_ms);

/* ---- gridrun_jobfiles.c ---------------------------------------------------
 */

/* n bytes from the kernel's random pool; 0, or -1 with errno. */
int gr_random_bytes(void *buf, size_t n);

/* Make the job directory and everything in it that the job needs before
 * anything starts; 0, or -1 with a message printed. */
int gr_jobfiles_make(struct gr_job *job);

/* After the job (exit status `status`): remove or keep its directory. */
void gr_jobfiles_finish(struct gr_job *job, int status);

/* ---- gridrun_relayconf.c --------------------------------------------------
 */

/* Free loopback ports for the sites' HTTP and local-mode WAN endpoints. */
int gr_relayconf_ports(struct gr_job *job);

/* Write site s's relay configuration to s->conf; 0, or -1 with errno. */
int gr_relayconf_write(const struct gr_job *job, const struct gr_site *s);

/* gridrelay --check of the --relay-set keys; 0 = valid. */
int gr_relayconf_check(const struct gr_job *job);

/* The relay's http.listen, which gridrun polls: HOST:PORT. */
void gr_relayconf_http(const struct gr_site *s, char *out, size_t len);

/* ---- gridrun_proc.c -------------------------------------------------------
 */

/* Fork and exec argv in a process group of its own with the given
 * standard descriptors; the pid, or -1 with errno. */
pid_t gr_spawn(char **argv, int in_fd, int out_fd, int err_fd);

/* gr_spawn with stdin from /dev/null and stdout and stderr appended to
 * the file `log`; the pid, or -1 with a message printed. */
pid_t gr_spawn_logged(char **argv, const char *log);

/* Reap every child that ended (orphans too) and record its status. */
void gr_reap(struct gr_runner *r);

/* "exited with status N" or "killed by signal SIGX". */
void gr_describe_status(int st, char *buf, size_t len);

int gr_relays_start(struct gr_job *job);

/* One mpiexec per site (one with --native), its output into r->out. */
int gr_mpiexecs_start(struct gr_runner *r);

/* ---- gridrun_output.c -----------------------------------------------------
 */

/* Write it all, unless the reader is gone. */
void gr_write_all(int fd, const char *p, size_t n);

/* Read what o has and forward its complete lines. */
void gr_output_read(struct gr_runner *r, struct gr_outsrc *o);

/* Whether some pipe is still open. */
bool gr_output_open(const struct gr_runner *r);

/* Close every pipe, forwarding what is left in its buffer. */
void gr_output_close(struct gr_runner *r);

/* The site of grid rank `rank`; the last one for a rank out of range. */
const struct gr_site *gr_site_of_rank(const struct gr_job *job, uint64_t rank);

/* ---- gridrun_relays.c -----------------------------------------------------
 */

/* GET /status from site s's relay: the body (malloc'd), or NULL. */
char *gr_relay_status(const struct gr_job *job, const struct gr_site *s);

/* "gridrun: relay of site S died WHEN (STATUS); see LOG". */
void gr_relay_died(const struct gr_site *s, const char *when);

int gr_relays_wait_up(struct gr_runner *r);
int gr_services_wait_ready(struct gr_runner *r);

/* The join check of site s, once its mpiexec ended (see the file). */
void gr_check_joined(struct gr_runner *r, struct gr_site *s);

/* ---- gridrun_wan.c --------------------------------------------------------
 */

int gr_wan_start(struct gr_job *job);
int gr_wan_wait_ready(struct gr_runner *r);
void gr_wan_stop(struct gr_runner *r);

/* A TCP socket of `family` in site s's namespace (--wan), else in ours;
 * -1 with errno. */
int gr_site_socket(const struct gr_job *job, const struct gr_site *s,
                   int family);

/* ---- gridrun_teardown.c ---------------------------------------------------
 */

/* End the ranks (and whatever they left) and collect their output. */
void gr_stop_ranks(struct gr_runner *r);

/* Stop the relays, letting them drain. */
void gr_stop_relays(struct gr_runner *r);

/* ---- gridrun_report.c -----------------------------------------------------
 */

/* The job's exit status, with what explains a failure on stderr; judged
 * after the ranks stopped and before the relays and gridwan are. */
int gr_final_status(struct gr_runner *r);

/* After teardown: warn of a relay or gridwan that failed on shutdown,
 * keeping the job directory for it. */
void gr_report_shutdown(struct gr_runner *r);

#endif
