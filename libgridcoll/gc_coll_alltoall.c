/*
 * The all-to-all family on grid communicators, exchanged directly (see
 * gc_coll.c for the WAN message count).  Members of this site exchange
 * through one PMPI_Alltoallw_c on `local` with the user's datatypes: a
 * collective, so it cannot match the user's pending receives on the same
 * communicator as PMPI_Isend on `local` could.  Every pair of members on
 * different sites with data to move exchanges one packed message over the
 * relays, posted before the local phase and unpacked after it.
 */
#include <stdlib.h>

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
 * For every member on another site: packed message sizes and offsets
 * into one buffer (off[r] .. off[r + 1]; members on this site take no
 * room), from side `d`.
 */
static int remote_offsets(const struct gc_comm *c, const struct coll_side *d,
                          size_t *off)
{
    off[0] = 0;
    for (int r = 0; r < c->size; r++) {
        size_t len = 0;
        /* Count 0 first: the datatype of an empty part may be anything. */
        if (c->site[r] != c->site[c->rank] && d->counts[r] > 0) {
            int status = coll_packed_size(c, d->counts[r], d->types[r], &len);
            if (status != MPI_SUCCESS)
                return status;
        }
        off[r + 1] = off[r] + len;
    }
    return MPI_SUCCESS;
}

/* Local phase: this site's members' parts, re-indexed by local rank. */
static int local_phase(const struct gc_comm *c, const void *sbuf,
                       const struct coll_side *snd, void *rbuf,
                       const struct coll_side *rcv)
{
    int status = MPI_SUCCESS;
    size_t n = (size_t)c->local_size;
    MPI_Count *sc = malloc(n * sizeof *sc), *rc = malloc(n * sizeof *rc);
    MPI_Aint *sd = malloc(n * sizeof *sd), *rd = malloc(n * sizeof *rd);
    MPI_Datatype *st = malloc(n * sizeof *st), *rt = malloc(n * sizeof *rt);
    if (sc == NULL || rc == NULL || sd == NULL || rd == NULL || st == NULL ||
        rt == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int k = 0; k < c->local_size; k++) {
        int r = c->local_to_comm[k];
        rc[k] = rcv->counts[r];
        rd[k] = rcv->displs[r];
        rt[k] = rcv->types[r];
        /* In place MPI ignores the send side; it may be unset. */
        sc[k] = sbuf == MPI_IN_PLACE ? 0 : snd->counts[r];
        sd[k] = sbuf == MPI_IN_PLACE ? 0 : snd->displs[r];
        st[k] = sbuf == MPI_IN_PLACE ? MPI_BYTE : snd->types[r];
    }
    status = PMPI_Alltoallw_c(sbuf, sc, sd, st, rbuf, rc, rd, rt, c->local);
cleanup:
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(st);
    free(rt);
    return status;
}

/*
 * Alltoallw with byte displacements: packed messages to and from the
 * members on other sites around a local PMPI_Alltoallw_c.  In place, the
 * outgoing data is packed from recvbuf before anything overwrites it.
 */
int alltoallw_grid_direct(const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const void *sbuf = a->u.alltoall.sbuf;
    void *rbuf = a->u.alltoall.rbuf;
    const struct coll_side *snd = a->u.alltoall.snd, *rcv = a->u.alltoall.rcv;
    const struct coll_side *out = sbuf == MPI_IN_PLACE ? rcv : snd;
    const char *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    size_t n = (size_t)c->size + 1;
    size_t *soff = malloc(n * sizeof *soff), *roff = malloc(n * sizeof *roff);
    struct gc_xfer **reqs = malloc(2 * n * sizeof *reqs);
    unsigned char *sbytes = NULL, *rbytes = NULL;
    int posted = 0, local_status = MPI_SUCCESS;
    int status = MPI_SUCCESS;
    if (soff == NULL || roff == NULL || reqs == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    status = remote_offsets(c, out, soff);
    if (status == MPI_SUCCESS)
        status = remote_offsets(c, rcv, roff);
    if (status != MPI_SUCCESS)
        goto cleanup;
    sbytes = coll_alloc(soff[c->size]);
    rbytes = coll_alloc(roff[c->size]);
    if (sbytes == NULL || rbytes == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (soff[r + 1] > soff[r])
            status = coll_pack(c, src + out->displs[r], out->counts[r],
                               out->types[r], sbytes + soff[r],
                               soff[r + 1] - soff[r]);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* Both sides compute the same size from matching type signatures, so
     * empty messages are skipped on both. */
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (roff[r + 1] > roff[r])
            status = coll_irecv(c, r, TAG_ALLTOALL, rbytes + roff[r],
                                roff[r + 1] - roff[r], reqs, &posted);
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (soff[r + 1] > soff[r])
            status = coll_isend(c, r, TAG_ALLTOALL, sbytes + soff[r],
                                soff[r + 1] - soff[r], reqs, &posted);
    if (status == MPI_SUCCESS)
        local_status = local_phase(c, sbuf, snd, rbuf, rcv);
    status = coll_wait(c, posted, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (roff[r + 1] > roff[r])
            status = coll_unpack(c, rbytes + roff[r], roff[r + 1] - roff[r],
                                 (char *)rbuf + rcv->displs[r], rcv->counts[r],
                                 rcv->types[r]);
cleanup:
    free(soff);
    free(roff);
    free(reqs);
    free(sbytes);
    free(rbytes);
    return status;
}

/*
 * What the entry points share: check both sides (the send side is
 * ignored in place), describe them per peer, exchange.
 */
static int exchange(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                    const void *sbuf, const struct side_args *sa, void *rbuf,
                    const struct side_args *ra)
{
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
    struct coll_args a = {.comm = c, .fn = fn};
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

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, comm);
    return exchange(GC_COLL_ALLTOALL, c, "MPI_Alltoall", sendbuf,
                    &(struct side_args){.count = sendcount, .type = sendtype},
                    recvbuf,
                    &(struct side_args){.count = recvcount, .type = recvtype});
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                              recvcounts, rdispls, recvtype, comm);
    return exchange(
        GC_COLL_ALLTOALLV, c, "MPI_Alltoallv", sendbuf,
        &(struct side_args){
            .counts = sendcounts, .displs = sdispls, .type = sendtype},
        recvbuf,
        &(struct side_args){
            .counts = recvcounts, .displs = rdispls, .type = recvtype});
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], const MPI_Datatype sendtypes[],
                  void *recvbuf, const int recvcounts[], const int rdispls[],
                  const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                              recvcounts, rdispls, recvtypes, comm);
    return exchange(
        GC_COLL_ALLTOALLW, c, "MPI_Alltoallw", sendbuf,
        &(struct side_args){
            .counts = sendcounts, .displs = sdispls, .types = sendtypes},
        recvbuf,
        &(struct side_args){
            .counts = recvcounts, .displs = rdispls, .types = recvtypes});
}
