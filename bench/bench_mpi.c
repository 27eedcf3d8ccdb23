/* Helpers shared by the MPI benchmarks (bench_mpi.h). */
#include "bench_mpi.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *bench_prog = "bench";

void bench_set_program(const char *prog)
{
    bench_prog = prog;
}

/* This process's rank in MPI_COMM_WORLD, -1 before MPI_Init. */
static int world_rank(void)
{
    int initialized = 0, rank = -1;
    if (MPI_Initialized(&initialized) == MPI_SUCCESS && initialized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

void bench_mpi_check(int rc, const char *call)
{
    if (rc == MPI_SUCCESS)
        return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error code %d", rc);
    fprintf(stderr, "%s: rank %d: %s failed: %s\n", bench_prog, world_rank(),
            call, text);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

double bench_max_at_root(double value)
{
    double out = value;
    bench_mpi_check(
        MPI_Reduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD),
        "MPI_Reduce");
    return out;
}

void *bench_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "%s: rank %d: out of memory (%zu bytes)\n", bench_prog,
                world_rank(), n);
        MPI_Abort(MPI_COMM_WORLD, 2);
        exit(2);
    }
    return p;
}

int bench_parse_u64(const char *s, int suffix_ok, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    unsigned shift = 0;
    if (suffix_ok && *end != '\0' && end[1] == '\0') {
        switch (*end) {
        case 'k':
        case 'K': shift = 10; break;
        case 'm':
        case 'M': shift = 20; break;
        case 'g':
        case 'G': shift = 30; break;
        default: return -1;
        }
        end++;
    }
    if (*end != '\0' || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int bench_parse_list(const char *text, int suffix_ok, uint64_t *out, size_t max,
                     size_t *n)
{
    char copy[1024];
    if (snprintf(copy, sizeof copy, "%s", text) >= (int)sizeof copy)
        return -1;
    *n = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (*n == max || bench_parse_u64(item, suffix_ok, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

uint32_t bench_pattern(uint32_t a, uint32_t b, uint32_t i)
{
    uint32_t x = a * 0x9e3779b9u ^ b * 0x85ebca6bu ^ i * 0xc2b2ae35u;
    x ^= x >> 16;
    return x * 0x7feb352du;
}

void bench_fill(uint32_t *buf, size_t words, uint32_t a, uint32_t b)
{
    for (size_t i = 0; i < words; i++)
        buf[i] = bench_pattern(a, b, (uint32_t)i);
}

long bench_count_bad(const uint32_t *buf, size_t words, uint32_t a, uint32_t b)
{
    long bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += buf[i] != bench_pattern(a, b, (uint32_t)i);
    return bad;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_quantile(double *v, long n, double q)
{
    qsort(v, (size_t)n, sizeof *v, compare_double);
    double at = q * (double)(n - 1);
    long below = (long)at;
    if (below >= n - 1)
        return v[n - 1];
    double frac = at - (double)below;
    return v[below] + frac * (v[below + 1] - v[below]);
}

/* ---- start window ------------------------------------------------------ */

/* Rounds of bench_window_calibrate, and the window as a multiple of the
 * median round's slowest broadcast: a margin for the rounds that take
 * longer than the median (scheduling on a shared machine, a lost segment
 * on the WAN); bench_window_missed doubles the window when it was not
 * enough. */
#define WINDOW_ROUNDS       5
#define WINDOW_FACTOR       3
#define WINDOW_MAX_DOUBLING 8

int bench_parse_start(const char *text, enum bench_start *out)
{
    if (strcmp(text, "barrier") == 0)
        *out = BENCH_START_BARRIER;
    else if (strcmp(text, "window") == 0)
        *out = BENCH_START_WINDOW;
    else
        return -1;
    return 0;
}

double bench_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether any rank's flag is set, on every rank; the MPI_Allreduce is
 * also what synchronises the ranks before the next window. */
static int any_rank(int flag)
{
    int any = 0;
    bench_mpi_check(
        MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce");
    return any;
}

/* Rank 0's clock + ahead, on every rank. */
static double bcast_deadline(double ahead)
{
    double t = world_rank() == 0 ? bench_clock() + ahead : 0;
    bench_mpi_check(MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD),
                    "MPI_Bcast");
    return t;
}

void bench_window_calibrate(struct bench_window *w)
{
    double worst[WINDOW_ROUNDS];
    for (int i = 0; i < WINDOW_ROUNDS; i++) {
        any_rank(0);
        double picked = bcast_deadline(0);
        worst[i] = bench_clock() - picked;
    }
    bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, worst, WINDOW_ROUNDS,
                                  MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                    "MPI_Allreduce");
    w->seconds = WINDOW_FACTOR * bench_quantile(worst, WINDOW_ROUNDS, 0.5);
    w->t0 = 0;
    w->late = 0;
    w->misses = 0;
}

void bench_window_start(struct bench_window *w)
{
    w->t0 = bcast_deadline(w->seconds);
    w->late = bench_clock() >= w->t0;
    if (w->late)
        return;
    struct timespec until;
    until.tv_sec = (time_t)w->t0;
    until.tv_nsec = (long)((w->t0 - (double)until.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
           EINTR)
        ;
}

int bench_window_missed(struct bench_window *w)
{
    if (!any_rank(w->late)) {
        w->misses = 0;
        return 0;
    }
    if (++w->misses > WINDOW_MAX_DOUBLING) {
        if (world_rank() == 0)
            fprintf(stderr,
                    "%s: --start window: a rank got the start time too late "
                    "%d times in a row (window now %.3f ms): the ranks cannot "
                    "start together here; use --start barrier\n",
                    bench_prog, w->misses, w->seconds * 1e3);
        fflush(stderr);
        MPI_Finalize();
        exit(2);
    }
    w->seconds *= 2;
    return 1;
}
