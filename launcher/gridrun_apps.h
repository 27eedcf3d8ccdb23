/*
 * gridrun's applications (MPMD): the programs of a job and the grid ranks
 * each runs, from the command line's ':'-separated segments
 * (`-- ./atm ARGS : ./ocn ARGS`) or the machine file's program= lines.
 * Their order is the application number MPI_APPNUM (MPI 4.1 section
 * 11.10.3) that the ranks read from GRIDCOLL_APPNUM: hydra, started once
 * per site, would number the segments of each site from 0.
 */
#ifndef GRIDRUN_APPS_H
#define GRIDRUN_APPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "machinefile.h"

struct gr_app {
    char **argv;    /* program and arguments (not NULL-terminated) */
    int argc;       /* >= 1 */
    uint32_t n;     /* -n N of the segment; 0 = not given */
    uint32_t first; /* first grid rank, once placed */
    uint32_t count; /* ranks, once placed */
};

struct gr_apps {
    struct gr_app *app; /* malloc'd; in application-number order */
    uint32_t count;
};

/*
 * Split the words after '--' into applications at every word ':'.  A
 * segment is `[-n N] PROGRAM [ARGS...]`.  0, or -1 with a message for a
 * usage error in `err`: an empty segment, a word other than -n before the
 * program, -n on some segments only.
 */
int gr_apps_parse(char **words, int count, struct gr_apps *apps, char *err,
                  size_t err_len);

/* The sum of the segments' -n, or 0 when they give none. */
uint32_t gr_apps_given_ranks(const struct gr_apps *apps);

/*
 * Give each application its grid ranks: with -n, consecutive ranges of
 * those sizes, which must add up to `world_size`; without, one
 * application for the whole job, or one per site in site order
 * (`site_counts`, `site_count` entries), which needs as many segments as
 * sites.  0, or -1 with the reason in `err`.
 */
int gr_apps_place(struct gr_apps *apps, const uint32_t *site_counts,
                  uint32_t site_count, uint32_t world_size, char *err,
                  size_t err_len);

/*
 * Machine-file mode: the application of each site taking part is its
 * program= (`sites[i]`, NULL when it has none), else the command line's
 * (`cmdline`, count 0 when none was given, else one segment without -n).
 * Consecutive sites with the same command form one application.  0, or -1
 * with the reason in `err` (a site without a program).
 */
int gr_apps_from_sites(struct gr_apps *apps, const struct gr_apps *cmdline,
                       const struct mf_site *const *sites,
                       const uint32_t *site_counts, uint32_t site_count,
                       char *err, size_t err_len);

/*
 * The words a site's mpiexec ends with: for every application that has
 * ranks in [first, first + count), `-n N -env GRIDCOLL_APPNUM K PROGRAM
 * ARGS`, joined by ':' (hydra's own MPMD syntax, which numbers the site's
 * ranks in segment order as the grid does).  `with_appnum` false leaves
 * -env out (--native: one mpiexec numbers the applications itself).
 * `numbers` holds the texts, 32 bytes per application; returns the number
 * of words written to argv (at most gr_apps_max_words).
 */
size_t gr_apps_site_words(const struct gr_apps *apps, uint32_t first,
                          uint32_t count, bool with_appnum, char *numbers,
                          char **argv);
size_t gr_apps_max_words(const struct gr_apps *apps);

void gr_apps_free(struct gr_apps *apps);

#endif
