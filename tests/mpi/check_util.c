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
