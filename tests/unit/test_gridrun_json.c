/*
 * gridrun's key scan of gridrelay's JSON (launcher/gridrun_json.c): the
 * value after the first "KEY":, strings between their quotes, and keys
 * longer than the scan's bound never found rather than cut short.
 */
#define UNIT_CHECK_EXPR
#include "unit_check.h"

#include <string.h>

#include "gridrun_json.h"

static void values(void)
{
    const char *json = "{\"ranks_joined\":3,\"ranks_never_joined\":\"2-3,5\","
                       "\"draining\":true}";
    const char *v = gr_json_value(json, "ranks_joined");
    CHECK(v != NULL && strncmp(v, "3,", 2) == 0);
    v = gr_json_value(json, "draining");
    CHECK(v != NULL && strcmp(v, "true}") == 0);
    CHECK(gr_json_value(json, "streams") == NULL);
    /* A key is matched whole, with its quotes: "joined" is no key here. */
    CHECK(gr_json_value(json, "joined") == NULL);
    /* The first of two. */
    v = gr_json_value("{\"state\":\"up\",\"state\":\"down\"}", "state");
    CHECK(v != NULL && strncmp(v, "\"up\"", 4) == 0);
}

static void strings(void)
{
    size_t len = 99;
    const char *s = gr_json_string("{\"error\":\"id in use\"}", "error", &len);
    CHECK(s != NULL && len == 9 && strncmp(s, "id in use", len) == 0);
    s = gr_json_string("{\"local\":\"\"}", "local", &len);
    CHECK(s != NULL && len == 0);
    CHECK(gr_json_string("{\"error\":5}", "error", &len) == NULL);
    CHECK(gr_json_string("{\"error\":\"cut", "error", &len) == NULL);
    CHECK(gr_json_string("{\"other\":\"x\"}", "error", &len) == NULL);
}

/* Keys up to the bound are found; a longer one never is, even where a
 * pattern cut to fit the bound would be a prefix of the JSON's key. */
static void long_keys(void)
{
    char key[GR_JSON_KEY_MAX + 8], json[2 * GR_JSON_KEY_MAX + 32];
    memset(key, 'k', GR_JSON_KEY_MAX);
    key[GR_JSON_KEY_MAX] = '\0';
    snprintf(json, sizeof json, "{\"%s\":7}", key);
    const char *v = gr_json_value(json, key);
    CHECK(v != NULL && strcmp(v, "7}") == 0);
    memset(key, 'k', GR_JSON_KEY_MAX + 4);
    key[GR_JSON_KEY_MAX + 4] = '\0';
    snprintf(json, sizeof json, "{\"%sx\":7}", key);
    CHECK(gr_json_value(json, key) == NULL);
}

int main(void)
{
    values();
    strings();
    long_keys();
    return unit_check_report("test_gridrun_json: ");
}
