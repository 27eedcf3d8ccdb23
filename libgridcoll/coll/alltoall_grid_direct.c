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
 *      user's datatypes, through the local schedule (alltoall_local).
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
#include <stdlib.h>

#include "coll/alltoall.h"

/* Offsets of the packed blocks to (from) ranks on other sites, back to
 * back: off[r] .. off[r + 1]. */
static void remote_offsets(const struct alltoall_call *k, const size_t *len,
                           size_t *off)
{
    const struct gc_comm *c = k->c;
    off[0] = 0;
    for (int r = 0; r < c->size; r++)
        off[r + 1] = off[r] + (c->site[r] != k->my_site ? len[r] : 0);
}

/* The blocks between members of this site, re-indexed by local rank. */
static int local_phase(const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const struct coll_alltoall_args *u = &a->u.alltoall;
    int in_place = u->sbuf == MPI_IN_PLACE;
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
    for (size_t x = 0; x < n; x++) {
        int r = c->local_to_comm[x];
        rc[x] = u->rcv->counts[r];
        rd[x] = u->rcv->displs[r];
        rt[x] = u->rcv->types[r];
        /* In place MPI ignores the send side; it may be unset. */
        sc[x] = in_place ? 0 : u->snd->counts[r];
        sd[x] = in_place ? 0 : u->snd->displs[r];
        st[x] = in_place ? MPI_BYTE : u->snd->types[r];
    }
    struct alltoall_exchange x = {.sbuf = u->sbuf,
                                  .scounts = sc,
                                  .sdispls = sd,
                                  .stypes = st,
                                  .rbuf = u->rbuf,
                                  .rcounts = rc,
                                  .rdispls = rd,
                                  .rtypes = rt};
    status = alltoall_local(c, a->fn, a->bytes, &x);
cleanup:
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(st);
    free(rt);
    return status;
}

int alltoall_grid_direct(const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    struct alltoall_call k;
    size_t n = (size_t)c->size + 1;
    size_t *soff = malloc(n * sizeof *soff), *roff = malloc(n * sizeof *roff);
    struct gc_xfer **reqs = malloc(2 * n * sizeof *reqs);
    unsigned char *sbytes = NULL, *rbytes = NULL;
    int posted = 0, local_status = MPI_SUCCESS;
    int status = alltoall_call_init(a, &k);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (soff == NULL || roff == NULL || reqs == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    remote_offsets(&k, k.slen, soff);
    remote_offsets(&k, k.rlen, roff);
    sbytes = coll_alloc(soff[c->size]);
    rbytes = coll_alloc(roff[c->size]);
    if (sbytes == NULL || rbytes == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (soff[r + 1] > soff[r])
            status = alltoall_pack(&k, r, sbytes + soff[r]);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* Both ends compute the same size from matching type signatures, so
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
        local_status = local_phase(a);
    status = coll_wait(c, posted, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
    for (int r = 0; r < c->size && status == MPI_SUCCESS; r++)
        if (roff[r + 1] > roff[r])
            status = alltoall_unpack(&k, r, rbytes + roff[r]);
cleanup:
    alltoall_call_free(&k);
    free(soff);
    free(roff);
    free(reqs);
    free(sbytes);
    free(rbytes);
    return status;
}

/*
 * Steffenel eq. 6 for any number of sites: the local all-to-all (eq. 5),
 * then each rank of site s sends its N - n_s WAN messages one after the
 * other (1-port view); all in flight, a pair of sites also takes at
 * least α_w plus its bytes at the bulk rate and its messages' gaps, and
 * at least the link's measured exchange of those bytes each way.
 */
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
