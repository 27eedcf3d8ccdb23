/*
 * gridcoll-info: what this libgridcoll build offers.  `--algorithms` lists
 * every collective's algorithms, grid and site level, with description
 * and restrictions, the environment variables that force them, and the
 * default rules;
 * `--algorithms --csv` the algorithms as CSV for scripts and tests;
 * `--settings` every GRIDCOLL_* variable the library reads, with its
 * default, its value here when set and its documentation (`--markdown`:
 * the table of docs/gridcoll.md, "Settings");
 * `--model FILE --predict COLL ...` what model mode predicts and picks
 * (docs/model.md).  No MPI job is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_model.h"
#include "core/gc_settings.h"
#include "gridcoll.h"

#define MAX_BYTES 64
#define MAX_ALGOS 32

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gridcoll-info [--algorithms [--csv] | --settings [--markdown] "
        "|\n"
        "                      --version | --help]\n"
        "       gridcoll-info --model FILE --predict COLL --site-sizes A,B,..\n"
        "                     --bytes B[,B...] [--csv]\n"
        "  --algorithms  every collective algorithm on grid communicators,\n"
        "                grid and site level (the phase inside each site),\n"
        "                with restrictions, the variable forcing it and\n"
        "                the default choice\n"
        "  --csv         with --algorithms: one CSV row per collective\n"
        "                and algorithm: coll,level,algo,description,\n"
        "                restrictions,blocking\n"
        "  --settings    every GRIDCOLL_* environment variable libgridcoll\n"
        "                reads: form, default, who sets it, its value in\n"
        "                this environment when set (checked as MPI_Init\n"
        "                checks it) and what it does\n"
        "  --markdown    with --settings: the same as a Markdown table\n"
        "  --predict     the predicted time of every algorithm of COLL with\n"
        "                a cost function, from the model FILE, on the\n"
        "                model's first sites with A, B, ... ranks (root 0),\n"
        "                for each size (bytes as in struct coll_args: the\n"
        "                whole buffer for bcast and reductions, one pair's\n"
        "                block for alltoall; K, M, G suffixes), at the\n"
        "                segment size model mode would use; chosen=1 marks\n"
        "                the algorithm it picks.  Rows (--csv: CSV)\n"
        "                coll,algo,sites,ranks,bytes,segsize,predicted_us,\n"
        "                chosen.  Assumes a call every algorithm can run\n"
        "                (e.g. a commutative op)\n"
        "  --version     the libgridcoll version\n");
}

/* A comma-separated list of sizes (gc_settings_parse_size); the count, or -1.
 */
static int parse_list(const char *text, size_t *values, int max)
{
    char copy[1024];
    if (strlen(text) >= sizeof copy)
        return -1;
    strcpy(copy, text);
    int count = 0;
    for (char *save, *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (count == max || gc_settings_parse_size(item, &values[count]) != 0)
            return -1;
        count++;
    }
    return count;
}

static const struct coll_table *table_named(const char *name)
{
    for (int k = 0; k < GC_COLL_KINDS; k++)
        if (strcmp(gc_coll_kind_name((enum gc_coll_kind)k), name) == 0)
            return coll_table_of((enum gc_coll_kind)k);
    return NULL;
}

struct predict_options {
    const char *model;
    const char *coll;
    const char *site_sizes;
    const char *bytes;
    int csv;
};

static int predict(const struct predict_options *o)
{
    static struct gc_model model;
    char err[512];
    size_t sizes[GC_MODEL_MAX_SITES], bytes[MAX_BYTES];
    int site_size[GC_MODEL_MAX_SITES], model_site[GC_MODEL_MAX_SITES];
    const struct coll_table *t = table_named(o->coll);
    if (t == NULL) {
        fprintf(stderr, "gridcoll-info: --predict: no collective '%s'\n",
                o->coll);
        return 2;
    }
    int sites = parse_list(o->site_sizes, sizes, GC_MODEL_MAX_SITES);
    int nbytes = parse_list(o->bytes, bytes, MAX_BYTES);
    if (sites < 2 || nbytes < 1) {
        fprintf(stderr, "gridcoll-info: --predict needs --site-sizes A,B,.. "
                        "(two or more sites) and --bytes B[,B...] "
                        "(positive)\n");
        return 2;
    }
    if (gc_model_load(o->model, &model, err, sizeof err) != 0) {
        fprintf(stderr, "gridcoll-info: %s\n", err);
        return 1;
    }
    if (sites > model.site_count) {
        fprintf(stderr,
                "gridcoll-info: --site-sizes: %d sites, the model has %d\n",
                sites, model.site_count);
        return 2;
    }
    int ranks = 0;
    for (int s = 0; s < sites; s++) {
        if (sizes[s] > 16777216) {
            fprintf(stderr, "gridcoll-info: --site-sizes: too many ranks\n");
            return 2;
        }
        site_size[s] = (int)sizes[s];
        model_site[s] = s;
        ranks += site_size[s];
    }
    struct coll_prediction out[MAX_ALGOS];
    if (t->algo_count > MAX_ALGOS)
        return 1;
    int any = 0;
    for (int i = 0; i < t->algo_count; i++)
        any = any || t->algos[i].cost != NULL;
    if (!any) {
        fprintf(stderr,
                "gridcoll-info: %s has no cost functions: its default rules "
                "decide, model or not\n",
                coll_table_name(t));
        return 1;
    }
    printf(o->csv ? "coll,algo,sites,ranks,bytes,segsize,predicted_us,chosen\n"
                  : "%-10s %-18s %5s %6s %10s %9s %14s %6s\n",
           "coll", "algo", "sites", "ranks", "bytes", "segsize", "predicted_us",
           "chosen");
    for (int b = 0; b < nbytes; b++) {
        struct coll_cost_args c = {
            .site_count = sites,
            .size = ranks,
            .site_size = site_size,
            .model = &model,
            .model_site = model_site,
            .root_site = 0,
            .bytes = bytes[b],
        };
        int best = coll_model_choose(t, &c, 0, NULL, out);
        for (int i = 0; i < t->algo_count; i++) {
            if (!out[i].candidate)
                continue;
            printf(o->csv ? "%s,%s,%d,%d,%zu,%zu,%.1f,%d\n"
                          : "%-10s %-18s %5d %6d %10zu %9zu %14.1f %6d\n",
                   coll_table_name(t), t->algos[i].name, sites, ranks, bytes[b],
                   out[i].segsize, out[i].cost * 1e6, i == best);
        }
    }
    return 0;
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
    if (argc == 2 && strcmp(argv[1], "--settings") == 0) {
        gc_settings_print(stdout, 0, coll_setting_note);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--settings") == 0 &&
        strcmp(argv[2], "--markdown") == 0) {
        gc_settings_print(stdout, 1, coll_setting_note);
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
    struct predict_options o = {0};
    for (int i = 1; i < argc; i++) {
        const char **value = NULL;
        if (strcmp(argv[i], "--model") == 0)
            value = &o.model;
        else if (strcmp(argv[i], "--predict") == 0)
            value = &o.coll;
        else if (strcmp(argv[i], "--site-sizes") == 0)
            value = &o.site_sizes;
        else if (strcmp(argv[i], "--bytes") == 0)
            value = &o.bytes;
        else if (strcmp(argv[i], "--csv") == 0) {
            o.csv = 1;
            continue;
        } else {
            fprintf(stderr, "gridcoll-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "gridcoll-info: %s needs a value\n", argv[i]);
            return 2;
        }
        *value = argv[++i];
    }
    if (o.model != NULL && o.coll != NULL && o.site_sizes != NULL &&
        o.bytes != NULL)
        return predict(&o);
    usage(stderr);
    return 2;
}
