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
 *      the program's attributes, as MPI_Comm_dup copies them) and of
 *      local_p2p (the collectives' private site communicator, which has
 *      none), as LOCAL steps, in the communicator's collective order;
 *   2. when both are done, register the grid communicator and hand it out.
 * Its relay context is derived from the parent's and the number of the
 * duplication (gc_context_derived), not agreed on: an agreement on the
 * largest next free id, as the blocking constructors make, can pick an id
 * that a member gave meanwhile to another communicator, since MPI lets
 * members start duplications of different communicators in different
 * orders.  Cost: the two MPICH duplications inside each site, nothing
 * over the WAN.
 */
#include <stdio.h>

#include "engine/coll_request.h"
#include "gc_group.h"
#include "topo/gc_topo.h"

struct idup {
    struct gc_comm *parent;
    MPI_Comm *newcomm; /* the program's, written at the end */
    MPI_Comm local, local_p2p;
    /* idup_with_info: the program's hints, copied (it may free its info
     * once the call returns), freed once MPICH has taken them */
    MPI_Info info;
    uint32_t context;
    const char *function;
};

static int idup_info_free(struct coll_sched *s, void *arg)
{
    (void)s;
    struct idup *d = arg;
    return PMPI_Info_free(&d->info);
}

static int idup_adopt(struct coll_sched *s, void *arg)
{
    (void)s;
    struct idup *d = arg;
    struct gc_comm *c = d->parent;
    if (gc_comm_context_taken(d->context))
        return gc_report(c->handle, MPI_ERR_INTERN, d->function,
                         "the derived relay context is in use on this "
                         "process (a hash collision)");
    struct gc_comm *dup = gc_comm_build_p2p(c->grid_rank, c->size, d->local,
                                            d->local_p2p, d->context);
    d->local_p2p = MPI_COMM_NULL; /* the struct's now, or freed */
    if (dup == NULL)
        return gc_report(c->handle, MPI_ERR_NO_MEM, d->function,
                         "out of memory");
    int status = gc_topo_dup(c, &d->local, d->function);
    if (status == MPI_SUCCESS)
        *d->newcomm = d->local;
    return status;
}

static void idup_build(struct coll_sched *s, struct idup *d)
{
    struct gc_comm *c = d->parent;
    struct sched_local dup = {.op = LOCAL_COMM_IDUP,
                              .comm = c->handle,
                              .info = d->info,
                              .rbuf = &d->local};
    struct sched_local p2p = {.op = LOCAL_COMM_IDUP,
                              .comm = c->local_p2p,
                              .info = MPI_INFO_NULL,
                              .rbuf = &d->local_p2p};
    int duplicated = coll_sched_local(s, &dup, -1);
    if (d->info != MPI_INFO_NULL)
        coll_sched_call(s, idup_info_free, d, duplicated);
    coll_sched_local(s, &p2p, -1);
    coll_sched_call(s, idup_adopt, d, coll_sched_fence(s));
}

static int idup_grid(struct gc_comm *c, MPI_Info info, MPI_Comm *newcomm,
                     MPI_Request *request, const char *function)
{
    if (newcomm == NULL || request == NULL)
        return gc_report(c->handle, MPI_ERR_ARG, function,
                         "newcomm or request is NULL");
    /* The copy would need its groups' own communicators too
     * (gc_inter_attach), which are made collectively: not yet done
     * without blocking.  Without them it would be an intracommunicator
     * of the union, and give wrong results (MPICH's comm_idup). */
    if (c->inter != NULL) {
        char what[96];
        snprintf(what, sizeof what, "%s with intercommunicators", function);
        return gc_unsupported(c->handle, what);
    }
    struct coll_sched *s = coll_sched_new(c, function, NULL);
    struct idup *d = s != NULL ? coll_sched_alloc(s, sizeof *d) : NULL;
    int status = d != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS) {
        *d = (struct idup){.parent = c,
                           .newcomm = newcomm,
                           .local = MPI_COMM_NULL,
                           .local_p2p = MPI_COMM_NULL,
                           .info = MPI_INFO_NULL,
                           .context =
                               gc_context_derived(c->context, c->idup_seq++),
                           .function = function};
        if (info != MPI_INFO_NULL)
            status = PMPI_Info_dup(info, &d->info);
    }
    if (status != MPI_SUCCESS) {
        if (s != NULL)
            coll_sched_free(s);
        return gc_report(c->handle, status, function,
                         "out of memory, or info is not valid");
    }
    idup_build(s, d);
    return coll_request_start(s, request);
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
