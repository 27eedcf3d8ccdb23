/*
 * Schedules behind MPI requests (coll_request.c): nonblocking collectives
 * as generalized requests, persistent ones as MPICH persistent requests
 * that MPI_Start re-runs.
 */
#ifndef COLL_REQUEST_H
#define COLL_REQUEST_H

#include "coll_sched.h"

/*
 * Start s and hand out a request that completes when its run ends; the
 * request owns s.  On failure s is freed and the error went through the
 * communicator's handler.
 */
int coll_request_start(struct coll_sched *s, MPI_Request *request);
/*
 * An inactive persistent request that runs s at every MPI_Start; it owns
 * s until MPI_Request_free.  Failure as above.
 */
int coll_request_persistent(struct coll_sched *s, MPI_Request *request);
/*
 * The error of the run behind persistent request `handle` that a
 * completion call just completed, reported once (MPI_SUCCESS: none),
 * and in *comm the communicator whose handler raises it;
 * coll_request_unreported() is 0 when no run failed, so the completion
 * calls need not look.
 */
int coll_request_error(MPI_Request handle, MPI_Comm *comm);
int coll_request_unreported(void);
/* Free the requests released since the engine's last turn. */
void coll_request_free_released(void);
/*
 * MPI_Finalize: free what the persistent requests share (their copy of
 * MPI_COMM_SELF) and those released while running; requests the program
 * never freed stay its own.
 */
void coll_request_shutdown(void);

#endif
