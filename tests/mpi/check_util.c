#include "check_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int my_rank;
static char current[96] = "setup";
static int selected_count;
static char **selected;

void check_setup(int rank, int prefix_count, char **prefixes)
{
    my_rank = rank;
    selected_count = prefix_count;
    selected = prefixes;
}

void fail(const char *format, ...)
{
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    printf("FAIL %s: rank %d: %s\n", current, my_rank, message);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 2);
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

void passed(void)
{
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (my_rank == 0) {
        printf("OK %s\n", current);
        fflush(stdout);
    }
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
