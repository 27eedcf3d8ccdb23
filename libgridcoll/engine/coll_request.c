/*
 * Schedules behind MPI requests: the nonblocking collectives (MPI_Ibcast,
 * ...) and the persistent ones (MPI_Bcast_init, ..., MPI_Start).
 *
 * Nonblocking: a generalized request of the layer's own class (MPICH's
 * MPIX_Grequest_class, as the point-to-point engine's), completed when
 * the schedule's run ends; its poll function drives the engine, so
 * MPI_Test* and MPI_Wait* complete it among any other requests.
 *
 * Persistent: MPI keeps a persistent request's handle valid from
 * MPI_*_init to MPI_Request_free, inactive between runs, which no
 * generalized request can be.  The handle is therefore an MPICH
 * persistent receive of 0 bytes on a private copy of MPI_COMM_SELF, with
 * a tag of its own: MPI_Start starts the receive and a run of the
 * schedule built at init; when the run ends the layer sends the receive
 * its 0 bytes.  Every completion call, MPI_Request_free and
 * MPI_Request_get_status then behave as MPI says for persistent requests,
 * because MPICH's own persistent-request code runs them.
 */
#include "coll_request.h"

#include <stdlib.h>

#include "gc_coll.h"

struct persistent {
    MPI_Request handle; /* the application's: an MPICH persistent receive */
    struct coll_sched *sched;
    int tag;
    int released; /* MPI_Request_free while running: free at the end */
    int error;    /* of the last run, until a completion call reports it */
    struct persistent *next;
};

static struct persistent *persistents;
/* Released while running: freed by the engine's turn after their run. */
static int released_persistents;

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

static int nb_poll(void *extra, MPI_Status *status)
{
    (void)extra;
    (void)status;
    gc_progress_from_mpich();
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

static void drop(struct persistent *p);

void coll_request_free_released(void)
{
    while (freed != NULL) {
        struct nb *nb = freed;
        freed = nb->next_freed;
        coll_sched_free(nb->sched);
        free(nb);
    }
    if (released_persistents == 0)
        return;
    for (struct persistent *p = persistents, *next; p != NULL; p = next) {
        next = p->next;
        if (p->released && !coll_sched_active(p->sched))
            drop(p);
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
        status = MPIX_Grequest_class_create(nb_query, nb_free, nb_cancel,
                                            nb_poll, nb_wait, &nb_class);
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

static MPI_Comm self_comm = MPI_COMM_NULL;
static int next_tag;
static int unreported;

static struct persistent *find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL)
        return NULL;
    for (struct persistent *p = persistents; p != NULL; p = p->next)
        if (p->handle == handle)
            return p;
    return NULL;
}

static void drop(struct persistent *p)
{
    struct persistent **at = &persistents;
    while (*at != p)
        at = &(*at)->next;
    *at = p->next;
    if (p->error != MPI_SUCCESS)
        unreported--;
    if (p->released)
        released_persistents--;
    coll_sched_free(p->sched);
    free(p);
}

static void persistent_done(struct coll_sched *s, int status, void *arg)
{
    (void)s;
    struct persistent *p = arg;
    p->error = status;
    if (status != MPI_SUCCESS)
        unreported++;
    /* The receive behind the handle completes on these 0 bytes (an eager
     * send to this process: it never blocks). */
    MPI_Request send;
    if (PMPI_Isend(NULL, 0, MPI_BYTE, 0, p->tag, self_comm, &send) ==
        MPI_SUCCESS)
        PMPI_Request_free(&send);
}

int coll_request_persistent(struct coll_sched *s, MPI_Request *request)
{
    int status = MPI_ERR_NO_MEM;
    struct persistent *p = calloc(1, sizeof *p);
    if (p == NULL)
        goto fail;
    status = coll_sched_persist(s);
    if (status != MPI_SUCCESS)
        goto fail;
    if (self_comm == MPI_COMM_NULL) {
        status = PMPI_Comm_dup(gc_world.site_self, &self_comm);
        if (status != MPI_SUCCESS)
            goto fail;
    }
    int *ub, flag = 0;
    PMPI_Comm_get_attr(self_comm, MPI_TAG_UB, &ub, &flag);
    p->tag = next_tag;
    next_tag = flag && next_tag < *ub ? next_tag + 1 : 0;
    status =
        PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, p->tag, self_comm, &p->handle);
    if (status != MPI_SUCCESS)
        goto fail;
    p->sched = s;
    p->next = persistents;
    persistents = p;
    *request = p->handle;
    return MPI_SUCCESS;
fail:
    free(p);
    status = coll_sched_error(s, status);
    coll_sched_free(s);
    return status;
}

/* MPI_Start of one request: a persistent collective's, or MPICH's. */
static int start_one(MPI_Request *request)
{
    struct persistent *p = find(*request);
    if (p == NULL)
        return PMPI_Start(request);
    struct gc_comm *c = coll_sched_comm(p->sched);
    if (coll_sched_active(p->sched))
        return gc_error(c->handle, MPI_ERR_REQUEST,
                        "MPI_Start: the persistent collective is active");
    if (p->error != MPI_SUCCESS)
        unreported--;
    p->error = MPI_SUCCESS;
    /* Started first, so that a run that ends at once (nothing to move)
     * finds nothing odd: its 0 bytes wait for the receive. */
    int status = coll_sched_start(p->sched, persistent_done, p);
    if (status != MPI_SUCCESS)
        return coll_sched_error(p->sched, status);
    return PMPI_Start(&p->handle);
}

int MPI_Start(MPI_Request *request)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Start(request);
    return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Startall(count, requests);
    for (int i = 0; i < count; i++) {
        int status = start_one(&requests[i]);
        if (status != MPI_SUCCESS)
            return status;
    }
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request)
{
    GC_ENTER();
    struct persistent *p = gc_world.active ? find(*request) : NULL;
    if (p == NULL)
        return PMPI_Request_free(request);
    int status = PMPI_Request_free(request);
    if (coll_sched_active(p->sched)) {
        p->released = 1; /* freed by the engine's turn after the run */
        released_persistents++;
    } else
        drop(p);
    return status;
}

int coll_request_error(MPI_Request handle, MPI_Comm *comm)
{
    if (unreported == 0)
        return MPI_SUCCESS;
    struct persistent *p = find(handle);
    if (p == NULL || p->error == MPI_SUCCESS)
        return MPI_SUCCESS;
    *comm = coll_sched_comm(p->sched)->handle;
    int error = p->error;
    p->error = MPI_SUCCESS;
    unreported--;
    return error;
}

void coll_request_shutdown(void)
{
    coll_request_free_released();
    if (self_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&self_comm);
}

int coll_request_unreported(void)
{
    return unreported;
}
