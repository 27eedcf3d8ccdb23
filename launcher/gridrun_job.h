/*
 * gridrun's job: the sites, their relays and mpiexecs, and the loop that
 * runs, watches and tears them down.  gridrun.c fills in the options.
 */
#ifndef GRIDRUN_JOB_H
#define GRIDRUN_JOB_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gridrun_apps.h"
#include "machinefile.h"
#include "wan_options.h"

#define GR_MAX_SITES 16

extern const char *const gr_site_names[GR_MAX_SITES];

struct gr_site {
    const char *name;
    uint32_t offset; /* first grid rank */
    uint32_t count;  /* ranks at this site */

    /* Filled by gridrun.c from the machine file; local mode leaves them
     * empty and the job fills in its loopback defaults. */
    char wan[MF_ENDPOINT_MAX + 1];    /* host:port peers dial; "" = a free
                                         loopback port */
    enum mf_connect connect;          /* who opens this site's WAN links */
    char local[MF_ENDPOINT_MAX + 1];  /* rank endpoint: unix:/path, /path or
                                         host:port; "" = SITE.sock in the
                                         job directory */
    char relay_host[MF_HOST_MAX + 1]; /* "" = run the relay here */
    /* service=: the control endpoint of the site's running gridrelay
     * service ("" = gridrun starts a relay); gridrun_service.c. */
    char service[MF_ENDPOINT_MAX + 1];
    bool service_registered;
    int64_t service_renew_ms;        /* next lease renewal (monotonic ms) */
    char http_host[MF_HOST_MAX + 1]; /* "" = 127.0.0.1 */
    char *mpi_hosts;                 /* mpiexec -hosts value; NULL = none */
    /* GRIDCOLL_FATTREE for the ranks, M1,...,ML; "" = not set by gridrun,
     * so whatever gridrun's own environment has reaches them. */
    char fattree[GC_SCHED_FATTREE_TEXT_MAX];
    /* --wan: the network namespace the site's relay and ranks run in, and
     * a descriptor of it once gridwan made it (-1 before and without). */
    char netns[WAN_NS_NAME_MAX];
    int netns_fd;

    int http_port;
    char conf[PATH_MAX];
    char sock[PATH_MAX];
    char log[PATH_MAX];

    pid_t relay_pid; /* 0 = not started */
    bool relay_running;
    bool relay_up; /* every link up with all streams */
    int relay_status;

    pid_t mpi_pid;
    bool mpi_running;
    int mpi_status;
    /* From hydra's per-rank wait statuses (-print-all-exitcodes): the
     * rank that best explains a failed mpiexec.  Its index counts this
     * mpiexec's ranks (grid ranks under --native); -1 = not known. */
    int64_t culprit_rank;
    int culprit_status;
    uint32_t statuses_seen;
    /* The join check, made when the mpiexec ended on its own: how many of
     * the site's ranks ever joined the grid (had a session with the
     * relay), -1 = not checked; which never did, as the relay's grid rank
     * ranges ("2-3,5", malloc'd; NULL = not checked). */
    bool join_checked;
    bool join_failed; /* the job failed for it: reported as never joined */
    int64_t ranks_joined;
    char *never_joined;
    /* Hydra could not start the program on one of the site's hosts: its
     * proxy's "execvp error on file PROGRAM (REASON)", the first of the
     * site.  exec_prog[0] == '\0': none seen. */
    char exec_prog[PATH_MAX];
    char exec_host[MF_HOST_MAX + 1];
    char exec_reason[128];
};

struct gr_job {
    /* Options. */
    uint32_t site_count;
    uint32_t world_size;
    struct gr_site sites[GR_MAX_SITES];
    uint32_t timeout_s; /* 0 = none */
    bool prefix;
    bool preload;
    bool keep_job_dir;
    /* --keep-failed: the failed jobs' directories kept in the job
     * directory's parent (this one included); older ones are removed. */
    uint32_t keep_failed;
    bool verbose;
    /* --no-join-check: do not require every rank to join the grid (for
     * commands that are not MPI programs). */
    bool no_join_check;
    /* The programs and the grid ranks each runs (MPMD; one application
     * for a plain job). */
    struct gr_apps apps;
    char relay_bin[PATH_MAX];
    char mpiexec[PATH_MAX];
    /* LD_PRELOAD of the ranks: libgridcoll.so (--preload) or
     * libgridrun-native.so (--native); "" = none. */
    char preload_lib[PATH_MAX];
    const char *job_dir_base; /* --job-dir; NULL = $TMPDIR or /tmp */
    char **rsh_argv;          /* --rsh split into words; NULL = none */
    char tls_dir[PATH_MAX];   /* --tls-dir, absolute; "" = plaintext WAN */
    /* Every site names a running service (machine file service=); the
     * client certificate, key and CA gridrun talks to them with. */
    bool services;
    char service_cert[PATH_MAX];
    char service_key[PATH_MAX];
    char service_ca[PATH_MAX];
    /* --wan: gridwan's command line, argv[0] to be replaced by wan_bin;
     * NULL = every site on loopback in gridrun's own namespace. */
    char **wan_argv;
    char wan_bin[PATH_MAX];
    /* --native: one plain MPICH job across the namespace sites, no relays
     * and no GridColl environment (the baseline). */
    bool native;
    /* --model, absolute: GRIDCOLL_MODEL of every rank; "" = none. */
    char model[PATH_MAX];
    /* --relay-set GROUP.NAME=VALUE items (local mode), in the order given:
     * for a key given twice the last value counts. */
    char **relay_set;
    int relay_set_count;

    /* State. */
    char dir_base[PATH_MAX]; /* where dir was made */
    char dir[PATH_MAX];
    /* gridrun.lock in dir, held (flock) while the job runs, so another
     * gridrun's clean-up never removes it; -1 = none. */
    int dir_lock_fd;
    char token_file[PATH_MAX];
    char rsh_exec[PATH_MAX]; /* hydra's -launcher-exec (--rsh, --native);
                                "" = its default launcher */
    uint32_t job_id;
    char wan_log[PATH_MAX];
    char wan_dev[IF_NAMESIZE]; /* gridwan's device in every namespace */
    pid_t wan_pid;             /* 0 = not started */
    bool wan_running;
    int wan_status;
    int home_netns; /* gridrun's own network namespace (--wan), else -1 */
};

/* Whether site s opens the WAN link to `peer` (else peer dials s):
 * connect=dial/listen of s decides, else that of the peer, else the site
 * whose name sorts first (strcmp) dials. */
bool gr_site_dials(const struct gr_site *s, const struct gr_site *peer);

/* GRIDCOLL_RELAY of a site's ranks: unix:/path or host:port. */
void gr_rank_endpoint(const struct gr_site *s, char *out, size_t len);

/* With --wan, the words that run a command inside site s's namespace,
 * put at argv; returns how many (0 without --wan). */
size_t gr_netns_prefix(const struct gr_site *s, char **argv);

/* Run the whole job; returns gridrun's exit status. */
int gr_job_run(struct gr_job *job);

#endif
