/*
 * The neighbourhood collectives on grid communicators with a process
 * topology (MPI-4.0 section 8.6): MPI_Neighbor_allgather(v) and
 * MPI_Neighbor_alltoall(v,w), blocking, nonblocking and persistent.  The
 * entry points check their arguments, describe every block as
 * Neighbor_alltoallw would (struct coll_neighbor_args) and run the
 * algorithm of the "neighbor" table (coll/neighbor/neighbor_grid_direct.c,
 * coll/neighbor/neighbor_grid_bundled.c).
 */
#include <stdlib.h>

#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"
#include "topo/gc_topo.h"

/*
 * One side of a call as the program gave it: `count` x `type` per
 * neighbour, blocks consecutive (allgather's send side: the same block
 * for every neighbour, `same`); or counts[] with displs[] in extents of
 * `type` (v-forms); or counts[], byte displacements bdispls[] and types[]
 * (w-form).
 */
struct nbr_side {
    const void *buf;
    int count;
    int same;
    const int *counts;
    const int *displs;
    const MPI_Aint *bdispls;
    MPI_Datatype type;
    const MPI_Datatype *types;
};

struct nbr_arrays {
    int *counts;
    MPI_Aint *displs;
    MPI_Datatype *types;
};

static void arrays_free(struct nbr_arrays *x)
{
    free(x->counts);
    free(x->displs);
    free(x->types);
}

static int check_side(const struct gc_comm *c, const char *fn, int degree,
                      const struct nbr_side *s)
{
    if (s->counts == NULL)
        return coll_check_buf(c, fn, s->count, s->type);
    int status = MPI_SUCCESS;
    for (int i = 0; i < degree && status == MPI_SUCCESS; i++)
        status = coll_check_buf(c, fn, s->counts[i],
                                s->types != NULL ? s->types[i] : s->type);
    return status;
}

/* Every block of a side as count, byte displacement and type. */
static int fill(const struct gc_comm *c, int degree, const struct nbr_side *s,
                struct nbr_arrays *x)
{
    size_t n = (size_t)(degree > 0 ? degree : 1);
    x->counts = malloc(n * sizeof *x->counts);
    x->displs = malloc(n * sizeof *x->displs);
    x->types = malloc(n * sizeof *x->types);
    if (x->counts == NULL || x->displs == NULL || x->types == NULL)
        return coll_no_mem(c);
    MPI_Aint lb, extent = 0;
    if (s->types == NULL) {
        int status = PMPI_Type_get_extent(s->type, &lb, &extent);
        if (status != MPI_SUCCESS)
            return status;
    }
    for (int i = 0; i < degree; i++) {
        x->counts[i] = s->counts != NULL ? s->counts[i] : s->count;
        x->types[i] = s->types != NULL ? s->types[i] : s->type;
        if (s->bdispls != NULL)
            x->displs[i] = s->bdispls[i];
        else if (s->displs != NULL)
            x->displs[i] = (MPI_Aint)s->displs[i] * extent;
        else
            x->displs[i] = s->same ? 0 : (MPI_Aint)i * s->count * extent;
    }
    return MPI_SUCCESS;
}

static int neighbor(struct gc_comm *c, const char *fn,
                    const struct nbr_side *snd, const struct nbr_side *rcv,
                    const struct coll_form *form)
{
    struct nbr_arrays sx = {0}, rx = {0};
    /* The receive side's buffer came in non-const. */
    struct coll_neighbor_args n = {.sbuf = snd->buf, .rbuf = (void *)rcv->buf};
    int status = gc_topo_neighbors(c, &n.indegree, &n.sources, &n.outdegree,
                                   &n.destinations);
    if (status != MPI_SUCCESS) {
        status = coll_arg_error(c, status, fn,
                                "the communicator has no process topology");
        goto cleanup;
    }
    status = check_side(c, fn, n.outdegree, snd);
    if (status == MPI_SUCCESS)
        status = check_side(c, fn, n.indegree, rcv);
    if (status == MPI_SUCCESS)
        status = fill(c, n.outdegree, snd, &sx);
    if (status == MPI_SUCCESS)
        status = fill(c, n.indegree, rcv, &rx);
    if (status != MPI_SUCCESS)
        goto cleanup;
    n.scounts = sx.counts;
    n.sdispls = sx.displs;
    n.stypes = sx.types;
    n.rcounts = rx.counts;
    n.rdispls = rx.displs;
    n.rtypes = rx.types;
    n.cart = c->topo->kind == MPI_CART;
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .request = form->request,
                          .persistent = form->persistent};
    /* Allgather and alltoall: MPI makes the block's type signature the
     * same on every member (the v- and w-forms leave bytes 0). */
    if (snd->counts == NULL && rcv->counts == NULL)
        status = coll_packed_size(c, rcv->count, rcv->type, &a.bytes);
    if (status != MPI_SUCCESS)
        goto cleanup;
    a.u.neighbor = n;
    status = coll_run(GC_COLL_NEIGHBOR, &a);
cleanup:
    arrays_free(&sx);
    arrays_free(&rx);
    return status;
}

/* ---- MPI_Neighbor_allgather --------------------------------------------- */

static int allgather(struct gc_comm *c, const char *fn, const void *sendbuf,
                     int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype,
                     const struct coll_form *form)
{
    struct nbr_side snd = {
        .buf = sendbuf, .count = sendcount, .same = 1, .type = sendtype};
    struct nbr_side rcv = {
        .buf = recvbuf, .count = recvcount, .type = recvtype};
    return neighbor(c, fn, &snd, &rcv, form);
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm);
    return allgather(c, "MPI_Neighbor_allgather", sendbuf, sendcount, sendtype,
                     recvbuf, recvcount, recvtype, COLL_BLOCKING);
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                        recvcount, recvtype, comm, request);
    return allgather(c, "MPI_Ineighbor_allgather", sendbuf, sendcount, sendtype,
                     recvbuf, recvcount, recvtype, COLL_NONBLOCKING(request));
}

int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount,
                                MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_allgather_init(sendbuf, sendcount, sendtype,
                                            recvbuf, recvcount, recvtype, comm,
                                            info, request);
    return allgather(c, "MPI_Neighbor_allgather_init", sendbuf, sendcount,
                     sendtype, recvbuf, recvcount, recvtype,
                     COLL_PERSISTENT(request));
}

/* ---- MPI_Neighbor_allgatherv -------------------------------------------- */

static int allgatherv(struct gc_comm *c, const char *fn, const void *sendbuf,
                      int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[],
                      MPI_Datatype recvtype, const struct coll_form *form)
{
    struct nbr_side snd = {
        .buf = sendbuf, .count = sendcount, .same = 1, .type = sendtype};
    struct nbr_side rcv = {.buf = recvbuf,
                           .counts = recvcounts,
                           .displs = displs,
                           .type = recvtype};
    return neighbor(c, fn, &snd, &rcv, form);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                        recvcounts, displs, recvtype, comm);
    return allgatherv(c, "MPI_Neighbor_allgatherv", sendbuf, sendcount,
                      sendtype, recvbuf, recvcounts, displs, recvtype,
                      COLL_BLOCKING);
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                         recvcounts, displs, recvtype, comm,
                                         request);
    return allgatherv(c, "MPI_Ineighbor_allgatherv", sendbuf, sendcount,
                      sendtype, recvbuf, recvcounts, displs, recvtype,
                      COLL_NONBLOCKING(request));
}

int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount,
                                 MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_allgatherv_init(sendbuf, sendcount, sendtype,
                                             recvbuf, recvcounts, displs,
                                             recvtype, comm, info, request);
    return allgatherv(c, "MPI_Neighbor_allgatherv_init", sendbuf, sendcount,
                      sendtype, recvbuf, recvcounts, displs, recvtype,
                      COLL_PERSISTENT(request));
}

/* ---- MPI_Neighbor_alltoall ---------------------------------------------- */

static int alltoall(struct gc_comm *c, const char *fn, const void *sendbuf,
                    int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype,
                    const struct coll_form *form)
{
    struct nbr_side snd = {
        .buf = sendbuf, .count = sendcount, .type = sendtype};
    struct nbr_side rcv = {
        .buf = recvbuf, .count = recvcount, .type = recvtype};
    return neighbor(c, fn, &snd, &rcv, form);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                      recvcount, recvtype, comm);
    return alltoall(c, "MPI_Neighbor_alltoall", sendbuf, sendcount, sendtype,
                    recvbuf, recvcount, recvtype, COLL_BLOCKING);
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm, request);
    return alltoall(c, "MPI_Ineighbor_alltoall", sendbuf, sendcount, sendtype,
                    recvbuf, recvcount, recvtype, COLL_NONBLOCKING(request));
}

int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Info info,
                               MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoall_init(sendbuf, sendcount, sendtype,
                                           recvbuf, recvcount, recvtype, comm,
                                           info, request);
    return alltoall(c, "MPI_Neighbor_alltoall_init", sendbuf, sendcount,
                    sendtype, recvbuf, recvcount, recvtype,
                    COLL_PERSISTENT(request));
}

/* ---- MPI_Neighbor_alltoallv --------------------------------------------- */

static int alltoallv(struct gc_comm *c, const char *fn, const void *sendbuf,
                     const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int rdispls[],
                     MPI_Datatype recvtype, const struct coll_form *form)
{
    struct nbr_side snd = {.buf = sendbuf,
                           .counts = sendcounts,
                           .displs = sdispls,
                           .type = sendtype};
    struct nbr_side rcv = {.buf = recvbuf,
                           .counts = recvcounts,
                           .displs = rdispls,
                           .type = recvtype};
    return neighbor(c, fn, &snd, &rcv, form);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                           const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                       recvbuf, recvcounts, rdispls, recvtype,
                                       comm);
    return alltoallv(c, "MPI_Neighbor_alltoallv", sendbuf, sendcounts, sdispls,
                     sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     COLL_BLOCKING);
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                        recvbuf, recvcounts, rdispls, recvtype,
                                        comm, request);
    return alltoallv(c, "MPI_Ineighbor_alltoallv", sendbuf, sendcounts, sdispls,
                     sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     COLL_NONBLOCKING(request));
}

int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                const int sdispls[], MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype,
                                MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoallv_init(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
            rdispls, recvtype, comm, info, request);
    return alltoallv(c, "MPI_Neighbor_alltoallv_init", sendbuf, sendcounts,
                     sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     COLL_PERSISTENT(request));
}

/* ---- MPI_Neighbor_alltoallw --------------------------------------------- */

static int alltoallw(struct gc_comm *c, const char *fn, const void *sendbuf,
                     const int sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf,
                     const int recvcounts[], const MPI_Aint rdispls[],
                     const MPI_Datatype recvtypes[],
                     const struct coll_form *form)
{
    struct nbr_side snd = {.buf = sendbuf,
                           .counts = sendcounts,
                           .bdispls = sdispls,
                           .types = sendtypes};
    struct nbr_side rcv = {.buf = recvbuf,
                           .counts = recvcounts,
                           .bdispls = rdispls,
                           .types = recvtypes};
    return neighbor(c, fn, &snd, &rcv, form);
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                           const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf,
                           const int recvcounts[], const MPI_Aint rdispls[],
                           const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                       recvbuf, recvcounts, rdispls, recvtypes,
                                       comm);
    return alltoallw(c, "MPI_Neighbor_alltoallw", sendbuf, sendcounts, sdispls,
                     sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                     COLL_BLOCKING);
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                            const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf,
                            const int recvcounts[], const MPI_Aint rdispls[],
                            const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                        recvbuf, recvcounts, rdispls, recvtypes,
                                        comm, request);
    return alltoallw(c, "MPI_Ineighbor_alltoallw", sendbuf, sendcounts, sdispls,
                     sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                     COLL_NONBLOCKING(request));
}

int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                const MPI_Aint sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf,
                                const int recvcounts[],
                                const MPI_Aint rdispls[],
                                const MPI_Datatype recvtypes[], MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Neighbor_alltoallw_init(
            sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
            rdispls, recvtypes, comm, info, request);
    return alltoallw(c, "MPI_Neighbor_alltoallw_init", sendbuf, sendcounts,
                     sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                     recvtypes, COLL_PERSISTENT(request));
}
