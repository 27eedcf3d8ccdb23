/*
 * Hierarchical all-to-all across sites with one coordinator per site, the
 * MagPIe scheme: T. Kielmann, R. F. H. Hofman, H. E. Bal, A. Plaat, R. A.
 * F. Bhoedjang, "MagPIe: MPI's collective communication operations for
 * clustered wide area systems", PPoPP 1999, §3 (each site's data crosses
 * each WAN link once, in one message between coordinators), the approach
 * Steffenel et al. ("Assessing contention effects of all-to-all
 * communications on clusters and grids", §VI.A) argue is the wrong one for
 * large all-to-alls: the coordinator becomes the bottleneck.
 *
 * Phases, coordinator = site rank 0:
 *   1. Local phase, through the local schedule (alltoall_local): every
 *      member sends each member of its site its block for it, and the
 *      coordinator, in the same bundle, all its blocks for other sites (by
 *      site, then site rank).  The v-forms first gather at the coordinator
 *      every member's block sizes for other sites and its total expected
 *      from each other site.
 *   2. WAN phase: the coordinator sends every other site's coordinator
 *      one message, the blocks for that site by destination, then source
 *      (the receiving coordinator splits it by destination); it receives
 *      one from each (posted before phase 1).
 *   3. Local scatter (PMPI_Scatterv on the site's communicator): each
 *      member gets what came for it from every other site, and unpacks.
 *
 * Cost for S sites, m bytes a pair, N ranks: S - 1 WAN messages per site
 * (one per ordered pair of sites), n_s n_t m bytes from site s to site t,
 * each block crossing once; time
 *   T_C1 + max over sites (alpha_w + beta_w n_s (N - n_s) m) + T_scatter
 * where the coordinator alone injects and absorbs all of its site's WAN
 * traffic and the local phase funnels (N - n_s) m bytes from every
 * member into it.  Wins for small messages and many sites, where the
 * S - 1 start-ups per site (against sum max(n_s, n_t) for LG) dominate.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall.h"

struct hier {
    struct alltoall_call k;
    struct gc_comm *c;
    int n, me;
    int remote[GC_MAX_SITES]; /* other sites with members, in order */
    int remote_count;
    int remote_ranks; /* their members: N - n */
    /*
     * Per member x (coordinator only for x != me): row x of `lens` holds
     * its block sizes for every remote rank (sites in order, then site
     * rank), then its totals expected from each remote site.
     */
    uint64_t *lens;
    int row;
    /* Local phase, by local rank; blocks are bytes. */
    MPI_Count *scount, *rcount;
    MPI_Aint *sdispl, *rdispl;
    MPI_Datatype *types;
    unsigned char *sbund, *rbund;
    /* WAN (coordinator), by remote site index: offsets [remote + 1] */
    size_t soff[GC_MAX_SITES + 1], roff[GC_MAX_SITES + 1];
    size_t *cursor; /* per remote rank while regrouping */
    unsigned char *wsend, *wrecv;
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    /* Scatter */
    MPI_Count *ccount;
    MPI_Aint *cdispl;
    unsigned char *scat, *mine;
};

static void hier_free(struct hier *h)
{
    alltoall_call_free(&h->k);
    free(h->lens);
    free(h->scount);
    free(h->rcount);
    free(h->sdispl);
    free(h->rdispl);
    free(h->types);
    free(h->sbund);
    free(h->rbund);
    free(h->cursor);
    free(h->wsend);
    free(h->wrecv);
    free(h->ccount);
    free(h->cdispl);
    free(h->scat);
    free(h->mine);
}

static int hier_init(const struct coll_args *a, struct hier *h)
{
    struct gc_comm *c = a->comm;
    h->c = c;
    h->n = c->local_size;
    h->me = c->local_rank;
    int status = alltoall_call_init(a, &h->k);
    if (status != MPI_SUCCESS)
        return status;
    for (int s = 0; s < GC_MAX_SITES; s++)
        if (h->k.map.count[s] > 0 && s != h->k.my_site)
            h->remote[h->remote_count++] = s;
    h->remote_ranks = c->size - h->n;
    h->row = h->remote_ranks + h->remote_count;
    size_t n = (size_t)h->n;
    size_t rows = h->me == 0 ? n : 1;
    h->lens = coll_alloc(rows * (size_t)h->row * sizeof *h->lens);
    h->scount = malloc(n * sizeof *h->scount);
    h->rcount = malloc(n * sizeof *h->rcount);
    h->sdispl = malloc(n * sizeof *h->sdispl);
    h->rdispl = malloc(n * sizeof *h->rdispl);
    h->types = malloc(n * sizeof *h->types);
    h->cursor = coll_alloc((size_t)h->remote_ranks * sizeof *h->cursor);
    h->ccount = malloc(n * sizeof *h->ccount);
    h->cdispl = malloc(n * sizeof *h->cdispl);
    if (h->lens == NULL || h->scount == NULL || h->rcount == NULL ||
        h->sdispl == NULL || h->rdispl == NULL || h->types == NULL ||
        h->cursor == NULL || h->ccount == NULL || h->cdispl == NULL)
        return coll_no_mem(c);
    for (size_t x = 0; x < n; x++)
        h->types[x] = MPI_BYTE;
    return MPI_SUCCESS;
}

/* This rank's row of `lens`: block sizes for remote ranks, then totals. */
static void hier_my_row(const struct hier *h, uint64_t *row)
{
    int i = 0;
    for (int t = 0; t < h->remote_count; t++) {
        int s = h->remote[t];
        uint64_t total = 0;
        for (int y = 0; y < h->k.map.count[s]; y++) {
            int r = alltoall_member(&h->k, s, y);
            row[i++] = h->k.slen[r];
            total += h->k.rlen[r];
        }
        row[h->remote_ranks + t] = total;
    }
}

/*
 * Every member's row at the coordinator: gathered for the v-forms,
 * computed from the block size for Alltoall (then every row is alike).
 */
static int hier_sizes(struct hier *h)
{
    hier_my_row(h, h->lens);
    if (h->k.block == 0) {
        /* The coordinator's own row is already in place. */
        return PMPI_Gather(h->me == 0 ? MPI_IN_PLACE : h->lens, h->row,
                           MPI_UINT64_T, h->lens, h->row, MPI_UINT64_T, 0,
                           h->c->local);
    }
    if (h->me == 0)
        for (int x = 1; x < h->n; x++)
            memcpy(h->lens + (size_t)x * (size_t)h->row, h->lens,
                   (size_t)h->row * sizeof *h->lens);
    return MPI_SUCCESS;
}

static const uint64_t *hier_row(const struct hier *h, int x)
{
    return h->lens + (size_t)x * (size_t)h->row;
}

/* Lay out the local phase and pack this rank's bundles. */
static int hier_pack_bundles(struct hier *h)
{
    struct gc_comm *c = h->c;
    MPI_Aint stotal = 0, rtotal = 0;
    for (int x = 0; x < h->n; x++) {
        int r = c->local_to_comm[x];
        h->scount[x] = (MPI_Count)h->k.slen[r];
        h->rcount[x] = (MPI_Count)h->k.rlen[r];
        for (int i = 0; x == 0 && i < h->remote_ranks; i++)
            h->scount[x] += (MPI_Count)hier_row(h, 0)[i];
        for (int i = 0; h->me == 0 && i < h->remote_ranks; i++)
            h->rcount[x] += (MPI_Count)hier_row(h, x)[i];
        h->sdispl[x] = stotal;
        h->rdispl[x] = rtotal;
        stotal += (MPI_Aint)h->scount[x];
        rtotal += (MPI_Aint)h->rcount[x];
    }
    h->sbund = coll_alloc((size_t)stotal);
    h->rbund = coll_alloc((size_t)rtotal);
    if (h->sbund == NULL || h->rbund == NULL)
        return coll_no_mem(c);
    int status = MPI_SUCCESS;
    for (int x = 0; x < h->n && status == MPI_SUCCESS; x++) {
        int r = c->local_to_comm[x];
        status = alltoall_pack(&h->k, r, h->sbund + h->sdispl[x]);
    }
    unsigned char *at = h->sbund + h->k.slen[c->local_to_comm[0]];
    for (int t = 0; t < h->remote_count && status == MPI_SUCCESS; t++) {
        int s = h->remote[t];
        for (int y = 0; y < h->k.map.count[s] && status == MPI_SUCCESS; y++) {
            int r = alltoall_member(&h->k, s, y);
            status = alltoall_pack(&h->k, r, at);
            at += h->k.slen[r];
        }
    }
    return status;
}

/* Coordinator: the message from site t holds, by member x of this site,
 * x's total from t. */
static int hier_receive_layout(struct hier *h)
{
    h->roff[0] = 0;
    for (int t = 0; t < h->remote_count; t++) {
        h->roff[t + 1] = h->roff[t];
        for (int x = 0; x < h->n; x++)
            h->roff[t + 1] += hier_row(h, x)[h->remote_ranks + t];
    }
    h->wrecv = coll_alloc(h->roff[h->remote_count]);
    return h->wrecv != NULL ? MPI_SUCCESS : coll_no_mem(h->c);
}

/*
 * Coordinator: the message to site t holds, by destination y, the blocks
 * of every member x for y.  Regroups the bundles received in phase 1.
 */
static int hier_send_layout(struct hier *h)
{
    int i = 0;
    size_t at = 0;
    for (int t = 0; t < h->remote_count; t++) {
        h->soff[t] = at;
        for (int y = 0; y < h->k.map.count[h->remote[t]]; y++, i++) {
            h->cursor[i] = at;
            for (int x = 0; x < h->n; x++)
                at += hier_row(h, x)[i];
        }
    }
    h->soff[h->remote_count] = at;
    h->wsend = coll_alloc(at);
    if (h->wsend == NULL)
        return coll_no_mem(h->c);
    for (int x = 0; x < h->n; x++) {
        const uint64_t *row = hier_row(h, x);
        const unsigned char *from =
            h->rbund + h->rdispl[x] + h->k.rlen[h->c->local_to_comm[x]];
        for (i = 0; i < h->remote_ranks; i++) {
            memcpy(h->wsend + h->cursor[i], from, (size_t)row[i]);
            h->cursor[i] += (size_t)row[i];
            from += row[i];
        }
    }
    return MPI_SUCCESS;
}

static int hier_post(struct hier *h, int send, int *posted)
{
    const size_t *off = send ? h->soff : h->roff;
    unsigned char *buf = send ? h->wsend : h->wrecv;
    int status = MPI_SUCCESS;
    for (int t = 0; t < h->remote_count && status == MPI_SUCCESS; t++) {
        size_t len = off[t + 1] - off[t];
        int peer = h->c->leader[h->remote[t]];
        if (len == 0)
            continue;
        status = send ? coll_isend(h->c, peer, TAG_ALLTOALL, buf + off[t], len,
                                   h->reqs, posted)
                      : coll_irecv(h->c, peer, TAG_ALLTOALL, buf + off[t], len,
                                   h->reqs, posted);
    }
    return status;
}

static int hier_local_phase(struct hier *h, const struct coll_args *a)
{
    struct alltoall_exchange x = {.sbuf = h->sbund,
                                  .scounts = h->scount,
                                  .sdispls = h->sdispl,
                                  .stypes = h->types,
                                  .rbuf = h->rbund,
                                  .rcounts = h->rcount,
                                  .rdispls = h->rdispl,
                                  .rtypes = h->types};
    /* Alltoall: a rank's N blocks over its site's n members. */
    size_t pair_bytes = h->k.block * (size_t)h->c->size / (size_t)h->n;
    return alltoall_local(h->c, a->fn, pair_bytes, &x);
}

/* Phase 3: each member's part of every site's message, then unpack. */
static int hier_scatter(struct hier *h)
{
    const uint64_t *mine = hier_row(h, 0) + h->remote_ranks;
    MPI_Count my_total = 0;
    if (h->me == 0) {
        MPI_Aint at = 0;
        for (int x = 0; x < h->n; x++) {
            h->ccount[x] = 0;
            for (int t = 0; t < h->remote_count; t++)
                h->ccount[x] += (MPI_Count)hier_row(h, x)[h->remote_ranks + t];
            h->cdispl[x] = at;
            at += (MPI_Aint)h->ccount[x];
        }
        h->scat = coll_alloc((size_t)at);
        if (h->scat == NULL)
            return coll_no_mem(h->c);
        size_t from[GC_MAX_SITES];
        memcpy(from, h->roff, sizeof from);
        unsigned char *to = h->scat;
        for (int x = 0; x < h->n; x++)
            for (int t = 0; t < h->remote_count; t++) {
                size_t len = (size_t)hier_row(h, x)[h->remote_ranks + t];
                memcpy(to, h->wrecv + from[t], len);
                from[t] += len;
                to += len;
            }
    }
    for (int t = 0; t < h->remote_count; t++)
        my_total += (MPI_Count)mine[t];
    h->mine = coll_alloc((size_t)my_total);
    if (h->mine == NULL)
        return coll_no_mem(h->c);
    int status = PMPI_Scatterv_c(h->scat, h->ccount, h->cdispl, MPI_BYTE,
                                 h->mine, my_total, MPI_BYTE, 0, h->c->local);
    const unsigned char *at = h->mine;
    for (int t = 0; t < h->remote_count && status == MPI_SUCCESS; t++) {
        int s = h->remote[t];
        for (int y = 0; y < h->k.map.count[s] && status == MPI_SUCCESS; y++) {
            int r = alltoall_member(&h->k, s, y);
            status = alltoall_unpack(&h->k, r, at);
            at += h->k.rlen[r];
        }
    }
    return status;
}

int alltoall_grid_hier(const struct coll_args *a)
{
    struct hier h = {0};
    int posted = 0, xfer_status = MPI_SUCCESS;
    int status = hier_init(a, &h);
    if (status == MPI_SUCCESS)
        status = hier_sizes(&h);
    if (status == MPI_SUCCESS)
        status = hier_pack_bundles(&h);
    if (status == MPI_SUCCESS && h.me == 0) {
        status = hier_receive_layout(&h);
        if (status == MPI_SUCCESS)
            xfer_status = hier_post(&h, 0, &posted);
    }
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        status = hier_local_phase(&h, a);
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS && h.me == 0) {
        status = hier_send_layout(&h);
        if (status == MPI_SUCCESS)
            xfer_status = hier_post(&h, 1, &posted);
    }
    /* This site's blocks, while the WAN messages travel. */
    for (int x = 0;
         x < h.n && status == MPI_SUCCESS && xfer_status == MPI_SUCCESS; x++)
        status =
            alltoall_unpack(&h.k, h.c->local_to_comm[x], h.rbund + h.rdispl[x]);
    int wait_status = coll_wait(h.c, posted, h.reqs, xfer_status);
    if (status == MPI_SUCCESS)
        status = wait_status;
    if (status == MPI_SUCCESS && h.remote_count > 0)
        status = hier_scatter(&h);
    hier_free(&h);
    return status;
}

/*
 * The header's T_C1 + max_s (α_w + β_w n_s (N - n_s) m) + T_scatter: the
 * local all-to-all (eq. 5) plus the coordinator taking in its members'
 * (n_s - 1)(N - n_s) m bytes for other sites, one WAN message per pair
 * of sites (both ways at once: the link's measured exchange when the
 * model has it), the scatter of (N - n_s) m to each member.
 */
double alltoall_grid_hier_cost(const struct coll_cost_args *c)
{
    double m = (double)c->bytes, worst = 0;
    for (int s = 0; s < c->site_count; s++) {
        int n = c->site_size[s];
        double remote = (double)(c->size - n) * m;
        double t = cost_local_alltoall(c, s, n, m) +
                   (n - 1) * remote * cost_site(c, s)->beta;
        double wan = 0;
        for (int t2 = 0; t2 < c->site_count; t2++)
            if (t2 != s) {
                double bytes = n * remote;
                double alone = cost_wan_msg(c, s, t2, bytes),
                       both_ways = cost_wan_exchange(c, s, t2, bytes);
                double w = both_ways > alone ? both_ways : alone;
                wan = w > wan ? w : wan;
            }
        t += wan + (n - 1) * cost_local_msg(c, s, remote);
        worst = t > worst ? t : worst;
    }
    return worst;
}
