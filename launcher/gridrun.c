/*
 * gridrun: start one GridColl job over several sites (docs/gridrun.md).
 *
 * Local mode simulates N sites on this machine: one gridrelay per site on
 * loopback, then one MPICH `mpiexec` per site whose ranks get the
 * environment libgridcoll reads.  With --wan every site's relay and ranks
 * run in a network namespace of their own, joined by gridwan, an emulated
 * WAN; --native then runs the baseline instead, one plain MPICH job across
 * those namespaces.  gridrun forwards their output line by
 * line, propagates the first failure as its exit status, and on any failure,
 * signal or timeout tears down every process it started.
 *
 * Hydra's proxies and ranks each call setsid(), so they are neither in
 * mpiexec's process group nor in ours.  To still leave no orphans behind,
 * gridrun makes itself a child subreaper: anything its children leave
 * behind is re-parented to gridrun, where a /proc scan finds and kills it.
 */
#include "core/gc_model.h"
#include "default_model.h"
#include "gridrun_env.h"
#include "gridrun_job.h"
#include "netns.h"

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
    OPT_RSH,
    OPT_TLS_DIR,
    OPT_PLAINTEXT_WAN,
    OPT_JOB_DIR,
    OPT_FATTREE,
    OPT_WAN,
    OPT_NATIVE,
    OPT_MODEL,
    OPT_NO_MODEL,
    OPT_PROBE,
    OPT_RELAY_SET,
    OPT_NO_JOIN_CHECK,
    OPT_SERVICE_CERT,
    OPT_SERVICE_KEY,
    OPT_SERVICE_CA,
    OPT_KEEP_FAILED,
    OPT_ENV,
    OPT_MARKDOWN,
};

#define MAX_RSH_WORDS  64
#define MAX_RELAY_SETS 64

/* The relays' WAN port with --wan: every site has a namespace of its own
 * that nothing else uses, so any fixed port is free there. */
#define NS_WAN_PORT 7100

/* --wan KEY=VALUE items and the gridwan options they become. */
static const struct {
    const char *key;
    const char *option;
} wan_keys[] = {
    {"delay", "--delay"}, {"jitter", "--jitter"}, {"rate", "--rate"},
    {"loss", "--loss"},   {"queue", "--queue"},   {"queue-ms", "--queue-ms"},
    {"mtu", "--mtu"},     {"seed", "--seed"},     {"rt", "--rt-priority"},
};
#define WAN_KEYS (sizeof wan_keys / sizeof wan_keys[0])

/* --wan, before it becomes gridwan's command line. */
struct wan_opts {
    const char *spec; /* NULL = no emulated WAN */
    char *buf;        /* spec, cut into keys and values */
    char ns_list[GR_MAX_SITES * WAN_NS_NAME_MAX];
    char *argv[3 + 2 * WAN_KEYS + 1];
    /* The items in wan_keys order, whatever order they were given in:
     * part of the layout a default model belongs to. */
    char canonical[1024];
};

/* The default model (default_model.h): --probe writes it, other jobs use
 * it unless --model, GRIDCOLL_MODEL or --no-model says otherwise. */
struct model_opts {
    bool probe;
    bool no_model;
    char **probe_args; /* after '--' with --probe: gridcoll-probe's own */
    int probe_argc;
    char *layout;
    char path[PATH_MAX];
};

/* Machine-file mode's options, before they become the job. */
struct mf_opts {
    const char *path; /* -f; NULL = local mode */
    const char *rsh;
    const char *tls_dir;
    bool plaintext_wan;
    /* --service-cert/-key/-ca (else GRIDCOLL_SERVICE_CERT/_KEY/_CA). */
    const char *service_cert, *service_key, *service_ca;
    uint32_t np;
    struct machinefile mf;
    bool mf_loaded;
    char *rsh_buf;
    char *rsh_words[MAX_RSH_WORDS + 1];
    /* The machine file's sites taking part, in job order, and whether one
     * of them has a program= (MPMD from the file). */
    const struct mf_site *used[GR_MAX_SITES];
    bool programs;
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridrun --sites N -n NP [OPTIONS] -- PROGRAM [ARGS...]\n"
        "       gridrun --site-sizes A,B,... [OPTIONS] -- PROGRAM [ARGS...]\n"
        "       gridrun -f MACHINEFILE -n NP [--rsh CMD]\n"
        "               (--tls-dir DIR | --plaintext-wan) [OPTIONS]\n"
        "               -- PROGRAM [ARGS...]\n"
        "       gridrun --probe (LOCAL OR MACHINE-FILE LAYOUT) [OPTIONS]\n"
        "               [-- PROBE-OPTIONS...]\n"
        "       gridrun LAYOUT [OPTIONS] -- [-n N] PROGRAM [ARGS...] : [-n N]\n"
        "               PROGRAM [ARGS...] ...\n"
        "\n"
        "Local mode (--sites, --site-sizes) simulates N GridColl sites on\n"
        "this machine: one gridrelay per site on loopback.  Machine-file\n"
        "mode (-f) takes sites, hosts, slots and relays from MACHINEFILE\n"
        "(docs/machinefile.md).  Either way gridrun starts one gridrelay per\n"
        "site, waits until every link is up, then runs PROGRAM with one\n"
        "mpiexec per site.\n"
        "\n"
        "local mode:\n"
        "  --sites N            number of sites, 1..%d; named alpha, beta,\n"
        "                       gamma, delta, epsilon, zeta, eta, theta, "
        "iota,\n"
        "                       kappa, lambda, mu, nu, xi, omicron, pi\n"
        "  -n NP                total number of ranks, spread evenly (the\n"
        "                       first sites get the remainder); every site\n"
        "                       needs at least one\n"
        "  --site-sizes A,B,..  ranks per site; implies --sites and -n (must\n"
        "                       agree with them when they are given)\n"
        "  --fattree M1,...,ML  every site's network is the fat tree\n"
        "                       FT(L; M1..ML) (GRIDCOLL_FATTREE of the ranks)\n"
        "  --wan KEY=VALUE,...  every site (relay and ranks) in a network\n"
        "                       namespace of its own, the sites joined by\n"
        "                       gridwan, an emulated WAN; keys: delay,\n"
        "                       jitter, rate, loss, queue, queue-ms, mtu,\n"
        "                       seed, rt (gridwan's --rt-priority), e.g.\n"
        "                       delay=20ms,rate=1gbit,loss=0.1%%; needs root\n"
        "  --native             with --wan: run PROGRAM as one plain MPICH\n"
        "                       job across the namespace sites, without\n"
        "                       relays and without GridColl (the baseline)\n"
        "  --tls-dir DIR        WAN TLS between the sites with DIR/ca.crt,\n"
        "                       DIR/SITE.crt, DIR/SITE.key (default:\n"
        "                       plaintext)\n"
        "  --relay-set GROUP.NAME=VALUE  a key of every relay's configuration\n"
        "                       (docs/gridrelay.md), e.g. wan.streams=16,\n"
        "                       tcp.congestion=bbr; repeatable; checked with\n"
        "                       gridrelay --check before the job starts\n"
        "\n"
        "machine-file mode:\n"
        "  -f MACHINEFILE       sites, hosts, slots and relays; NP ranks fill\n"
        "                       the slots site by site in file order; a site\n"
        "                       left with no rank takes no part in the job\n"
        "  --rsh CMD            start relays as 'CMD RELAYHOST gridrelay -c\n"
        "                       CONF' and ranks through hydra's ssh launcher\n"
        "                       with CMD (split on spaces, e.g. \"ssh -tt\");\n"
        "                       default: relays here, hydra's own launcher\n"
        "  --tls-dir DIR        WAN TLS with DIR/ca.crt, DIR/SITE.crt and\n"
        "                       DIR/SITE.key for every site\n"
        "  --plaintext-wan      WAN streams without TLS (trusted networks)\n"
        "  --service-cert FILE, --service-key FILE, --service-ca FILE\n"
        "                       when the machine file names running\n"
        "                       services (service=): the client certificate\n"
        "                       and key gridrun registers the job with, and\n"
        "                       the CA the services' certificates chain to\n"
        "                       (default: $GRIDCOLL_SERVICE_CERT, _KEY, _CA)\n"
        "\n"
        "common options:\n"
        "  --job-dir DIR        make the job directory in DIR (default\n"
        "                       $TMPDIR or /tmp); with -f it must be visible\n"
        "                       at the same path on every host\n"
        "  --timeout S          tear the job down after S seconds (exit 124)\n"
        "  --model FILE         performance model from gridcoll-probe: the\n"
        "                       ranks choose algorithms by predicted cost\n"
        "                       (GRIDCOLL_MODEL=FILE, docs/model.md)\n"
        "  --probe              run gridcoll-probe on the layout instead of a\n"
        "                       program (its options after '--') and make\n"
        "                       its model the layout's default model\n"
        "  --no-model           no model for this job: neither the layout's\n"
        "                       default model nor GRIDCOLL_MODEL\n"
        "  --prefix             prefix output lines with [SITE/GRIDRANK]\n"
        "  --preload            set LD_PRELOAD=<bindir>/../lib/libgridcoll.so\n"
        "                       for the ranks\n"
        "  --keep-job-dir       keep the job directory (configs, token, relay\n"
        "                       logs) after a successful job too\n"
        "  --keep-failed N      keep the directories of the last N failed\n"
        "                       jobs in the job directory's parent, remove\n"
        "                       older ones (default: $GRIDCOLL_KEEP_FAILED,\n"
        "                       else 5; 0 keeps none)\n"
        "  --verbose            report each step on standard error\n"
        "  --no-join-check      PROGRAM is not an MPI program: do not require\n"
        "                       every rank to join the grid (see below)\n"
        "  --env [--markdown]   list the variables of gridrun's own\n"
        "                       environment (--markdown: as a Markdown table)\n"
        "  --help               print this help\n"
        "\n"
        "Several programs (MPMD): ':' separates segments [-n N] PROGRAM\n"
        "[ARGS...], run on consecutive grid ranks in order, N each (the\n"
        "sum is NP), or without -n one segment per site; in the machine\n"
        "file, program=PATH ARGS... (the rest of the line) per site.  Each\n"
        "segment is an application: MPI_APPNUM 0, 1, ... over every site.\n"
        "\n"
        "With two or more sites every rank must join the grid in MPI_Init\n"
        "(libgridcoll's session with its site's relay).  When a site's\n"
        "mpiexec ends and some of its ranks never joined (Fortran mpi_f08,\n"
        "libgridcoll not linked in, MPI-4 sessions, no MPI_Init), the job\n"
        "ran as separate per-site jobs: gridrun names the ranks, ends the\n"
        "job and exits 125.\n"
        "\n"
        "Without --model and GRIDCOLL_MODEL, a job whose layout has a default\n"
        "model (written by --probe) uses it: $GRIDCOLL_MODEL_DIR, else\n"
        "${XDG_CACHE_HOME:-$HOME/.cache}/gridcoll, holds one model-HASH.cfg\n"
        "per layout (sites, rank counts, --wan, the machine file's relays\n"
        "and hosts).\n"
        "\n"
        "environment of every rank (besides MPICH's PMI_RANK, PMI_SIZE):\n"
        "  GRIDCOLL_JOB_ID      job id (decimal)\n"
        "  GRIDCOLL_TOKEN_FILE  file holding the job token\n"
        "  GRIDCOLL_RELAY       the site relay's rank endpoint, unix:/path\n"
        "                       (or the relay line's local=HOST:PORT)\n"
        "  GRIDCOLL_SITE_INDEX  0-based index of the rank's site\n"
        "  GRIDCOLL_SITE_NAME   name of the rank's site\n"
        "  GRIDCOLL_SITE_OFFSET first grid rank of the site\n"
        "  GRIDCOLL_SITE_SIZE   ranks at the site\n"
        "  GRIDCOLL_WORLD_SIZE  ranks in the whole grid\n"
        "  GRIDCOLL_SITES       name:offset:count,... for every site\n"
        "  GRIDCOLL_APPNUM      the rank's application number (MPI_APPNUM)\n"
        "  GRIDCOLL_FATTREE     M1,...,ML from the site's fattree= or from\n"
        "                       --fattree; else gridrun's own, if set\n"
        "  GRIDCOLL_MODEL       the model file (--model or the default\n"
        "                       model); else gridrun's own, if set\n"
        "  grid rank = GRIDCOLL_SITE_OFFSET + PMI_RANK\n"
        "\n"
        "exit status:\n"
        "  0        every mpiexec exited with 0\n"
        "  N        a site's mpiexec exited with N (the first failure)\n"
        "  128+S    a site's mpiexec was killed by signal S\n"
        "  1        a relay or gridwan failed to start or died, or another\n"
        "           error\n"
        "  2        usage error, a bad machine file or placement, or --wan\n"
        "           without root\n"
        "  124      --timeout expired\n"
        "  125      ranks of a site never joined the grid (see above)\n"
        "  126/127  a host could not start the program: not executable/not\n"
        "           found\n"
        "  130/143  gridrun was interrupted by SIGINT/SIGTERM\n"
        "\n"
        "gridrun's own environment (gridrun --env: what each one does):\n",
        GR_MAX_SITES);
    gr_env_print_names(out, 2);
    fprintf(out, "  TMPDIR, where the job directory is made (default /tmp)\n");
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

/* One --relay-set GROUP.NAME=VALUE.  The relay's configuration table
 * judges keys and values (gridrelay --check, before anything starts);
 * here only the form, and the keys gridrun must own to run the job: where
 * ranks and peers connect, the job's identity, the HTTP port it polls, the
 * log file it points to.  Returns -1 to go on, else gridrun's exit
 * status. */
static int add_relay_set(struct gr_job *job, char *item)
{
    static char *items[MAX_RELAY_SETS];
    static const char *const owned[] = {
        "local.", "peers.", "tls.", "wan.listen=", "http.listen=", "log.file="};
    size_t key_len = strcspn(item, "=");
    const char *dot = memchr(item, '.', key_len);
    if (item[key_len] != '=' || dot == NULL || dot == item ||
        dot + 1 == item + key_len ||
        strspn(item, "abcdefghijklmnopqrstuvwxyz_.") != key_len ||
        memchr(dot + 1, '.', (size_t)(item + key_len - dot - 1)) != NULL)
        return usage_error("--relay-set: '%s' is not GROUP.NAME=VALUE (e.g. "
                           "wan.streams=16)",
                           item);
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (strncmp(item, owned[i], strlen(owned[i])) == 0)
            return usage_error("--relay-set: gridrun sets %.*s itself",
                               (int)key_len, item);
    if (job->relay_set_count == MAX_RELAY_SETS)
        return usage_error("--relay-set: more than %d items", MAX_RELAY_SETS);
    items[job->relay_set_count++] = item;
    job->relay_set = items;
    return -1;
}

static int parse_args(int argc, char **argv, struct gr_job *job,
                      struct mf_opts *mo, struct wan_opts *wo,
                      struct model_opts *md)
{
    static const struct option longopts[] = {
        {"sites", required_argument, NULL, OPT_SITES},
        {"site-sizes", required_argument, NULL, OPT_SITE_SIZES},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"prefix", no_argument, NULL, OPT_PREFIX},
        {"preload", no_argument, NULL, OPT_PRELOAD},
        {"keep-job-dir", no_argument, NULL, OPT_KEEP},
        {"keep-failed", required_argument, NULL, OPT_KEEP_FAILED},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, OPT_HELP},
        {"rsh", required_argument, NULL, OPT_RSH},
        {"tls-dir", required_argument, NULL, OPT_TLS_DIR},
        {"plaintext-wan", no_argument, NULL, OPT_PLAINTEXT_WAN},
        {"job-dir", required_argument, NULL, OPT_JOB_DIR},
        {"fattree", required_argument, NULL, OPT_FATTREE},
        {"wan", required_argument, NULL, OPT_WAN},
        {"native", no_argument, NULL, OPT_NATIVE},
        {"model", required_argument, NULL, OPT_MODEL},
        {"no-model", no_argument, NULL, OPT_NO_MODEL},
        {"probe", no_argument, NULL, OPT_PROBE},
        {"relay-set", required_argument, NULL, OPT_RELAY_SET},
        {"no-join-check", no_argument, NULL, OPT_NO_JOIN_CHECK},
        {"service-cert", required_argument, NULL, OPT_SERVICE_CERT},
        {"service-key", required_argument, NULL, OPT_SERVICE_KEY},
        {"service-ca", required_argument, NULL, OPT_SERVICE_CA},
        {"env", no_argument, NULL, OPT_ENV},
        {"markdown", no_argument, NULL, OPT_MARKDOWN},
        {NULL, 0, NULL, 0},
    };
    uint32_t sites = 0, np = 0;
    const char *sizes = NULL;
    /* The option wins over the environment, which wins over the
     * default. */
    const char *keep_failed = gr_env(GR_ENV_KEEP_FAILED);
    const char *keep_failed_from = gr_env_name(GR_ENV_KEEP_FAILED);
    char fattree[GC_SCHED_FATTREE_TEXT_MAX] = "";
    bool list_env = false, markdown = false;
    int c;

    opterr = 0;
    /* "+": stop at the first non-option, so PROGRAM's own options are never
     * taken for ours. */
    while ((c = getopt_long(argc, argv, "+n:f:h", longopts, NULL)) != -1) {
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
        case 'f': mo->path = optarg; break;
        case OPT_RSH: mo->rsh = optarg; break;
        case OPT_TLS_DIR: mo->tls_dir = optarg; break;
        case OPT_WAN: wo->spec = optarg; break;
        case OPT_NATIVE: job->native = true; break;
        case OPT_MODEL:
            /* Absolute: the ranks do not start in gridrun's directory. */
            if (access(optarg, R_OK) != 0 ||
                realpath(optarg, job->model) == NULL)
                return usage_error("--model: cannot read '%s': %s", optarg,
                                   strerror(errno));
            break;
        case OPT_NO_MODEL: md->no_model = true; break;
        case OPT_PROBE: md->probe = true; break;
        case OPT_RELAY_SET: {
            int rc = add_relay_set(job, optarg);
            if (rc >= 0)
                return rc;
            break;
        }
        case OPT_PLAINTEXT_WAN: mo->plaintext_wan = true; break;
        case OPT_JOB_DIR:
            if (*optarg == '\0')
                return usage_error("%s", "--job-dir needs a directory");
            job->job_dir_base = optarg;
            break;
        case OPT_FATTREE: {
            struct gc_sched_fattree tree;
            char err[128];
            if (gc_sched_fattree_parse(optarg, &tree, err, sizeof err) != 0)
                return usage_error("--fattree: %s", err);
            gc_sched_fattree_format(&tree, fattree, sizeof fattree);
            break;
        }
        case OPT_TIMEOUT:
            if (parse_u32(optarg, 1, 100000000, &job->timeout_s) != 0)
                return usage_error("--timeout must be a positive number of "
                                   "seconds, not '%s'",
                                   optarg);
            break;
        case OPT_PREFIX: job->prefix = true; break;
        case OPT_PRELOAD: job->preload = true; break;
        case OPT_KEEP: job->keep_job_dir = true; break;
        case OPT_KEEP_FAILED:
            keep_failed = optarg;
            keep_failed_from = "--keep-failed";
            break;
        case OPT_VERBOSE: job->verbose = true; break;
        case OPT_NO_JOIN_CHECK: job->no_join_check = true; break;
        case OPT_SERVICE_CERT: mo->service_cert = optarg; break;
        case OPT_SERVICE_KEY: mo->service_key = optarg; break;
        case OPT_SERVICE_CA: mo->service_ca = optarg; break;
        case OPT_ENV: list_env = true; break;
        case OPT_MARKDOWN: markdown = true; break;
        case OPT_HELP:
        case 'h': usage(stdout); return 0;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (markdown && !list_env)
        return usage_error("%s", "--markdown goes with --env");
    if (list_env) {
        gr_env_print(stdout, markdown);
        return 0;
    }
    job->keep_failed = GR_KEEP_FAILED_DEFAULT;
    if (keep_failed != NULL &&
        parse_u32(keep_failed, 0, GR_KEEP_FAILED_MAX, &job->keep_failed) != 0)
        return usage_error("%s must be 0..%u, not '%s'", keep_failed_from,
                           GR_KEEP_FAILED_MAX, keep_failed);
    bool after_dashes = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    if (md->probe) {
        if (optind < argc && !after_dashes)
            return usage_error("put '--' before gridcoll-probe's options: %s",
                               argv[optind]);
        if (job->model[0] != '\0' || job->native)
            return usage_error("%s", "--probe measures the layout: --model "
                                     "and --native do not apply");
        md->probe_args = argv + optind;
        md->probe_argc = argc - optind;
    } else if (optind < argc && !after_dashes) {
        return usage_error("put '--' before the program: %s", argv[optind]);
    } else if (optind < argc) {
        char err[256];
        if (gr_apps_parse(argv + optind, argc - optind, &job->apps, err,
                          sizeof err) != 0)
            return usage_error("%s", err);
        if (np == 0 && sizes == NULL)
            np = gr_apps_given_ranks(&job->apps);
        if (np > MAX_RANKS)
            return usage_error("%s", "the segments' -n add up to more than "
                                     "16777216 ranks");
    } else if (mo->path == NULL) {
        /* With -f the machine file's program= lines may name them. */
        return usage_error("%s", "no program given (after '--')");
    }
    if (md->no_model && job->model[0] != '\0')
        return usage_error("%s", "--model and --no-model exclude each other");

    if (mo->path != NULL) {
        if (sites != 0 || sizes != NULL)
            return usage_error("%s", "-f cannot be combined with --sites or "
                                     "--site-sizes");
        if (fattree[0] != '\0')
            return usage_error("%s", "--fattree is for local mode; with -f "
                                     "write fattree= in the machine file");
        if (wo->spec != NULL || job->native || job->relay_set_count > 0)
            return usage_error("%s", "--wan, --native and --relay-set are "
                                     "for local mode");
        if (np == 0)
            return usage_error("%s", "-n NP is required with -f (or -n N "
                                     "on every segment)");
        if (mo->tls_dir != NULL && mo->plaintext_wan)
            return usage_error("%s", "--tls-dir and --plaintext-wan exclude "
                                     "each other");
        /* Whether the file names services is known once it is read. */
        mo->np = np;
        return -1; /* the machine file fills in the sites */
    }
    if (mo->rsh != NULL || mo->plaintext_wan)
        return usage_error("%s", "--rsh and --plaintext-wan are only valid "
                                 "with -f MACHINEFILE");
    if (job->native && mo->tls_dir != NULL)
        return usage_error("%s", "--native runs no relays: --tls-dir does "
                                 "not apply");
    if (job->native && wo->spec == NULL)
        return usage_error("%s", "--native needs --wan: the baseline runs "
                                 "over the emulated WAN");
    if (job->native && job->relay_set_count > 0)
        return usage_error("%s", "--native runs no relays: --relay-set does "
                                 "not apply");
    if (job->native &&
        (job->preload || fattree[0] != '\0' || job->model[0] != '\0'))
        return usage_error("%s", "--native runs PROGRAM without GridColl: "
                                 "--preload, --fattree and --model do not "
                                 "apply");
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
            return usage_error("%s", "-n NP is required (or -n N on every "
                                     "segment)");
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
        snprintf(job->sites[i].fattree, sizeof job->sites[i].fattree, "%s",
                 fattree);
        job->sites[i].offset = offset;
        offset += job->sites[i].count;
    }
    return -1; /* parsed: go on */
}

/* Turn --wan into gridwan's command line, checked with gridwan's own
 * parser, and give every site its namespace and its WAN address there:
 * gridwan's address of the site (wan_site_addr) and NS_WAN_PORT.
 * Returns -1 to go on, else gridrun's exit status. */
static int setup_wan(struct gr_job *job, struct wan_opts *wo)
{
    if (job->site_count < 2)
        return usage_error("%s", "--wan needs at least two sites");
    size_t off = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        /* gridrun's pid keeps the names of parallel runs apart. */
        snprintf(s->netns, sizeof s->netns, "gr%ld-%s", (long)getpid(),
                 s->name);
        off += (size_t)snprintf(wo->ns_list + off, sizeof wo->ns_list - off,
                                "%s%s", i ? "," : "", s->netns);
    }
    wo->buf = strdup(wo->spec);
    if (wo->buf == NULL) {
        fprintf(stderr, "gridrun: out of memory\n");
        return 1;
    }
    int argc = 0;
    wo->argv[argc++] = "gridwan";
    wo->argv[argc++] = "--ns";
    wo->argv[argc++] = wo->ns_list;
    const char *values[WAN_KEYS] = {NULL};
    char *save = NULL;
    for (char *item = strtok_r(wo->buf, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq == NULL || eq[1] == '\0')
            return usage_error("--wan: '%s' is not KEY=VALUE", item);
        *eq = '\0';
        size_t k = 0;
        while (k < WAN_KEYS && strcmp(item, wan_keys[k].key) != 0)
            k++;
        if (k == WAN_KEYS)
            return usage_error("--wan: unknown key '%s' (want delay, jitter, "
                               "rate, loss, queue, queue-ms, mtu, seed or "
                               "rt)",
                               item);
        if (values[k] != NULL)
            return usage_error("--wan: '%s' is given twice", item);
        values[k] = eq + 1;
        wo->argv[argc++] = (char *)wan_keys[k].option;
        wo->argv[argc++] = eq + 1;
    }
    wo->argv[argc] = NULL;
    size_t len = 0;
    for (size_t k = 0; k < WAN_KEYS && len < sizeof wo->canonical; k++)
        if (values[k] != NULL)
            len += (size_t)snprintf(
                wo->canonical + len, sizeof wo->canonical - len, "%s%s=%s",
                len > 0 ? "," : "", wan_keys[k].key, values[k]);
    if (len >= sizeof wo->canonical)
        return usage_error("--wan: too long: %s", wo->spec);
    struct wan_options o;
    char err[256];
    if (wan_options_parse(argc, wo->argv, &o, err, sizeof err) !=
        WAN_OPTIONS_RUN)
        return usage_error("--wan: %s", err);
    for (uint32_t i = 0; i < job->site_count; i++) {
        uint32_t a = wan_site_addr(&o, i);
        snprintf(job->sites[i].wan, sizeof job->sites[i].wan, "%u.%u.%u.%u:%d",
                 a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255,
                 NS_WAN_PORT);
    }
    job->wan_argv = wo->argv;
    return -1;
}

/* Split --rsh on spaces into mo->rsh_words. */
static int split_rsh(struct mf_opts *mo)
{
    mo->rsh_buf = strdup(mo->rsh);
    if (mo->rsh_buf == NULL) {
        fprintf(stderr, "gridrun: out of memory\n");
        return 1;
    }
    size_t n = 0;
    char *save = NULL;
    for (char *w = strtok_r(mo->rsh_buf, " \t", &save); w != NULL;
         w = strtok_r(NULL, " \t", &save)) {
        if (n == MAX_RSH_WORDS)
            return usage_error("--rsh: more than %d words", MAX_RSH_WORDS);
        mo->rsh_words[n++] = w;
    }
    mo->rsh_words[n] = NULL;
    if (n == 0)
        return usage_error("%s", "--rsh needs a command");
    return -1;
}

/* "h1:n1,h2:n2": `count` ranks over the site's hosts in file order, each
 * host's slots filled before the next. */
static char *site_hosts(const struct mf_site *ms, uint32_t count,
                        bool *only_relay_host)
{
    size_t cap = 1, len = 0;
    for (uint32_t h = 0; h < ms->host_count; h++)
        cap += strlen(ms->hosts[h].name) + 12;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    out[0] = '\0';
    *only_relay_host = true;
    uint32_t left = count;
    for (uint32_t h = 0; h < ms->host_count && left > 0; h++) {
        uint32_t n = left < ms->hosts[h].slots ? left : ms->hosts[h].slots;
        len += (size_t)snprintf(out + len, cap - len, "%s%s:%u", len ? "," : "",
                                ms->hosts[h].name, n);
        left -= n;
        if (strcmp(ms->hosts[h].name, ms->relay_host) != 0)
            *only_relay_host = false;
    }
    return out;
}

/* The "host" part of a host:port or [v6]:port address. */
static void endpoint_host(const char *ep, char *out, size_t len)
{
    const char *colon = strrchr(ep, ':');
    size_t n = colon != NULL ? (size_t)(colon - ep) : strlen(ep);
    snprintf(out, len, "%.*s", (int)n, ep);
}

/* The client credentials for the sites' services: options, else the
 * environment; each must be readable. */
static int service_credentials(struct gr_job *job, const struct mf_opts *mo)
{
    const struct {
        const char *option;
        enum gr_env_var env;
        const char *value;
        char *out;
    } items[] = {
        {"--service-cert", GR_ENV_SERVICE_CERT, mo->service_cert,
         job->service_cert},
        {"--service-key", GR_ENV_SERVICE_KEY, mo->service_key,
         job->service_key},
        {"--service-ca", GR_ENV_SERVICE_CA, mo->service_ca, job->service_ca},
    };
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        const char *path =
            items[i].value ? items[i].value : gr_env(items[i].env);
        if (path == NULL || path[0] == '\0') {
            fprintf(stderr,
                    "gridrun: %s names running services: give %s FILE (or "
                    "set %s)\n",
                    mo->path, items[i].option, gr_env_name(items[i].env));
            return -1;
        }
        if (access(path, R_OK) != 0 || realpath(path, items[i].out) == NULL) {
            fprintf(stderr, "gridrun: %s %s: %s\n", items[i].option, path,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Fill the job's sites from the machine file: returns -1 to go on, else
 * gridrun's exit status. */
static int setup_machinefile(struct gr_job *job, struct mf_opts *mo)
{
    if (machinefile_load(mo->path, &mo->mf, stderr) != 0)
        return 2;
    mo->mf_loaded = true;
    const struct machinefile *mf = &mo->mf;
    uint32_t *counts = calloc(mf->site_count, sizeof(*counts));
    if (counts == NULL) {
        fprintf(stderr, "gridrun: out of memory\n");
        return 1;
    }
    int status = 2;
    char err[256];
    if (machinefile_distribute(mf, mo->np, counts, err, sizeof(err)) != 0) {
        fprintf(stderr, "gridrun: %s: %s\n", mo->path, err);
        goto cleanup;
    }
    if (mo->rsh != NULL) {
        int rc = split_rsh(mo);
        if (rc >= 0) {
            status = rc;
            goto cleanup;
        }
        job->rsh_argv = mo->rsh_words;
    }
    job->services = mf->site_count > 0 && mf->sites[0].relay_service[0] != '\0';
    if (job->services && (mo->tls_dir != NULL || mo->plaintext_wan)) {
        fprintf(stderr,
                "gridrun: %s names running services: --tls-dir and "
                "--plaintext-wan are for relays gridrun starts\n",
                mo->path);
        goto cleanup;
    }
    if (!job->services && mo->tls_dir == NULL && !mo->plaintext_wan) {
        fprintf(stderr, "gridrun: machine-file mode needs --tls-dir DIR "
                        "(certificates per site) or --plaintext-wan\n");
        goto cleanup;
    }
    if (job->services && service_credentials(job, mo) != 0)
        goto cleanup;
    if (mo->tls_dir != NULL && realpath(mo->tls_dir, job->tls_dir) == NULL) {
        fprintf(stderr, "gridrun: --tls-dir %s: %s\n", mo->tls_dir,
                strerror(errno));
        goto cleanup;
    }

    /* Sites without ranks take no part: no relay, not in GRIDCOLL_SITES. */
    uint32_t n = 0, offset = 0;
    for (uint32_t i = 0; i < mf->site_count; i++) {
        const struct mf_site *ms = &mf->sites[i];
        if (counts[i] == 0)
            continue;
        if (n == GR_MAX_SITES) {
            fprintf(stderr, "gridrun: %s: the ranks span more than %d sites\n",
                    mo->path, GR_MAX_SITES);
            goto cleanup;
        }
        mo->used[n] = ms;
        mo->programs |= ms->program != NULL;
        struct gr_site *s = &job->sites[n++];
        job->site_count = n; /* so main() frees mpi_hosts on any error */
        s->name = ms->name;
        s->offset = offset;
        s->count = counts[i];
        offset += counts[i];
        snprintf(s->wan, sizeof(s->wan), "%s", ms->relay_wan);
        snprintf(s->local, sizeof(s->local), "%s", ms->relay_local);
        snprintf(s->service, sizeof(s->service), "%s", ms->relay_service);
        s->connect = ms->relay_connect;
        gc_sched_fattree_format(&ms->fattree, s->fattree, sizeof s->fattree);
        snprintf(s->relay_host, sizeof(s->relay_host), "%s", ms->relay_host);
        /* With --rsh the relay may run elsewhere: its /status is served
         * (and polled) on the host of its wan= address. */
        if (mo->rsh != NULL)
            endpoint_host(ms->relay_wan, s->http_host, sizeof(s->http_host));
        bool only_relay_host = true;
        s->mpi_hosts = site_hosts(ms, counts[i], &only_relay_host);
        if (s->mpi_hosts == NULL) {
            fprintf(stderr, "gridrun: out of memory\n");
            status = 1;
            goto cleanup;
        }
        if (s->local[0] == '\0' && !only_relay_host && !job->services) {
            fprintf(stderr,
                    "gridrun: %s:%d: site '%s' runs ranks on hosts other "
                    "than its relay host '%s': give the relay line a "
                    "local=HOST:PORT the ranks can reach\n",
                    mo->path, ms->relay_line, ms->name, ms->relay_host);
            goto cleanup;
        }
        if (job->tls_dir[0] != '\0') {
            const char *files[][2] = {
                {"ca", ".crt"}, {ms->name, ".crt"}, {ms->name, ".key"}};
            for (size_t k = 0; k < 3; k++) {
                char path[PATH_MAX + 80];
                snprintf(path, sizeof(path), "%s/%s%s", job->tls_dir,
                         files[k][0], files[k][1]);
                if (access(path, R_OK) != 0) {
                    fprintf(stderr, "gridrun: --tls-dir: %s: %s\n", path,
                            strerror(errno));
                    goto cleanup;
                }
            }
        }
    }
    job->site_count = n;
    job->world_size = offset;

    /* Every link needs exactly one side that dials. */
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = i + 1; k < n; k++) {
            const struct gr_site *a = &job->sites[i], *b = &job->sites[k];
            if (gr_site_dials(a, b) == gr_site_dials(b, a)) {
                fprintf(stderr,
                        "gridrun: %s: sites '%s' and '%s' are both "
                        "connect=%s: one of them must accept the other's "
                        "link\n",
                        mo->path, a->name, b->name,
                        gr_site_dials(a, b) ? "dial" : "listen");
                goto cleanup;
            }
        }
    }
    status = -1;

cleanup:
    free(counts);
    return status;
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

/*
 * Why `prog` cannot be started here, as execvp sees it: 0 (it can),
 * ENOENT (not found: no such path, or in no PATH directory) or EACCES
 * (found but not executable, or a directory), the two cases a shell
 * tells apart with 127 and 126.
 */
static int program_error(const char *prog)
{
    struct stat st;
    if (strchr(prog, '/') != NULL) {
        if (stat(prog, &st) != 0)
            return errno == ENOENT || errno == ENOTDIR ? ENOENT : EACCES;
        return S_ISDIR(st.st_mode) || access(prog, X_OK) != 0 ? EACCES : 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    int found = ENOENT;
    while (*path != '\0') {
        size_t dl = strcspn(path, ":");
        char full[PATH_MAX];
        if (snprintf(full, sizeof(full), "%.*s/%s", (int)dl, path, prog) <
                (int)sizeof(full) &&
            stat(full, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (access(full, X_OK) == 0)
                return 0;
            found = EACCES; /* execvp goes on, then reports this */
        }
        path += dl;
        if (*path == ':')
            path++;
    }
    return found;
}

/* Whether machine-file host `host` is this machine by its very name (no
 * name lookup: a name that merely resolves here may be another host
 * behind the same address, and the check would then guess). */
static bool host_is_here(const char *host)
{
    char self[MF_HOST_MAX + 1];
    if (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
        strcmp(host, "::1") == 0)
        return true;
    if (gethostname(self, sizeof(self)) != 0)
        return false;
    self[sizeof(self) - 1] = '\0';
    size_t shortlen = strcspn(self, ".");
    return strcmp(host, self) == 0 ||
           (strlen(host) == shortlen && strncmp(host, self, shortlen) == 0);
}

/*
 * Machine-file mode without --rsh: hydra starts the ranks of a host that
 * is this machine here, so a program missing here fails there; say so
 * before anything starts, as hydra's failure would be reported
 * (gridrun_report.c, report_exec_failure).  Other hosts are not checked:
 * only they can tell.  -1 to go on, else gridrun's exit status.
 */
static int check_local_programs(const struct gr_job *job)
{
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        uint32_t rank = s->offset; /* first grid rank of the host */
        for (const char *h = s->mpi_hosts; h != NULL && *h != '\0';) {
            size_t hl = strcspn(h, ":");
            const char *colon = h + hl;
            if (*colon != ':')
                break;
            uint32_t n = (uint32_t)strtoul(colon + 1, NULL, 10);
            char host[MF_HOST_MAX + 1];
            snprintf(host, sizeof(host), "%.*s", (int)hl, h);
            for (uint32_t k = 0; k < job->apps.count && host_is_here(host);
                 k++) {
                const struct gr_app *a = &job->apps.app[k];
                if (a->first >= rank + n || a->first + a->count <= rank)
                    continue; /* none of its ranks on this host */
                int why = program_error(a->argv[0]);
                if (why == 0)
                    continue;
                fprintf(stderr,
                        "gridrun: site %s: cannot start program %s on host "
                        "%s: %s\n",
                        s->name, a->argv[0], host,
                        why == ENOENT ? "not found" : "not executable");
                return why == ENOENT ? 127 : 126;
            }
            rank += n;
            h = strchr(colon, ',');
            if (h != NULL)
                h++;
        }
    }
    return -1;
}

/*
 * The job's applications over its sites: the machine file's program=
 * lines when it has any, else the command line's segments.  Returns -1 to
 * go on, else gridrun's exit status.
 */
static int setup_apps(struct gr_job *job, const struct mf_opts *mo)
{
    char err[512];
    uint32_t counts[GR_MAX_SITES];
    for (uint32_t i = 0; i < job->site_count; i++)
        counts[i] = job->sites[i].count;
    if (mo->programs) {
        if (job->apps.count > 1 || (job->apps.count == 1 && job->apps.app[0].n))
            return usage_error("%s: program= in the machine file and ':' "
                               "segments or -n after '--' exclude each other "
                               "(after '--' give at most one program, for "
                               "the sites without program=)",
                               mo->path);
        struct gr_apps cmdline = job->apps;
        int rc = gr_apps_from_sites(&job->apps, &cmdline, mo->used, counts,
                                    job->site_count, err, sizeof err);
        gr_apps_free(&cmdline);
        if (rc != 0)
            return usage_error("%s: %s", mo->path, err);
        return mo->rsh == NULL ? check_local_programs(job) : -1;
    }
    if (job->apps.count == 0)
        return usage_error("no program given (after '--', or program= in "
                           "%s)",
                           mo->path);
    if (gr_apps_place(&job->apps, counts, job->site_count, job->world_size, err,
                      sizeof err) != 0)
        return usage_error("%s", err);
    if (mo->path != NULL)
        return mo->rsh == NULL ? check_local_programs(job) : -1;
    /* Hydra would only fail once the relays are up, with a message per
     * rank.  The ranks of a machine file's hosts may find programs there
     * that are not here. */
    for (uint32_t k = 0; k < job->apps.count && mo->path == NULL; k++) {
        const char *prog = job->apps.app[k].argv[0];
        if (find_in_path(prog) != 0) {
            fprintf(stderr,
                    "gridrun: %s: program not found or not executable "
                    "(segment %u)\n",
                    prog, k + 1);
            return 2;
        }
    }
    return -1;
}

/*
 * A model for the job (--model, the layout's default model, or what
 * --probe just wrote; `what` says which): the file loads and names every
 * site of the job, checked here so that a broken model stops the job
 * before anything starts, with the parser's file:line message (the ranks
 * check again: GRIDCOLL_MODEL may be set without gridrun).
 */
static int check_model(const struct gr_job *job, const char *path,
                       const char *what)
{
    static struct gc_model model;
    char err[512];
    if (gc_model_load(path, &model, err, sizeof err) != 0) {
        fprintf(stderr, "gridrun: %s: %s\n", what, err);
        return -1;
    }
    for (uint32_t i = 0; i < job->site_count; i++)
        if (gc_model_site_index(&model, job->sites[i].name) < 0) {
            fprintf(stderr,
                    "gridrun: %s: %s: no site '%s' (the job's sites "
                    "must be among the model's)\n",
                    what, path, job->sites[i].name);
            return -1;
        }
    return 0;
}

/*
 * No --model, no GRIDCOLL_MODEL, no --no-model: the layout's default
 * model, if --probe wrote one, checked like --model.  Without a model
 * directory (no HOME) there is none.  Returns -1 to go on, else gridrun's
 * exit status.
 */
static int use_default_model(struct gr_job *job, struct model_opts *md)
{
    char dir[PATH_MAX], err[PATH_MAX + 64];
    if (dm_dir(dir, sizeof dir, err, sizeof err) != 0 ||
        dm_path(dir, md->layout, md->path, sizeof md->path) != 0)
        return -1;
    /* Present but unreadable is an error, for check_model to name. */
    if (access(md->path, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return -1;
    if (check_model(job, md->path, "default model") != 0) {
        fprintf(stderr,
                "gridrun: %s is this layout's default model (%s): remove it "
                "and re-probe (gridrun --probe with the same layout "
                "options), or run with --no-model\n",
                md->path, md->layout);
        return 2;
    }
    snprintf(job->model, sizeof job->model, "%s", md->path);
    if (job->verbose)
        fprintf(stderr,
                "gridrun: model %s (this layout's default; --no-model runs "
                "without)\n",
                md->path);
    return -1;
}

/* gridcoll-probe: $GRIDCOLL_PROBE_BIN, else next to gridrun. */
static int resolve_probe(char *out, size_t len)
{
    const char *probe = gr_env(GR_ENV_PROBE_BIN);
    char dir[PATH_MAX];
    if (probe != NULL)
        snprintf(out, len, "%s", probe);
    else if (self_dir(dir, sizeof dir) != 0 ||
             snprintf(out, len, "%s/gridcoll-probe", dir) >= (int)len) {
        fprintf(stderr, "gridrun: --probe: cannot find gridcoll-probe; set "
                        "GRIDCOLL_PROBE_BIN\n");
        return -1;
    }
    if (access(out, X_OK) != 0) {
        fprintf(stderr,
                "gridrun: --probe: %s is not executable (%s); set "
                "GRIDCOLL_PROBE_BIN\n",
                out, strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * --probe: gridcoll-probe as the job, writing a temporary file next to
 * the layout's default model.  Only a model that loads and names the
 * job's sites is renamed into place, so a failed probe leaves no model
 * behind, not even half of one.  Returns gridrun's exit status.
 */
static int run_probe(struct gr_job *job, struct model_opts *md)
{
    char probe[PATH_MAX], dir[PATH_MAX], err[PATH_MAX + 64];
    char tmp[PATH_MAX + 8];
    if (resolve_probe(probe, sizeof probe) != 0)
        return 1;
    if (dm_dir(dir, sizeof dir, err, sizeof err) != 0) {
        fprintf(stderr, "gridrun: --probe: %s\n", err);
        return 1;
    }
    if (dm_path(dir, md->layout, md->path, sizeof md->path) != 0 ||
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", md->path) >= (int)sizeof tmp) {
        fprintf(stderr,
                "gridrun: --probe: the model directory %s is too "
                "long\n",
                dir);
        return 1;
    }
    if (dm_make_dir(dir) != 0) {
        fprintf(stderr, "gridrun: --probe: cannot make %s: %s\n", dir,
                strerror(errno));
        return 1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "gridrun: --probe: cannot create a file in %s: %s\n",
                dir, strerror(errno));
        return 1;
    }
    close(fd);
    int status = 1;
    /* The user's probe options first: the last --output and --layout
     * count, ours. */
    char **argv = calloc((size_t)md->probe_argc + 6, sizeof *argv);
    if (argv == NULL) {
        fprintf(stderr, "gridrun: out of memory\n");
        goto cleanup;
    }
    int argc = 0;
    argv[argc++] = probe;
    for (int i = 0; i < md->probe_argc; i++)
        argv[argc++] = md->probe_args[i];
    argv[argc++] = "--output";
    argv[argc++] = tmp;
    argv[argc++] = "--layout";
    argv[argc++] = md->layout;
    gr_apps_free(&job->apps);
    job->apps.app = calloc(1, sizeof *job->apps.app);
    if (job->apps.app == NULL) {
        fprintf(stderr, "gridrun: out of memory\n");
        goto cleanup;
    }
    job->apps.count = 1;
    job->apps.app[0] =
        (struct gr_app){.argv = argv, .argc = argc, .count = job->world_size};
    /* The probe measures with fixed algorithms; a model of the user's is
     * of no use to it, and a broken one must not stop a re-probe. */
    unsetenv(gr_env_name(GR_ENV_MODEL));
    status = gr_job_run(job);
    if (status != 0)
        goto cleanup;
    status = 1;
    if (check_model(job, tmp, "--probe: gridcoll-probe wrote no valid model") !=
        0)
        goto cleanup;
    if (rename(tmp, md->path) != 0) {
        fprintf(stderr, "gridrun: --probe: cannot rename %s to %s: %s\n", tmp,
                md->path, strerror(errno));
        goto cleanup;
    }
    status = 0;
    printf("gridrun: model written to %s\n", md->path);

cleanup:
    if (status != 0)
        unlink(tmp);
    free(argv);
    return status;
}

static int resolve_programs(struct gr_job *job)
{
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof(dir)) != 0) {
        fprintf(stderr, "gridrun: cannot find own executable in "
                        "/proc/self/exe\n");
        return -1;
    }
    const char *relay = gr_env(GR_ENV_RELAY_BIN);
    if (relay != NULL)
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
    if (job->wan_argv != NULL) {
        const char *wan = gr_env(GR_ENV_WAN_BIN);
        if (wan != NULL)
            snprintf(job->wan_bin, sizeof(job->wan_bin), "%s", wan);
        else if (snprintf(job->wan_bin, sizeof(job->wan_bin), "%s/gridwan",
                          dir) >= (int)sizeof(job->wan_bin))
            return -1;
        if (access(job->wan_bin, X_OK) != 0) {
            fprintf(stderr,
                    "gridrun: gridwan %s is not executable (%s); set "
                    "GRIDCOLL_WAN_BIN\n",
                    job->wan_bin, strerror(errno));
            return -1;
        }
        /* The sites' processes enter their namespaces through ip, the
         * native ranks their IPC namespaces through unshare. */
        const char *tools[][2] = {{"ip", "iproute2"},
                                  {"unshare", "util-linux"}};
        for (size_t i = 0; i < (job->native ? 2u : 1u); i++) {
            if (find_in_path(tools[i][0]) != 0) {
                fprintf(stderr,
                        "gridrun: --wan needs %s (Debian package %s) in "
                        "PATH\n",
                        tools[i][0], tools[i][1]);
                return -1;
            }
        }
    }
    const char *mpiexec = gr_env(GR_ENV_MPIEXEC);
    snprintf(job->mpiexec, sizeof(job->mpiexec), "%s",
             mpiexec != NULL ? mpiexec : "mpiexec");
    if (find_in_path(job->mpiexec) != 0) {
        fprintf(stderr,
                "gridrun: %s not found or not executable; install MPICH or "
                "set GRIDCOLL_MPIEXEC\n",
                job->mpiexec);
        return -1;
    }
    /* Preloaded into the ranks: libgridcoll (--preload), or the baseline's
     * MPI_Finalize fix (--native, launcher/native_finalize.c). */
    const char *lib = job->preload  ? "libgridcoll.so"
                      : job->native ? "libgridrun-native.so"
                                    : NULL;
    if (lib != NULL) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/../lib/%s", dir, lib);
        if (realpath(path, job->preload_lib) == NULL) {
            fprintf(stderr, "gridrun: %s: %s: %s\n",
                    job->preload ? "--preload" : "--native", path,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* --tls-dir in local mode: WAN TLS between the simulated sites, with
 * DIR/ca.crt and DIR/SITE.crt, DIR/SITE.key for every site (e.g. from
 * conf/tls/make-certs.sh DIR alpha beta).  0, or -1 after a message. */
static int local_tls_dir(struct gr_job *job, const char *dir)
{
    if (realpath(dir, job->tls_dir) == NULL) {
        fprintf(stderr, "gridrun: --tls-dir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* i == site_count: the CA, which has no key here. */
    for (uint32_t i = 0; i <= job->site_count; i++) {
        const char *name = i < job->site_count ? job->sites[i].name : "ca";
        for (int key = 0; key < (i < job->site_count ? 2 : 1); key++) {
            char path[PATH_MAX + 80];
            snprintf(path, sizeof(path), "%s/%s%s", job->tls_dir, name,
                     key ? ".key" : ".crt");
            if (access(path, R_OK) != 0) {
                fprintf(stderr, "gridrun: --tls-dir: %s: %s\n", path,
                        strerror(errno));
                return -1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct gr_job job;
    static struct mf_opts mo;
    static struct wan_opts wo;
    int status = 1;

    static struct model_opts md;
    int rc = parse_args(argc, argv, &job, &mo, &wo, &md);
    if (rc >= 0)
        return rc;
    if (wo.spec != NULL) {
        rc = setup_wan(&job, &wo);
        if (rc >= 0) {
            status = rc;
            goto cleanup;
        }
        /* Like a usage error, found before anything starts. */
        status = 2;
        if (netns_check_privileges("gridrun: --wan") != 0)
            goto cleanup;
        if (access("/dev/net/tun", R_OK | W_OK) != 0) {
            fprintf(stderr,
                    "gridrun: --wan: /dev/net/tun: %s (no TUN/TAP "
                    "support)\n",
                    strerror(errno));
            goto cleanup;
        }
        status = 1;
    }
    if (mo.path != NULL) {
        rc = setup_machinefile(&job, &mo);
        if (rc >= 0) {
            status = rc;
            goto cleanup;
        }
    } else if (mo.tls_dir != NULL && local_tls_dir(&job, mo.tls_dir) != 0) {
        status = 2;
        goto cleanup;
    }
    if (md.probe && job.site_count < 2) {
        status = usage_error("%s", "--probe needs at least two sites");
        goto cleanup;
    }
    if (md.no_model)
        unsetenv(gr_env_name(GR_ENV_MODEL));
    bool env_has_model = gr_env(GR_ENV_MODEL) != NULL;
    if (md.probe || (job.model[0] == '\0' && !env_has_model && !md.no_model &&
                     !job.native)) {
        md.layout = dm_layout(&job, mo.path != NULL, wo.canonical);
        if (md.layout == NULL) {
            fprintf(stderr, "gridrun: out of memory\n");
            goto cleanup;
        }
    }
    if (!md.probe && md.layout != NULL) {
        rc = use_default_model(&job, &md);
        if (rc >= 0) {
            status = rc;
            goto cleanup;
        }
    } else if (job.model[0] != '\0' &&
               check_model(&job, job.model, "--model") != 0) {
        status = 2;
        goto cleanup;
    }
    if (!md.probe) {
        rc = setup_apps(&job, &mo);
        if (rc >= 0) {
            status = rc;
            goto cleanup;
        }
    }
    if (resolve_programs(&job) != 0)
        goto cleanup;
    status = md.probe ? run_probe(&job, &md) : gr_job_run(&job);

cleanup:
    for (uint32_t i = 0; i < job.site_count; i++)
        free(job.sites[i].mpi_hosts);
    if (mo.mf_loaded)
        machinefile_free(&mo.mf);
    free(mo.rsh_buf);
    free(wo.buf);
    free(md.layout);
    gr_apps_free(&job.apps);
    return status;
}
