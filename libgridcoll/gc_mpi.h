/*
 * libgridcoll MPI layer: internal interface between the runtime
 * (gc_runtime.c), the hand-written grid versions of MPI calls and the
 * generated wrappers (gc_wrappers.c, from gen_wrappers.py).
 * docs/design/mpi-layer.md explains the design.
 */
#ifndef GC_MPI_H
#define GC_MPI_H

#include <mpi.h>
#include <stdint.h>

/*
 * 1 when `comm` spans more than one site, so site-local MPICH semantics
 * would be wrong for it; 0 otherwise (single-site job, MPI_COMM_NULL, a
 * communicator whose members are all on this site, MPI_COMM_SELF, ...).
 */
int gc_comm_is_grid(MPI_Comm comm);

/*
 * Report that `function` (e.g. "MPI_Win_create") is not supported on the
 * multi-site communicator `comm`: invokes comm's error handler with an
 * error code whose string names the function, and returns that code (for
 * MPI_ERRORS_RETURN).  With MPI_ERRORS_ARE_FATAL the whole grid job ends
 * with the message.
 */
int gc_unsupported(MPI_Comm comm, const char *function);

#endif
