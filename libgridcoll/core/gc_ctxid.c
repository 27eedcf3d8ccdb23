/*
 * The MPICH communicator duplications the layer makes without blocking:
 * the copies of a grid communicator's MPICH parts that MPI_Comm_idup
 * makes, and the private site communicators of persistent collectives.
 *
 * Why they go through here.  MPICH 4.0.2 allocates a context id without
 * blocking as a schedule (src/mpi/comm/contextid.c,
 * sched_cb_gcn_copy_mask and sched_cb_gcn_allocate_cid): a first round
 * on the "eager" part of the mask, then, if another allocation held that
 * part, rounds that append themselves to the same schedule until this
 * allocation owns the mask.  On a communicator of one process each
 * round's allreduce completes at once, so the rounds never leave the
 * progress call that runs them: while another allocation owns the mask
 * or comes first in MPICH's queue, the process loops, allocating
 * schedule entries, until the kernel ends it (20 GB seen on 2+2+2: the
 * copies of a grid communicator with one member on this site beside
 * those of communicators with several).  The blocking PMPI_Comm_dup
 * loops the same way.  Later MPICH retries once per progress poll
 * (MPIR_Async_things).
 *
 * What this does.  A duplication of a communicator of several processes
 * is posted at once (every member then starts it in its program order, as
 * MPICH requires of collectives on one communicator) and tracked until it
 * completes.  One of a single process waits, unposted, until no tracked
 * duplication is outstanding, then is made by PMPI_Comm_dup: with none of
 * the layer's allocating it completes at once, and nobody else takes
 * part, so its order does not matter.  Either way the caller gets a
 * generalized request of the layer's, which the engine's progress
 * completes.
 *
 * The program's own MPI_Comm_idup of a communicator that lives on one
 * site stays MPICH's, as without the layer.  Not seen: allocations that
 * blocking constructors make in another thread meanwhile.  A duplication
 * of one process waits for the outstanding ones, which need their other
 * members to start them: a program in which one of those members first
 * waits for something this process does after that duplication completes
 * would hang (docs/design/mpi-layer.md, "Communicators").
 */
#include "core/gc_ctxid.h"
#include "core/gc_progress.h"

#include <stdlib.h>

struct dup {
    MPI_Comm comm;
    MPI_Info info;       /* a copy, for a deferred duplication; or NULL */
    MPI_Comm *newcomm;   /* the caller's, written when made */
    MPI_Request posted;  /* MPICH's; MPI_REQUEST_NULL while deferred */
    MPI_Request request; /* handed out */
    int error;
    int done, released;
    struct dup *next;
};

static struct {
    struct dup *head;
    int posted; /* entries with an MPICH request outstanding */
    MPIX_Grequest_class class;
    int have_class;
} dups;

static int dup_query(void *extra, MPI_Status *status)
{
    struct dup *d = extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    /* Only the layer waits for these: MPICH's own error report will do. */
    return d->error;
}

/* No MPI call here: MPICH may hold its global lock (gc_p2p_engine.c). */
static int dup_free(void *extra)
{
    struct dup *d = extra;
    if (d->done)
        free(d);
    else
        d->released = 1;
    return MPI_SUCCESS;
}

static int dup_cancel(void *extra, int complete)
{
    /* A collective cannot be cancelled (MPI 4.1 §6.12). */
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int dup_wait(int count, void **extras, double timeout,
                    MPI_Status *status)
{
    (void)timeout;
    (void)status;
    unsigned idle = 0;
    for (int i = 0; i < count; i++)
        while (!((struct dup *)extras[i])->done) {
            gc_progress_from_mpich();
            gc_nap(&idle);
        }
    return MPI_SUCCESS;
}

/* d, off the list, is made (or failed): complete its request. */
static void finish(struct dup *d, int error)
{
    d->error = error;
    d->done = 1;
    if (d->info != MPI_INFO_NULL)
        PMPI_Info_free(&d->info);
    PMPI_Grequest_complete(d->request);
    if (d->released)
        free(d);
}

/* The duplication of one process, once nothing else allocates. */
static int dup_now(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    return info != MPI_INFO_NULL ? PMPI_Comm_dup_with_info(comm, info, newcomm)
                                 : PMPI_Comm_dup(comm, newcomm);
}

static void ctxid_progress(void)
{
    for (struct dup **at = &dups.head; *at != NULL;) {
        struct dup *d = *at;
        int made = 0, status = MPI_SUCCESS;
        if (d->posted != MPI_REQUEST_NULL)
            status = PMPI_Test(&d->posted, &made, MPI_STATUS_IGNORE);
        if (status == MPI_SUCCESS && !made) {
            at = &d->next;
            continue;
        }
        *at = d->next;
        dups.posted--;
        finish(d, status);
    }
    /* The deferred ones; an attribute copy callback may start another
     * duplication meanwhile, so look again each time. */
    while (dups.posted == 0 && dups.head != NULL) {
        struct dup *d = dups.head;
        dups.head = d->next;
        finish(d, dup_now(d->comm, d->info, d->newcomm));
    }
}

static int ctxid_pending(void)
{
    return dups.head != NULL;
}

const struct gc_progress_hook gc_ctxid_progress_hook = {
    .name = "communicator duplications",
    .after_poll = ctxid_progress,
    .pending = ctxid_pending,
};

int gc_ctxid_idup(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                  MPI_Request *request)
{
    int size = 0, status;
    if (!dups.have_class) {
        status =
            MPIX_Grequest_class_create(dup_query, dup_free, dup_cancel,
                                       gc_grequest_poll, dup_wait, &dups.class);
        if (status != MPI_SUCCESS)
            return status;
        dups.have_class = 1;
    }
    status = PMPI_Comm_size(comm, &size);
    if (status != MPI_SUCCESS)
        return status;
    int alone = size == 1;
    struct dup *d = calloc(1, sizeof *d);
    if (d == NULL)
        return MPI_ERR_NO_MEM;
    *d = (struct dup){.comm = comm,
                      .info = MPI_INFO_NULL,
                      .newcomm = newcomm,
                      .posted = MPI_REQUEST_NULL};
    status = MPIX_Grequest_class_allocate(dups.class, d, &d->request);
    if (status != MPI_SUCCESS) {
        free(d);
        return status;
    }
    if (alone && dups.posted == 0) {
        /* Nothing outstanding: made now, attributes copied at the call
         * as MPICH's MPI_Comm_idup copies them. */
        finish(d, dup_now(comm, info, newcomm));
    } else {
        if (!alone)
            status =
                info != MPI_INFO_NULL
                    ? PMPI_Comm_idup_with_info(comm, info, newcomm, &d->posted)
                    : PMPI_Comm_idup(comm, newcomm, &d->posted);
        else if (info != MPI_INFO_NULL)
            /* Deferred: the caller may free its info once we return. */
            status = PMPI_Info_dup(info, &d->info);
        if (status != MPI_SUCCESS) {
            MPI_Request dropped = d->request;
            finish(d, status);
            PMPI_Request_free(&dropped);
            return status;
        }
        struct dup **tail = &dups.head;
        while (*tail != NULL)
            tail = &(*tail)->next;
        *tail = d;
        if (d->posted != MPI_REQUEST_NULL)
            dups.posted++;
    }
    *request = d->request;
    return MPI_SUCCESS;
}

void gc_ctxid_wait(MPI_Request *request)
{
    int done = 0;
    unsigned idle = 0;
    while (*request != MPI_REQUEST_NULL &&
           PMPI_Test(request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
           !done) {
        gc_progress(0);
        gc_nap(&idle);
    }
}
