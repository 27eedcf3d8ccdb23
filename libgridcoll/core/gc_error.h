/*
 * Errors the layer detects (gc_error.c).
 */
#ifndef GC_ERROR_H
#define GC_ERROR_H

#include <mpi.h>

/*
 * Report that `function` (e.g. "MPI_Win_create") is not supported on the
 * multi-site communicator `comm`: invokes comm's error handler with an
 * error code whose string names the function, and returns that code (for
 * MPI_ERRORS_RETURN).  With MPI_ERRORS_ARE_FATAL the whole grid job ends
 * with the message.
 */
int gc_unsupported(MPI_Comm comm, const char *function);

/*
 * Invoke comm's error handler for an error the layer detected in call
 * `function` (`code` an MPI error class or code) and return the code.
 * The message, printed when the handler ends the job, is "function", or
 * "function: " and the printf-style `format` (NULL: none).
 */
int gc_error(MPI_Comm comm, int code, const char *function, const char *format,
             ...) __attribute__((format(printf, 4, 5)));

/* The relay connection is lost or refused us: say why and end the job. */
void gc_fatal_relay(const char *during);

#endif
