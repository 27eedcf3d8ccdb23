/* Private helpers of the schedule library. */
#ifndef GC_SCHED_UTIL_H
#define GC_SCHED_UTIL_H

#include <stddef.h>

/* Format a one-line reason into err (err may be NULL). */
void gc_sched_set_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* x mod m in 0..m-1 for any sign of x; m > 0. */
static inline int gc_sched_mod(long x, int m)
{
    long r = x % m;
    return (int)(r < 0 ? r + m : r);
}

#endif
