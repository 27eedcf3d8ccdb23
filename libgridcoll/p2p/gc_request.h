/*
 * The completion calls' services to the layer (gc_request.c).
 */
#ifndef GC_REQUEST_H
#define GC_REQUEST_H

#include <mpi.h>

/*
 * The grid operation behind `request` failed with `error` (an MPI error
 * class or code) on `comm`: recorded by the operation's query function
 * while a completion call completes it, raised by that call.
 */
void gc_request_failed(MPI_Request request, int error, MPI_Comm comm);
/* MPI_Wait for the layer's own blocking calls (MPI_Send, MPI_Recv, ...). */
int gc_request_wait(MPI_Request *request, MPI_Status *status);

#endif
