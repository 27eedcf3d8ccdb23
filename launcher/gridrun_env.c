/*
 * gridrun's own environment (gridrun_env.h).  The table below is the only
 * place the launcher declares a GRIDCOLL_* variable it reads: the reads
 * (gr_env), `gridrun --env` and docs/gridrun.md's ENVIRONMENT table (its
 * --markdown output) all walk it, so they cannot disagree.  Values are
 * read when asked for, not once: --no-model and --probe unset
 * GRIDCOLL_MODEL before it is read.
 */
#include "gridrun_env.h"

#include <stdlib.h>

#include "gc_util.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

struct env_var {
    const char *name;
    const char *shape; /* the value's form */
    const char *def;   /* what an unset variable means */
    const char *doc;
};

static const struct env_var vars[GR_ENV_COUNT] = {
    [GR_ENV_RELAY_BIN] = {"GRIDCOLL_RELAY_BIN", "program",
                          "gridrelay in gridrun's directory",
                          "The gridrelay gridrun starts for every site (with "
                          "--rsh: its path on the relay hosts)."},
    [GR_ENV_MPIEXEC] = {"GRIDCOLL_MPIEXEC", "program", "mpiexec from PATH",
                        "The MPICH (hydra) mpiexec that starts every site's "
                        "ranks."},
    [GR_ENV_WAN_BIN] = {"GRIDCOLL_WAN_BIN", "program",
                        "gridwan in gridrun's directory",
                        "The gridwan that emulates the WAN with --wan."},
    [GR_ENV_PROBE_BIN] = {"GRIDCOLL_PROBE_BIN", "program",
                          "gridcoll-probe in gridrun's directory",
                          "The gridcoll-probe that --probe runs as the job."},
    [GR_ENV_MODEL] = {"GRIDCOLL_MODEL", "file", "none",
                      "A model for the ranks when --model is not given (hydra "
                      "passes it on); when set, gridrun does not look for a "
                      "default model.  --no-model and --probe drop it."},
    [GR_ENV_MODEL_DIR] =
        {"GRIDCOLL_MODEL_DIR", "directory",
         "$XDG_CACHE_HOME/gridcoll, else $HOME/.cache/gridcoll",
         "Where the default models live, one model-HASH.cfg "
         "per layout (see DEFAULT MODEL)."},
    [GR_ENV_KEEP_FAILED] = {"GRIDCOLL_KEEP_FAILED",
                            "int 0.." STR(GR_KEEP_FAILED_MAX),
                            STR(GR_KEEP_FAILED_DEFAULT),
                            "Failed jobs' directories kept when --keep-failed "
                            "is not given; 0 keeps none."},
    [GR_ENV_SERVICE_CERT] = {"GRIDCOLL_SERVICE_CERT", "file", "none",
                             "The client certificate gridrun registers the "
                             "job with at the sites' services when "
                             "--service-cert is not given; its common name "
                             "becomes the job's owner."},
    [GR_ENV_SERVICE_KEY] = {"GRIDCOLL_SERVICE_KEY", "file", "none",
                            "That certificate's key, when --service-key is "
                            "not given."},
    [GR_ENV_SERVICE_CA] = {"GRIDCOLL_SERVICE_CA", "file", "none",
                           "The CA the services' certificates must chain to, "
                           "when --service-ca is not given."},
};

const char *gr_env(enum gr_env_var v)
{
    const char *value = getenv(vars[v].name);
    return value != NULL && value[0] != '\0' ? value : NULL;
}

const char *gr_env_name(enum gr_env_var v)
{
    return vars[v].name;
}

static void print_markdown(FILE *out)
{
    fputs("| variable | value | default | meaning |\n|---|---|---|---|\n", out);
    for (int i = 0; i < GR_ENV_COUNT; i++) {
        fprintf(out, "| `%s` | ", vars[i].name);
        gc_print_markdown_cell(out, vars[i].shape);
        fputs(" | ", out);
        gc_print_markdown_cell(out, vars[i].def);
        fputs(" | ", out);
        gc_print_markdown_cell(out, vars[i].doc);
        fputs(" |\n", out);
    }
}

void gr_env_print(FILE *out, bool markdown)
{
    if (markdown) {
        print_markdown(out);
        return;
    }
    gc_print_wrapped(out,
                     "gridrun reads these variables of its own environment "
                     "when it starts; an empty value counts as unset.  The "
                     "ranks' GRIDCOLL_* variables are listed by "
                     "gridcoll-info --settings.",
                     0);
    fputc('\n', out);
    for (int i = 0; i < GR_ENV_COUNT; i++) {
        const char *value = gr_env((enum gr_env_var)i);
        fprintf(out, "%s (%s, default %s)\n", vars[i].name, vars[i].shape,
                vars[i].def);
        if (value != NULL)
            fprintf(out, "    current: %s=%s\n", vars[i].name, value);
        gc_print_wrapped(out, vars[i].doc, 4);
    }
}

void gr_env_print_names(FILE *out, int indent)
{
    char line[GR_ENV_COUNT * 32] = "";
    size_t n = 0;
    for (int i = 0; i < GR_ENV_COUNT && n < sizeof line; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s",
                              i > 0 ? ", " : "", vars[i].name);
    gc_print_wrapped(out, line, indent);
}
