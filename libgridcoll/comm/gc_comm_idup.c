/*
 * MPI_Comm_idup and MPI_Comm_idup_with_info of a grid communicator: a
 * schedule (engine/coll_sched.h) behind a request, so that nothing
 * blocks between the call and its completion (a program may start the
 * duplication, then exchange messages, then wait).  The new handle is
 * written at completion, as MPI 4.1 §7.4.2 allows: it is not valid
 * before.
 *
 * Steps of one member:
 *   1. PMPI_Comm_idup(_with_info) of the handle (this site's part, with
 *      the program's attributes, as MPI_Comm_dup copies them), as a LOCAL
 *      step, in the communicator's collective order;
 *   2. at the call, PMPI_Comm_idup of the MPICH communicators that
 *      persistent collectives copy at their own call (coll_sched_persist),
 *      so that every member makes their copies in the program's call
 *      order: local_p2p (the collectives' private site communicator) and,
 *      of an intercommunicator, its local group's communicator
 *      (gc_intercomm.h: MPICH's when the group lives on this site, else a
 *      grid communicator's two parts);
 *   3. when all are done, register the grid communicators and hand the
 *      new one out.
 * The MPICH duplications go through gc_ctxid.c, which keeps those of a
 * communicator of one process clear of MPICH 4.0.2's endless loop.
 * Relay contexts are derived from the parent's and the number of the
 * duplication (gc_context_derived), not agreed on: an agreement on the
 * largest next free id, as the blocking constructors make, can pick an id
 * that a member gave meanwhile to another communicator, since MPI lets
 * members start duplications of different communicators in different
 * orders.  Cost: two to four MPICH duplications inside each site, nothing
 * over the WAN.
 */
#include <stdlib.h>

#include "coll/engine/coll_request.h"
#include "comm/gc_comm_create.h"
#include "comm/gc_context.h"
#include "comm/gc_group.h"
#include "comm/gc_intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_ctxid.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"

struct idup {
    struct gc_comm *parent;
    MPI_Comm *newcomm; /* the program's, written at the end */
    MPI_Comm local, local_p2p;
    /* idup_with_info: the program's hints, copied (it may free its info
     * once the call returns), freed once MPICH has taken them */
    MPI_Info info;
    uint32_t context;
    const char *function;
    /* An intercommunicator's local group: its grid communicator (NULL
     * when the group lives on this site), and the copies. */
    struct gc_comm *group;
    MPI_Comm group_local, group_p2p;
    uint32_t group_context;
    MPI_Request posted[3]; /* step 2's, until the schedule polls them */
};

static int idup_info_free(struct coll_sched *s, void *arg)
{
    (void)s;
    struct idup *d = arg;
    return PMPI_Info_free(&d->info);
}

static int context_taken(const struct idup *d, uint32_t context)
{
    if (!gc_comm_context_taken(context))
        return MPI_SUCCESS;
    return gc_error(d->parent->handle, MPI_ERR_INTERN, d->function,
                    "the derived relay context is in use on this process "
                    "(a hash collision)");
}

/* The copy's intercommunicator part, with the copy of the group's
 * communicator: registered now, released with the copy from now on. */
static int adopt_inter(struct idup *d, struct gc_comm *dup)
{
    struct gc_inter *in = malloc(sizeof *in);
    if (in == NULL)
        return MPI_ERR_NO_MEM;
    *in = *d->parent->inter;
    in->group_comm = d->group_local;
    d->group_local = MPI_COMM_NULL;
    gc_inter_adopt(dup, in);
    const struct gc_comm *g = d->group;
    if (g != NULL &&
        gc_comm_build_p2p(g->grid_rank, g->size, in->group_comm, d->group_p2p,
                          d->group_context) == NULL) {
        PMPI_Comm_free(&in->group_comm);
        return MPI_ERR_NO_MEM;
    }
    d->group_p2p = MPI_COMM_NULL; /* the group's struct's now, or freed */
    return MPI_SUCCESS;
}

static int idup_adopt(struct coll_sched *s, void *arg)
{
    (void)s;
    struct idup *d = arg;
    struct gc_comm *c = d->parent;
    int status = context_taken(d, d->context);
    if (status == MPI_SUCCESS && d->group != NULL)
        status = context_taken(d, d->group_context);
    if (status != MPI_SUCCESS)
        return status;
    struct gc_comm *dup = gc_comm_build_p2p(c->grid_rank, c->size, d->local,
                                            d->local_p2p, d->context);
    d->local_p2p = MPI_COMM_NULL; /* the struct's now, or freed */
    if (dup == NULL || (c->inter != NULL && adopt_inter(d, dup) != MPI_SUCCESS))
        return gc_error(c->handle, MPI_ERR_NO_MEM, d->function,
                        "out of memory");
    status = gc_comm_dup_parts_of(c, &d->local, d->function);
    if (status == MPI_SUCCESS)
        *d->newcomm = d->local;
    return status;
}

/* Step 1: MPICH's duplication of the parent's site communicator, in the
 * order of the parent's collectives. */
static int dup_start(const struct sched_local *l, MPI_Request *request)
{
    const struct idup *d = l->arg;
    return gc_ctxid_idup(d->parent->handle, d->info, l->rbuf, request);
}

/*
 * The steps, then step 2's duplications; on failure what was started has
 * finished (the other members started theirs) and is freed.
 */
static int idup_build(struct coll_sched *s, struct idup *d)
{
    struct gc_comm *c = d->parent;
    struct sched_local dup = {
        .op = LOCAL_START, .start = dup_start, .arg = d, .rbuf = &d->local};
    MPI_Comm from[3], *into[3];
    int n = 0;
    from[n] = c->local_p2p;
    into[n++] = &d->local_p2p;
    if (c->inter != NULL) {
        from[n] = d->group != NULL ? d->group->local : c->inter->group_comm;
        into[n++] = &d->group_local;
    }
    if (d->group != NULL) {
        from[n] = d->group->local_p2p;
        into[n++] = &d->group_p2p;
    }
    int duplicated = coll_sched_local(s, &dup, -1);
    int ok = duplicated >= 0;
    if (d->info != MPI_INFO_NULL)
        ok = ok && coll_sched_call(s, idup_info_free, d, duplicated) >= 0;
    for (int k = 0; k < n; k++)
        ok = ok && coll_sched_wait_mpich(s, &d->posted[k], -1) >= 0;
    ok = ok && coll_sched_call(s, idup_adopt, d, coll_sched_fence(s)) >= 0;
    if (!ok)
        return MPI_ERR_NO_MEM;
    int status = MPI_SUCCESS;
    for (int k = 0; k < n && status == MPI_SUCCESS; k++)
        status = gc_ctxid_idup(from[k], MPI_INFO_NULL, into[k], &d->posted[k]);
    if (status != MPI_SUCCESS)
        for (int k = 0; k < n; k++) {
            gc_ctxid_wait(&d->posted[k]);
            if (*into[k] != MPI_COMM_NULL)
                PMPI_Comm_free(into[k]);
        }
    return status;
}

static int idup_grid(struct gc_comm *c, MPI_Info info, MPI_Comm *newcomm,
                     MPI_Request *request, const char *function)
{
    if (newcomm == NULL || request == NULL)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "newcomm or request is NULL");
    struct coll_sched *s = coll_sched_new(c, function, NULL);
    struct idup *d = s != NULL ? coll_sched_alloc(s, sizeof *d) : NULL;
    int status = d != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS) {
        struct gc_comm *group =
            c->inter != NULL ? gc_comm_find(c->inter->group_comm) : NULL;
        *d = (struct idup){
            .parent = c,
            .newcomm = newcomm,
            .local = MPI_COMM_NULL,
            .local_p2p = MPI_COMM_NULL,
            .info = MPI_INFO_NULL,
            .context = gc_context_derived(c->context, c->idup_seq++),
            .function = function,
            .group = group,
            .group_local = MPI_COMM_NULL,
            .group_p2p = MPI_COMM_NULL,
            .posted = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
        if (group != NULL)
            d->group_context =
                gc_context_derived(group->context, group->idup_seq++);
        if (info != MPI_INFO_NULL)
            status = PMPI_Info_dup(info, &d->info);
    }
    if (status == MPI_SUCCESS)
        status = idup_build(s, d);
    if (status == MPI_SUCCESS)
        return coll_request_start(s, request);
    if (d != NULL && d->info != MPI_INFO_NULL)
        PMPI_Info_free(&d->info);
    coll_sched_free(s);
    return gc_error(c->handle, status, function,
                    "out of memory, or MPICH could not start a duplication");
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_idup(comm, newcomm, request);
    return idup_grid(c, MPI_INFO_NULL, newcomm, request, "MPI_Comm_idup");
}

int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                            MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Comm_idup_with_info(comm, info, newcomm, request);
    return idup_grid(c, info, newcomm, request, "MPI_Comm_idup_with_info");
}
