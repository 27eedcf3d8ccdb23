/*
 * Values out of gridrelay's JSON: a relay's /status and a service's
 * answers (docs/gridrelay.md).  gridrelay writes them in a fixed layout of
 * its own, every key gridrun reads once per object it looks in, strings
 * without escapes, so a scan for "KEY": does and no parser is needed.
 * Not for JSON of any other origin.
 */
#ifndef GRIDRUN_JSON_H
#define GRIDRUN_JSON_H

#include <stddef.h>

/* Keys longer than this are never found. */
#define GR_JSON_KEY_MAX 48

/* The text right after the first "KEY": in `json`, or NULL. */
const char *gr_json_value(const char *json, const char *key);

/* The first "KEY": string's characters, between its quotes, *len of
 * them; NULL when absent, not a string or not closed. */
const char *gr_json_string(const char *json, const char *key, size_t *len);

#endif
