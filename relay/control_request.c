/*
 * Parsing what launchers send the control endpoint (control_request.h).
 *
 * A registration body reuses the configuration's syntax (libconfig), so
 * errors name a line:
 *
 *   job_id = 4021; token = "<hex>"; lease = 30;
 *   sites = ( { name = "north"; first_rank = 0; rank_count = 4; }, ... );
 *
 * libconfig 1.5 has no switch for its @include directive, which would make
 * the service open any path a tenant names (a directory made the parser
 * exit the process, a FIFO blocked the loop, the answer told whether a file
 * exists).  Nothing in a registration needs an '@' (names are
 * [A-Za-z0-9_-], the token is hex), so a body with one is refused before
 * the parser runs: the scanner never sees a directive.
 */
#include "control_request.h"

#include <libconfig.h>
#include <stdio.h>
#include <string.h>

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_token(const char *hex, struct job_request *jr)
{
    size_t len = strlen(hex);
    if (len < 32 || len % 2 != 0 || len / 2 > sizeof jr->token)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        jr->token[i] = (uint8_t)(hi << 4 | lo);
    }
    jr->token_len = len / 2;
    return 0;
}

/* A whole number setting within [min, max]; else a message in `err`. */
static int get_number(const config_setting_t *group, const char *name,
                      long long min, long long max, long long *out, char *err,
                      size_t err_len)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    if (s == NULL) {
        int line = config_setting_source_line(group);
        if (line > 0)
            snprintf(err, err_len, "line %d: missing '%s'", line, name);
        else
            snprintf(err, err_len, "missing '%s'", name);
        return -1;
    }
    int type = config_setting_type(s);
    if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64) {
        snprintf(err, err_len, "line %d: '%s' must be an integer",
                 config_setting_source_line(s), name);
        return -1;
    }
    *out = config_setting_get_int64(s);
    if (*out < min || *out > max) {
        snprintf(err, err_len, "line %d: '%s' = %lld is outside %lld..%lld",
                 config_setting_source_line(s), name, *out, min, max);
        return -1;
    }
    return 0;
}

static int valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > GC_NAME_MAX)
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_-") == len;
}

static int parse_sites(const config_setting_t *list, struct job_request *jr,
                       char *err, size_t err_len)
{
    if (list == NULL || config_setting_type(list) != CONFIG_TYPE_LIST ||
        config_setting_length(list) < 1 ||
        config_setting_length(list) > (int)GC_JOB_SITES_MAX) {
        snprintf(err, err_len, "'sites' must be a list of 1 to %u groups",
                 GC_JOB_SITES_MAX);
        return -1;
    }
    jr->site_count = (uint32_t)config_setting_length(list);
    jr->rank_total = 0;
    for (uint32_t i = 0; i < jr->site_count; i++) {
        const config_setting_t *g = config_setting_get_elem(list, i);
        struct gc_job_site *site = &jr->sites[i];
        const char *name = NULL;
        long long first, count;
        if (config_setting_type(g) != CONFIG_TYPE_GROUP ||
            !config_setting_lookup_string(g, "name", &name) ||
            !valid_name(name)) {
            snprintf(err, err_len,
                     "line %d: sites[%u] needs a name of 1 to %u letters, "
                     "digits, '_' or '-'",
                     config_setting_source_line(g), i, GC_NAME_MAX);
            return -1;
        }
        if (get_number(g, "first_rank", 0, GC_MAX_RANK, &first, err, err_len) !=
                0 ||
            get_number(g, "rank_count", 1, (long long)GC_MAX_RANK + 1, &count,
                       err, err_len) != 0)
            return -1;
        snprintf(site->name, sizeof site->name, "%s", name);
        site->first_rank = (uint32_t)first;
        site->rank_count = (uint32_t)count;
        jr->rank_total += (uint64_t)count;
    }
    /* The wire format's own rules: distinct names, disjoint ranges. */
    struct gc_job_frame probe = {.op = GC_JOB_ANNOUNCE,
                                 .site_count = (uint8_t)jr->site_count};
    memcpy(probe.sites, jr->sites, sizeof jr->sites);
    uint8_t scratch[GC_MAX_CONTROL_PAYLOAD];
    if (gc_job_frame_encode(&probe, scratch, sizeof scratch) == 0) {
        snprintf(err, err_len,
                 "sites: names must differ and rank ranges must not overlap "
                 "or pass rank %u",
                 GC_MAX_RANK);
        return -1;
    }
    return 0;
}

/* The line of the first '@', or 0 when there is none. */
static int directive_line(const char *text, size_t len)
{
    const char *at = memchr(text, '@', len);
    if (at == NULL)
        return 0;
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

int control_request_parse(const char *text, size_t len, struct job_request *jr,
                          char *err, size_t err_len)
{
    int status = -1;
    config_t lc;
    config_init(&lc);
    const char *token = NULL;
    long long id, lease = 0;
    int line;
    memset(jr, 0, sizeof *jr);
    if (len > CONTROL_MAX_BODY) {
        snprintf(err, err_len, "the body has %zu bytes, more than %d", len,
                 CONTROL_MAX_BODY);
        goto cleanup;
    }
    if (memchr(text, '\0', len) != NULL || text[len] != '\0') {
        snprintf(err, err_len, "the body is not text");
        goto cleanup;
    }
    if ((line = directive_line(text, len)) != 0) {
        snprintf(err, err_len,
                 "line %d: '@' directives (such as @include) are not "
                 "accepted in a registration",
                 line);
        goto cleanup;
    }
    if (config_read_string(&lc, text) != CONFIG_TRUE) {
        snprintf(err, err_len, "line %d: %s", config_error_line(&lc),
                 config_error_text(&lc));
        goto cleanup;
    }
    const config_setting_t *root = config_root_setting(&lc);
    if (get_number(root, "job_id", 1, UINT32_MAX, &id, err, err_len) != 0)
        goto cleanup;
    jr->id = (uint32_t)id;
    const config_setting_t *t = config_setting_get_member(root, "token");
    token = t != NULL ? config_setting_get_string(t) : NULL;
    if (token == NULL || parse_token(token, jr) != 0) {
        snprintf(err, err_len,
                 "line %d: 'token' must be the job token in hex, 16 to %zu "
                 "bytes",
                 t != NULL ? config_setting_source_line(t) : 0,
                 sizeof jr->token);
        goto cleanup;
    }
    if (config_setting_get_member(root, "lease") != NULL &&
        get_number(root, "lease", 1, 86400, &lease, err, err_len) != 0)
        goto cleanup;
    jr->lease_s = (uint32_t)lease;
    if (parse_sites(config_lookup(&lc, "sites"), jr, err, err_len) != 0)
        goto cleanup;
    status = 0;
cleanup:
    config_destroy(&lc);
    return status;
}

enum control_route control_route_parse(const char *path, uint32_t *id)
{
    static const struct {
        const char *path;
        enum control_route route;
    } fixed[] = {
        {"/jobs", ROUTE_JOBS},
        {"/status", ROUTE_STATUS},
        {"/metrics", ROUTE_METRICS},
    };
    if (path == NULL)
        return ROUTE_NONE;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(path, fixed[i].path) == 0)
            return fixed[i].route;
    if (strncmp(path, "/jobs/", 6) != 0)
        return ROUTE_NONE;
    /* Decimal digits only: no sign, no blanks, nothing past 2^32 - 1. */
    uint64_t value = 0;
    const char *p = path + 6;
    for (; *p >= '0' && *p <= '9'; p++) {
        value = value * 10 + (uint64_t)(*p - '0');
        if (value > UINT32_MAX)
            return ROUTE_NONE;
    }
    if (p == path + 6)
        return ROUTE_NONE;
    *id = (uint32_t)value;
    if (*p == '\0')
        return ROUTE_JOB;
    return strcmp(p, "/renew") == 0 ? ROUTE_RENEW : ROUTE_NONE;
}
