/*
 * gridrun's job: the sites, their relays and mpiexecs, and the loop that
 * runs, watches and tears them down.  gridrun.c fills in the options.
 */
#ifndef GRIDRUN_JOB_H
#define GRIDRUN_JOB_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define GR_MAX_SITES 16

extern const char *const gr_site_names[GR_MAX_SITES];

struct gr_site {
    const char *name;
    uint32_t offset; /* first grid rank */
    uint32_t count;  /* ranks at this site */

    int wan_port;
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
    char exit_string[256]; /* hydra's "EXIT STRING", if it printed one */
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
    bool verbose;
    char **prog_argv;
    int prog_argc;
    char relay_bin[PATH_MAX];
    char mpiexec[PATH_MAX];
    char preload_lib[PATH_MAX];

    /* State. */
    char dir[PATH_MAX];
    char token_file[PATH_MAX];
    uint32_t job_id;
};

/* Run the whole job; returns gridrun's exit status. */
int gr_job_run(struct gr_job *job);

#endif
