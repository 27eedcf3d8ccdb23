#include "gc_log.h"

#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static char log_ident[64] = "gridcoll";
static enum gc_log_level log_level = GC_LOG_INFO;
static FILE *log_file;
static char log_path[4096];

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gc_log_init(const char *ident, enum gc_log_level level)
{
    snprintf(log_ident, sizeof log_ident, "%s", ident);
    log_level = level;
}

void gc_log_set_level(enum gc_log_level level)
{
    log_level = level;
}

enum gc_log_level gc_log_get_level(void)
{
    return log_level;
}

int gc_log_level_parse(const char *name)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcmp(name, level_names[i]) == 0)
            return (int)i;
    return -1;
}

int gc_log_open_file(const char *path)
{
    if (strlen(path) >= sizeof log_path)
        return -1;
    snprintf(log_path, sizeof log_path, "%s", path);
    return gc_log_reopen();
}

int gc_log_reopen(void)
{
    if (log_path[0] == '\0')
        return 0;
    FILE *f = fopen(log_path, "a");
    if (f == NULL)
        return -1;
    setvbuf(f, NULL, _IOLBF, 0);
    if (log_file != NULL)
        fclose(log_file);
    log_file = f;
    return 0;
}

void gc_log(enum gc_log_level level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    struct timeval now;
    gettimeofday(&now, NULL);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

    /* One fprintf per line keeps lines from different processes whole. */
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    FILE *out = log_file != NULL ? log_file : stderr;
    fprintf(out, "%s.%03ldZ %s %s: %s\n", stamp, (long)(now.tv_usec / 1000),
            level_names[level], log_ident, line);
}
