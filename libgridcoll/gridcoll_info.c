/*
 * gridcoll-info: what this libgridcoll build offers.  `--algorithms` lists
 * every collective's algorithms with description and restrictions, the
 * environment variables that force them, and the default rules;
 * `--algorithms --csv` the algorithms as CSV for scripts and tests.  No
 * MPI job is needed.
 */
#include <stdio.h>
#include <string.h>

#include "gc_coll_algo.h"
#include "gridcoll.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridcoll-info [--algorithms [--csv] | --version | --help]\n"
        "  --algorithms  every collective algorithm on grid communicators,\n"
        "                with restrictions, the variable forcing it and\n"
        "                the default choice\n"
        "  --csv         with --algorithms: one CSV row per collective\n"
        "                and algorithm: coll,algo,description,restrictions\n"
        "  --version     the libgridcoll version\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--algorithms") == 0) {
        coll_print_algorithms(stdout);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--algorithms") == 0 &&
        strcmp(argv[2], "--csv") == 0) {
        coll_print_algorithms_csv(stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("libgridcoll %s\n", GRIDCOLL_VERSION);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (argc > 1)
        fprintf(stderr, "gridcoll-info: unknown argument '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
