/*
 * reduce_wan: self-checking test of the grid Reduce_scatter(_block),
 * Scan, Exscan and Reduce algorithms on MPI_COMM_WORLD (whose sites are
 * contiguous rank ranges), every algorithm of each table in turn
 * (GridColl_Algorithm_name, GridColl_Set_algorithm).
 *
 *   gridrun --site-sizes 3,5 -- reduce_wan [--time ITERS] [PREFIX...]
 *
 * With arguments, only the cases whose names start with one of them run.
 * Rank 0 prints "OK <case>" once every rank has passed a case (a barrier,
 * which leaves the statistics of these collectives alone); a rank that
 * finds a wrong byte prints "FAIL <case>: rank R: ..." and calls
 * MPI_Abort.  Sums are MPI_SUM of doubles holding small integers, so
 * every order of summation gives the exact, identical result; the
 * non-commutative op is the product of 2x2 unsigned matrices, whose
 * result depends on rank order.  Cases, for every algorithm A of the
 * table concerned (tests/integration/test_reduce_wan.py counts the calls
 * and the WAN bytes they must send):
 *   reduce_scatter_block_A_<m>  m = 0, 8, 1000, 65536 bytes per rank
 *   reduce_scatter_A            rank r gets ((5 r + 2) % 4) * 1000
 *                               doubles (zeros included)
 *   reduce_scatter_A_inplace    the same, MPI_IN_PLACE
 *   reduce_scatter_A_large      rank r gets (r % 3) * 20000 doubles
 *                               (pieces longer than one segment)
 *   reduce_scatter_A_matrix     rank r gets (r % 3) * 700 matrices
 *   scan_A_<M>, exscan_A_<M>    M = 0, 8, 1000, 65536, 1048576 bytes
 *   scan_A_inplace, exscan_A_inplace  65536 bytes, MPI_IN_PLACE
 *   scan_A_matrix, exscan_A_matrix    5000 matrices
 *   reduce_A_<M>                M as above, root 0
 *   reduce_A_root_last          1048576 bytes, the last rank as root
 *   reduce_A_inplace            65536 bytes, MPI_IN_PLACE at root 0
 *   reduce_A_matrix             5000 matrices, the last rank as root
 * Every byte of every result is checked, plus a guard past its end; send
 * buffers must be unchanged; Exscan's buffer on rank 0 must be untouched.
 *
 * --time ITERS: afterwards, for every algorithm, ITERS back-to-back
 * MPI_Reduce_scatter_block and MPI_Scan calls of MPI_SUM on doubles (after
 * one untimed call and a barrier) per size: 8 B to 1 MiB per member's
 * block, 8 B to 4 MiB of scan vector; rank 0 prints "TIME <collective>
 * <algorithm> <bytes> <usec per call>" from the slowest rank's loop time.
 */
#include "check_util.h"

#include <gridcoll.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SENTINEL = 0x5A, GUARD = 64 };

static const size_t sizes[] = {0, 8, 1000, 65536, 1048576};
#define SIZE_COUNT (sizeof sizes / sizeof *sizes)

static int rank, size;
static void expect_guard(const void *buf, size_t from)
{
    const unsigned char *p = buf;
    for (size_t at = from; at < from + GUARD; at++)
        if (p[at] != SENTINEL)
            fail("guard byte %zu is 0x%02x, expected 0x%02x", at - from, p[at],
                 SENTINEL);
}

/* A buffer of `bytes` plus a guard, all holding the sentinel. */
static void *sentinel_buffer(size_t bytes)
{
    void *p = xmalloc(bytes + GUARD);
    memset(p, SENTINEL, bytes + GUARD);
    return p;
}

/* ---- element values ------------------------------------------------------ */

static double contribution(int r, size_t i)
{
    return (double)(((uint64_t)r * 7919 + i * 31) % 1000);
}

/* Sum over ranks lo..hi of element i (exact in a double). */
static double sum_of(int lo, int hi, size_t i)
{
    double sum = 0;
    for (int r = lo; r <= hi; r++)
        sum += contribution(r, i);
    return sum;
}

static void expect_doubles(const double *got, size_t n, size_t first, int lo,
                           int hi)
{
    for (size_t i = 0; i < n; i++) {
        double want = sum_of(lo, hi, first + i);
        if (memcmp(&got[i], &want, sizeof want) != 0)
            fail("element %zu is %.17g, expected %.17g", first + i, got[i],
                 want);
    }
    expect_guard(got, n * sizeof *got);
}

static void expect_matrices(const struct matrix *got, size_t n, size_t first,
                            int lo, int hi)
{
    for (size_t i = 0; i < n; i++) {
        struct matrix want = matrix_product_of(lo, hi, first + i);
        if (memcmp(&got[i], &want, sizeof want) != 0)
            fail("matrix %zu is {%u %u %u %u}, expected {%u %u %u %u}",
                 first + i, got[i].a, got[i].b, got[i].c, got[i].d, want.a,
                 want.b, want.c, want.d);
    }
    expect_guard(got, n * sizeof *got);
}

static MPI_Datatype matrix_type;
static MPI_Op matrix_op;

/* ---- reduce_scatter ------------------------------------------------------ */

/*
 * Rank r receives counts[r] elements (doubles, or matrices with
 * `matrices`); `block` calls Reduce_scatter_block (all counts equal).
 */
static void reduce_scatter_case(const int *counts, int block, int in_place,
                                int matrices)
{
    size_t esize = matrices ? sizeof(struct matrix) : sizeof(double);
    size_t total = 0, first = 0;
    for (int r = 0; r < size; r++) {
        if (r == rank)
            first = total;
        total += (size_t)counts[r];
    }
    size_t mine = (size_t)counts[rank];
    unsigned char *sbuf = xmalloc(total * esize);
    for (size_t i = 0; i < total; i++) {
        if (matrices)
            ((struct matrix *)sbuf)[i] = matrix_of(rank, i);
        else
            ((double *)sbuf)[i] = contribution(rank, i);
    }
    unsigned char *rbuf =
        sentinel_buffer(in_place ? total * esize : mine * esize);
    if (in_place)
        memcpy(rbuf, sbuf, total * esize);
    MPI_Datatype type = matrices ? matrix_type : MPI_DOUBLE;
    MPI_Op op = matrices ? matrix_op : MPI_SUM;
    const void *send = in_place ? MPI_IN_PLACE : (const void *)sbuf;
    if (block)
        MPI_CHECK(MPI_Reduce_scatter_block(send, rbuf, counts[0], type, op,
                                           MPI_COMM_WORLD));
    else
        MPI_CHECK(
            MPI_Reduce_scatter(send, rbuf, counts, type, op, MPI_COMM_WORLD));
    if (in_place) /* only my block is defined: put the guard after it */
        memset(rbuf + mine * esize, SENTINEL, GUARD);
    if (matrices)
        expect_matrices((struct matrix *)rbuf, mine, first, 0, size - 1);
    else
        expect_doubles((double *)rbuf, mine, first, 0, size - 1);
    for (size_t i = 0; !in_place && !matrices && i < total; i++)
        if (((double *)sbuf)[i] != contribution(rank, i))
            fail("sendbuf element %zu changed", i);
    free(sbuf);
    free(rbuf);
}

static void run_reduce_scatter(const char *algo)
{
    int *counts = xmalloc((size_t)size * sizeof *counts);
    for (size_t s = 0; s + 1 < SIZE_COUNT; s++) {
        if (!begin("reduce_scatter_block_%s_%zu", algo, sizes[s]))
            continue;
        for (int r = 0; r < size; r++)
            counts[r] = (int)(sizes[s] / sizeof(double));
        reduce_scatter_case(counts, 1, 0, 0);
        passed();
    }
    for (int in_place = 0; in_place < 2; in_place++) {
        if (!begin("reduce_scatter_%s%s", algo, in_place ? "_inplace" : ""))
            continue;
        for (int r = 0; r < size; r++)
            counts[r] = ((5 * r + 2) % 4) * 1000;
        reduce_scatter_case(counts, 0, in_place, 0);
        passed();
    }
    if (begin("reduce_scatter_%s_large", algo)) {
        for (int r = 0; r < size; r++)
            counts[r] = (r % 3) * 20000;
        reduce_scatter_case(counts, 0, 0, 0);
        passed();
    }
    if (begin("reduce_scatter_%s_matrix", algo)) {
        for (int r = 0; r < size; r++)
            counts[r] = (r % 3) * 700;
        reduce_scatter_case(counts, 0, 0, 1);
        passed();
    }
    free(counts);
}

/* ---- scan and exscan ----------------------------------------------------- */

static void scan_case(size_t n, int exclusive, int in_place, int matrices)
{
    size_t esize = matrices ? sizeof(struct matrix) : sizeof(double);
    unsigned char *sbuf = xmalloc(n * esize);
    for (size_t i = 0; i < n; i++) {
        if (matrices)
            ((struct matrix *)sbuf)[i] = matrix_of(rank, i);
        else
            ((double *)sbuf)[i] = contribution(rank, i);
    }
    unsigned char *rbuf = sentinel_buffer(n * esize);
    if (in_place)
        memcpy(rbuf, sbuf, n * esize);
    MPI_Datatype type = matrices ? matrix_type : MPI_DOUBLE;
    MPI_Op op = matrices ? matrix_op : MPI_SUM;
    const void *send = in_place ? MPI_IN_PLACE : (const void *)sbuf;
    if (exclusive)
        MPI_CHECK(MPI_Exscan(send, rbuf, (int)n, type, op, MPI_COMM_WORLD));
    else
        MPI_CHECK(MPI_Scan(send, rbuf, (int)n, type, op, MPI_COMM_WORLD));
    int high = exclusive ? rank - 1 : rank;
    if (high < 0) {
        /* Rank 0's Exscan result is undefined: the call must not touch
         * the buffer (in place it still holds the input). */
        if (in_place && memcmp(rbuf, sbuf, n * esize) != 0)
            fail("Exscan changed rank 0's in-place buffer");
        for (size_t at = in_place ? n * esize : 0; at < n * esize + GUARD; at++)
            if (rbuf[at] != SENTINEL)
                fail("Exscan wrote byte %zu of rank 0's buffer", at);
    } else if (matrices) {
        expect_matrices((struct matrix *)rbuf, n, 0, 0, high);
    } else {
        expect_doubles((double *)rbuf, n, 0, 0, high);
    }
    free(sbuf);
    free(rbuf);
}

static void run_scan(const char *algo)
{
    for (int exclusive = 0; exclusive < 2; exclusive++) {
        const char *name = exclusive ? "exscan" : "scan";
        for (size_t s = 0; s < SIZE_COUNT; s++) {
            if (begin("%s_%s_%zu", name, algo, sizes[s])) {
                scan_case(sizes[s] / sizeof(double), exclusive, 0, 0);
                passed();
            }
        }
        if (begin("%s_%s_inplace", name, algo)) {
            scan_case(65536 / sizeof(double), exclusive, 1, 0);
            passed();
        }
        if (begin("%s_%s_matrix", name, algo)) {
            scan_case(5000, exclusive, 0, 1);
            passed();
        }
    }
}

/* ---- reduce -------------------------------------------------------------- */

static void reduce_case(size_t n, int root, int in_place, int matrices)
{
    size_t esize = matrices ? sizeof(struct matrix) : sizeof(double);
    unsigned char *sbuf = xmalloc(n * esize);
    for (size_t i = 0; i < n; i++) {
        if (matrices)
            ((struct matrix *)sbuf)[i] = matrix_of(rank, i);
        else
            ((double *)sbuf)[i] = contribution(rank, i);
    }
    unsigned char *rbuf = sentinel_buffer(n * esize);
    in_place = in_place && rank == root;
    if (in_place)
        memcpy(rbuf, sbuf, n * esize);
    MPI_CHECK(MPI_Reduce(in_place ? MPI_IN_PLACE : (const void *)sbuf, rbuf,
                         (int)n, matrices ? matrix_type : MPI_DOUBLE,
                         matrices ? matrix_op : MPI_SUM, root, MPI_COMM_WORLD));
    if (rank != root) {
        for (size_t at = 0; at < n * esize + GUARD; at++)
            if (rbuf[at] != SENTINEL)
                fail("byte %zu of a non-root's recvbuf changed", at);
    } else if (matrices) {
        expect_matrices((struct matrix *)rbuf, n, 0, 0, size - 1);
    } else {
        expect_doubles((double *)rbuf, n, 0, 0, size - 1);
    }
    free(sbuf);
    free(rbuf);
}

static void run_reduce(const char *algo)
{
    for (size_t s = 0; s < SIZE_COUNT; s++) {
        if (begin("reduce_%s_%zu", algo, sizes[s])) {
            reduce_case(sizes[s] / sizeof(double), 0, 0, 0);
            passed();
        }
    }
    if (begin("reduce_%s_root_last", algo)) {
        reduce_case(1048576 / sizeof(double), size - 1, 0, 0);
        passed();
    }
    if (begin("reduce_%s_inplace", algo)) {
        reduce_case(65536 / sizeof(double), 0, 1, 0);
        passed();
    }
    if (begin("reduce_%s_matrix", algo)) {
        reduce_case(5000, size - 1, 0, 1);
        passed();
    }
}

/* ---- timing -------------------------------------------------------------- */

static const size_t timed_sizes[] = {8, 1024, 64 * 1024, 1024 * 1024,
                                     4 * 1024 * 1024};
#define TIMED_COUNT (sizeof timed_sizes / sizeof *timed_sizes)

static int timed_iters;

static void timed_call(int scan, double *sbuf, double *rbuf, int count)
{
    if (scan)
        MPI_CHECK(
            MPI_Scan(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    else
        MPI_CHECK(MPI_Reduce_scatter_block(sbuf, rbuf, count, MPI_DOUBLE,
                                           MPI_SUM, MPI_COMM_WORLD));
}

/* Reduce_scatter_block blocks up to 1 MiB, scan vectors up to 4 MiB. */
static void time_algorithm(int scan, const char *algo)
{
    for (size_t s = 0; s < TIMED_COUNT; s++) {
        size_t bytes = timed_sizes[s];
        if (!scan && bytes > 1024 * 1024)
            continue;
        int count = (int)(bytes / sizeof(double));
        size_t elements = scan ? (size_t)count : (size_t)count * (size_t)size;
        double *sbuf = xmalloc(elements * sizeof *sbuf);
        double *rbuf = xmalloc(elements * sizeof *rbuf);
        for (size_t i = 0; i < elements; i++)
            sbuf[i] = contribution(rank, i);
        timed_call(scan, sbuf, rbuf, count);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double start = MPI_Wtime();
        for (int i = 0; i < timed_iters; i++)
            timed_call(scan, sbuf, rbuf, count);
        double mine = MPI_Wtime() - start, slowest;
        MPI_CHECK(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
                             MPI_COMM_WORLD));
        if (rank == 0)
            printf("TIME %s %s %zu %.1f\n", scan ? "scan" : "reduce_scatter",
                   algo, bytes, slowest / timed_iters * 1e6);
        free(sbuf);
        free(rbuf);
    }
}

static void time_reduce_scatter(const char *algo)
{
    time_algorithm(0, algo);
}

static void time_scan(const char *algo)
{
    time_algorithm(1, algo);
}

static void set_algorithm(const char *collective, const char *algorithm)
{
    if (GridColl_Set_algorithm(collective, algorithm) != MPI_SUCCESS)
        fail("GridColl_Set_algorithm(%s, %s) failed", collective,
             algorithm != NULL ? algorithm : "NULL");
}

/* Every algorithm of `collective`'s table in turn, then the defaults. */
static void for_each_algorithm(const char *collective,
                               void (*run)(const char *algo))
{
    const char *algo;
    for (int a = 0; (algo = GridColl_Algorithm_name(collective, a)); a++) {
        set_algorithm(collective, algo);
        run(algo);
    }
    set_algorithm(collective, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int selected_count = argc - 1;
    char **selected = argv + 1;
    if (argc > 2 && strcmp(argv[1], "--time") == 0) {
        timed_iters = atoi(argv[2]);
        selected_count -= 2;
        selected += 2;
    }
    check_setup(rank, selected_count, selected);
    MPI_CHECK(MPI_Type_contiguous(4, MPI_UNSIGNED, &matrix_type));
    MPI_CHECK(MPI_Type_commit(&matrix_type));
    MPI_CHECK(MPI_Op_create(matrix_product, 0, &matrix_op));

    for_each_algorithm("reduce_scatter", run_reduce_scatter);
    for_each_algorithm("scan", run_scan);
    for_each_algorithm("reduce", run_reduce);
    if (timed_iters > 0) {
        for_each_algorithm("reduce_scatter", time_reduce_scatter);
        for_each_algorithm("scan", time_scan);
    }

    MPI_CHECK(MPI_Op_free(&matrix_op));
    MPI_CHECK(MPI_Type_free(&matrix_type));
    MPI_Finalize();
    return 0;
}
