/* Leveled, timestamped logging shared by every GridColl program. */
#ifndef GC_LOG_H
#define GC_LOG_H

#include <stdio.h>

enum gc_log_level {
    GC_LOG_ERROR = 0,
    GC_LOG_WARN = 1,
    GC_LOG_INFO = 2,
    GC_LOG_DEBUG = 3,
};

/* `ident` prefixes every line (e.g. "gridrelay[alpha]"); copied. */
void gc_log_init(const char *ident, enum gc_log_level level);
void gc_log_set_level(enum gc_log_level level);
enum gc_log_level gc_log_get_level(void);
/* Send log lines to `path` (appended) instead of stderr; 0 or -1. */
int gc_log_open_file(const char *path);
/* Re-open the file given to gc_log_open_file (after rotation, SIGHUP). */
int gc_log_reopen(void);
/* Parses "error", "warn", "info", "debug"; -1 when unknown. */
int gc_log_level_parse(const char *name);

void gc_log(enum gc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define gc_log_error(...) gc_log(GC_LOG_ERROR, __VA_ARGS__)
#define gc_log_warn(...)  gc_log(GC_LOG_WARN, __VA_ARGS__)
#define gc_log_info(...)  gc_log(GC_LOG_INFO, __VA_ARGS__)
#define gc_log_debug(...)                                                      \
    do {                                                                       \
        if (gc_log_get_level() >= GC_LOG_DEBUG)                                \
            gc_log(GC_LOG_DEBUG, __VA_ARGS__);                                 \
    } while (0)

#endif
