/*
 * The all-to-all family on grid communicators: the entry points check
 * their arguments, describe both sides per peer (struct coll_side) and
 * run the algorithm the table picks (coll/alltoall_grid_*.c).
 */
#include <stdlib.h>

#include "coll/gc_coll.h"
#include "coll/intercomm/intercomm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"

static void side_free(struct coll_side *s)
{
    free(s->counts);
    free(s->displs);
    free(s->types);
}

/*
 * One side as an entry point gives it: Alltoall (v.counts and v.icounts
 * NULL: `count` elements of `type` per peer, consecutive), Alltoallv
 * (types NULL: displs in extents of `type`) or Alltoallw (displs in
 * bytes, types[]).
 */
struct side_args {
    struct coll_vec v;
    MPI_Count count;
    MPI_Datatype type;
    const MPI_Datatype *types;
};

static int side_uniform(const struct side_args *a)
{
    return a->v.counts == NULL && a->v.icounts == NULL;
}

/* The caller frees `s` with side_free, also after a failure. */
static int side_fill(const struct gc_comm *c, const char *fn,
                     const struct side_args *a, struct coll_side *s)
{
    MPI_Aint lb, extent = 0;
    size_t n = (size_t)c->size + 1;
    struct coll_wide w = {0};
    int status = MPI_SUCCESS;
    s->counts = malloc(n * sizeof *s->counts);
    s->displs = malloc(n * sizeof *s->displs);
    s->types = malloc(n * sizeof *s->types);
    if (s->counts == NULL || s->displs == NULL || s->types == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    if (side_uniform(a)) {
        status = coll_check_buf(c, fn, a->count, a->type);
    } else {
        status = coll_vec_wide(c, c->size, a->v, &w);
        if (status == MPI_SUCCESS)
            status = coll_check_counts(c, fn, c->size, w.counts);
        if (status == MPI_SUCCESS && a->types == NULL)
            status = coll_check_type(c, fn, a->type);
    }
    if (status == MPI_SUCCESS && a->types == NULL)
        status = PMPI_Type_get_extent(a->type, &lb, &extent);
    if (status != MPI_SUCCESS)
        goto cleanup;
    for (int r = 0; r < c->size; r++) {
        s->counts[r] = w.counts != NULL ? w.counts[r] : a->count;
        s->types[r] = a->types != NULL ? a->types[r] : a->type;
        if (w.counts == NULL)
            s->displs[r] = (MPI_Aint)r * a->count * extent;
        else if (a->types == NULL)
            s->displs[r] = w.displs[r] * extent;
        else
            s->displs[r] = w.displs[r];
    }
cleanup:
    coll_wide_free(&w);
    return status;
}

/* On an intercommunicator (coll/intercomm/ic_alltoall.c), whose
 * counts and displacements are int. */
static int inter_exchange(struct gc_comm *c, const char *fn, const void *sbuf,
                          const struct side_args *sa, void *rbuf,
                          const struct side_args *ra,
                          const struct coll_form *form)
{
    struct ic_vec sx = {0}, rx = {0};
    int n = c->inter->remote_size, status = MPI_SUCCESS;
    if (!ic_fits(sa->count) || !ic_fits(ra->count))
        status = gc_unsupported(c->handle, fn);
    if (status == MPI_SUCCESS)
        status = ic_vec_narrow(c, fn, side_uniform(sa) ? 0 : n, sa->v, &sx);
    if (status == MPI_SUCCESS)
        status = ic_vec_narrow(c, fn, side_uniform(ra) ? 0 : n, ra->v, &rx);
    if (status == MPI_SUCCESS) {
        struct ic_blocks send = {sbuf,      (int)sa->count, sx.counts,
                                 sx.displs, sa->type,       sa->types};
        struct ic_blocks recv = {rbuf,      (int)ra->count, rx.counts,
                                 rx.displs, ra->type,       ra->types};
        status = ic_alltoall(c, fn, &send, &recv, form);
    }
    ic_vec_free(&sx);
    ic_vec_free(&rx);
    return status;
}

/*
 * What the entry points share: check both sides (the send side is
 * ignored in place), describe them per peer, exchange.
 */
static int exchange(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                    const void *sbuf, const struct side_args *sa, void *rbuf,
                    const struct side_args *ra, const struct coll_form *form)
{
    if (c->inter != NULL)
        return inter_exchange(c, fn, sbuf, sa, rbuf, ra, form);
    struct coll_side snd = {0}, rcv = {0};
    int status = side_fill(c, fn, ra, &rcv);
    if (status == MPI_SUCCESS && sbuf != MPI_IN_PLACE)
        status = side_fill(c, fn, sa, &snd);
    if (status != MPI_SUCCESS)
        goto cleanup;
    struct coll_args a = {.comm = c,
                          .fn = fn,
                          .request = form->request,
                          .persistent = form->persistent};
    if (kind == GC_COLL_ALLTOALL)
        gc_packed_size(ra->count, ra->type, &a.bytes);
    a.u.alltoall = (struct coll_alltoall_args){
        .sbuf = sbuf, .snd = &snd, .rbuf = rbuf, .rcv = &rcv};
    status = coll_run(kind, &a);
cleanup:
    side_free(&snd);
    side_free(&rcv);
    return status;
}

static int alltoall(struct gc_comm *c, const char *fn, const void *sendbuf,
                    MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype,
                    const struct coll_form *form)
{
    int status = sendcount > 0
                     ? coll_check_alias(c, fn, sendbuf, recvbuf, recvcount)
                     : MPI_SUCCESS;
    if (status != MPI_SUCCESS)
        return status;
    return exchange(
        GC_COLL_ALLTOALL, c, fn, sendbuf,
        &(struct side_args){.count = sendcount, .type = sendtype}, recvbuf,
        &(struct side_args){.count = recvcount, .type = recvtype}, form);
}

#define ALLTOALL_PARAMS(COUNT, DISP)                                           \
    const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype,               \
        void *recvbuf, COUNT recvcount, MPI_Datatype recvtype
#define ALLTOALL_ARGS()                                                        \
    sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype
#define ALLTOALL_IMPL(c, fn, form) alltoall(c, fn, ALLTOALL_ARGS(), form)
GC_COLL_FORMS(Alltoall, Ialltoall, ALLTOALL_PARAMS, ALLTOALL_ARGS,
              ALLTOALL_IMPL)

#define ALLTOALLV_PARAMS(COUNT, DISP)                                          \
    const void *sendbuf, const COUNT sendcounts[], const DISP sdispls[],       \
        MPI_Datatype sendtype, void *recvbuf, const COUNT recvcounts[],        \
        const DISP rdispls[], MPI_Datatype recvtype
#define ALLTOALLV_ARGS()                                                       \
    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,      \
        recvtype
#define ALLTOALLV_IMPL(c, fn, form)                                            \
    exchange(GC_COLL_ALLTOALLV, c, fn, sendbuf,                                \
             &(struct side_args){.v = COLL_VEC(sendcounts, sdispls),           \
                                 .type = sendtype},                            \
             recvbuf,                                                          \
             &(struct side_args){.v = COLL_VEC(recvcounts, rdispls),           \
                                 .type = recvtype},                            \
             form)
GC_COLL_FORMS(Alltoallv, Ialltoallv, ALLTOALLV_PARAMS, ALLTOALLV_ARGS,
              ALLTOALLV_IMPL)

#define ALLTOALLW_PARAMS(COUNT, DISP)                                          \
    const void *sendbuf, const COUNT sendcounts[], const DISP sdispls[],       \
        const MPI_Datatype sendtypes[], void *recvbuf,                         \
        const COUNT recvcounts[], const DISP rdispls[],                        \
        const MPI_Datatype recvtypes[]
#define ALLTOALLW_ARGS()                                                       \
    sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,     \
        recvtypes
#define ALLTOALLW_IMPL(c, fn, form)                                            \
    exchange(GC_COLL_ALLTOALLW, c, fn, sendbuf,                                \
             &(struct side_args){.v = COLL_VEC(sendcounts, sdispls),           \
                                 .types = sendtypes},                          \
             recvbuf,                                                          \
             &(struct side_args){.v = COLL_VEC(recvcounts, rdispls),           \
                                 .types = recvtypes},                          \
             form)
GC_COLL_FORMS(Alltoallw, Ialltoallw, ALLTOALLW_PARAMS, ALLTOALLW_ARGS,
              ALLTOALLW_IMPL)
