/*
 * gridrun's applications (gridrun_apps.h; docs/gridrun.md, MPMD).
 *
 * Every application is a consecutive range of grid ranks, as with
 * mpiexec's colon syntax, so a site's mpiexec runs a consecutive piece of
 * each application it hosts, in application order: hydra's MPMD syntax
 * then numbers the site's ranks exactly as the grid does (site offset +
 * MPICH rank), and a boundary between applications may fall anywhere,
 * inside a site as well.
 */
#include "gridrun_apps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 16777216u

/* The words of one -n per segment: "-n N -env GRIDCOLL_APPNUM K" and ':'. */
#define WORDS_PER_APP 7

static int parse_count(const char *s, uint32_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > MAX_RANKS)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int gr_apps_parse(char **words, int count, struct gr_apps *apps, char *err,
                  size_t err_len)
{
    uint32_t segments = 1;
    for (int i = 0; i < count; i++)
        segments += strcmp(words[i], ":") == 0;
    apps->app = calloc(segments, sizeof *apps->app);
    apps->count = 0;
    if (apps->app == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int i = 0;
    for (uint32_t k = 0; k < segments; k++) {
        struct gr_app *a = &apps->app[apps->count++];
        if (i + 1 < count && strcmp(words[i], "-n") == 0) {
            if (parse_count(words[i + 1], &a->n) != 0) {
                snprintf(err, err_len, "segment %u: -n must be 1..%u, not '%s'",
                         k + 1, MAX_RANKS, words[i + 1]);
                return -1;
            }
            i += 2;
        }
        int start = i;
        while (i < count && strcmp(words[i], ":") != 0)
            i++;
        if (i == start) {
            snprintf(err, err_len,
                     "segment %u has no program (every ':' needs a "
                     "program on both sides: PROGRAM [ARGS] : PROGRAM "
                     "[ARGS])",
                     k + 1);
            return -1;
        }
        if (words[start][0] == '-') {
            snprintf(err, err_len,
                     "segment %u: '%s' is not a program (only -n N may "
                     "come before the program)",
                     k + 1, words[start]);
            return -1;
        }
        a->argv = words + start;
        a->argc = i - start;
        i++; /* the ':' */
        if ((a->n == 0) != (apps->app[0].n == 0)) {
            snprintf(err, err_len,
                     "segment %u has %s -n but segment 1 has %s: give -n N "
                     "on every segment or on none",
                     k + 1, a->n ? "a" : "no", a->n ? "none" : "one");
            return -1;
        }
    }
    return 0;
}

uint32_t gr_apps_given_ranks(const struct gr_apps *apps)
{
    uint64_t sum = 0;
    for (uint32_t k = 0; k < apps->count; k++)
        sum += apps->app[k].n;
    return sum > MAX_RANKS ? MAX_RANKS + 1 : (uint32_t)sum;
}

int gr_apps_place(struct gr_apps *apps, const uint32_t *site_counts,
                  uint32_t site_count, uint32_t world_size, char *err,
                  size_t err_len)
{
    bool given = apps->app[0].n != 0;
    if (given && gr_apps_given_ranks(apps) != world_size) {
        snprintf(err, err_len,
                 "the segments' -n add up to %u ranks but the job has %u",
                 gr_apps_given_ranks(apps), world_size);
        return -1;
    }
    if (!given && apps->count > 1 && apps->count != site_count) {
        snprintf(err, err_len,
                 "%u segments without -n but %u sites: give one segment "
                 "per site (in site order), or -n N on every segment",
                 apps->count, site_count);
        return -1;
    }
    uint32_t first = 0;
    for (uint32_t k = 0; k < apps->count; k++) {
        struct gr_app *a = &apps->app[k];
        a->first = first;
        a->count = given ? a->n : apps->count > 1 ? site_counts[k] : world_size;
        first += a->count;
    }
    return 0;
}

static bool same_command(char **a, int an, char **b, int bn)
{
    if (an != bn)
        return false;
    for (int i = 0; i < an; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

int gr_apps_from_sites(struct gr_apps *apps, const struct gr_apps *cmdline,
                       const struct mf_site *const *sites,
                       const uint32_t *site_counts, uint32_t site_count,
                       char *err, size_t err_len)
{
    apps->app = calloc(site_count, sizeof *apps->app);
    apps->count = 0;
    if (apps->app == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    uint32_t first = 0;
    for (uint32_t i = 0; i < site_count; i++) {
        char **argv;
        int argc;
        if (sites[i]->program != NULL) {
            argv = sites[i]->program;
            argc = sites[i]->program_argc;
        } else if (cmdline->count == 1) {
            argv = cmdline->app[0].argv;
            argc = cmdline->app[0].argc;
        } else {
            snprintf(err, err_len,
                     "site '%s' has no program: give its lines a "
                     "program=PATH, or a program after '--'",
                     sites[i]->name);
            return -1;
        }
        struct gr_app *last =
            apps->count > 0 ? &apps->app[apps->count - 1] : NULL;
        if (last != NULL && same_command(last->argv, last->argc, argv, argc)) {
            last->count += site_counts[i];
        } else {
            struct gr_app *a = &apps->app[apps->count++];
            a->argv = argv;
            a->argc = argc;
            a->first = first;
            a->count = site_counts[i];
        }
        first += site_counts[i];
    }
    return 0;
}

size_t gr_apps_max_words(const struct gr_apps *apps)
{
    size_t words = 0;
    for (uint32_t k = 0; k < apps->count; k++)
        words += (size_t)apps->app[k].argc + WORDS_PER_APP;
    return words;
}

size_t gr_apps_site_words(const struct gr_apps *apps, uint32_t first,
                          uint32_t count, bool with_appnum, char *numbers,
                          char **argv)
{
    size_t a = 0;
    for (uint32_t k = 0; k < apps->count; k++) {
        const struct gr_app *app = &apps->app[k];
        uint32_t lo = app->first > first ? app->first : first;
        uint32_t end_app = app->first + app->count, end_site = first + count;
        uint32_t hi = end_app < end_site ? end_app : end_site;
        if (lo >= hi)
            continue;
        char *n = numbers + 32 * (size_t)k, *appnum = n + 16;
        snprintf(n, 16, "%u", hi - lo);
        snprintf(appnum, 16, "%u", k);
        if (a > 0)
            argv[a++] = ":";
        argv[a++] = "-n";
        argv[a++] = n;
        if (with_appnum) {
            argv[a++] = "-env";
            argv[a++] = "GRIDCOLL_APPNUM";
            argv[a++] = appnum;
        }
        for (int i = 0; i < app->argc; i++)
            argv[a++] = app->argv[i];
    }
    return a;
}

void gr_apps_free(struct gr_apps *apps)
{
    free(apps->app);
    apps->app = NULL;
    apps->count = 0;
}
