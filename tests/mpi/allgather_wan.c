/*
 * allgather_wan: self-checking test of the grid Allgather(v) and
 * Allreduce algorithms on MPI_COMM_WORLD, every algorithm of each table
 * in turn (GridColl_Algorithm_name, GridColl_Set_algorithm); the
 * intra-site strategy of allgather hier comes from the environment
 * (GRIDCOLL_ALLGATHER_LOCAL), so a run covers one strategy.
 *
 *   gridrun --site-sizes 3,5 -- allgather_wan [PREFIX...]
 *
 * With arguments, only the cases whose names start with one of them run.
 * Rank 0 prints "OK <case>" once every rank has passed a case (a barrier,
 * which leaves the allgather and allreduce statistics alone); a rank that
 * finds a wrong byte prints "FAIL <case>: rank R: ..." and calls
 * MPI_Abort.  Cases, for every allgather algorithm A and allreduce
 * algorithm R (tests/integration/test_allgather_wan.py counts the calls
 * and the WAN bytes they must send):
 *   allgather_A_<m>       m = 0, 8, 1000, 65536, 1048576 bytes per rank,
 *                         MPI_BYTE, separate send buffer
 *   allgather_A_inplace   1000 bytes per rank, MPI_IN_PLACE
 *   allgather_A_vector    250 ints per rank in a strided, resized type
 *                         (holes between and after the ints must survive)
 *   allgatherv_A          rank r sends (r % 3) * 125 ints (0, 500 or 1000
 *                         bytes), placed in reverse rank order with gaps
 *   allgatherv_A_inplace  the same, MPI_IN_PLACE
 *   allreduce_R_<m>       MPI_SUM of m / 8 doubles, m as above; the
 *                         values are small integers, so every order of
 *                         summation gives the exact, identical result
 *   allreduce_R_inplace   65536 bytes, MPI_IN_PLACE
 *   allreduce_R_matrix_<n> a user-defined non-commutative op (product of
 *                         2x2 unsigned matrices, n = 3 and 5000 of them),
 *                         whose result depends on rank order
 * Every byte of every receive buffer is checked, plus a guard past its
 * end; send buffers must be unchanged.
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
/* Byte j of rank r's data: unrelated values for neighbouring (r, j). */
static unsigned char pattern(int r, size_t j)
{
    uint32_t x = (uint32_t)r * 2654435761u ^ (uint32_t)j * 40503u;
    x ^= x >> 15;
    x *= 0x2c1b3c6dU;
    x ^= x >> 12;
    return (unsigned char)x;
}

static int int_pattern(int r, size_t j)
{
    return (int)((uint32_t)pattern(r, j) << 16 | pattern(r, j + 7919));
}

static unsigned char *sentinel_buffer(size_t bytes)
{
    unsigned char *p = xmalloc(bytes + GUARD);
    memset(p, SENTINEL, bytes + GUARD);
    return p;
}

static void expect_byte(const unsigned char *buf, size_t at, int want,
                        const char *what)
{
    if (buf[at] != (unsigned char)want)
        fail("%s: byte %zu is 0x%02x, expected 0x%02x", what, at, buf[at],
             (unsigned char)want);
}

static void expect_sentinel(const unsigned char *buf, size_t from, size_t to,
                            const char *what)
{
    for (size_t at = from; at < to; at++)
        expect_byte(buf, at, SENTINEL, what);
}

/* ---- allgather ------------------------------------------------------------
 */

static void allgather_bytes(size_t m, int in_place)
{
    size_t total = m * (size_t)size;
    unsigned char *rbuf = sentinel_buffer(total);
    unsigned char *sbuf = xmalloc(m);
    unsigned char *own = in_place ? rbuf + (size_t)rank * m : sbuf;
    for (size_t j = 0; j < m; j++)
        own[j] = pattern(rank, j);
    MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : sbuf, (int)m, MPI_BYTE,
                            rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (size_t j = 0; j < m; j++)
            expect_byte(rbuf, (size_t)r * m + j, pattern(r, j), "recvbuf");
    expect_sentinel(rbuf, total, total + GUARD, "guard");
    for (size_t j = 0; !in_place && j < m; j++)
        expect_byte(sbuf, j, pattern(rank, j), "sendbuf");
    free(rbuf);
    free(sbuf);
}

/* 250 ints, every other int of 500, each element 500 ints wide. */
static void allgather_vector(void)
{
    enum { INTS = 250 };
    MPI_Datatype strided, vector;
    MPI_CHECK(MPI_Type_vector(INTS, 1, 2, MPI_INT, &strided));
    MPI_CHECK(
        MPI_Type_create_resized(strided, 0, 2 * INTS * sizeof(int), &vector));
    MPI_CHECK(MPI_Type_commit(&vector));
    size_t extent = 2 * INTS * sizeof(int), total = extent * (size_t)size;
    unsigned char *rbuf = sentinel_buffer(total);
    int *sbuf = xmalloc(extent);
    memset(sbuf, SENTINEL, extent);
    for (int i = 0; i < INTS; i++)
        sbuf[2 * i] = int_pattern(rank, (size_t)i);
    MPI_CHECK(MPI_Allgather(sbuf, 1, vector, rbuf, 1, vector, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        const unsigned char *block = rbuf + (size_t)r * extent;
        for (int i = 0; i < INTS; i++) {
            int value;
            memcpy(&value, block + 2 * i * sizeof(int), sizeof value);
            if (value != int_pattern(r, (size_t)i))
                fail("rank %d's int %d is %d, expected %d", r, i, value,
                     int_pattern(r, (size_t)i));
            expect_sentinel(block, (2 * (size_t)i + 1) * sizeof(int),
                            (2 * (size_t)i + 2) * sizeof(int), "hole");
        }
    }
    expect_sentinel(rbuf, total, total + GUARD, "guard");
    free(rbuf);
    free(sbuf);
    MPI_CHECK(MPI_Type_free(&vector));
    MPI_CHECK(MPI_Type_free(&strided));
}

/* Rank r: (r % 3) * 125 ints, blocks in reverse rank order, one-int gaps. */
static void allgatherv_ints(int in_place)
{
    int *counts = xmalloc((size_t)size * sizeof *counts);
    int *displs = xmalloc((size_t)size * sizeof *displs);
    int at = 0;
    for (int r = size - 1; r >= 0; r--) {
        counts[r] = (r % 3) * 125;
        displs[r] = at;
        at += counts[r] + 1;
    }
    size_t total = (size_t)at * sizeof(int);
    unsigned char *rbuf = sentinel_buffer(total);
    int *sbuf = xmalloc((size_t)counts[rank] * sizeof(int));
    for (int i = 0; i < counts[rank]; i++) {
        int value = int_pattern(rank, (size_t)i);
        if (in_place)
            memcpy(rbuf + ((size_t)displs[rank] + (size_t)i) * sizeof(int),
                   &value, sizeof value);
        else
            sbuf[i] = value;
    }
    MPI_CHECK(MPI_Allgatherv(in_place ? MPI_IN_PLACE : sbuf, counts[rank],
                             MPI_INT, rbuf, counts, displs, MPI_INT,
                             MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        size_t base = (size_t)displs[r] * sizeof(int);
        for (int i = 0; i < counts[r]; i++) {
            int value;
            memcpy(&value, rbuf + base + (size_t)i * sizeof(int), sizeof value);
            if (value != int_pattern(r, (size_t)i))
                fail("rank %d's int %d is %d, expected %d", r, i, value,
                     int_pattern(r, (size_t)i));
        }
        size_t end = base + (size_t)counts[r] * sizeof(int);
        expect_sentinel(rbuf, end, end + sizeof(int), "gap");
    }
    expect_sentinel(rbuf, total, total + GUARD, "guard");
    free(rbuf);
    free(sbuf);
    free(counts);
    free(displs);
}

/* ---- allreduce ------------------------------------------------------------
 */

static double contribution(int r, size_t i)
{
    return (double)(((uint64_t)r * 7919 + i * 31) % 1000);
}

static void allreduce_sum(size_t bytes, int in_place)
{
    size_t n = bytes / sizeof(double);
    double *sbuf = xmalloc(n * sizeof *sbuf);
    double *rbuf = xmalloc(n * sizeof *rbuf + GUARD);
    double *want = xmalloc(n * sizeof *want);
    memset(rbuf, SENTINEL, n * sizeof *rbuf + GUARD);
    for (size_t i = 0; i < n; i++) {
        (in_place ? rbuf : sbuf)[i] = contribution(rank, i);
        want[i] = 0;
        for (int r = 0; r < size; r++)
            want[i] += contribution(r, i);
    }
    MPI_CHECK(MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)n,
                            MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (size_t i = 0; i < n; i++)
        if (memcmp(&rbuf[i], &want[i], sizeof want[i]) != 0)
            fail("element %zu is %.17g, expected %.17g", i, rbuf[i], want[i]);
    expect_sentinel((unsigned char *)rbuf, n * sizeof *rbuf,
                    n * sizeof *rbuf + GUARD, "guard");
    for (size_t i = 0; !in_place && i < n; i++)
        if (sbuf[i] != contribution(rank, i))
            fail("sendbuf element %zu changed", i);
    free(sbuf);
    free(rbuf);
    free(want);
}

static void allreduce_matrix(int n, MPI_Datatype type, MPI_Op op)
{
    struct matrix *sbuf = xmalloc((size_t)n * sizeof *sbuf);
    struct matrix *rbuf = xmalloc((size_t)n * sizeof *rbuf + GUARD);
    memset(rbuf, SENTINEL, (size_t)n * sizeof *rbuf + GUARD);
    for (int i = 0; i < n; i++)
        sbuf[i] = matrix_of(rank, (size_t)i);
    MPI_CHECK(MPI_Allreduce(sbuf, rbuf, n, type, op, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
        struct matrix want = matrix_product_of(0, size - 1, (size_t)i);
        if (memcmp(&rbuf[i], &want, sizeof want) != 0)
            fail("matrix %d is {%u %u %u %u}, expected {%u %u %u %u}", i,
                 rbuf[i].a, rbuf[i].b, rbuf[i].c, rbuf[i].d, want.a, want.b,
                 want.c, want.d);
    }
    expect_sentinel((unsigned char *)rbuf, (size_t)n * sizeof *rbuf,
                    (size_t)n * sizeof *rbuf + GUARD, "guard");
    free(sbuf);
    free(rbuf);
}

/* `algorithm` NULL: back to the tables' choice. */
static void set_algorithm(const char *collective, const char *algorithm)
{
    if (GridColl_Set_algorithm(collective, algorithm) != MPI_SUCCESS)
        fail("GridColl_Set_algorithm(%s, %s) failed", collective,
             algorithm != NULL ? algorithm : "NULL");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_setup(rank, argc - 1, argv + 1);

    const char *algo;
    for (int a = 0; (algo = GridColl_Algorithm_name("allgather", a)); a++) {
        set_algorithm("allgather", algo);
        set_algorithm("allgatherv", algo);
        for (size_t s = 0; s < SIZE_COUNT; s++) {
            if (begin("allgather_%s_%zu", algo, sizes[s])) {
                allgather_bytes(sizes[s], 0);
                passed();
            }
        }
        if (begin("allgather_%s_inplace", algo)) {
            allgather_bytes(1000, 1);
            passed();
        }
        if (begin("allgather_%s_vector", algo)) {
            allgather_vector();
            passed();
        }
        if (begin("allgatherv_%s", algo)) {
            allgatherv_ints(0);
            passed();
        }
        if (begin("allgatherv_%s_inplace", algo)) {
            allgatherv_ints(1);
            passed();
        }
    }
    set_algorithm("allgather", NULL);
    set_algorithm("allgatherv", NULL);

    MPI_Datatype matrix_type;
    MPI_Op matrix_op;
    MPI_CHECK(MPI_Type_contiguous(4, MPI_UNSIGNED, &matrix_type));
    MPI_CHECK(MPI_Type_commit(&matrix_type));
    MPI_CHECK(MPI_Op_create(matrix_product, 0, &matrix_op));
    for (int a = 0; (algo = GridColl_Algorithm_name("allreduce", a)); a++) {
        set_algorithm("allreduce", algo);
        for (size_t s = 0; s < SIZE_COUNT; s++) {
            if (begin("allreduce_%s_%zu", algo, sizes[s])) {
                allreduce_sum(sizes[s], 0);
                passed();
            }
        }
        if (begin("allreduce_%s_inplace", algo)) {
            allreduce_sum(65536, 1);
            passed();
        }
        static const int matrices[] = {3, 5000};
        for (int m = 0; m < 2; m++) {
            if (begin("allreduce_%s_matrix_%d", algo, matrices[m])) {
                allreduce_matrix(matrices[m], matrix_type, matrix_op);
                passed();
            }
        }
    }
    set_algorithm("allreduce", NULL);
    MPI_CHECK(MPI_Op_free(&matrix_op));
    MPI_CHECK(MPI_Type_free(&matrix_type));
    MPI_Finalize();
    return 0;
}
