/*
 * gridrun's own environment: the GRIDCOLL_* variables the launcher reads
 * (not those it passes to the ranks, docs/gridrun.md ENVIRONMENT
 * CONTRACT).  One table declares them, gr_env() is the only reader, and
 * `gridrun --env [--markdown]` prints the table (the --markdown form is
 * docs/gridrun.md's ENVIRONMENT table).
 */
#ifndef GRIDRUN_ENV_H
#define GRIDRUN_ENV_H

#include <stdbool.h>
#include <stdio.h>

/* Failed jobs' directories kept by default (--keep-failed), and at most. */
#define GR_KEEP_FAILED_DEFAULT 5
#define GR_KEEP_FAILED_MAX     100000

enum gr_env_var {
    GR_ENV_RELAY_BIN,
    GR_ENV_MPIEXEC,
    GR_ENV_WAN_BIN,
    GR_ENV_PROBE_BIN,
    GR_ENV_MODEL,
    GR_ENV_MODEL_DIR,
    GR_ENV_KEEP_FAILED,
    GR_ENV_SERVICE_CERT,
    GR_ENV_SERVICE_KEY,
    GR_ENV_SERVICE_CA,
    GR_ENV_COUNT
};

/* The variable's value now; NULL when unset or empty (both mean "use the
 * default" for every variable). */
const char *gr_env(enum gr_env_var v);

/* GRIDCOLL_..., for messages. */
const char *gr_env_name(enum gr_env_var v);

/* Every variable: name, value, default and meaning, with its current
 * value when set; `markdown`: the same as one Markdown table. */
void gr_env_print(FILE *out, bool markdown);

/* The variables' names, comma-separated and wrapped, for --help. */
void gr_env_print_names(FILE *out, int indent);

#endif
