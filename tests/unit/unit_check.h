/*
 * Expectations of the unit tests: pass/fail counters, the FAIL lines on
 * stderr and the summary line that ends each test.
 *
 *   CHECK(cond, fmt, ...)  "<source>:<line>: FAILED <cond>: <message>"
 *   CHECKF(cond, fmt, ...) "FAIL <file name>:<line>: <message>"
 *   CHECK_AT(cond, line, fmt, ...)  the same for a caller's line
 *
 * A file that defines UNIT_CHECK_EXPR before including this gets
 * CHECK(cond) instead, "FAIL <file name>:<line>: <cond>".
 */
#ifndef GRIDCOLL_TESTS_UNIT_CHECK_H
#define GRIDCOLL_TESTS_UNIT_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int passed;
static int failed;

__attribute__((format(printf, 4, 5))) static inline void
unit_check(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    const char *slash = strrchr(file, '/');
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", slash != NULL ? slash + 1 : file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define CHECKF(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_AT(cond, line, ...)                                              \
    unit_check(!!(cond), __FILE__, (line), __VA_ARGS__)

#ifdef UNIT_CHECK_EXPR
#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, "%s", #cond)
#else
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            passed++;                                                          \
        } else {                                                               \
            failed++;                                                          \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)
#endif

/* Print "<prefix><passed> passed, <failed> failed"; the exit status. */
static inline int unit_check_report(const char *prefix)
{
    printf("%s%d passed, %d failed\n", prefix, passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
