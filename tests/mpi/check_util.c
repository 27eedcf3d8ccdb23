#include "check_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int my_rank;
static MPI_Comm abort_comm = MPI_COMM_WORLD;
static const char *context = "";
static char current[96] = "setup";
static int selected_count;
static char **selected;

void check_setup(int rank, int prefix_count, char **prefixes)
{
    my_rank = rank;
    selected_count = prefix_count;
    selected = prefixes;
}

void check_comm(MPI_Comm comm)
{
    abort_comm = comm;
}

void check_context(const char *text)
{
    context = text;
}

void fail(const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    printf("FAIL %s: rank %d: %s%s%s\n", current, my_rank, context,
           context[0] ? ": " : "", message);
    fflush(stdout);
    if (abort_comm != MPI_COMM_NULL)
        MPI_Abort(abort_comm, 2);
    exit(2);
}

void mpi_check(int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fail("%s returned %d: %s", call, rc, text);
    }
}

void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL)
        fail("out of memory (%zu bytes)", bytes);
    return p;
}

void nap(long microseconds)
{
    struct timespec pause = {microseconds / 1000000,
                             (microseconds % 1000000) * 1000};
    nanosleep(&pause, NULL);
}

int begin(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(current, sizeof current, format, args);
    va_end(args);
    for (int i = 0; i < selected_count; i++)
        if (strncmp(current, selected[i], strlen(selected[i])) == 0)
            return 1;
    return selected_count == 0;
}

int case_selected(const char *name, int argc, char **argv)
{
    int named = argc < 2;
    for (int i = 1; i < argc; i++)
        named |= strcmp(argv[i], name) == 0;
    return named;
}

const char *case_name(void)
{
    return current;
}

void passed(void)
{
    /* A rank that failed has aborted before this barrier, so "OK" means
     * every rank passed. */
    MPI_CHECK(MPI_Barrier(abort_comm));
    if (my_rank == 0) {
        printf("OK %s\n", current);
        fflush(stdout);
    }
}

/* The part of check_main between MPI_Init and MPI_Finalize. */
static int run_selected(const char *program, int argc, char **argv,
                        const struct check_case *cases, int count)
{
    for (int i = 1; i < argc; i++) {
        int found = 0;
        for (int c = 0; c < count; c++)
            found |= strcmp(argv[i], cases[c].name) == 0;
        if (!found) {
            if (my_rank == 0) {
                printf("FAIL args: unknown case '%s'; cases:", argv[i]);
                for (int c = 0; c < count; c++)
                    printf(" %s", cases[c].name);
                printf("\n");
                fflush(stdout);
            }
            return 2;
        }
    }
    int size = 0;
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size < 2) {
        printf("SKIP %s: needs 2 ranks\n", program);
        return 0;
    }
    for (int c = 0; c < count; c++) {
        if (!case_selected(cases[c].name, argc, argv))
            continue;
        begin("%s", cases[c].name);
        cases[c].run(1000 * (c + 1));
        passed();
    }
    return 0;
}

int check_main(const char *program, int argc, char **argv, void (*setup)(void),
               const struct check_case *cases, int count)
{
    int rank = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_setup(rank, 0, NULL);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    setup();
    int status = run_selected(program, argc, argv, cases, count);
    MPI_Finalize();
    return status;
}

void matrix_product(void *in, void *inout, int *count, MPI_Datatype *type)
{
    (void)type;
    const struct matrix *x = in;
    struct matrix *y = inout;
    for (int i = 0; i < *count; i++) {
        struct matrix p = {
            x[i].a * y[i].a + x[i].b * y[i].c,
            x[i].a * y[i].b + x[i].b * y[i].d,
            x[i].c * y[i].a + x[i].d * y[i].c,
            x[i].c * y[i].b + x[i].d * y[i].d,
        };
        y[i] = p;
    }
}

struct matrix matrix_of(int rank, size_t i)
{
    return (struct matrix){
        1 + (unsigned)(rank * 3 + i) % 5, (unsigned)(rank + 2 * i) % 3,
        (unsigned)(2 * rank + i) % 4, 1 + (unsigned)(rank + i) % 2};
}

struct matrix matrix_product_of(int lo, int hi, size_t i)
{
    /* Folded from the right, as MPI's rank order demands. */
    struct matrix want = matrix_of(hi, i);
    for (int r = hi - 1; r >= lo; r--) {
        struct matrix x = matrix_of(r, i);
        int one = 1;
        matrix_product(&x, &want, &one, NULL);
    }
    return want;
}
