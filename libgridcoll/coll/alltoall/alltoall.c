/*
 * Shared parts of the all-to-all algorithms (coll/alltoall/alltoall.h): the
 * call as packed block sizes, buffers sized at run time, and running the local
 * phase with the schedule the site level of the table chose.
 */
#include <stdio.h>
#include <stdlib.h>

#include "coll/alltoall/alltoall.h"
#include "coll/engine/coll_sched.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_world.h"

/* ---- the call ------------------------------------------------------------ */

/* The call's sides and the packed sizes into slen[] and rlen[]. */
static int call_fill(const struct coll_args *a, struct alltoall_call *k)
{
    struct gc_comm *c = a->comm;
    const struct coll_alltoall_args *u = &a->u.alltoall;
    int in_place = u->sbuf == MPI_IN_PLACE;
    k->c = c;
    k->src = in_place ? u->rbuf : u->sbuf;
    k->out = in_place ? u->rcv : u->snd;
    k->rbuf = u->rbuf;
    k->rcv = u->rcv;
    k->block = a->bytes;
    k->my_site = c->site[c->rank];
    int status = MPI_SUCCESS;
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++) {
        k->slen[r] = k->rlen[r] = 0;
        /* Count 0 first: the datatype of an empty block may be anything. */
        if (k->out->counts[r] > 0)
            status = coll_packed_size(c, k->out->counts[r], k->out->types[r],
                                      &k->slen[r]);
        if (status == MPI_SUCCESS && k->rcv->counts[r] > 0)
            status = coll_packed_size(c, k->rcv->counts[r], k->rcv->types[r],
                                      &k->rlen[r]);
    }
    return status;
}

int alltoall_call_sched(struct coll_sched *s, const struct coll_args *a,
                        struct alltoall_call *k)
{
    struct gc_comm *c = a->comm;
    *k = (struct alltoall_call){0};
    k->slen = coll_sched_alloc(s, 2 * (size_t)c->size * sizeof *k->slen);
    k->map.member = coll_sched_alloc(s, (size_t)c->size * sizeof(int));
    if (k->slen == NULL || k->map.member == NULL)
        return coll_no_mem(c);
    k->rlen = k->slen + c->size;
    /* The site map of site_map_build, in schedule memory. */
    int at = 0;
    for (int t = 0; t < GC_MAX_SITES; t++) {
        k->map.first[t] = at;
        for (int r = 0; r < c->size; r++)
            if (c->site[r] == t)
                k->map.member[at++] = r;
        k->map.count[t] = at - k->map.first[t];
    }
    return call_fill(a, k);
}

/* One side of the call, copied into the schedule. */
static const struct coll_side *side_copy(struct coll_sched *s,
                                         const struct coll_side *from)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t n = (size_t)c->size;
    struct coll_side *to = coll_sched_alloc(s, sizeof *to);
    MPI_Count *counts = coll_sched_alloc(s, n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, n * sizeof *displs);
    MPI_Datatype *types = coll_sched_alloc(s, n * sizeof *types);
    if (to == NULL || counts == NULL || displs == NULL || types == NULL)
        return NULL;
    for (size_t r = 0; r < n; r++) {
        counts[r] = from->counts[r];
        displs[r] = from->displs[r];
        /* Count 0: the datatype of an empty block may be anything. */
        types[r] =
            counts[r] > 0 ? coll_sched_type(s, from->types[r]) : MPI_BYTE;
    }
    *to = (struct coll_side){counts, displs, types};
    return to;
}

int alltoall_keep_sides(struct coll_sched *s, const struct coll_args *a,
                        struct coll_args *kept)
{
    const struct coll_alltoall_args *u = &a->u.alltoall;
    *kept = *a;
    kept->u.alltoall.rcv = side_copy(s, u->rcv);
    kept->u.alltoall.snd =
        u->sbuf == MPI_IN_PLACE ? NULL : side_copy(s, u->snd);
    if (kept->u.alltoall.rcv == NULL ||
        (u->sbuf != MPI_IN_PLACE && kept->u.alltoall.snd == NULL))
        return coll_no_mem(a->comm);
    return MPI_SUCCESS;
}

int alltoall_pack(const struct alltoall_call *k, int r, unsigned char *at)
{
    return coll_pack(k->c, k->src + k->out->displs[r], k->out->counts[r],
                     k->out->types[r], at, k->slen[r]);
}

int alltoall_unpack(const struct alltoall_call *k, int r,
                    const unsigned char *at)
{
    return coll_unpack(k->c, at, k->rlen[r], k->rbuf + k->rcv->displs[r],
                       k->rcv->counts[r], k->rcv->types[r]);
}

int alltoall_room(struct coll_sched *s, unsigned char **buf, size_t *cap,
                  size_t bytes)
{
    if (*buf != NULL && bytes <= *cap)
        return 0;
    *buf = coll_sched_alloc(s, bytes);
    *cap = bytes;
    return *buf != NULL ? 0 : -1;
}

int alltoall_type_bytes(MPI_Count count, MPI_Datatype type, MPI_Count *bytes)
{
    MPI_Count size;
    *bytes = 0;
    if (count == 0)
        return MPI_SUCCESS;
    int status = PMPI_Type_size_c(type, &size);
    if (status != MPI_SUCCESS)
        return status;
    if (size > 0 && count > (MPI_Count)(INT64_MAX / size))
        return MPI_ERR_COUNT;
    *bytes = count * size;
    return MPI_SUCCESS;
}

/* ---- the local phase ----------------------------------------------------- */

/* MPICH's own Alltoallw on `local`: a collective, so no private context. */
int alltoall_site_mpich(MPI_Comm comm, const struct alltoall_exchange *x,
                        const struct alltoall_pattern *pattern)
{
    (void)pattern;
    return PMPI_Alltoallw_c(x->sbuf, x->scounts, x->sdispls, x->stypes, x->rbuf,
                            x->rcounts, x->rdispls, x->rtypes, comm);
}

/*
 * The point-to-point schedules write blocks of rbuf while others are still
 * to be sent: in place, the outgoing blocks are packed away first.  Like
 * the schedules, returns error codes without calling handlers.
 */
static int run_in_place(const struct gc_comm *c, MPI_Comm comm,
                        const struct coll_algo *algo,
                        const struct alltoall_exchange *x)
{
    size_t n = (size_t)c->local_size;
    MPI_Count *counts = malloc(n * sizeof *counts);
    MPI_Aint *displs = malloc(n * sizeof *displs);
    MPI_Datatype *types = malloc(n * sizeof *types);
    unsigned char *packed = NULL;
    int status = MPI_SUCCESS;
    if (counts == NULL || displs == NULL || types == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    MPI_Aint total = 0;
    for (size_t r = 0; r < n && status == MPI_SUCCESS; r++) {
        status = alltoall_type_bytes(x->rcounts[r], x->rtypes[r], &counts[r]);
        displs[r] = total;
        types[r] = MPI_BYTE;
        total += (MPI_Aint)counts[r];
    }
    if (status != MPI_SUCCESS)
        goto cleanup;
    packed = coll_alloc((size_t)total);
    if (packed == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    for (size_t r = 0; r < n && status == MPI_SUCCESS; r++) {
        MPI_Count position = 0;
        if (counts[r] > 0)
            status = PMPI_Pack_c(
                (const char *)x->rbuf + x->rdispls[r], x->rcounts[r],
                x->rtypes[r], packed + displs[r], counts[r], &position, comm);
    }
    struct alltoall_exchange copy = *x;
    copy.sbuf = packed;
    copy.scounts = counts;
    copy.sdispls = displs;
    copy.stypes = types;
    if (status == MPI_SUCCESS)
        status =
            algo->site.alltoall.run(comm, &copy, algo->site.alltoall.pattern);
cleanup:
    free(counts);
    free(displs);
    free(types);
    free(packed);
    return status;
}

int alltoall_local_run(struct gc_comm *c, const char *fn,
                       const struct coll_algo *algo,
                       const struct alltoall_exchange *x)
{
    MPI_Comm comm = c->local;
    alltoall_site_fn *run = algo->site.alltoall.run;
    if (run == alltoall_site_mpich)
        return run(comm, x, NULL);
    int status = coll_local_p2p(c, &comm);
    if (status != MPI_SUCCESS)
        return status;
    status = x->sbuf == MPI_IN_PLACE
                 ? run_in_place(c, comm, algo, x)
                 : run(comm, x, algo->site.alltoall.pattern);
    if (status == MPI_SUCCESS)
        return status;
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(c);
    return gc_error(c->handle, status, fn, "exchange inside a site (%s) failed",
                    algo->name);
}

int alltoall_bundles_init(struct coll_sched *s, const struct coll_args *a,
                          size_t pair_bytes, struct alltoall_bundles *b)
{
    struct gc_comm *c = a->comm;
    size_t n = (size_t)c->local_size;
    b->c = c;
    b->fn = a->fn;
    b->blocking = coll_may_block(a);
    b->step = -1;
    b->scount = coll_sched_alloc(s, n * sizeof *b->scount);
    b->rcount = coll_sched_alloc(s, n * sizeof *b->rcount);
    b->sdispl = coll_sched_alloc(s, n * sizeof *b->sdispl);
    b->rdispl = coll_sched_alloc(s, n * sizeof *b->rdispl);
    b->types = coll_sched_alloc(s, n * sizeof *b->types);
    if (b->scount == NULL || b->rcount == NULL || b->sdispl == NULL ||
        b->rdispl == NULL || b->types == NULL)
        return coll_no_mem(c);
    for (size_t x = 0; x < n; x++)
        b->types[x] = MPI_BYTE;
    return coll_site_select(GC_COLL_ALLTOALL, c, a->fn, coll_may_block(a),
                            pair_bytes, &b->site);
}

static int bundles_run(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct alltoall_bundles *b = arg;
    struct alltoall_exchange x = {.sbuf = b->sbuf,
                                  .scounts = b->scount,
                                  .sdispls = b->sdispl,
                                  .stypes = b->types,
                                  .rbuf = b->rbuf,
                                  .rcounts = b->rcount,
                                  .rdispls = b->rdispl,
                                  .rtypes = b->types};
    return alltoall_local_run(b->c, b->fn, b->site, &x);
}

int alltoall_bundles_exchange(struct coll_sched *s, struct alltoall_bundles *b,
                              int after)
{
    if (b->blocking)
        return coll_sched_call_blocking(s, bundles_run, b, after);
    struct sched_local l = {.op = LOCAL_ALLTOALLW,
                            .sbuf = b->sbuf,
                            .scounts = b->scount,
                            .sdispls = b->sdispl,
                            .stypes = b->types,
                            .rbuf = b->rbuf,
                            .rcounts = b->rcount,
                            .rdispls = b->rdispl,
                            .rtypes = b->types};
    return b->step = coll_sched_local(s, &l, after);
}

void alltoall_bundles_buffers(struct coll_sched *s, struct alltoall_bundles *b,
                              unsigned char *sbuf, unsigned char *rbuf)
{
    b->sbuf = sbuf;
    b->rbuf = rbuf;
    if (b->step >= 0) {
        struct sched_local *l = coll_sched_local_args(s, b->step);
        l->sbuf = sbuf;
        l->rbuf = rbuf;
    }
}
