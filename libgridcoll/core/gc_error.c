/*
 * Errors the layer detects: raised through the communicator's error
 * handler as MPI says, and the end of the job when the relay session is
 * lost.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/gc_error.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"
#include "relay_client/gc_relay_client.h"

void gc_fatal_relay(const char *during)
{
    const char *site = gc_world.sites[gc_world.site_index].name;
    const char *lost = gc_rc_lost(gc_world.rc);
    /* A lost connection names the relay and where it was: whoever reads
     * this (gridrun's output, a site's operator) must find which relay
     * or service went away, not just that a read failed. */
    if (lost != NULL)
        fprintf(stderr,
                "gridcoll: grid rank %d (site %s): %s: lost the connection "
                "to site %s's relay (%s): %s\n",
                gc_world.grid_rank, site, during, site, gc_settings_relay(),
                lost);
    else
        fprintf(stderr, "gridcoll: grid rank %d (site %s): %s: %s\n",
                gc_world.grid_rank, site, during,
                gc_world.rc ? gc_rc_error(gc_world.rc) : "no connection");
    PMPI_Abort(gc_world.site_world, 1);
}

/* The library's error class of unsupported calls, made on first use. */
static int unsupported_class = -1;

/* One error code per function, made once: its string names the call. */
static int unsupported_code(const char *function, const char *where)
{
    static struct {
        const char *function;
        int code;
    } codes[512];
    static int code_count;
    int code = MPI_ERR_OTHER;
    for (int i = 0; i < code_count; i++)
        if (codes[i].function == function ||
            strcmp(codes[i].function, function) == 0)
            code = codes[i].code;
    if (code == MPI_ERR_OTHER &&
        code_count < (int)(sizeof codes / sizeof *codes)) {
        char text[MPI_MAX_ERROR_STRING];
        /* A class of the library's own: MPICH 4.0.2 adds a code to a
         * predefined class such as MPI_ERR_UNSUPPORTED_OPERATION, but its
         * MPI_Error_string then reads the code as one of MPICH's internal
         * ones and prints an unrelated message, losing the call's name. */
        if (unsupported_class < 0) {
            if (PMPI_Add_error_class(&unsupported_class) == MPI_SUCCESS)
                PMPI_Add_error_string(unsupported_class,
                                      "MPI call not supported across "
                                      "sites (GridColl)");
            else
                unsupported_class = MPI_ERR_OTHER;
        }
        snprintf(text, sizeof text, "%s is not supported %s (GridColl)",
                 function, where);
        if (PMPI_Add_error_code(unsupported_class, &code) == MPI_SUCCESS &&
            PMPI_Add_error_string(code, text) == MPI_SUCCESS) {
            codes[code_count].function = function;
            codes[code_count].code = code;
            code_count++;
        }
    }
    return code;
}

int gc_unsupported(MPI_Comm comm, const char *function)
{
    int code = unsupported_code(function, "on a communicator that spans sites");
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

int gc_error(MPI_Comm comm, int code, const char *function, const char *format,
             ...)
{
    /* The predefined class is returned as is, so MPI_Error_class works on
     * it (MPICH cannot attach a string to a code of a predefined class).
     * When the error ends the job, the detail naming the call is printed
     * first: MPICH's own message would only say "Invalid rank". */
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    if (handler == MPI_ERRORS_ARE_FATAL || handler == MPI_ERRORS_ABORT) {
        char detail[512] = "";
        if (format != NULL) {
            va_list ap;
            va_start(ap, format);
            vsnprintf(detail, sizeof detail, format, ap);
            va_end(ap);
        }
        fprintf(stderr, "gridcoll: grid rank %d: %s%s%s\n", gc_world.grid_rank,
                function, format != NULL ? ": " : "", detail);
    }
    if (handler != MPI_ERRHANDLER_NULL)
        PMPI_Errhandler_free(&handler);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}
