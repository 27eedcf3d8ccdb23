/*
 * The default model's place and name (default_model.h).  The file name is
 * a hash so that any layout, however long its machine file, has a valid
 * name of fixed length; the description inside the file says what the
 * hash stands for.
 */
#include "default_model.h"
#include "gridrun_env.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *dm_layout(const struct gr_job *job, bool machine_file, const char *wan)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (out == NULL)
        return NULL;
    if (machine_file)
        fputs("machine file: ", out);
    for (uint32_t i = 0; i < job->site_count; i++) {
        const struct gr_site *s = &job->sites[i];
        /* Machine-file sites carry comma-separated host lists. */
        const char *separator = machine_file ? "; " : ",";
        fprintf(out, "%s%s:%" PRIu32, i > 0 ? separator : "", s->name,
                s->count);
        if (machine_file) {
            fprintf(out, " relay=%s wan=%s", s->relay_host, s->wan);
            if (s->local[0] != '\0')
                fprintf(out, " local=%s", s->local);
            fprintf(out, " hosts=%s", s->mpi_hosts);
        }
    }
    if (wan[0] != '\0')
        fprintf(out, " wan=%s", wan);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int dm_dir(char *out, size_t len, char *err, size_t err_len)
{
    const char *base = gr_env(GR_ENV_MODEL_DIR);
    const char *below = "";
    if (base == NULL) {
        base = getenv("XDG_CACHE_HOME");
        below = "/gridcoll";
        if (base == NULL || base[0] != '/') {
            base = getenv("HOME");
            below = "/.cache/gridcoll";
        }
    }
    if (base == NULL || base[0] == '\0') {
        snprintf(err, err_len,
                 "no model directory: set GRIDCOLL_MODEL_DIR "
                 "or HOME");
        return -1;
    }
    /* Absolute: the ranks do not start in gridrun's directory. */
    char cwd[PATH_MAX] = "";
    if (base[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) {
        snprintf(err, err_len, "cannot resolve the model directory %s: %s",
                 base, strerror(errno));
        return -1;
    }
    int n = snprintf(out, len, "%s%s%s%s", cwd, cwd[0] != '\0' ? "/" : "", base,
                     below);
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, err_len, "the model directory %s%s is too long", base,
                 below);
        return -1;
    }
    return 0;
}

int dm_path(const char *dir, const char *layout, char *out, size_t len)
{
    uint64_t hash = UINT64_C(14695981039346656037);
    for (const char *p = layout; *p != '\0'; p++) {
        hash ^= (unsigned char)*p;
        hash *= UINT64_C(1099511628211);
    }
    int n = snprintf(out, len, "%s/model-%016" PRIx64 ".cfg", dir, hash);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int dm_make_dir(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* Each parent in turn; existing ones keep their mode. */
    for (char *slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
        if (slash != NULL)
            *slash = '\0';
        if (path[0] != '\0' && mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        if (slash == NULL)
            break;
        *slash = '/';
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
