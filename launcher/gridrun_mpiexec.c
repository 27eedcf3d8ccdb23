/*
 * The command line of each site's mpiexec (gridrun_mpiexec.h).
 *
 * The environment contract goes to every rank with -genv, the global
 * options before the first segment; each application's number with -env,
 * local to its segment, so that the segments of one site's mpiexec get
 * different ones.
 */
#include "gridrun_mpiexec.h"

#include <stdio.h>
#include <stdlib.h>

/* --native: System V and POSIX shared memory inside a site (each site's
 * IPC namespace keeps them there), TCP between sites.  Not "sm": its cma
 * transport reaches every process of the PID namespace, other sites too. */
#define NATIVE_UCX_TLS "self,sysv,posix,tcp"

/* Words besides the applications': namespace prefix, mpiexec and its
 * options, -genv for every variable of the contract. */
#define FIXED_WORDS 64

int gr_mpiexec_cmd_init(struct gr_mpiexec_cmd *c, const struct gr_job *job)
{
    c->argv =
        calloc(gr_apps_max_words(&job->apps) + FIXED_WORDS, sizeof *c->argv);
    c->numbers = calloc(job->apps.count, 32);
    if (c->argv == NULL || c->numbers == NULL) {
        gr_mpiexec_cmd_free(c);
        return -1;
    }
    size_t off = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        off += (size_t)snprintf(c->sites_env + off, sizeof c->sites_env - off,
                                "%s%s:%u:%u", i ? "," : "", s->name, s->offset,
                                s->count);
    }
    snprintf(c->job_id, sizeof c->job_id, "%u", job->job_id);
    snprintf(c->world, sizeof c->world, "%u", job->world_size);
    /* --native: every site's namespace is one "host" of hydra, which
     * fills them in order, so MPICH ranks are grid ranks. */
    off = 0;
    for (uint32_t i = 0; i < job->site_count && job->native; i++)
        off += (size_t)snprintf(
            c->native_hosts + off, sizeof c->native_hosts - off, "%s%s:%u",
            i ? "," : "", job->sites[i].netns, job->sites[i].count);
    return 0;
}

char **gr_mpiexec_cmd_site(struct gr_mpiexec_cmd *c, const struct gr_job *job,
                           uint32_t i)
{
    const struct gr_site *s = &job->sites[i];
    char **argv = c->argv;
    snprintf(c->count, sizeof c->count, "%u", s->count);
    snprintf(c->index, sizeof c->index, "%u", i);
    snprintf(c->offset, sizeof c->offset, "%u", s->offset);
    gr_rank_endpoint(s, c->relay, sizeof c->relay);
    const char *env[][2] = {
        {"GRIDCOLL_JOB_ID", c->job_id},
        {"GRIDCOLL_TOKEN_FILE", job->token_file},
        {"GRIDCOLL_RELAY", c->relay},
        {"GRIDCOLL_SITE_INDEX", c->index},
        {"GRIDCOLL_SITE_NAME", s->name},
        {"GRIDCOLL_SITE_OFFSET", c->offset},
        {"GRIDCOLL_SITE_SIZE", c->count},
        {"GRIDCOLL_WORLD_SIZE", c->world},
        {"GRIDCOLL_SITES", c->sites_env},
        {"GRIDCOLL_FATTREE", s->fattree},
        {"GRIDCOLL_MODEL", job->model},
        {"LD_PRELOAD", job->preload_lib},
    };
    size_t a = gr_netns_prefix(s, argv);
    argv[a++] = (char *)job->mpiexec;
    argv[a++] = "-print-all-exitcodes";
    if (job->prefix)
        argv[a++] = "-l";
    if (s->mpi_hosts != NULL) {
        argv[a++] = "-hosts";
        argv[a++] = s->mpi_hosts;
    }
    if (job->rsh_exec[0] != '\0') {
        argv[a++] = "-launcher";
        argv[a++] = "ssh";
        argv[a++] = "-launcher-exec";
        argv[a++] = (char *)job->rsh_exec;
    }
    if (job->native) {
        /* mpiexec runs in the first site's namespace: the proxies of the
         * others reach it, and the ranks each other, over gridwan's
         * device. */
        const char *native_env[][2] = {
            {"UCX_TLS", NATIVE_UCX_TLS},
            {"UCX_NET_DEVICES", job->wan_dev},
            {"LD_PRELOAD", job->preload_lib},
        };
        argv[a++] = "-iface";
        argv[a++] = (char *)job->wan_dev;
        argv[a++] = "-hosts";
        argv[a++] = c->native_hosts;
        for (size_t k = 0; k < sizeof native_env / sizeof native_env[0]; k++) {
            argv[a++] = "-genv";
            argv[a++] = (char *)native_env[k][0];
            argv[a++] = (char *)native_env[k][1];
        }
        /* One mpiexec for the whole grid numbers the applications itself,
         * as plain MPICH does. */
        a += gr_apps_site_words(&job->apps, 0, job->world_size, false,
                                c->numbers, argv + a);
        argv[a] = NULL;
        return argv;
    }
    for (size_t k = 0; k < sizeof env / sizeof env[0]; k++) {
        /* Not set by us (no fat tree, no --preload): what gridrun's
         * environment has reaches the ranks through hydra. */
        if (env[k][1][0] == '\0')
            continue;
        argv[a++] = "-genv";
        argv[a++] = (char *)env[k][0];
        argv[a++] = (char *)env[k][1];
    }
    a += gr_apps_site_words(&job->apps, s->offset, s->count, true, c->numbers,
                            argv + a);
    argv[a] = NULL;
    return argv;
}

void gr_mpiexec_cmd_free(struct gr_mpiexec_cmd *c)
{
    free(c->argv);
    free(c->numbers);
    c->argv = NULL;
    c->numbers = NULL;
}
