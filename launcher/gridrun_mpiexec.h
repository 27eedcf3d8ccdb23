/*
 * The command line of each site's mpiexec (docs/gridrun.md, mpiexec):
 * hydra's options, the environment contract of the site's ranks
 * (ENVIRONMENT CONTRACT) and the site's piece of every application
 * (gridrun_apps.h), or with --native the one mpiexec of the baseline.
 */
#ifndef GRIDRUN_MPIEXEC_H
#define GRIDRUN_MPIEXEC_H

#include <limits.h>

#include "gridrun_job.h"

struct gr_mpiexec_cmd {
    char **argv;   /* NULL-terminated; points into the job and below */
    char *numbers; /* the applications' -n and GRIDCOLL_APPNUM texts */
    /* The job's values, the same for every site. */
    char sites_env[GR_MAX_SITES * (MF_NAME_MAX + 24)];
    char job_id[16], world[16];
    char native_hosts[GR_MAX_SITES * (WAN_NS_NAME_MAX + 12)];
    /* The site's. */
    char count[16], index[16], offset[16], relay[PATH_MAX + 8];
};

/* Room for the longest command line and the job's values.  0, or -1 when
 * out of memory. */
int gr_mpiexec_cmd_init(struct gr_mpiexec_cmd *c, const struct gr_job *job);

/* Site i's mpiexec command line (with --native: the baseline's, i = 0),
 * valid until the next call. */
char **gr_mpiexec_cmd_site(struct gr_mpiexec_cmd *c, const struct gr_job *job,
                           uint32_t i);

void gr_mpiexec_cmd_free(struct gr_mpiexec_cmd *c);

#endif
