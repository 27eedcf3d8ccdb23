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

#include "coll/gc_coll.h"
#include "coll/neighbor/neighbor_plan.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"

/*
 * One side of a call as the program gave it: `count` x `type` per
 * neighbour, blocks consecutive (allgather's send side: the same block
 * for every neighbour, `same`); or counts and displacements (`v`) in
 * extents of `type` (v-forms) or, with `bytes`, in bytes with types[]
 * (w-form).
 */
struct nbr_side {
    const void *buf;
    MPI_Count count;
    int same;
    struct coll_vec v;
    int bytes;
    MPI_Datatype type;
    const MPI_Datatype *types;
};

struct nbr_arrays {
    MPI_Count *counts;
    MPI_Aint *displs;
    MPI_Datatype *types;
};

static void arrays_free(struct nbr_arrays *x)
{
    free(x->counts);
    free(x->displs);
    free(x->types);
}

/* Check a side and describe every block as count, byte displacement and
 * type. */
static int fill(const struct gc_comm *c, const char *fn, int degree,
                const struct nbr_side *s, struct nbr_arrays *x)
{
    size_t n = (size_t)(degree > 0 ? degree : 1);
    struct coll_wide w = {0};
    MPI_Aint lb, extent = 0;
    int status = MPI_SUCCESS;
    int uniform = s->v.counts == NULL && s->v.icounts == NULL;
    x->counts = malloc(n * sizeof *x->counts);
    x->displs = malloc(n * sizeof *x->displs);
    x->types = malloc(n * sizeof *x->types);
    if (x->counts == NULL || x->displs == NULL || x->types == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    if (uniform)
        status = coll_check_buf(c, fn, s->count, s->type);
    else
        status = coll_vec_wide(c, degree, s->v, &w);
    for (int i = 0; !uniform && i < degree && status == MPI_SUCCESS; i++)
        status = coll_check_buf(c, fn, w.counts[i],
                                s->types != NULL ? s->types[i] : s->type);
    if (status == MPI_SUCCESS && s->types == NULL)
        status = PMPI_Type_get_extent(s->type, &lb, &extent);
    if (status != MPI_SUCCESS)
        goto cleanup;
    for (int i = 0; i < degree; i++) {
        x->counts[i] = uniform ? s->count : w.counts[i];
        x->types[i] = s->types != NULL ? s->types[i] : s->type;
        if (uniform)
            x->displs[i] = s->same ? 0 : (MPI_Aint)i * s->count * extent;
        else
            x->displs[i] = s->bytes ? w.displs[i] : w.displs[i] * extent;
    }
cleanup:
    coll_wide_free(&w);
    return status;
}

static int neighbor(struct gc_comm *c, const char *fn,
                    const struct nbr_side *snd, const struct nbr_side *rcv,
                    const struct coll_form *form)
{
    struct nbr_arrays sx = {0}, rx = {0};
    /* The receive side's buffer came in non-const. */
    struct coll_neighbor_args n = {.sbuf = snd->buf, .rbuf = (void *)rcv->buf};
    const struct coll_neighborhood *h = c->neighborhood;
    int status = MPI_SUCCESS;
    if (h == NULL) {
        status = gc_error(c->handle, MPI_ERR_TOPOLOGY, fn,
                          "the communicator has no process topology");
        goto cleanup;
    }
    n.indegree = h->in;
    n.sources = h->sources;
    n.outdegree = h->out;
    n.destinations = h->destinations;
    n.cart = h->cart;
    status = fill(c, fn, n.outdegree, snd, &sx);
    if (status == MPI_SUCCESS)
        status = fill(c, fn, n.indegree, rcv, &rx);
    if (status != MPI_SUCCESS)
        goto cleanup;
    n.scounts = sx.counts;
    n.sdispls = sx.displs;
    n.stypes = sx.types;
    n.rcounts = rx.counts;
    n.rdispls = rx.displs;
    n.rtypes = rx.types;
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .request = form->request,
                          .persistent = form->persistent};
    /* Allgather and alltoall: MPI makes the block's type signature the
     * same on every member (the v- and w-forms leave bytes 0). */
    if (snd->v.counts == NULL && snd->v.icounts == NULL &&
        rcv->v.counts == NULL && rcv->v.icounts == NULL)
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

/* ---- the entry points (gc_coll.h, GC_COLL_FORMS) ------------------------- */

/* Neighbor_allgather and Neighbor_alltoall: one count and type a side. */
#define NBR_BLOCKS_PARAMS(COUNT, DISP)                                         \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, COUNT recvcount, MPI_Datatype recvtype
#define NBR_BLOCKS_ARGS()                                                      \
    sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype

#define NBR_ALLGATHER_IMPL(c, fn, form)                                        \
    neighbor(                                                                  \
        c, fn,                                                                 \
        &(struct nbr_side){                                                    \
            .buf = sendbuf, .count = sendcount, .same = 1, .type = sendtype},  \
        &(struct nbr_side){                                                    \
            .buf = recvbuf, .count = recvcount, .type = recvtype},             \
        form)
GC_COLL_FORMS(Neighbor_allgather, Ineighbor_allgather, NBR_BLOCKS_PARAMS,
              NBR_BLOCKS_ARGS, NBR_ALLGATHER_IMPL)

#define NBR_ALLGATHERV_PARAMS(COUNT, DISP)                                     \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, const COUNT recvcounts[], const DISP displs[],          \
        MPI_Datatype recvtype
#define NBR_ALLGATHERV_ARGS()                                                  \
    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype
#define NBR_ALLGATHERV_IMPL(c, fn, form)                                       \
    neighbor(                                                                  \
        c, fn,                                                                 \
        &(struct nbr_side){                                                    \
            .buf = sendbuf, .count = sendcount, .same = 1, .type = sendtype},  \
        &(struct nbr_side){.buf = recvbuf,                                     \
                           .v = COLL_VEC(recvcounts, displs),                  \
                           .type = recvtype},                                  \
        form)
GC_COLL_FORMS(Neighbor_allgatherv, Ineighbor_allgatherv, NBR_ALLGATHERV_PARAMS,
              NBR_ALLGATHERV_ARGS, NBR_ALLGATHERV_IMPL)

#define NBR_ALLTOALL_IMPL(c, fn, form)                                         \
    neighbor(c, fn,                                                            \
             &(struct nbr_side){                                               \
                 .buf = sendbuf, .count = sendcount, .type = sendtype},        \
             &(struct nbr_side){                                               \
                 .buf = recvbuf, .count = recvcount, .type = recvtype},        \
             form)
GC_COLL_FORMS(Neighbor_alltoall, Ineighbor_alltoall, NBR_BLOCKS_PARAMS,
              NBR_BLOCKS_ARGS, NBR_ALLTOALL_IMPL)

#define NBR_ALLTOALLV_PARAMS(COUNT, DISP)                                      \
    const void *sendbuf, const COUNT sendcounts[], const DISP sdispls[],       \
        MPI_Datatype sendtype, void *recvbuf, const COUNT recvcounts[],        \
        const DISP rdispls[], MPI_Datatype recvtype
#define NBR_ALLTOALLV_ARGS()                                                   \
    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,      \
        recvtype
#define NBR_ALLTOALLV_IMPL(c, fn, form)                                        \
    neighbor(c, fn,                                                            \
             &(struct nbr_side){.buf = sendbuf,                                \
                                .v = COLL_VEC(sendcounts, sdispls),            \
                                .type = sendtype},                             \
             &(struct nbr_side){.buf = recvbuf,                                \
                                .v = COLL_VEC(recvcounts, rdispls),            \
                                .type = recvtype},                             \
             form)
GC_COLL_FORMS(Neighbor_alltoallv, Ineighbor_alltoallv, NBR_ALLTOALLV_PARAMS,
              NBR_ALLTOALLV_ARGS, NBR_ALLTOALLV_IMPL)

/* The w-form's displacements are MPI_Aint bytes in both forms. */
#define NBR_ALLTOALLW_PARAMS(COUNT, DISP)                                      \
    const void *sendbuf, const COUNT sendcounts[], const MPI_Aint sdispls[],   \
        const MPI_Datatype sendtypes[], void *recvbuf,                         \
        const COUNT recvcounts[], const MPI_Aint rdispls[],                    \
        const MPI_Datatype recvtypes[]
#define NBR_ALLTOALLW_ARGS()                                                   \
    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,     \
        recvtypes
#define NBR_ALLTOALLW_IMPL(c, fn, form)                                        \
    neighbor(c, fn,                                                            \
             &(struct nbr_side){.buf = sendbuf,                                \
                                .v = COLL_VEC(sendcounts, sdispls),            \
                                .bytes = 1,                                    \
                                .types = sendtypes},                           \
             &(struct nbr_side){.buf = recvbuf,                                \
                                .v = COLL_VEC(recvcounts, rdispls),            \
                                .bytes = 1,                                    \
                                .types = recvtypes},                           \
             form)
GC_COLL_FORMS(Neighbor_alltoallw, Ineighbor_alltoallw, NBR_ALLTOALLW_PARAMS,
              NBR_ALLTOALLW_ARGS, NBR_ALLTOALLW_IMPL)
