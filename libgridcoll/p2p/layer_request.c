/*
 * MPI requests whose runs the layer completes: persistent collectives
 * (MPI_Bcast_init, ...), persistent and partitioned point-to-point
 * (MPI_Send_init, ..., MPI_Psend_init) and MPI_Isendrecv(_replace), all
 * started by MPI_Start/MPI_Startall or at once.
 *
 * MPI keeps a persistent request's handle valid from MPI_*_init to
 * MPI_Request_free, inactive between runs, which no generalized request
 * can be.  The handle is therefore an MPICH receive of 0 bytes on a
 * private copy of MPI_COMM_SELF, with a tag of its own (persistent, or
 * one-shot for a nonblocking call): MPI_Start starts the receive and a run
 * of the operation built at init; when the run ends the layer sends the
 * receive its 0 bytes.  Every completion call, MPI_Request_free and
 * MPI_Request_get_status then behave as MPI says for persistent and
 * nonblocking requests because MPICH's own request code runs them; the
 * completion calls replace the 0-byte receive's status by the run's
 * (layer_request_report).
 */
#include "p2p/layer_request.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"

#include <stdlib.h>

struct layer_request {
    const struct layer_request_class *cls;
    void *run;
    MPI_Comm comm;      /* whose handler raises the run's errors */
    MPI_Request handle; /* the application's: an MPICH 0-byte receive */
    int tag;
    int persistent;
    int active;
    int released;   /* MPI_Request_free while active: freed after the run */
    int unreported; /* the run ended, no completion call reported it yet */
    int error;
    struct layer_result result;
    struct layer_request *next;
};

static struct {
    struct layer_request *all;
    MPI_Comm self;
    int next_tag;
    int unreported; /* requests with .unreported set */
    int active;     /* requests with .active set */
    int released;   /* requests with .released set */
} requests = {.self = MPI_COMM_NULL};

static struct layer_request *find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL)
        return NULL;
    for (struct layer_request *r = requests.all; r != NULL; r = r->next)
        if (r->handle == handle)
            return r;
    return NULL;
}

void *layer_request_run(MPI_Request handle,
                        const struct layer_request_class *cls)
{
    struct layer_request *r = find(handle);
    return r != NULL && r->cls == cls ? r->run : NULL;
}

static void drop(struct layer_request *r)
{
    struct layer_request **at = &requests.all;
    while (*at != r)
        at = &(*at)->next;
    *at = r->next;
    if (r->unreported)
        requests.unreported--;
    if (r->released)
        requests.released--;
    r->cls->destroy(r->run);
    free(r);
}

void layer_request_done(struct layer_request *r, int error,
                        const struct layer_result *result)
{
    static const struct layer_result empty = {MPI_UNDEFINED, MPI_UNDEFINED, 0,
                                              0};
    r->active = 0;
    requests.active--;
    r->error = error;
    r->result = result != NULL ? *result : empty;
    if (!r->released) {
        r->unreported = 1;
        requests.unreported++;
    }
    /* The receive behind the handle completes on these 0 bytes (an eager
     * send to this process: it never blocks), a released request's too. */
    MPI_Request send;
    if (PMPI_Isend(NULL, 0, MPI_BYTE, 0, r->tag, requests.self, &send) ==
        MPI_SUCCESS)
        PMPI_Request_free(&send);
}

int layer_request_create(const struct layer_request_class *cls, void *run,
                         MPI_Comm comm, int persistent, MPI_Request *request)
{
    int status = MPI_ERR_NO_MEM;
    struct layer_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        goto fail;
    if (requests.self == MPI_COMM_NULL) {
        status = PMPI_Comm_dup(gc_world.site_self, &requests.self);
        if (status != MPI_SUCCESS)
            goto fail;
    }
    int *ub, flag = 0;
    PMPI_Comm_get_attr(requests.self, MPI_TAG_UB, &ub, &flag);
    r->tag = requests.next_tag;
    requests.next_tag = flag && requests.next_tag < *ub ? r->tag + 1 : 0;
    r->cls = cls;
    r->run = run;
    r->comm = comm;
    r->persistent = persistent;
    status = persistent ? PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, r->tag,
                                         requests.self, &r->handle)
                        : PMPI_Irecv(NULL, 0, MPI_BYTE, 0, r->tag,
                                     requests.self, &r->handle);
    if (status != MPI_SUCCESS)
        goto fail;
    r->next = requests.all;
    requests.all = r;
    if (!persistent) {
        r->active = 1;
        requests.active++;
        status = cls->start(r, run);
        if (status != MPI_SUCCESS) {
            /* Nothing began: withdraw the receive, forget the request. */
            requests.all = r->next;
            requests.active--;
            PMPI_Cancel(&r->handle);
            PMPI_Wait(&r->handle, MPI_STATUS_IGNORE);
            free(r);
            return status;
        }
    }
    *request = r->handle;
    return MPI_SUCCESS;
fail:
    free(r);
    return gc_error(comm, status, "creating a request", NULL);
}

static void layer_request_progress(void)
{
    if (requests.active == 0 && requests.released == 0)
        return;
    struct layer_request *next;
    for (struct layer_request *r = requests.all; r != NULL; r = next) {
        next = r->next;
        if (r->active && r->cls->poll != NULL)
            r->cls->poll(r, r->run);
        if (r->released && !r->active) {
            /* Its 0 bytes are on their way: once they are in, the
             * receive can go (MPI_Request_free). */
            PMPI_Wait(&r->handle, MPI_STATUS_IGNORE);
            if (r->handle != MPI_REQUEST_NULL)
                PMPI_Request_free(&r->handle);
            drop(r);
        }
    }
}

static void set_status(MPI_Status *status, const struct layer_result *result)
{
    status->MPI_SOURCE = result->source;
    status->MPI_TAG = result->tag;
    PMPI_Status_set_elements_x(status, MPI_BYTE, result->bytes);
    PMPI_Status_set_cancelled(status, result->cancelled);
}

int layer_request_report(MPI_Request handle, MPI_Status *status, MPI_Comm *comm)
{
    if (requests.unreported == 0)
        return MPI_SUCCESS;
    struct layer_request *r = find(handle);
    if (r == NULL || !r->unreported)
        return MPI_SUCCESS;
    if (status != MPI_STATUS_IGNORE)
        set_status(status, &r->result);
    int error = r->error;
    *comm = r->comm;
    r->unreported = 0;
    requests.unreported--;
    /* MPICH freed the one-shot receive: its handle may come back. */
    if (!r->persistent)
        drop(r);
    return error;
}

int layer_request_unreported(void)
{
    return requests.unreported;
}

void layer_request_peek(MPI_Request handle, MPI_Status *status)
{
    struct layer_request *r = requests.unreported > 0 ? find(handle) : NULL;
    if (r != NULL && r->unreported && status != MPI_STATUS_IGNORE)
        set_status(status, &r->result);
}

int layer_request_cancel(MPI_Request handle)
{
    struct layer_request *r = find(handle);
    if (r == NULL || !r->active)
        return r != NULL; /* inactive: nothing to cancel */
    if (r->cls->cancel != NULL)
        r->cls->cancel(r->run);
    return 1;
}

/* MPI_Start of one request: the layer's, or MPICH's. */
static int start_one(MPI_Request *request)
{
    struct layer_request *r = find(*request);
    if (r == NULL)
        return PMPI_Start(request);
    if (r->active)
        return gc_error(r->comm, MPI_ERR_REQUEST,
                        "MPI_Start: the persistent request is active", NULL);
    if (r->unreported)
        requests.unreported--;
    r->unreported = 0;
    r->active = 1;
    requests.active++;
    /* Started first, so that a run that ends at once finds nothing odd:
     * its 0 bytes wait for the receive. */
    int status = r->cls->start(r, r->run);
    if (status != MPI_SUCCESS) {
        r->active = 0;
        requests.active--;
        return status;
    }
    return PMPI_Start(&r->handle);
}

int MPI_Start(MPI_Request *request)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Start(request);
    return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests_[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Startall(count, requests_);
    for (int i = 0; i < count; i++) {
        int status = start_one(&requests_[i]);
        if (status != MPI_SUCCESS)
            return status;
    }
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request)
{
    GC_ENTER();
    struct layer_request *r = gc_world.active ? find(*request) : NULL;
    if (r == NULL)
        return PMPI_Request_free(request);
    if (r->active) {
        /* MPICH 4.0.2 frees an active persistent receive's request while
         * the receive stays posted: the 0 bytes would complete freed
         * memory.  The handle goes after the run (layer_request_progress),
         * the program's copy now. */
        r->released = 1;
        requests.released++;
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    int status = PMPI_Request_free(request);
    drop(r);
    return status;
}

void layer_request_shutdown(void)
{
    layer_request_progress();
    if (requests.self != MPI_COMM_NULL)
        PMPI_Comm_free(&requests.self);
}

const struct gc_progress_hook layer_request_progress_hook = {
    .name = "layer requests",
    .after_poll = layer_request_progress,
};
