/*
 * Direct all-to-all across sites: every pair of ranks on different sites
 * exchanges one message over the relays, the members of a site exchange
 * inside it.  The plain algorithm every grid-unaware MPI runs (the
 * "standard Total Exchange" Steffenel et al. compare LG against:
 * "Assessing contention effects of all-to-all communications on clusters
 * and grids", §VI and §VI.C, eq. 6), kept as the baseline and for sparse
 * Alltoallv patterns where most pairs move nothing.
 *
 * Phases (in this order, the WAN overlapping the local phase):
 *   1. Pack every block for a rank on another site; post the receives of
 *      the blocks from ranks on other sites, then the sends.
 *   2. Local phase: the blocks between members of this site, with the
 *      user's datatypes, as one MPICH Ialltoallw.
 *   3. Wait for the WAN, unpack what came from other sites.
 * In place, the outgoing blocks are packed from recvbuf before anything
 * writes it.
 *
 * Cost for two sites of n1 and n2 ranks, m bytes a pair: 2 n1 n2 WAN
 * messages of m bytes (n1 n2 each way; site s sends n_s (N - n_s) with N
 * ranks and any number of sites, every non-empty one), n1 n2 m WAN bytes
 * each way; time max(T_C1, T_C2) + max(n1, n2)(alpha_w + beta_w m) by
 * Steffenel's eq. 6, which contention on the WAN makes optimistic (their
 * Fig. 6).  Wins only when few pairs have data (sparse Alltoallv): it is
 * the only algorithm that sends nothing for an empty pair.
 */

#include "coll/alltoall/alltoall.h"
#include "coll/engine/coll_sched.h"
#include "core/gc_comm.h"

/* Offsets of the packed blocks to (from) ranks on other sites, back to
 * back: off[r] .. off[r + 1]. */
/*
 * The blocks for (or from) other sites, packed back to back in comm-rank
 * order: bytes[off[r], off[r + 1]) is rank r's.
 */
struct remote_blocks {
    struct alltoall_call *k;
    unsigned char *sbytes, *rbytes;
    size_t *soff, *roff;
    int rank; /* unpack: whose block */
};

static int pack_remote(struct coll_sched *s, void *arg)
{
    struct remote_blocks *b = arg;
    int status = MPI_SUCCESS;
    for (int r = 0; r < coll_sched_comm(s)->size && status == MPI_SUCCESS; r++)
        if (b->soff[r + 1] > b->soff[r])
            status = alltoall_pack(b->k, r, b->sbytes + b->soff[r]);
    return status;
}

static int unpack_remote(struct coll_sched *s, void *arg)
{
    (void)s;
    struct remote_blocks *b = arg;
    return alltoall_unpack(b->k, b->rank, b->rbytes + b->roff[b->rank]);
}

static void remote_offsets(const struct alltoall_call *k, const size_t *len,
                           size_t *off)
{
    const struct gc_comm *c = k->c;
    off[0] = 0;
    for (int r = 0; r < c->size; r++)
        off[r + 1] = off[r] + (c->site[r] != k->my_site ? len[r] : 0);
}

/*
 * In place, this rank's blocks for the members of its site, packed away
 * before any block lands in rbuf, so the exchange is not an in-place
 * one: with MPI_IN_PLACE handed to MPICH 4.0.2's Ialltoallw, coll_check's
 * in-place Alltoallv cases with irregular counts got wrong blocks (2+1
 * and 1+2 sites), which this order fixed.
 */
struct local_out {
    const struct alltoall_call *k;
    unsigned char *bytes;
    const MPI_Aint *displs; /* byte offsets, by site rank */
};

static int pack_local(struct coll_sched *s, void *arg)
{
    struct local_out *o = arg;
    struct gc_comm *c = coll_sched_comm(s);
    int status = MPI_SUCCESS;
    for (int x = 0; x < c->local_size && status == MPI_SUCCESS; x++)
        status =
            alltoall_pack(o->k, c->local_to_comm[x], o->bytes + o->displs[x]);
    return status;
}

/* The exchange among this site's members: one MPICH Ialltoallw, after
 * step `after`; its step index in *step. */
static int local_phase(struct coll_sched *s, const struct alltoall_call *k,
                       int in_place, int after, int *step)
{
    struct gc_comm *c = k->c;
    size_t n = (size_t)c->local_size;
    MPI_Count *counts = coll_sched_alloc(s, 2 * n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, 2 * n * sizeof *displs);
    MPI_Datatype *types = coll_sched_alloc(s, 2 * n * sizeof *types);
    struct local_out *o = coll_sched_alloc(s, sizeof *o);
    if (counts == NULL || displs == NULL || types == NULL || o == NULL)
        return coll_no_mem(c);
    MPI_Aint packed = 0;
    for (size_t x = 0; x < n; x++) {
        int r = c->local_to_comm[x];
        counts[n + x] = k->rcv->counts[r];
        displs[n + x] = k->rcv->displs[r];
        types[n + x] = k->rcv->types[r];
        counts[x] = in_place ? (MPI_Count)k->slen[r] : k->out->counts[r];
        displs[x] = in_place ? packed : k->out->displs[r];
        types[x] = in_place ? MPI_BYTE : k->out->types[r];
        packed += (MPI_Aint)k->slen[r];
    }
    const void *sbuf = k->src;
    if (in_place) {
        *o = (struct local_out){k, coll_sched_alloc(s, (size_t)packed), displs};
        if (o->bytes == NULL)
            return coll_no_mem(c);
        after = coll_sched_call(s, pack_local, o, after);
        sbuf = o->bytes;
    }
    struct sched_local l = {.op = LOCAL_ALLTOALLW,
                            .sbuf = sbuf,
                            .rbuf = k->rbuf,
                            .scounts = counts,
                            .sdispls = displs,
                            .stypes = types,
                            .rcounts = counts + n,
                            .rdispls = displs + n,
                            .rtypes = types + n};
    *step = coll_sched_local(s, &l, after);
    return MPI_SUCCESS;
}

int alltoall_grid_direct(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const struct coll_alltoall_args *u = &a->u.alltoall;
    int in_place = u->sbuf == MPI_IN_PLACE;
    size_t n = (size_t)c->size + 1;
    struct coll_args kept = *a;
    struct alltoall_call *k = coll_sched_alloc(s, sizeof *k);
    struct remote_blocks *b = coll_sched_alloc(s, sizeof *b);
    size_t *soff = coll_sched_alloc(s, 2 * n * sizeof *soff);
    if (k == NULL || b == NULL || soff == NULL)
        return coll_no_mem(c);
    int status = alltoall_keep_sides(s, a, &kept);
    if (status != MPI_SUCCESS)
        return status;
    status = alltoall_call_sched(s, &kept, k);
    if (status != MPI_SUCCESS)
        return status;
    *b = (struct remote_blocks){.k = k, .soff = soff, .roff = soff + n};
    remote_offsets(k, k->slen, b->soff);
    remote_offsets(k, k->rlen, b->roff);
    b->sbytes = coll_sched_alloc(s, b->soff[c->size]);
    b->rbytes = coll_sched_alloc(s, b->roff[c->size]);
    if (b->sbytes == NULL || b->rbytes == NULL)
        return coll_no_mem(c);
    int packed = coll_sched_call(s, pack_remote, b, -1), local = -1;
    /* In place, blocks received go where outgoing ones were: every
     * outgoing block is packed before anything is unpacked. */
    status = local_phase(s, k, in_place, -1, &local);
    if (status != MPI_SUCCESS)
        return status;
    /* Both ends compute the same size from matching type signatures, so
     * empty messages are skipped on both. */
    for (int r = 0; r < c->size; r++) {
        if (b->roff[r + 1] == b->roff[r])
            continue;
        struct remote_blocks *one = coll_sched_alloc(s, sizeof *one);
        if (one == NULL)
            return coll_no_mem(c);
        *one = *b;
        one->rank = r;
        int in[2] = {in_place ? local : -1,
                     coll_sched_recv(s, r, TAG_ALLTOALL, b->rbytes + b->roff[r],
                                     (MPI_Count)(b->roff[r + 1] - b->roff[r]),
                                     MPI_BYTE, -1)};
        coll_sched_call(s, unpack_remote, one, coll_sched_join(s, in, 2));
    }
    for (int r = 0; r < c->size; r++)
        if (b->soff[r + 1] > b->soff[r])
            coll_sched_send(s, r, TAG_ALLTOALL, b->sbytes + b->soff[r],
                            (MPI_Count)(b->soff[r + 1] - b->soff[r]), MPI_BYTE,
                            packed);
    return MPI_SUCCESS;
}

double alltoall_grid_direct_cost(const struct coll_cost_args *c)
{
    double m = (double)c->bytes, local = 0, wan = 0;
    for (int s = 0; s < c->site_count; s++) {
        int n = c->site_size[s];
        double t = cost_local_alltoall(c, s, n, m);
        local = t > local ? t : local;
        double one_port = 0;
        for (int b = 0; b < c->site_count; b++)
            if (b != s) {
                const struct gc_model_link *l = cost_link(c, s, b);
                double nb = c->site_size[b];
                one_port += nb * cost_wan_msg(c, s, b, m);
                double bulk =
                    l->alpha + n * nb * m * l->beta_bulk + n * nb * l->gap;
                double both_ways = cost_wan_exchange(c, s, b, n * nb * m);
                bulk = both_ways > bulk ? both_ways : bulk;
                wan = bulk > wan ? bulk : wan;
            }
        wan = one_port > wan ? one_port : wan;
    }
    return local + wan;
}
