/*
 * Helpers of the self-checking MPI test programs (allgather_wan,
 * reduce_wan, bcast_wan, alltoall_wan): case names and selection, the
 * "OK <case>" and "FAIL <case>: rank R: ..." lines that
 * tests/integration/test_*_wan.py parse, and checked MPI calls and
 * allocations that end the job with MPI_Abort(MPI_COMM_WORLD, 2).
 */
#ifndef GRIDCOLL_TESTS_CHECK_UTIL_H
#define GRIDCOLL_TESTS_CHECK_UTIL_H

#include <mpi.h>
#include <stddef.h>

/* This process's rank in MPI_COMM_WORLD, for the FAIL lines, and the
 * case-name prefixes to run (none: every case runs). */
void check_setup(int rank, int prefix_count, char **prefixes);

/* Print "FAIL <case>: rank R: <message>" and abort the job (status 2). */
__attribute__((format(printf, 1, 2), noreturn)) void fail(const char *format,
                                                          ...);

/* fail() naming the call and MPI's error text unless rc is MPI_SUCCESS. */
void mpi_check(int rc, const char *call);
#define MPI_CHECK(call) mpi_check((call), #call)

/* malloc (of at least one byte) or fail(). */
void *xmalloc(size_t bytes);

/* Name the next case; 1 when it is to run. */
__attribute__((format(printf, 1, 2))) int begin(const char *format, ...);

/* After a barrier, rank 0 prints "OK <case>". */
void passed(void);

/*
 * A non-commutative reduction: 2x2 matrices under the product, as an
 * MPI_Op function (in op inout = in * inout: earlier ranks on the left),
 * rank r's matrix for element i, and the product of ranks lo..hi's
 * matrices for element i in rank order (the expected result).
 */
struct matrix {
    unsigned a, b, c, d;
};
void matrix_product(void *in, void *inout, int *count, MPI_Datatype *type);
struct matrix matrix_of(int rank, size_t i);
struct matrix matrix_product_of(int lo, int hi, size_t i);

#endif
