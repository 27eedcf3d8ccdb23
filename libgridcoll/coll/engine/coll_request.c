/*
 * Schedules behind MPI requests: the nonblocking collectives (MPI_Ibcast,
 * ...) and the persistent ones (MPI_Bcast_init, ..., MPI_Start).
 *
 * Nonblocking: a generalized request of the layer's own class (MPICH's
 * MPIX_Grequest_class, as the point-to-point engine's), completed when
 * the schedule's run ends; its poll function drives the engine, so
 * MPI_Test* and MPI_Wait* complete it among any other requests.
 *
 * Persistent: a request of layer_request.c whose every run (MPI_Start)
 * runs the schedule built at init.
 */
#include "coll/engine/coll_request.h"

#include <stdlib.h>

#include "coll/gc_coll.h"
#include "core/gc_progress.h"
#include "p2p/gc_request.h"
#include "p2p/layer_request.h"

/* ---- nonblocking --------------------------------------------------------- */

struct nb {
    struct coll_sched *sched;
    MPI_Request request;
    int done;
    int released;
    int error;
    struct nb *next_freed;
};

static MPIX_Grequest_class nb_class;
static int have_nb_class;
/* Requests released (free_fn) after their run ended: freed by the
 * engine's next turn, never inside free_fn (MPICH may hold its global
 * lock there, see gc_p2p_engine.c). */
static struct nb *freed;

static int nb_query(void *extra, MPI_Status *status)
{
    struct nb *nb = extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    if (nb->error != MPI_SUCCESS)
        gc_request_failed(nb->request, nb->error,
                          coll_sched_comm(nb->sched)->handle);
    return MPI_SUCCESS;
}

static int nb_free(void *extra)
{
    struct nb *nb = extra;
    /* MPI makes freeing an active nonblocking collective's request
     * erroneous; still, nothing is freed under a running schedule. */
    if (nb->done) {
        nb->next_freed = freed;
        freed = nb;
    } else {
        nb->released = 1;
    }
    return MPI_SUCCESS;
}

static int nb_cancel(void *extra, int complete)
{
    /* A collective cannot be cancelled (MPI 4.1, 6.12): nothing to do. */
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int nb_wait(int count, void **extras, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    unsigned idle = 0;
    for (int i = 0; i < count; i++)
        while (!((struct nb *)extras[i])->done) {
            gc_progress_from_mpich();
            gc_nap(&idle);
        }
    return MPI_SUCCESS;
}

static void nb_done(struct coll_sched *s, int status, void *arg)
{
    (void)s;
    struct nb *nb = arg;
    nb->error = status;
    nb->done = 1;
    PMPI_Grequest_complete(nb->request);
    if (nb->released) {
        nb->next_freed = freed;
        freed = nb;
    }
}

void coll_request_free_released(void)
{
    while (freed != NULL) {
        struct nb *nb = freed;
        freed = nb->next_freed;
        coll_sched_free(nb->sched);
        free(nb);
    }
}

int coll_request_start(struct coll_sched *s, MPI_Request *request)
{
    struct nb *nb = calloc(1, sizeof *nb);
    int status = MPI_ERR_NO_MEM;
    if (nb == NULL)
        goto fail;
    nb->sched = s;
    if (!have_nb_class) {
        status = MPIX_Grequest_class_create(
            nb_query, nb_free, nb_cancel, gc_grequest_poll, nb_wait, &nb_class);
        if (status != MPI_SUCCESS)
            goto fail;
        have_nb_class = 1;
    }
    status = MPIX_Grequest_class_allocate(nb_class, nb, &nb->request);
    if (status != MPI_SUCCESS)
        goto fail;
    status = coll_sched_start(s, nb_done, nb);
    if (status != MPI_SUCCESS) {
        /* Nothing was posted: complete and drop the request quietly
         * (nb_free queues it, the engine's next turn frees it). */
        status = coll_sched_error(s, status);
        MPI_Request dropped = nb->request;
        nb->done = 1;
        PMPI_Grequest_complete(dropped);
        PMPI_Request_free(&dropped);
        return status;
    }
    *request = nb->request;
    return MPI_SUCCESS;
fail:
    free(nb);
    status = coll_sched_error(s, status);
    coll_sched_free(s);
    return status;
}

/* ---- persistent ------------------------------------------------------- */

/* Each MPI_Start runs the schedule built at init (layer_request.c keeps
 * the handle). */
static void persistent_done(struct coll_sched *s, int status, void *arg)
{
    (void)s;
    layer_request_done(arg, status, NULL);
}

static int persistent_start(struct layer_request *r, void *run)
{
    int status = coll_sched_start(run, persistent_done, r);
    return status != MPI_SUCCESS ? coll_sched_error(run, status) : status;
}

static void persistent_destroy(void *run)
{
    coll_sched_free(run);
}

static const struct layer_request_class persistent_class = {
    .start = persistent_start, .destroy = persistent_destroy};

int coll_request_persistent(struct coll_sched *s, MPI_Request *request)
{
    int status = coll_sched_persist(s);
    if (status != MPI_SUCCESS)
        status = coll_sched_error(s, status);
    else
        status = layer_request_create(&persistent_class, s,
                                      coll_sched_comm(s)->handle, 1, request);
    if (status != MPI_SUCCESS)
        coll_sched_free(s);
    return status;
}

void coll_request_shutdown(void)
{
    coll_request_free_released();
}
