/*
 * MPI requests whose runs the layer carries out and completes
 * (layer_request.c): the persistent collectives (coll_request.c), the
 * persistent and partitioned point-to-point requests and MPI_Isendrecv
 * (gc_p2p_persistent.c).  The handle is MPICH's own request, so MPICH's
 * Wait/Test functions, MPI_Request_free and MPI_Request_get_status treat
 * it like any other; the completion calls (gc_request.c) put the run's
 * status and error in place of MPICH's.
 */
#ifndef LAYER_REQUEST_H
#define LAYER_REQUEST_H

#include "core/gc_progress.h"
#include <mpi.h>

struct layer_request;

/* What a run's status says (MPI_SOURCE, MPI_TAG, count, cancelled). */
struct layer_result {
    int source;
    int tag;
    MPI_Count bytes;
    int cancelled;
};

struct layer_request_class {
    /*
     * Begin a run of `run` (layer_request_done ends it, at once or later).
     * An error went through the communicator's handler already and
     * nothing was begun.
     */
    int (*start)(struct layer_request *r, void *run);
    /* Each progress pass while a run is active: end it with
     * layer_request_done when it has finished.  NULL: it ends itself. */
    void (*poll)(struct layer_request *r, void *run);
    /* MPI_Cancel of an active run: withdraw it if still possible (it then
     * ends cancelled).  NULL: it cannot be cancelled. */
    void (*cancel)(void *run);
    /* The request is freed and no run is active. */
    void (*destroy)(void *run);
};

/*
 * A request of class cls on comm running `run`.  Persistent: inactive until
 * MPI_Start, valid until MPI_Request_free.  Otherwise started at once and
 * gone when a completion call reports it.  On failure nothing is left (the
 * caller still owns run) and the error went through comm's handler.
 */
int layer_request_create(const struct layer_request_class *cls, void *run,
                         MPI_Comm comm, int persistent, MPI_Request *request);
/* The run of `handle` when it is a request of class cls, else NULL. */
void *layer_request_run(MPI_Request handle,
                        const struct layer_request_class *cls);
/* The active run of r ended: its status (NULL: an empty one) and error. */
void layer_request_done(struct layer_request *r, int error,
                        const struct layer_result *result);
/* Polls the active runs and frees the requests released meanwhile, in
 * each progress pass (the runtime registers it). */
extern const struct gc_progress_hook layer_request_progress_hook;
/*
 * For the completion calls: `handle` just completed; put its run's status
 * in *status (unless MPI_STATUS_IGNORE) and return its error, and in
 * *comm the communicator whose handler raises it.  Reported once;
 * layer_request_unreported() is 0 when no run awaits its report.
 */
int layer_request_report(MPI_Request handle, MPI_Status *status,
                         MPI_Comm *comm);
int layer_request_unreported(void);
/* MPI_Request_get_status: the status of a completed run, not consumed. */
void layer_request_peek(MPI_Request handle, MPI_Status *status);
/* MPI_Cancel: 1 when handle is the layer's (cancelled if it can be). */
int layer_request_cancel(MPI_Request handle);
/* MPI_Finalize: what the requests share; those the program never freed
 * stay its own. */
void layer_request_shutdown(void);

#endif
