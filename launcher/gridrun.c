/*
 * gridrun: start one GridColl job over several sites (docs/gridrun.md).
 *
 * Local mode simulates N sites on this machine: one gridrelay per site on
 * loopback, then one MPICH `mpiexec` per site whose ranks get the
 * environment libgridcoll reads.  gridrun forwards their output line by
 * line, propagates the first failure as its exit status, and on any failure,
 * signal or timeout tears down every process it started.
 *
 * Hydra's proxies and ranks each call setsid(), so they are neither in
 * mpiexec's process group nor in ours.  To still leave no orphans behind,
 * gridrun makes itself a child subreaper: anything its children leave
 * behind is re-parented to gridrun, where a /proc scan finds and kills it.
 */
#include "gridrun_job.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RANKS 16777216u

enum {
    OPT_SITES = 256,
    OPT_SITE_SIZES,
    OPT_TIMEOUT,
    OPT_PREFIX,
    OPT_PRELOAD,
    OPT_KEEP,
    OPT_VERBOSE,
    OPT_HELP,
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridrun --sites N -n NP [OPTIONS] -- PROGRAM [ARGS...]\n"
        "       gridrun --site-sizes A,B,... [OPTIONS] -- PROGRAM [ARGS...]\n"
        "\n"
        "Simulate N GridColl sites on this machine: start one gridrelay per\n"
        "site on loopback, wait until every link is up, then run PROGRAM\n"
        "with one mpiexec per site.\n"
        "\n"
        "options:\n"
        "  --sites N            number of sites, 1..%d; named alpha, beta,\n"
        "                       gamma, delta, epsilon, zeta, eta, theta, "
        "iota,\n"
        "                       kappa, lambda, mu, nu, xi, omicron, pi\n"
        "  -n NP                total number of ranks, spread evenly (the\n"
        "                       first sites get the remainder); every site\n"
        "                       needs at least one\n"
        "  --site-sizes A,B,..  ranks per site; implies --sites and -n (must\n"
        "                       agree with them when they are given)\n"
        "  --timeout S          tear the job down after S seconds (exit 124)\n"
        "  --prefix             prefix output lines with [SITE/GRIDRANK]\n"
        "  --preload            set LD_PRELOAD=<bindir>/../lib/libgridcoll.so\n"
        "                       for the ranks\n"
        "  --keep-job-dir       keep the job directory (configs, token, relay\n"
        "                       logs); it is always kept when the job fails\n"
        "  --verbose            report each step on standard error\n"
        "  --help               print this help\n"
        "\n"
        "environment of every rank (besides MPICH's PMI_RANK, PMI_SIZE):\n"
        "  GRIDCOLL_JOB_ID      job id (decimal)\n"
        "  GRIDCOLL_TOKEN_FILE  file holding the job token\n"
        "  GRIDCOLL_RELAY       the site relay's rank endpoint, unix:/path\n"
        "  GRIDCOLL_SITE_INDEX  0-based index of the rank's site\n"
        "  GRIDCOLL_SITE_NAME   name of the rank's site\n"
        "  GRIDCOLL_SITE_OFFSET first grid rank of the site\n"
        "  GRIDCOLL_SITE_SIZE   ranks at the site\n"
        "  GRIDCOLL_WORLD_SIZE  ranks in the whole grid\n"
        "  GRIDCOLL_SITES       name:offset:count,... for every site\n"
        "  grid rank = GRIDCOLL_SITE_OFFSET + PMI_RANK\n"
        "\n"
        "gridrun's own environment:\n"
        "  GRIDCOLL_RELAY_BIN   gridrelay to run (default: next to gridrun)\n"
        "  GRIDCOLL_MPIEXEC     mpiexec to run (default: mpiexec from PATH)\n"
        "  TMPDIR               where the job directory is made (default "
        "/tmp)\n"
        "\n"
        "exit status:\n"
        "  0        every mpiexec exited with 0\n"
        "  N        a site's mpiexec exited with N (the first failure)\n"
        "  128+S    a site's mpiexec was killed by signal S\n"
        "  1        a relay failed to start or died, or another error\n"
        "  2        usage error\n"
        "  124      --timeout expired\n"
        "  130/143  gridrun was interrupted by SIGINT/SIGTERM\n",
        GR_MAX_SITES);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
                                                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gridrun: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'gridrun --help' for more information.\n");
    va_end(ap);
    return 2;
}

/* Parse a decimal number in [min, max]; the whole string must be used. */
static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_site_sizes(const char *list, struct gr_job *job)
{
    char buf[1024];
    if (strlen(list) >= sizeof(buf))
        return usage_error("--site-sizes: list too long: %s", list);
    strcpy(buf, list);
    uint32_t n = 0;
    uint64_t sum = 0;
    char *save = NULL;
    /* strtok_r would silently merge empty fields ("1,,3"), so split by
     * hand. */
    for (char *p = buf;; p = save + 1) {
        save = strchr(p, ',');
        if (save != NULL)
            *save = '\0';
        if (n == GR_MAX_SITES)
            return usage_error("--site-sizes: more than 16 sites: %s", list);
        if (parse_u32(p, 1, MAX_RANKS, &job->sites[n].count) != 0)
            return usage_error("--site-sizes: every entry must be a "
                               "positive number of ranks: %s",
                               list);
        sum += job->sites[n].count;
        n++;
        if (save == NULL)
            break;
    }
    if (sum > MAX_RANKS)
        return usage_error("--site-sizes: more than 16777216 ranks: %s", list);
    job->site_count = n;
    job->world_size = (uint32_t)sum;
    return 0;
}

static int parse_args(int argc, char **argv, struct gr_job *job)
{
    static const struct option longopts[] = {
        {"sites", required_argument, NULL, OPT_SITES},
        {"site-sizes", required_argument, NULL, OPT_SITE_SIZES},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"prefix", no_argument, NULL, OPT_PREFIX},
        {"preload", no_argument, NULL, OPT_PRELOAD},
        {"keep-job-dir", no_argument, NULL, OPT_KEEP},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    uint32_t sites = 0, np = 0;
    const char *sizes = NULL;
    int c;

    opterr = 0;
    /* "+": stop at the first non-option, so PROGRAM's own options are never
     * taken for ours. */
    while ((c = getopt_long(argc, argv, "+n:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SITES:
            if (parse_u32(optarg, 1, GR_MAX_SITES, &sites) != 0)
                return usage_error("--sites must be 1..16, not '%s'", optarg);
            break;
        case 'n':
            if (parse_u32(optarg, 1, MAX_RANKS, &np) != 0)
                return usage_error("-n must be 1..16777216, not '%s'", optarg);
            break;
        case OPT_SITE_SIZES: sizes = optarg; break;
        case OPT_TIMEOUT:
            if (parse_u32(optarg, 1, 100000000, &job->timeout_s) != 0)
                return usage_error("--timeout must be a positive number of "
                                   "seconds, not '%s'",
                                   optarg);
            break;
        case OPT_PREFIX: job->prefix = true; break;
        case OPT_PRELOAD: job->preload = true; break;
        case OPT_KEEP: job->keep_job_dir = true; break;
        case OPT_VERBOSE: job->verbose = true; break;
        case OPT_HELP:
        case 'h': usage(stdout); return 0;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind == argc || strcmp(argv[optind - 1], "--") != 0) {
        if (optind < argc)
            return usage_error("put '--' before the program: %s", argv[optind]);
        return usage_error("%s", "no program given (after '--')");
    }
    job->prog_argv = argv + optind;
    job->prog_argc = argc - optind;

    if (sizes != NULL) {
        int rc = parse_site_sizes(sizes, job);
        if (rc != 0)
            return rc;
        if (sites != 0 && sites != job->site_count)
            return usage_error("--site-sizes lists a different number of "
                               "sites than --sites: %s",
                               sizes);
        if (np != 0 && np != job->world_size)
            return usage_error("--site-sizes does not sum to -n: %s", sizes);
    } else {
        if (sites == 0)
            return usage_error("%s", "--sites N (or --site-sizes) is required");
        if (np == 0)
            return usage_error("%s", "-n NP is required");
        if (np < sites)
            return usage_error("%s", "-n is smaller than --sites: every site "
                                     "needs at least one rank");
        job->site_count = sites;
        job->world_size = np;
        for (uint32_t i = 0; i < sites; i++)
            job->sites[i].count = np / sites + (i < np % sites ? 1 : 0);
    }
    uint32_t offset = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        job->sites[i].name = gr_site_names[i];
        job->sites[i].offset = offset;
        offset += job->sites[i].count;
    }
    return -1; /* parsed: go on */
}

/* Directory of our own executable, so a build or install tree works from
 * wherever it is called. */
static int self_dir(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return -1;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

/* execvp would only fail after the relays are up; look mpiexec up first so
 * a missing MPI is a clear error. */
static int find_in_path(const char *name)
{
    if (strchr(name, '/') != NULL)
        return access(name, X_OK);
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    while (*path != '\0') {
        const char *colon = strchr(path, ':');
        size_t dl = colon ? (size_t)(colon - path) : strlen(path);
        char full[PATH_MAX];
        if (snprintf(full, sizeof(full), "%.*s/%s", (int)dl, path, name) <
                (int)sizeof(full) &&
            access(full, X_OK) == 0)
            return 0;
        path += dl;
        if (*path == ':')
            path++;
    }
    return -1;
}

static int resolve_programs(struct gr_job *job)
{
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof(dir)) != 0) {
        fprintf(stderr, "gridrun: cannot find own executable in "
                        "/proc/self/exe\n");
        return -1;
    }
    const char *relay = getenv("GRIDCOLL_RELAY_BIN");
    if (relay != NULL && *relay != '\0')
        snprintf(job->relay_bin, sizeof(job->relay_bin), "%s", relay);
    else if (snprintf(job->relay_bin, sizeof(job->relay_bin), "%s/gridrelay",
                      dir) >= (int)sizeof(job->relay_bin))
        return -1;
    if (access(job->relay_bin, X_OK) != 0) {
        fprintf(stderr,
                "gridrun: relay binary %s is not executable (%s); set "
                "GRIDCOLL_RELAY_BIN\n",
                job->relay_bin, strerror(errno));
        return -1;
    }
    const char *mpiexec = getenv("GRIDCOLL_MPIEXEC");
    snprintf(job->mpiexec, sizeof(job->mpiexec), "%s",
             mpiexec != NULL && *mpiexec != '\0' ? mpiexec : "mpiexec");
    if (find_in_path(job->mpiexec) != 0) {
        fprintf(stderr,
                "gridrun: %s not found or not executable; install MPICH or "
                "set GRIDCOLL_MPIEXEC\n",
                job->mpiexec);
        return -1;
    }
    if (job->preload) {
        char lib[PATH_MAX + 32];
        snprintf(lib, sizeof(lib), "%s/../lib/libgridcoll.so", dir);
        if (realpath(lib, job->preload_lib) == NULL) {
            fprintf(stderr, "gridrun: --preload: %s: %s\n", lib,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct gr_job job;
    int status = 1;

    int rc = parse_args(argc, argv, &job);
    if (rc >= 0)
        return rc;
    if (resolve_programs(&job) != 0)
        goto cleanup;
    status = gr_job_run(&job);

cleanup:
    return status;
}
