/*
 * Helpers shared by the MPI benchmarks (gridcoll-mpibench, gridcoll-bench):
 * MPI error checks, number lists with K/M/G suffixes, test patterns,
 * order statistics and the start window.  Plain MPI only:
 * gridcoll-mpibench-plain and gridcoll-bench-plain link them without
 * libgridcoll.
 */
#ifndef BENCH_MPI_H
#define BENCH_MPI_H

#include <stddef.h>
#include <stdint.h>

/* The program name that prefixes the messages of bench_mpi_check and
 * bench_malloc. */
void bench_set_program(const char *prog);

/* MPI_SUCCESS returns; any other code prints the call and MPICH's text
 * and aborts the job with status 2. */
void bench_mpi_check(int rc, const char *call);

/* The slowest rank's value, at rank 0 (an MPI_Reduce with MPI_MAX). */
double bench_max_at_root(double value);

/* malloc that aborts the job (status 2) when memory runs out. */
void *bench_malloc(size_t n);

/* A decimal number into *out; with suffix_ok, an optional K, M or G
 * (either case) multiplies by 2^10, 2^20 or 2^30.  0 on success. */
int bench_parse_u64(const char *s, int suffix_ok, uint64_t *out);

/* A comma-separated list of at most `max` numbers as bench_parse_u64
 * reads them, count in *n.  0 on success (at least one number). */
int bench_parse_list(const char *text, int suffix_ok, uint64_t *out, size_t max,
                     size_t *n);

/* A word of test data: depends on who made it (a), for whom (b), and its
 * index i, so a block delivered to the wrong place or shifted shows. */
uint32_t bench_pattern(uint32_t a, uint32_t b, uint32_t i);

void bench_fill(uint32_t *buf, size_t words, uint32_t a, uint32_t b);

/* Words of buf that differ from what bench_fill(a, b) wrote. */
long bench_count_bad(const uint32_t *buf, size_t words, uint32_t a, uint32_t b);

/* Sorts v[0 .. n-1] (n > 0) and returns its q-quantile, 0 <= q <= 1,
 * interpolated linearly between the two nearest samples (q = 0.5: the
 * median, the mean of the middle two when n is even). */
double bench_quantile(double *v, long n, double q);

/*
 * How the ranks start a timed call (--start).  BENCH_START_BARRIER: each
 * rank times from its own exit of an MPI_Barrier; across a WAN the
 * barrier releases the sites up to one one-way delay apart, and that skew
 * is inside the time.  BENCH_START_WINDOW, the "window" scheme of SKaMPI
 * and ReproMPI: rank 0 picks a start time t0 a window ahead on
 * CLOCK_MONOTONIC, every rank sleeps until t0 and then calls, and a
 * call's time is the slowest rank's end - t0.  It needs one clock for
 * all ranks: one host (gridrun --wan: namespaces share CLOCK_MONOTONIC),
 * or clocks kept synchronised (PTP).
 */
enum bench_start { BENCH_START_BARRIER, BENCH_START_WINDOW };

/* "barrier" or "window" into *out.  0 on success. */
int bench_parse_start(const char *text, enum bench_start *out);

/* CLOCK_MONOTONIC in seconds: the clock the start window shares. */
double bench_clock(void);

struct bench_window {
    double seconds; /* how far ahead of rank 0's clock t0 is picked */
    double t0;      /* bench_clock() time the current call starts at */
    int late;       /* this rank reached t0's wait at or after t0 */
    int misses;     /* windows missed in a row by the current call */
};

/* Collective: times the synchronisation every window start costs (an
 * MPI_Allreduce, as bench_window_missed's, then rank 0's MPI_Bcast of
 * t0): over a few rounds, how long after rank 0 read its clock the last
 * rank got the broadcast.  The window is a few times the median round's
 * worst.  Ends synchronised, as bench_window_start needs. */
void bench_window_calibrate(struct bench_window *w);

/* Collective, after a call that synchronises every rank (an MPI_Barrier,
 * bench_window_calibrate or bench_window_missed): rank 0 picks t0 =
 * its clock + the window and broadcasts it; every rank sleeps until t0
 * (clock_nanosleep, no spinning).  A rank that gets t0 at or after t0
 * has missed the window: it goes on at once, and bench_window_missed says
 * so to every rank. */
void bench_window_start(struct bench_window *w);

/* Collective (MPI_Allreduce), after the timed call: 0 when every rank
 * waited for t0; 1 when one missed the window, which then doubles: the
 * call does not count and is repeated.  After 8 doublings in a row rank 0
 * says the ranks cannot start together and every rank ends the program
 * (MPI_Finalize, status 2). */
int bench_window_missed(struct bench_window *w);

#endif
