/*
 * The completion calls (MPI_Wait*, MPI_Test*, MPI_Request_get_status) for
 * every kind of request: the engine's generalized requests
 * (gc_p2p_engine.c) mixed with anything MPICH hands out (point-to-point,
 * persistent, generalized, MPI-IO, nonblocking collectives of site-local
 * communicators).  A blocking wait inside MPICH would not drive the relay,
 * so each call polls MPICH and the engine in turn
 * (docs/design/mpi-layer.md, "Point-to-point" and "Progress").
 */
#include "p2p/gc_request.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/layer_request.h"
#include <stdlib.h>
#include <string.h>

/* Failed requests one completion call can report at once; more are
 * reported as failed with the last recorded error. */
#define MAX_FAILED 64

/* Grid operations that failed, recorded by their query function while the
 * running completion call's PMPI_Test* completed them. */
static struct {
    struct {
        MPI_Request request;
        int error;
        MPI_Comm comm;
    } at[MAX_FAILED];
    int count;
} failures;

void gc_request_failed(MPI_Request request, int error, MPI_Comm comm)
{
    if (failures.count == MAX_FAILED)
        return;
    failures.at[failures.count].request = request;
    failures.at[failures.count].error = error;
    failures.at[failures.count].comm = comm;
    failures.count++;
}

/*
 * The completion calls, for every request: a blocking wait inside MPICH
 * would not drive the relay, so each polls MPICH and the relay in turn.
 * Errors of the layer's requests travel in MPI_ERROR of their status
 * (request_query) and are raised here with their own class through the
 * error handler of the request's communicator.
 */
enum completion { TEST_ONE, TEST_ALL, TEST_ANY, TEST_SOME };

/*
 * One PMPI_Test* over the requests.  Returns MPI_SUCCESS or the error to
 * raise (MPI_ERR_IN_STATUS with the MPI_ERROR fields set, for the
 * multiple-completion calls) and, in *failed_comm, the communicator of
 * the first failed grid operation: raise_error() invokes its handler.
 * MPICH has already invoked the handler for its own requests' errors and
 * leaves *failed_comm MPI_COMM_NULL then.
 */
static int complete_requests(enum completion kind, int count,
                             MPI_Request *requests, int *flag, int *index,
                             int *indices, MPI_Status *statuses,
                             MPI_Comm *failed_comm)
{
    MPI_Status one, *st = statuses;
    int status_count = kind == TEST_ALL || kind == TEST_SOME ? count : 1;
    *failed_comm = MPI_COMM_NULL;
    MPI_Request *before =
        malloc((size_t)(count > 0 ? count : 1) * sizeof *before);
    if (before == NULL)
        return gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Wait/MPI_Test",
                        NULL);
    memcpy(before, requests, (size_t)count * sizeof *before);
    if (kind == TEST_ONE || kind == TEST_ANY) {
        /* MPI_ERROR stays the caller's (MPI 4.1, 3.2.5) */
        st = &one;
        if (statuses != MPI_STATUS_IGNORE)
            one = *statuses;
    } else if (statuses == MPI_STATUSES_IGNORE) {
        st = malloc((size_t)(count > 0 ? count : 1) * sizeof *st);
        if (st == NULL) {
            free(before);
            return gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM,
                            "MPI_Waitall/Testall/Testsome", NULL);
        }
    }
    failures.count = 0;
    int rc, outcount = 0;
    switch (kind) {
    case TEST_ONE: rc = PMPI_Test(requests, flag, st); break;
    case TEST_ALL: rc = PMPI_Testall(count, requests, flag, st); break;
    case TEST_ANY: rc = PMPI_Testany(count, requests, index, flag, st); break;
    default:
        rc = PMPI_Testsome(count, requests, &outcount, indices, st);
        *flag = outcount != 0;
        *index = outcount;
        break;
    }
    if (rc == MPI_SUCCESS && *flag &&
        (failures.count > 0 || layer_request_unreported() > 0)) {
        /* Which of the completed requests failed, and which are the
         * layer's (their status is the run's): match the handles they had
         * before MPICH reset them to MPI_REQUEST_NULL. */
        int completed = kind == TEST_SOME ? outcount : status_count;
        for (int i = 0; i < completed; i++) {
            int slot = kind == TEST_SOME  ? indices[i]
                       : kind == TEST_ANY ? *index
                       : kind == TEST_ONE ? 0
                                          : i;
            if (slot == MPI_UNDEFINED) /* every request null or inactive */
                break;
            MPI_Comm comm = MPI_COMM_NULL;
            int error = layer_request_report(
                before[slot],
                kind == TEST_ONE || kind == TEST_ANY ? st : &st[i], &comm);
            for (int f = 0; f < failures.count; f++)
                if (failures.at[f].request == before[slot]) {
                    error = failures.at[f].error;
                    comm = failures.at[f].comm;
                }
            if (error != MPI_SUCCESS && *failed_comm == MPI_COMM_NULL)
                *failed_comm = comm;
            if (kind == TEST_ONE || kind == TEST_ANY) {
                rc = error;
                continue;
            }
            st[i].MPI_ERROR = error;
            if (error != MPI_SUCCESS)
                rc = MPI_ERR_IN_STATUS;
        }
    }
    failures.count = 0;
    free(before);
    if (st == &one) {
        if (statuses != MPI_STATUS_IGNORE)
            *statuses = one;
    } else if (st != statuses) {
        free(st);
    }
    return rc;
}

static int raise_error(int rc, MPI_Comm failed_comm)
{
    if (rc != MPI_SUCCESS && failed_comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(failed_comm, rc);
    return rc;
}

static int test_requests(enum completion kind, int count, MPI_Request *requests,
                         int *flag, int *index, int *indices,
                         MPI_Status *statuses)
{
    MPI_Comm failed_comm;
    int rc = complete_requests(kind, count, requests, flag, index, indices,
                               statuses, &failed_comm);
    return raise_error(rc, failed_comm);
}

/* Test until something completes; errors are not raised (failed_comm). */
static int wait_quietly(enum completion kind, int count, MPI_Request *requests,
                        int *index, int *indices, MPI_Status *statuses,
                        MPI_Comm *failed_comm)
{
    unsigned idle = 0;
    for (;;) {
        int done = 0;
        int rc = complete_requests(kind, count, requests, &done, index, indices,
                                   statuses, failed_comm);
        if (done || rc != MPI_SUCCESS)
            return rc;
        gc_progress(0);
        gc_idle(&idle);
    }
}

static int wait_for(enum completion kind, int count, MPI_Request *requests,
                    int *index, int *indices, MPI_Status *statuses)
{
    MPI_Comm failed_comm;
    int rc = wait_quietly(kind, count, requests, index, indices, statuses,
                          &failed_comm);
    return raise_error(rc, failed_comm);
}

int gc_request_wait(MPI_Request *request, MPI_Status *status)
{
    return wait_for(TEST_ONE, 1, request, NULL, NULL, status);
}

/*
 * MPI_Waitall, one request after the other.  Not a PMPI_Testall loop:
 * MPICH's Test functions call a generalized request's poll_fn even when
 * it is complete already, and ROMIO's (MPI_File_i* on a file) completes
 * its request again at every call once the I/O is done, which breaks
 * MPICH's reference count.  PMPI_Test frees a request as soon as it sees
 * it complete, so no request is polled twice after completion (MPICH's
 * own MPI_Waitall waits the same way, request by request).  A failure
 * does not stop the wait for the others: MPI 4.1, 3.7.5 allows both.
 */
static int wait_all(int count, MPI_Request *requests, MPI_Status *statuses)
{
    int *errors = NULL;
    MPI_Comm failed_comm = MPI_COMM_NULL;
    for (int i = 0; i < count; i++) {
        MPI_Status *st =
            statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
        MPI_Comm comm;
        int rc = wait_quietly(TEST_ONE, 1, &requests[i], NULL, NULL, st, &comm);
        if (rc == MPI_SUCCESS)
            continue;
        if (errors == NULL) {
            errors = calloc((size_t)count, sizeof *errors); /* MPI_SUCCESS */
            if (errors == NULL)
                return gc_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Waitall",
                                NULL);
            failed_comm = comm;
        }
        errors[i] = rc;
    }
    if (errors == NULL)
        return MPI_SUCCESS;
    if (statuses != MPI_STATUSES_IGNORE)
        for (int i = 0; i < count; i++)
            statuses[i].MPI_ERROR = errors[i];
    free(errors);
    return raise_error(MPI_ERR_IN_STATUS, failed_comm);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Wait(request, status);
    return gc_request_wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Waitall(count, requests, statuses);
    return wait_all(count, requests, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index,
                MPI_Status *status)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Waitany(count, requests, index, status);
    return wait_for(TEST_ANY, count, requests, index, NULL, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount,
                 int indices[], MPI_Status statuses[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    /* outcount is MPI_UNDEFINED (non-zero) when every request is null. */
    return wait_for(TEST_SOME, incount, requests, outcount, indices, statuses);
}

/* MPICH calls the layer's cancel_fn inside PMPI_Cancel: it must run under
 * the library lock, like every entry into the layer (gc_lock.h).  The
 * layer's own requests cancel their run, not the receive behind their
 * handle. */
int MPI_Cancel(MPI_Request *request)
{
    GC_ENTER();
    if (gc_world.active && layer_request_cancel(*request))
        return MPI_SUCCESS;
    return PMPI_Cancel(request);
}

/* MPICH answers from the request's state: the engine must have moved
 * first, or a cross-site request would never be seen complete. */
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Request_get_status(request, flag, status);
    gc_progress(0);
    int rc = PMPI_Request_get_status(request, flag, status);
    if (rc == MPI_SUCCESS && *flag)
        layer_request_peek(request, status);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Test(request, flag, status);
    gc_progress(0);
    return test_requests(TEST_ONE, 1, request, flag, NULL, NULL, status);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag,
                MPI_Status statuses[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Testall(count, requests, flag, statuses);
    gc_progress(0);
    return test_requests(TEST_ALL, count, requests, flag, NULL, NULL, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                MPI_Status *status)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Testany(count, requests, index, flag, status);
    gc_progress(0);
    return test_requests(TEST_ANY, count, requests, flag, index, NULL, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount,
                 int indices[], MPI_Status statuses[])
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    gc_progress(0);
    int flag;
    return test_requests(TEST_SOME, incount, requests, &flag, outcount, indices,
                         statuses);
}
