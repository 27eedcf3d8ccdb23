/* Error text and list parsing shared by the schedule library and its tool. */
#include "patterns/gc_sched_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "patterns/gc_sched.h"

void gc_sched_set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (err == NULL || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

int gc_sched_parse_int_list(const char *text, int *values, int cap, int *count,
                            int max_value, char *err, size_t err_len)
{
    int n = 0;
    const char *p = text;
    if (text == NULL || *text == '\0') {
        gc_sched_set_err(err, err_len, "empty list");
        return -1;
    }
    for (;;) {
        /* strtol would accept signs and blanks; a list item is digits only */
        if (!isdigit((unsigned char)*p)) {
            gc_sched_set_err(err, err_len,
                             "'%s' is not a comma-separated list of "
                             "non-negative integers",
                             text);
            return -1;
        }
        errno = 0;
        char *end = NULL;
        long value = strtol(p, &end, 10);
        if (errno != 0 || value > max_value) {
            gc_sched_set_err(err, err_len, "%.*s is larger than %d",
                             (int)(end - p), p, max_value);
            return -1;
        }
        if (n == cap) {
            gc_sched_set_err(err, err_len, "more than %d values in '%s'", cap,
                             text);
            return -1;
        }
        values[n++] = (int)value;
        if (*end == '\0')
            break;
        if (*end != ',') {
            gc_sched_set_err(err, err_len,
                             "'%s' is not a comma-separated list of "
                             "non-negative integers",
                             text);
            return -1;
        }
        p = end + 1;
    }
    *count = n;
    return 0;
}
