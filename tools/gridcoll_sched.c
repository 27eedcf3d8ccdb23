/*
 * gridcoll-sched: print the intra-site schedules of libgridcoll/patterns and
 * evaluate them against the network models of their papers, so that the
 * papers' figures can be reproduced without MPI.
 *
 *   gridcoll-sched alltoall --pattern opt|xor|lin --fattree M1,...,ML [--csv]
 *   gridcoll-sched allgather --strategy ring|prefix|kshift|kprefix [--k K]
 *                  --kary k --levels n [--holes LIST] [--csv]
 *
 * Exit status: 0, 1 when the output could not be written, 2 for bad
 * arguments (one line on stderr naming the option).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_sched.h"

/*
 * Both evaluations are quadratic in the number of ranks (every rank, every
 * phase); beyond this they take minutes, far past the papers' 1024.
 */
#define MAX_TOOL_RANKS 16384

static const char usage_text[] =
    "usage: gridcoll-sched alltoall --pattern opt|xor|lin --fattree "
    "M1,...,ML [--csv]\n"
    "       gridcoll-sched allgather --strategy ring|prefix|kshift|kprefix "
    "[--k K]\n"
    "                      --kary k --levels n [--holes LIST] [--csv]\n"
    "\n"
    "alltoall: one row per phase and level l = 0..L-1 of the fat tree\n"
    "FT(L; M1..ML) (M1 leaves per level-1 node, ..., rank r on leaf r):\n"
    "  crossing       messages of the phase whose destination is outside\n"
    "                 the sender's level-l subtree\n"
    "  max_link_load  the most of those leaving one level-l subtree (its\n"
    "                 up-link in an ideal fat tree)\n"
    "  bmin           B_min(l), Prisacari et al. eq. 1\n"
    "  Patterns: lin (r -> r+p mod n), xor (r <-> r XOR p; round-robin\n"
    "  pairing when n is not a power of two), opt (Prisacari's\n"
    "  bandwidth-optimal permuted variable-base exchange).\n"
    "\n"
    "allgather: one row per phase on a k-ary n-tree (k^n leaves) with the\n"
    "processes on the leaves that are not --holes, in order:\n"
    "  op,distance               shift: p -> p+distance mod P;\n"
    "                            xor: p <-> p XOR distance\n"
    "  messages                  messages sent in the phase\n"
    "  max_downlink_contention   the most messages sharing one down-link\n"
    "                            (1 = congestion free), routing up along\n"
    "                            the source's digits to the nearest common\n"
    "                            ancestor, then down\n"
    "  --k K      kshift: 1 <= K <= P; kprefix: a power of two dividing P\n"
    "             (required for both, ignored by ring and prefix)\n"
    "  --holes L  comma-separated absent leaf positions, e.g. 5,17\n"
    "\n"
    "--csv prints comma-separated values with a header line instead of a\n"
    "table.  Details: docs/algorithms/patterns.md.\n";

__attribute__((format(printf, 1, 2))) static int bad_args(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gridcoll-sched: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

enum { CMD_ALLTOALL = 1, CMD_ALLGATHER = 2 };

struct options {
    int command;
    int csv;
    const char *pattern;
    const char *fattree;
    const char *strategy;
    const char *k;
    const char *kary;
    const char *levels;
    const char *holes;
};

struct option_spec {
    const char *name;
    int commands;       /* CMD_* mask of the commands that take it */
    const char **value; /* NULL: a flag */
};

/* 0, 1 after --help (printed), or 2 after an error (reported). */
static int parse_options(int argc, char **argv, struct options *o)
{
    if (argc < 2)
        return bad_args("missing command: alltoall or allgather (try --help)");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return 1;
    }
    if (strcmp(argv[1], "alltoall") == 0)
        o->command = CMD_ALLTOALL;
    else if (strcmp(argv[1], "allgather") == 0)
        o->command = CMD_ALLGATHER;
    else
        return bad_args("unknown command '%s': alltoall or allgather (try "
                        "--help)",
                        argv[1]);

    const struct option_spec specs[] = {
        {"--pattern", CMD_ALLTOALL, &o->pattern},
        {"--fattree", CMD_ALLTOALL, &o->fattree},
        {"--strategy", CMD_ALLGATHER, &o->strategy},
        {"--k", CMD_ALLGATHER, &o->k},
        {"--kary", CMD_ALLGATHER, &o->kary},
        {"--levels", CMD_ALLGATHER, &o->levels},
        {"--holes", CMD_ALLGATHER, &o->holes},
        {"--csv", CMD_ALLTOALL | CMD_ALLGATHER, NULL},
    };
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        const char *equals = strchr(arg, '=');
        size_t name_len = equals != NULL ? (size_t)(equals - arg) : strlen(arg);
        const struct option_spec *spec = NULL;
        for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
            if (strlen(specs[s].name) == name_len &&
                strncmp(specs[s].name, arg, name_len) == 0)
                spec = &specs[s];
        }
        if (spec == NULL)
            return bad_args("unknown option '%s' (try --help)", arg);
        if ((spec->commands & o->command) == 0)
            return bad_args("%s is not an option of %s (try --help)",
                            spec->name, argv[1]);
        if (spec->value == NULL) {
            if (equals != NULL)
                return bad_args("%s takes no value", spec->name);
            o->csv = 1;
        } else if (equals != NULL) {
            *spec->value = equals + 1;
        } else if (i + 1 < argc) {
            *spec->value = argv[++i];
        } else {
            return bad_args("%s needs a value", spec->name);
        }
    }
    return 0;
}

/* A decimal integer in [min, max], or -1 after reporting. */
static int parse_int(const char *option, const char *text, int min, int max,
                     int *out)
{
    char *end = NULL;
    errno = 0;
    long value = text[0] != '\0' ? strtol(text, &end, 10) : 0;
    if (text[0] == '\0' || *end != '\0' || errno != 0 || value < min ||
        value > max) {
        bad_args("%s: '%s' is not an integer in %d..%d", option, text, min,
                 max);
        return -1;
    }
    *out = (int)value;
    return 0;
}

static int run_alltoall(const struct options *o)
{
    int status = 2;
    int *dst = NULL;
    char err[256];
    long n = 0;
    long worst[GC_SCHED_MAX_LEVELS] = {0};
    long over[GC_SCHED_MAX_LEVELS] = {0};
    enum gc_sched_alltoall_pattern pattern;
    struct gc_sched_fattree tree;
    struct gc_sched_alltoall sched;

    if (o->pattern == NULL) {
        status = bad_args("alltoall needs --pattern opt|xor|lin");
        goto cleanup;
    }
    if (o->fattree == NULL) {
        status = bad_args("alltoall needs --fattree M1,...,ML");
        goto cleanup;
    }
    if (gc_sched_alltoall_pattern_parse(o->pattern, &pattern) != 0) {
        status =
            bad_args("--pattern: '%s' is not one of opt, xor, lin", o->pattern);
        goto cleanup;
    }
    if (gc_sched_fattree_parse(o->fattree, &tree, err, sizeof err) != 0) {
        status = bad_args("--fattree: %s", err);
        goto cleanup;
    }
    n = gc_sched_fattree_leaves(&tree);
    if (n > MAX_TOOL_RANKS) {
        status = bad_args("--fattree: %ld leaves; this tool evaluates at "
                          "most %d",
                          n, MAX_TOOL_RANKS);
        goto cleanup;
    }
    if (gc_sched_alltoall_init(&sched, pattern, (int)n, &tree, err,
                               sizeof err) != 0) {
        status = bad_args("--fattree: %s", err);
        goto cleanup;
    }

    status = 1;
    dst = malloc((size_t)n * sizeof *dst);
    if (dst == NULL) {
        fprintf(stderr, "gridcoll-sched: out of memory\n");
        goto cleanup;
    }
    if (o->csv) {
        printf("phase,level,crossing,max_link_load,bmin\n");
    } else {
        printf("alltoall %s on FT(%d;", o->pattern, tree.levels);
        for (int l = 0; l < tree.levels; l++)
            printf("%s%d", l ? "," : "", tree.arity[l]);
        printf("): %ld ranks, %d phases; counts are messages in one phase\n", n,
               gc_sched_alltoall_phases(&sched));
        printf("%5s %5s %8s %13s %6s\n", "phase", "level", "crossing",
               "max_link_load", "bmin");
    }
    for (int p = 0; p < gc_sched_alltoall_phases(&sched); p++) {
        gc_sched_alltoall_phase(&sched, p, dst);
        for (int l = 0; l < tree.levels; l++) {
            long crossing, load, bmin = gc_sched_fattree_bmin(&tree, l);
            gc_sched_fattree_level_load(&tree, (int)n, dst, l, &crossing,
                                        &load);
            if (load > worst[l])
                worst[l] = load;
            if (load > bmin)
                over[l]++;
            if (o->csv)
                printf("%d,%d,%ld,%ld,%ld\n", p, l, crossing, load, bmin);
            else
                printf("%5d %5d %8ld %13ld %6ld%s\n", p, l, crossing, load,
                       bmin, load > bmin ? "  > bmin" : "");
        }
    }
    if (!o->csv) {
        printf("\n%5s %6s %15s %16s\n", "level", "bmin", "worst_link_load",
               "phases_over_bmin");
        for (int l = 0; l < tree.levels; l++)
            printf("%5d %6ld %15ld %16ld\n", l, gc_sched_fattree_bmin(&tree, l),
                   worst[l], over[l]);
    }
    status = 0;
cleanup:
    free(dst);
    return status;
}

/* Print one allgather phase; returns its worst down-link load. */
static int print_allgather_phase(const struct options *o,
                                 const struct gc_sched_allgather *sched,
                                 struct gc_sched_karytree *tree, int phase,
                                 int *dst)
{
    const struct gc_sched_allgather_phase *ph = &sched->phases[phase];
    gc_sched_allgather_phase(sched, phase, dst);
    int messages = 0;
    for (int r = 0; r < tree->ranks; r++)
        messages += dst[r] >= 0;
    int load = gc_sched_karytree_max_downlink_load(tree, dst);
    int is_xor = ph->op == GC_SCHED_OP_XOR;
    if (o->csv) {
        printf("%d,%s,%d,%d,%d\n", phase, is_xor ? "xor" : "shift",
               ph->distance, messages, load);
    } else {
        char peer[32];
        snprintf(peer, sizeof peer, is_xor ? "p^%d" : "p%+d", ph->distance);
        printf("%5d %8s %8d %23d%s\n", phase, peer, messages, load,
               load > 1 ? "  contention" : "");
    }
    return load;
}

static int run_allgather(const struct options *o)
{
    int status = 2;
    int *dst = NULL, *holes = NULL;
    int hole_count = 0, arity, levels, k = 1, contended = 0, worst = 0;
    int needs_k = 0;
    long leaves = 1;
    char err[256];
    enum gc_sched_allgather_strategy strategy;
    struct gc_sched_karytree tree = {0};
    struct gc_sched_allgather sched = {0};

    if (o->strategy == NULL) {
        status = bad_args("allgather needs --strategy "
                          "ring|prefix|kshift|kprefix");
        goto cleanup;
    }
    if (gc_sched_allgather_strategy_parse(o->strategy, &strategy) != 0) {
        status = bad_args("--strategy: '%s' is not one of ring, prefix, "
                          "kshift, kprefix",
                          o->strategy);
        goto cleanup;
    }
    if (o->kary == NULL || o->levels == NULL) {
        status = bad_args("allgather needs %s",
                          o->kary == NULL ? "--kary k" : "--levels n");
        goto cleanup;
    }
    if (parse_int("--kary", o->kary, 2, MAX_TOOL_RANKS, &arity) != 0 ||
        parse_int("--levels", o->levels, 1, 16, &levels) != 0)
        goto cleanup;
    needs_k = strategy == GC_SCHED_AG_KSHIFT || strategy == GC_SCHED_AG_KPREFIX;
    if (needs_k && o->k == NULL) {
        status = bad_args("--k is required with --strategy %s", o->strategy);
        goto cleanup;
    }
    if (o->k != NULL && parse_int("--k", o->k, 1, MAX_TOOL_RANKS, &k) != 0)
        goto cleanup;
    for (int l = 0; l < levels && leaves <= MAX_TOOL_RANKS; l++)
        leaves *= arity;
    if (leaves > MAX_TOOL_RANKS) {
        status = bad_args("--kary %d --levels %d: more than the %d leaves "
                          "this tool evaluates",
                          arity, levels, MAX_TOOL_RANKS);
        goto cleanup;
    }
    holes = malloc(MAX_TOOL_RANKS * sizeof *holes);
    if (holes == NULL) {
        fprintf(stderr, "gridcoll-sched: out of memory\n");
        status = 1;
        goto cleanup;
    }
    if (o->holes != NULL &&
        gc_sched_parse_int_list(o->holes, holes, MAX_TOOL_RANKS, &hole_count,
                                MAX_TOOL_RANKS, err, sizeof err) != 0) {
        status = bad_args("--holes: %s", err);
        goto cleanup;
    }
    if (gc_sched_karytree_init(&tree, arity, levels, holes, hole_count, err,
                               sizeof err) != 0) {
        status = bad_args("--holes: %s", err);
        goto cleanup;
    }
    if (gc_sched_allgather_init(&sched, strategy, tree.ranks, k, err,
                                sizeof err) != 0) {
        status = bad_args("--k: %s", err);
        goto cleanup;
    }

    status = 1;
    dst = malloc((size_t)tree.ranks * sizeof *dst);
    if (dst == NULL) {
        fprintf(stderr, "gridcoll-sched: out of memory\n");
        goto cleanup;
    }
    if (o->csv) {
        printf("phase,op,distance,messages,max_downlink_contention\n");
    } else {
        printf("allgather %s", o->strategy);
        if (needs_k)
            printf(" K=%d", k);
        printf(" on a %d-ary %d-tree (%d leaves, holes: %s): %d ranks, "
               "%d phases\n",
               arity, levels, tree.leaves, hole_count > 0 ? o->holes : "none",
               tree.ranks, gc_sched_allgather_phases(&sched));
        printf("%5s %8s %8s %23s\n", "phase", "peer", "messages",
               "max_downlink_contention");
    }
    for (int p = 0; p < gc_sched_allgather_phases(&sched); p++) {
        int load = print_allgather_phase(o, &sched, &tree, p, dst);
        contended += load > 1;
        if (load > worst)
            worst = load;
    }
    if (!o->csv)
        printf("\ncontended phases: %d of %d (worst down-link load %d)\n",
               contended, gc_sched_allgather_phases(&sched), worst);
    status = 0;
cleanup:
    free(dst);
    free(holes);
    gc_sched_allgather_free(&sched);
    gc_sched_karytree_free(&tree);
    return status;
}

int main(int argc, char **argv)
{
    struct options o = {0};
    int status = parse_options(argc, argv, &o);
    if (status == 1)
        status = 0; /* --help */
    else if (status == 0)
        status =
            o.command == CMD_ALLTOALL ? run_alltoall(&o) : run_allgather(&o);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gridcoll-sched: writing the output: %s\n",
                strerror(errno));
        status = 1;
    }
    return status;
}
