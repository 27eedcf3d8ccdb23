/*
 * Schedules behind MPI requests (coll_request.c): nonblocking collectives
 * as generalized requests, persistent ones as the layer's persistent
 * requests (layer_request.h) that MPI_Start re-runs.
 */
#ifndef COLL_REQUEST_H
#define COLL_REQUEST_H

#include "coll/engine/coll_sched.h"

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
/* Free the requests released since the engine's last turn. */
void coll_request_free_released(void);
/* MPI_Finalize: free the nonblocking requests released while running. */
void coll_request_shutdown(void);

#endif
