/*
 * Helpers of the self-checking MPI test programs in tests/mpi: case
 * names and selection, the "OK <case>" and "FAIL <case>: rank R: ..."
 * lines that tests/integration/test_*.py parse, checked conditions, MPI
 * calls and allocations that end the job with MPI_Abort(comm, 2), and
 * the driver of the programs whose cases take a tag base.
 */
#ifndef GRIDCOLL_TESTS_CHECK_UTIL_H
#define GRIDCOLL_TESTS_CHECK_UTIL_H

#include <mpi.h>
#include <stddef.h>

/* This process's rank in MPI_COMM_WORLD, for the FAIL lines, and the
 * case-name prefixes to run (none: every case runs). */
void check_setup(int rank, int prefix_count, char **prefixes);

/* The communicator that fail() aborts and passed() synchronises, which
 * every rank is in: MPI_COMM_WORLD unless a program without it (MPI-4
 * sessions) names another; MPI_COMM_NULL while there is none (fail()
 * then only exits). */
void check_comm(MPI_Comm comm);

/* Text that fail() puts before its message, followed by ": ", while it
 * is not empty (the caller keeps it up to date, e.g. the call under
 * test). */
void check_context(const char *text);

/* Print "FAIL <case>: rank R: [<context>: ]<message>" and abort the job
 * (status 2). */
__attribute__((format(printf, 1, 2), noreturn)) void fail(const char *format,
                                                          ...);

/* fail() with the message unless condition holds. */
#define CHECK(condition, ...)                                                  \
    do {                                                                       \
        if (!(condition))                                                      \
            fail(__VA_ARGS__);                                                 \
    } while (0)

/* fail() naming the call and MPI's error text unless rc is MPI_SUCCESS. */
void mpi_check(int rc, const char *call);
#define MPI_CHECK(call) mpi_check((call), #call)

/* malloc (of at least one byte) or fail(). */
void *xmalloc(size_t bytes);

/* Sleeps instead of spinning while polling: the machine is usually
 * oversubscribed. */
void nap(long microseconds);

/* Name the next case; 1 when it is to run. */
__attribute__((format(printf, 1, 2))) int begin(const char *format, ...);

/* 1 when the program's arguments name case NAME, or name none. */
int case_selected(const char *name, int argc, char **argv);

/* The case begin() named last ("setup" before the first). */
const char *case_name(void);

/* After a barrier, rank 0 prints "OK <case>". */
void passed(void);

/*
 * The main() of the programs whose cases take a tag base: MPI_Init, then
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF (a failing call
 * comes back as a FAIL line naming the case and the call, errors outside
 * a communicator being raised on MPI_COMM_SELF), check_setup(), setup()
 * for the program's own state, the cases argv names, each by its whole
 * name (every case without arguments), in table order, each between
 * begin() and passed() with tags base..base+999 of its own, and
 * MPI_Finalize.  An unknown name: rank 0 prints "FAIL args: ..." with the
 * cases there are; a job of one rank prints "SKIP <program>: needs 2
 * ranks" and runs none.  Returns main's exit status (2 for an unknown
 * case).
 */
struct check_case {
    const char *name;
    void (*run)(int base_tag);
};
int check_main(const char *program, int argc, char **argv, void (*setup)(void),
               const struct check_case *cases, int count);

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
