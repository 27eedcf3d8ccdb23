/*
 * Helpers shared by the MPI benchmarks (gridcoll-mpibench, gridcoll-bench):
 * MPI error checks, number lists with K/M/G suffixes, test patterns and
 * order statistics.  Plain MPI only: gridcoll-mpibench-plain links them
 * without libgridcoll.
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

#endif
