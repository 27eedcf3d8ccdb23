/*
 * Model files (gc_model.h, docs/model.md).  The key tables below are the
 * only place a key is declared, as in relay/relay_config.c: loading,
 * bounds and writing all walk them.
 */
#include "core/gc_model.h"

#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum field_type { FIELD_NAME, FIELD_INT, FIELD_DOUBLE };

struct field_spec {
    const char *name;
    enum field_type type;
    size_t offset;
    double min, max;
};

#define SITE_FIELD(m) offsetof(struct gc_model_site, m)
#define LINK_FIELD(m) offsetof(struct gc_model_link, m)

/* Bounds are what a grid can plausibly show, wide enough for any real
 * network; they catch unit mistakes (microseconds for seconds). */
static const struct field_spec site_fields[] = {
    {"name", FIELD_NAME, SITE_FIELD(name), 0, 0},
    {"size", FIELD_INT, SITE_FIELD(size), 1, 16777216},
    {"alpha", FIELD_DOUBLE, SITE_FIELD(alpha), 0, 1},
    {"beta", FIELD_DOUBLE, SITE_FIELD(beta), 0, 1e-3},
    {"gamma", FIELD_DOUBLE, SITE_FIELD(gamma), 0.01, 1000},
    {"delta", FIELD_DOUBLE, SITE_FIELD(delta), 0, 10},
    {"threshold", FIELD_DOUBLE, SITE_FIELD(threshold), 0, 1099511627776.0},
};

static const struct field_spec link_fields[] = {
    {"alpha", FIELD_DOUBLE, LINK_FIELD(alpha), 0, 60},
    {"beta", FIELD_DOUBLE, LINK_FIELD(beta), 0, 1e-3},
    {"gap", FIELD_DOUBLE, LINK_FIELD(gap), 0, 10},
    {"beta_bulk", FIELD_DOUBLE, LINK_FIELD(beta_bulk), 0, 1e-3},
};

#define COUNT(a) (sizeof a / sizeof *a)

struct loader {
    const char *path;
    char *err;
    size_t err_size;
};

__attribute__((format(printf, 3, 4))) static int
fail(const struct loader *l, const config_setting_t *at, const char *fmt, ...)
{
    char text[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    unsigned line = at != NULL ? config_setting_source_line(at) : 0;
    if (line > 0)
        snprintf(l->err, l->err_size, "%s:%u: %s", l->path, line, text);
    else
        snprintf(l->err, l->err_size, "%s: %s", l->path, text);
    return -1;
}

static int is_number(const config_setting_t *s)
{
    int type = config_setting_type(s);
    return type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64 ||
           type == CONFIG_TYPE_FLOAT;
}

static double number_of(const config_setting_t *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: return config_setting_get_int(s);
    case CONFIG_TYPE_INT64: return (double)config_setting_get_int64(s);
    default: return config_setting_get_float(s);
    }
}

static int valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > GC_MODEL_NAME_MAX)
        return 0;
    for (const char *p = name; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Every member of `group` is one of `fields` (or of `extra`, NULL
 * terminated), every field is there and in bounds; values stored at
 * `base`. */
static int load_fields(const struct loader *l, const config_setting_t *group,
                       const char *where, const struct field_spec *fields,
                       size_t count, const char *const *extra, void *base)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *member = config_setting_get_elem(group, i);
        const char *name = config_setting_name(member);
        int known = 0;
        for (const char *const *e = extra; e != NULL && *e != NULL; e++)
            known = known || strcmp(name, *e) == 0;
        for (size_t f = 0; f < count && !known; f++)
            known = strcmp(fields[f].name, name) == 0;
        if (!known)
            return fail(l, member, "%s: unknown key '%s'", where, name);
    }
    for (size_t f = 0; f < count; f++) {
        const struct field_spec *spec = &fields[f];
        const config_setting_t *s =
            config_setting_get_member(group, spec->name);
        if (s == NULL)
            return fail(l, group, "%s: missing key '%s'", where, spec->name);
        char *at = (char *)base + spec->offset;
        if (spec->type == FIELD_NAME) {
            const char *text = config_setting_get_string(s);
            if (text == NULL || !valid_name(text))
                return fail(l, s,
                            "%s.%s: want a site name (letters, digits, '_', "
                            "'-', at most %d)",
                            where, spec->name, GC_MODEL_NAME_MAX);
            snprintf(at, GC_MODEL_NAME_MAX + 1, "%s", text);
            continue;
        }
        if (!is_number(s) || (spec->type == FIELD_INT &&
                              config_setting_type(s) != CONFIG_TYPE_INT))
            return fail(l, s, "%s.%s: want %s", where, spec->name,
                        spec->type == FIELD_INT ? "an integer" : "a number");
        double v = number_of(s);
        if (!(v >= spec->min && v <= spec->max))
            return fail(l, s, "%s.%s = %g is out of bounds (%g..%g)", where,
                        spec->name, v, spec->min, spec->max);
        if (spec->type == FIELD_INT)
            *(int *)(void *)at = (int)v;
        else
            *(double *)(void *)at = v;
    }
    return 0;
}

static int load_sites(const struct loader *l, const config_t *cfg,
                      struct gc_model *m)
{
    const config_setting_t *list = config_lookup(cfg, "sites");
    if (list == NULL)
        return fail(l, NULL, "missing key 'sites'");
    if (!config_setting_is_list(list) || config_setting_length(list) < 2 ||
        config_setting_length(list) > GC_MODEL_MAX_SITES)
        return fail(l, list,
                    "sites: want a list of 2..%d groups ( {...}, ... )",
                    GC_MODEL_MAX_SITES);
    m->site_count = config_setting_length(list);
    for (int i = 0; i < m->site_count; i++) {
        const config_setting_t *group = config_setting_get_elem(list, i);
        char where[32];
        snprintf(where, sizeof where, "sites[%d]", i);
        if (!config_setting_is_group(group))
            return fail(l, group, "%s: want a group { ... }", where);
        if (load_fields(l, group, where, site_fields, COUNT(site_fields), NULL,
                        &m->sites[i]) != 0)
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp(m->sites[j].name, m->sites[i].name) == 0)
                return fail(l, group, "%s: site '%s' is listed twice", where,
                            m->sites[i].name);
    }
    return 0;
}

/* The optional curves of a link: key and place (gc_model_curve). */
static const struct {
    const char *key;
    size_t offset;
} link_curves[] = {
    {"one_way", offsetof(struct gc_model_link, one_way)},
    {"exchange", offsetof(struct gc_model_link, exchange)},
};

/* links.KEY: ( [bytes, seconds], ... ), sizes increasing; absent: none. */
static int load_curve(const struct loader *l, const config_setting_t *group,
                      const char *where, const char *key,
                      struct gc_model_curve *curve)
{
    const config_setting_t *list = config_setting_get_member(group, key);
    curve->count = 0;
    if (list == NULL)
        return 0;
    int count = config_setting_length(list);
    if (!config_setting_is_list(list) || count < 1 ||
        count > GC_MODEL_MAX_SAMPLES)
        return fail(l, list,
                    "%s.%s: want a list of 1..%d pairs "
                    "( [bytes, seconds], ... )",
                    where, key, GC_MODEL_MAX_SAMPLES);
    for (int i = 0; i < count; i++) {
        const config_setting_t *pair = config_setting_get_elem(list, i);
        if (config_setting_type(pair) != CONFIG_TYPE_ARRAY ||
            config_setting_length(pair) != 2 ||
            !is_number(config_setting_get_elem(pair, 0)))
            return fail(l, pair,
                        "%s.%s[%d]: want [bytes, seconds] (two floats)", where,
                        key, i);
        double bytes = number_of(config_setting_get_elem(pair, 0)),
               time = number_of(config_setting_get_elem(pair, 1));
        if (!(bytes >= 0 && bytes <= 1099511627776.0) ||
            !(time >= 0 && time <= 60))
            return fail(l, pair,
                        "%s.%s[%d] = [%g, %g] is out of bounds "
                        "(0..2^40 bytes, 0..60 s)",
                        where, key, i, bytes, time);
        if (i > 0 && bytes <= curve->bytes[i - 1])
            return fail(l, pair, "%s.%s[%d]: sizes must increase (%g after %g)",
                        where, key, i, bytes, curve->bytes[i - 1]);
        curve->bytes[i] = bytes;
        curve->time[i] = time;
    }
    curve->count = count;
    return 0;
}

static int load_links(const struct loader *l, const config_t *cfg,
                      struct gc_model *m)
{
    const config_setting_t *list = config_lookup(cfg, "links");
    if (list == NULL)
        return fail(l, NULL, "missing key 'links'");
    if (!config_setting_is_list(list))
        return fail(l, list, "links: want a list of groups ( {...}, ... )");
    char seen[GC_MODEL_MAX_SITES * GC_MODEL_MAX_SITES] = {0};
    for (int i = 0; i < config_setting_length(list); i++) {
        const config_setting_t *group = config_setting_get_elem(list, i);
        char where[32];
        snprintf(where, sizeof where, "links[%d]", i);
        if (!config_setting_is_group(group))
            return fail(l, group, "%s: want a group { ... }", where);
        const config_setting_t *pair =
            config_setting_get_member(group, "sites");
        if (pair == NULL)
            return fail(l, group, "%s: missing key 'sites'", where);
        int ends[2];
        for (int e = 0; e < 2; e++) {
            const char *name = config_setting_get_string_elem(pair, e);
            if (config_setting_type(pair) != CONFIG_TYPE_ARRAY ||
                config_setting_length(pair) != 2 || name == NULL)
                return fail(l, pair,
                            "%s.sites: want two site names [\"a\", \"b\"]",
                            where);
            ends[e] = gc_model_site_index(m, name);
            if (ends[e] < 0)
                return fail(l, pair, "%s.sites: '%s' is not in sites", where,
                            name);
        }
        if (ends[0] == ends[1])
            return fail(l, pair, "%s.sites: a link joins two different sites",
                        where);
        int ab = ends[0] * m->site_count + ends[1],
            ba = ends[1] * m->site_count + ends[0];
        if (seen[ab])
            return fail(l, group, "%s: sites %s and %s are linked twice", where,
                        m->sites[ends[0]].name, m->sites[ends[1]].name);
        static const char *const link_extra[] = {"sites", "one_way", "exchange",
                                                 NULL};
        if (load_fields(l, group, where, link_fields, COUNT(link_fields),
                        link_extra, &m->links[ab]) != 0)
            return -1;
        for (size_t c = 0; c < COUNT(link_curves); c++) {
            char *link = (char *)&m->links[ab];
            if (load_curve(l, group, where, link_curves[c].key,
                           (void *)(link + link_curves[c].offset)) != 0)
                return -1;
        }
        m->links[ba] = m->links[ab];
        seen[ab] = seen[ba] = 1;
    }
    for (int a = 0; a < m->site_count; a++)
        for (int b = a + 1; b < m->site_count; b++)
            if (!seen[a * m->site_count + b])
                return fail(l, list, "links: no link between sites %s and %s",
                            m->sites[a].name, m->sites[b].name);
    return 0;
}

static int load_config(const struct loader *l, const config_t *cfg,
                       struct gc_model *m)
{
    const config_setting_t *root = config_root_setting(cfg);
    for (int i = 0; i < config_setting_length(root); i++) {
        const config_setting_t *s = config_setting_get_elem(root, i);
        const char *name = config_setting_name(s);
        if (strcmp(name, "version") != 0 && strcmp(name, "sites") != 0 &&
            strcmp(name, "links") != 0)
            return fail(l, s, "unknown key '%s' (want version, sites, links)",
                        name);
    }
    const config_setting_t *version = config_lookup(cfg, "version");
    if (version == NULL)
        return fail(l, NULL, "missing key 'version'");
    if (config_setting_type(version) != CONFIG_TYPE_INT ||
        config_setting_get_int(version) != GC_MODEL_VERSION)
        return fail(l, version, "version: this libgridcoll reads version %d",
                    GC_MODEL_VERSION);
    if (load_sites(l, cfg, m) != 0)
        return -1;
    return load_links(l, cfg, m);
}

int gc_model_load(const char *path, struct gc_model *m, char *err,
                  size_t err_size)
{
    struct loader l = {path, err, err_size};
    memset(m, 0, sizeof *m);
    config_t cfg;
    config_init(&cfg);
    int status = 0;
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        status = -1;
    } else if (config_read(&cfg, in) != CONFIG_TRUE) {
        snprintf(err, err_size, "%s:%d: %s", path, config_error_line(&cfg),
                 config_error_text(&cfg));
        status = -1;
    } else {
        status = load_config(&l, &cfg, m);
    }
    if (in != NULL)
        fclose(in);
    config_destroy(&cfg);
    return status;
}

/* Piecewise linear through the samples, flat below the first, `beyond`
 * per byte above the last. */
static double curve_at(const struct gc_model_curve *c, double m, double beyond)
{
    if (m <= c->bytes[0])
        return c->time[0];
    for (int i = 1; i < c->count; i++)
        if (m <= c->bytes[i]) {
            double x0 = c->bytes[i - 1], t0 = c->time[i - 1];
            return t0 + (m - x0) / (c->bytes[i] - x0) * (c->time[i] - t0);
        }
    return c->time[c->count - 1] + (m - c->bytes[c->count - 1]) * beyond;
}

double gc_model_one_way(const struct gc_model_link *l, double m)
{
    if (l->one_way.count == 0)
        return l->alpha + m * l->beta;
    return curve_at(&l->one_way, m, l->beta);
}

double gc_model_exchange(const struct gc_model_link *l, double m)
{
    if (l->exchange.count == 0)
        return 0;
    return curve_at(&l->exchange, m, l->beta_bulk > 0 ? l->beta_bulk : l->beta);
}

int gc_model_site_index(const struct gc_model *m, const char *name)
{
    for (int i = 0; i < m->site_count; i++)
        if (strcmp(m->sites[i].name, name) == 0)
            return i;
    return -1;
}

static void write_fields(FILE *out, const struct field_spec *fields,
                         size_t count, const void *base)
{
    for (size_t f = 0; f < count; f++) {
        const char *at = (const char *)base + fields[f].offset;
        switch (fields[f].type) {
        case FIELD_NAME:
            fprintf(out, " %s = \"%s\";", fields[f].name, at);
            break;
        case FIELD_INT:
            fprintf(out, " %s = %d;", fields[f].name,
                    *(const int *)(const void *)at);
            break;
        case FIELD_DOUBLE:
            /* %e: libconfig takes it as a float even when it is whole. */
            fprintf(out, " %s = %.6e;", fields[f].name,
                    *(const double *)(const void *)at);
            break;
        }
    }
}

int gc_model_write(const struct gc_model *m, const char *path,
                   const char *comment)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return -1;
    fprintf(out,
            "# GridColl performance model (docs/model.md); seconds, bytes.\n");
    for (const char *line = comment; line != NULL && *line != '\0';) {
        size_t len = strcspn(line, "\n");
        fprintf(out, "# %.*s\n", (int)len, line);
        line += len + (line[len] == '\n');
    }
    fprintf(out, "version = %d;\nsites = (\n", GC_MODEL_VERSION);
    for (int i = 0; i < m->site_count; i++) {
        fprintf(out, "  {");
        write_fields(out, site_fields, COUNT(site_fields), &m->sites[i]);
        fprintf(out, " }%s\n", i + 1 < m->site_count ? "," : "");
    }
    fprintf(out, ");\nlinks = (\n");
    for (int a = 0; a < m->site_count; a++)
        for (int b = a + 1; b < m->site_count; b++) {
            fprintf(out, "  { sites = [\"%s\", \"%s\"];", m->sites[a].name,
                    m->sites[b].name);
            const struct gc_model_link *l = gc_model_link(m, a, b);
            write_fields(out, link_fields, COUNT(link_fields), l);
            for (size_t c = 0; c < COUNT(link_curves); c++) {
                const struct gc_model_curve *curve =
                    (const void *)((const char *)l + link_curves[c].offset);
                if (curve->count == 0)
                    continue;
                fprintf(out, "\n    %s = (", link_curves[c].key);
                for (int i = 0; i < curve->count; i++)
                    fprintf(out, "%s[%.6e, %.6e]", i > 0 ? ", " : " ",
                            curve->bytes[i], curve->time[i]);
                fprintf(out, " );");
            }
            fprintf(out, " }%s\n",
                    a + 2 < m->site_count || b + 1 < m->site_count ? "," : "");
        }
    fprintf(out, ");\n");
    /* On disk before the writer renames it into place (gridrun --probe). */
    int status =
        fflush(out) != 0 || ferror(out) || fsync(fileno(out)) != 0 ? -1 : 0;
    if (fclose(out) != 0)
        status = -1;
    return status;
}

static const struct gc_model *active_model;
static const int *active_site_map;

const struct gc_model *gc_model_active(const int **site_map)
{
    *site_map = active_site_map;
    return active_model;
}

void gc_model_set_active(const struct gc_model *m, const int *site_map)
{
    active_model = m;
    active_site_map = site_map;
}
