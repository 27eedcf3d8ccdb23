/*
 * The all-to-all family on grid communicators: the entry points check
 * their arguments, describe both sides per peer (struct coll_side) and
 * run the algorithm the table picks (coll/alltoall_grid_*.c).
 */
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "gc_mpi.h"

static void side_free(struct coll_side *s)
{
    free(s->counts);
    free(s->displs);
    free(s->types);
}

/*
 * One side as an entry point gives it: Alltoall (counts NULL: `count`
 * elements of `type` per peer, consecutive), Alltoallv (types NULL:
 * displs in extents of `type`) or Alltoallw (displs in bytes, types[]).
 */
struct side_args {
    const int *counts;
    int count;
    const int *displs;
    MPI_Datatype type;
    const MPI_Datatype *types;
};

static int side_check(const struct gc_comm *c, const char *fn,
                      const struct side_args *a)
{
    if (a->counts == NULL)
        return coll_check_buf(c, fn, a->count, a->type);
    int status = coll_check_counts(c, fn, c->size, a->counts);
    if (status == MPI_SUCCESS && a->types == NULL)
        status = coll_check_type(c, fn, a->type);
    return status;
}

/* The caller frees `s` with side_free, also after a failure. */
static int side_fill(const struct gc_comm *c, const struct side_args *a,
                     struct coll_side *s)
{
    MPI_Aint lb, extent = 0;
    size_t n = (size_t)c->size + 1;
    s->counts = malloc(n * sizeof *s->counts);
    s->displs = malloc(n * sizeof *s->displs);
    s->types = malloc(n * sizeof *s->types);
    if (s->counts == NULL || s->displs == NULL || s->types == NULL)
        return coll_no_mem(c);
    if (a->types == NULL) {
        int status = PMPI_Type_get_extent(a->type, &lb, &extent);
        if (status != MPI_SUCCESS)
            return status;
    }
    for (int r = 0; r < c->size; r++) {
        s->counts[r] = a->counts != NULL ? a->counts[r] : a->count;
        s->types[r] = a->types != NULL ? a->types[r] : a->type;
        if (a->counts == NULL)
            s->displs[r] = (MPI_Aint)r * a->count * extent;
        else if (a->types == NULL)
            s->displs[r] = a->displs[r] * extent;
        else
            s->displs[r] = a->displs[r];
    }
    return MPI_SUCCESS;
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
        return ic_alltoall(c, fn,
                           &(struct ic_blocks){sbuf, sa->count, sa->counts,
                                               sa->displs, sa->type, sa->types},
                           &(struct ic_blocks){rbuf, ra->count, ra->counts,
                                               ra->displs, ra->type, ra->types},
                           form);
    struct coll_side snd = {0}, rcv = {0};
    int status = side_check(c, fn, ra);
    if (status == MPI_SUCCESS && sbuf != MPI_IN_PLACE)
        status = side_check(c, fn, sa);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (sbuf != MPI_IN_PLACE) {
        status = side_fill(c, sa, &snd);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    status = side_fill(c, ra, &rcv);
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
                    int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype,
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

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, comm);
    return alltoall(c, "MPI_Alltoall", sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, COLL_BLOCKING);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              recvtype, comm, request);
    return alltoall(c, "MPI_Ialltoall", sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, COLL_NONBLOCKING(request));
}

int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf,
                                  recvcount, recvtype, comm, info, request);
    return alltoall(c, "MPI_Alltoall_init", sendbuf, sendcount, sendtype,
                    recvbuf, recvcount, recvtype, COLL_PERSISTENT(request));
}

static int alltoallv(struct gc_comm *c, const char *fn, const void *sendbuf,
                     const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int rdispls[],
                     MPI_Datatype recvtype, const struct coll_form *form)
{
    return exchange(
        GC_COLL_ALLTOALLV, c, fn, sendbuf,
        &(struct side_args){
            .counts = sendcounts, .displs = sdispls, .type = sendtype},
        recvbuf,
        &(struct side_args){
            .counts = recvcounts, .displs = rdispls, .type = recvtype},
        form);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                              recvcounts, rdispls, recvtype, comm);
    return alltoallv(c, "MPI_Alltoallv", sendbuf, sendcounts, sdispls, sendtype,
                     recvbuf, recvcounts, rdispls, recvtype, COLL_BLOCKING);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[],
                   const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int rdispls[],
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                               recvcounts, rdispls, recvtype, comm, request);
    return alltoallv(c, "MPI_Ialltoallv", sendbuf, sendcounts, sdispls,
                     sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     COLL_NONBLOCKING(request));
}

int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype,
                                   recvbuf, recvcounts, rdispls, recvtype, comm,
                                   info, request);
    return alltoallv(c, "MPI_Alltoallv_init", sendbuf, sendcounts, sdispls,
                     sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     COLL_PERSISTENT(request));
}

static int alltoallw(struct gc_comm *c, const char *fn, const void *sendbuf,
                     const int sendcounts[], const int sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf,
                     const int recvcounts[], const int rdispls[],
                     const MPI_Datatype recvtypes[],
                     const struct coll_form *form)
{
    return exchange(
        GC_COLL_ALLTOALLW, c, fn, sendbuf,
        &(struct side_args){
            .counts = sendcounts, .displs = sdispls, .types = sendtypes},
        recvbuf,
        &(struct side_args){
            .counts = recvcounts, .displs = rdispls, .types = recvtypes},
        form);
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], const MPI_Datatype sendtypes[],
                  void *recvbuf, const int recvcounts[], const int rdispls[],
                  const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                              recvcounts, rdispls, recvtypes, comm);
    return alltoallw(c, "MPI_Alltoallw", sendbuf, sendcounts, sdispls,
                     sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                     COLL_BLOCKING);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[],
                   const int sdispls[], const MPI_Datatype sendtypes[],
                   void *recvbuf, const int recvcounts[], const int rdispls[],
                   const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                               recvcounts, rdispls, recvtypes, comm, request);
    return alltoallw(c, "MPI_Ialltoallw", sendbuf, sendcounts, sdispls,
                     sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                     COLL_NONBLOCKING(request));
}

int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[],
                       const int sdispls[], const MPI_Datatype sendtypes[],
                       void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[],
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes,
                                   recvbuf, recvcounts, rdispls, recvtypes,
                                   comm, info, request);
    return alltoallw(c, "MPI_Alltoallw_init", sendbuf, sendcounts, sdispls,
                     sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                     COLL_PERSISTENT(request));
}
