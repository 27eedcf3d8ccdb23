/*
 * The key scan of gridrelay's JSON (gridrun_json.h).
 */
#include "gridrun_json.h"

#include <stdio.h>
#include <string.h>

const char *gr_json_value(const char *json, const char *key)
{
    char pattern[GR_JSON_KEY_MAX + 4];
    int n = snprintf(pattern, sizeof(pattern), "\"%s\":", key);
    if (n < 0 || (size_t)n >= sizeof(pattern))
        return NULL;
    const char *p = strstr(json, pattern);
    return p != NULL ? p + n : NULL;
}

const char *gr_json_string(const char *json, const char *key, size_t *len)
{
    const char *v = gr_json_value(json, key);
    if (v == NULL || *v != '"')
        return NULL;
    v++;
    *len = strcspn(v, "\"");
    return v[*len] == '"' ? v : NULL;
}
