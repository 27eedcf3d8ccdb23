/*
 * Scan and Exscan across sites: every contribution goes to rank 0
 * (Gather), which computes the prefixes in rank order and sends each
 * member its own (Scatter); the issue-3 fallback, composed of the MagPIe
 * phases (Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, section 3).
 * Exscan leaves rank 0's buffer alone (undefined by MPI).
 *
 * Phases:
 *  1. pack the contribution, phase_gatherv of the packed blocks to rank 0;
 *  2. rank 0 unpacks them and folds the prefixes in rank order
 *     (PMPI_Reduce_local, so non-commutative ops keep their order);
 *  3. phase_scatterv of each member's prefix, unpacked into rbuf.
 *
 * Cost, S sites, N ranks, m bytes a contribution: two WAN latencies,
 * S - 1 messages each way, N m bytes into rank 0's site and out again;
 * N - 1 local reductions at rank 0.
 */
#include <stdlib.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

struct prefixes {
    unsigned char *all; /* rank 0: every member's packed contribution */
    void *x;            /* rank 0: the typed prefixes, stride apart */
    MPI_Aint stride;
    size_t len;
    MPI_Count count;
    int size, exclusive;
    MPI_Datatype type;
    MPI_Op op;
};

static int prefixes(struct coll_sched *s, void *arg)
{
    struct prefixes *p = arg;
    struct gc_comm *c = coll_sched_comm(s);
    int status = MPI_SUCCESS;
    /* Prefix i in block i: x[0] op ... op x[i] = prefix(i-1) op x[i]. */
    for (int i = 0; i < p->size && status == MPI_SUCCESS; i++) {
        char *x = (char *)p->x + (MPI_Aint)i * p->stride;
        status = coll_unpack(c, p->all + (size_t)i * p->len, p->len, x,
                             p->count, p->type);
        if (status == MPI_SUCCESS && i > 0 && p->count > 0)
            status =
                PMPI_Reduce_local_c(x - p->stride, x, p->count, p->type, p->op);
    }
    for (int i = p->exclusive; i < p->size && status == MPI_SUCCESS; i++)
        status = coll_pack(
            c, (char *)p->x + (MPI_Aint)(i - p->exclusive) * p->stride,
            p->count, p->type, p->all + (size_t)i * p->len, p->len);
    return status;
}

int scan_grid_gather_scatter(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    int root = c->rank == 0;
    struct coll_blocks b = COLL_BLOCKS_INIT;
    size_t len;
    int done;
    int status = coll_packed_size(c, r->count, r->type, &len);
    if (status != MPI_SUCCESS)
        return status;
    struct prefixes *p = coll_sched_alloc(s, sizeof *p);
    unsigned char *mine = coll_sched_alloc(s, len);
    if (p == NULL || mine == NULL)
        return coll_no_mem(c);
    *p = (struct prefixes){.len = len,
                           .count = r->count,
                           .size = c->size,
                           .exclusive = r->exclusive,
                           .type = coll_sched_type(s, r->type),
                           .op = r->op};
    if (root) {
        /* One typed block per member, laid out as the datatype says. */
        MPI_Aint lb, extent;
        status = PMPI_Type_get_extent(r->type, &lb, &extent);
        p->all = coll_sched_alloc(s, len * (size_t)c->size);
        if (status == MPI_SUCCESS)
            status = coll_sched_temp(s, r->count * c->size, r->type, &p->x);
        if (status != MPI_SUCCESS)
            return status;
        if (p->all == NULL)
            return coll_no_mem(c);
        p->stride = (MPI_Aint)r->count * extent;
    }
    status = coll_blocks_make(c, (MPI_Count)len, MPI_BYTE, root, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    int packed = coll_sched_pack(s, r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
                                 r->count, r->type, mine, len, -1);
    status = phase_gatherv(s, mine, b.count, b.type, p->all, b.counts, b.displs,
                           b.type, 0, 1, packed, &done);
    if (status == MPI_SUCCESS && root)
        done = coll_sched_call(s, prefixes, p, done);
    if (status == MPI_SUCCESS)
        status = phase_scatterv(s, p->all, b.counts, b.displs, b.type, mine,
                                b.count, b.type, 0, 1, done, &done);
    if (status == MPI_SUCCESS && !(r->exclusive && c->rank == 0))
        coll_sched_unpack(s, mine, len, r->rbuf, r->count, r->type, done);
cleanup:
    coll_blocks_free(&b);
    return status;
}
