/*
 * Local Group (LG) two-phase all-to-all across sites: L. A. Steffenel,
 * M. Martinasso, D. Trystram, E. Jeannot, "Assessing contention effects
 * of all-to-all communications on clusters and grids", §VI.B (Algorithm
 * 1, Fig. 7), §VI.C (message counts) and §VI.D (eq. 7), generalized from
 * two clusters to any number of sites of any sizes, and to Alltoallv and
 * Alltoallw (blocks move packed, so per-pair sizes and datatypes only
 * change the byte counts).
 *
 * Every ordered pair of sites (A, B), n_A and n_B members, site ranks
 * 0..n-1, is handled as the paper handles its two clusters, with
 * s = min(n_A, n_B):
 *   - rank x of A and rank y of B are WAN partners when x = y (mod s):
 *     every rank of the larger site has one partner, (its rank) mod s,
 *     and rank i of the smaller has i, i+s, i+2s, ... (Algorithm 1's
 *     inter-cluster phase pairs i with i + s n1);
 *   - the block of k (in A) for j (in B) crosses the WAN in the message
 *     from collector(k, j) to j, where collector is
 *       n_A <= n_B:  j mod n_A                     (paper: "stored to
 *                                                   node j mod n1")
 *       n_A >  n_B:  g n_B + j with g = floor(k / n_B), or (g-1) n_B + j
 *                    when that rank does not exist (paper: "stored on
 *                    node floor(i/n1) n1 + j")
 *     The second rule is the paper's grouping of the larger cluster into
 *     groups of n_B consecutive ranks, each group sending one message per
 *     partner; the paper leaves the last group undefined when n_B does
 *     not divide n_A (it names ranks that do not exist), and here the
 *     blocks of its missing positions join the previous group's message.
 * Phases (the paper's two, plus unpacking):
 *   1. Local phase, through the local schedule (alltoall_local): rank k
 *      sends to each member x of its site one bundle: its block for x,
 *      then every block k -> j (j on another site) with collector(k, j)
 *      = x, by site then site rank.  The v-forms first exchange the
 *      sizes of the bundled blocks inside the site.
 *   2. WAN phase: rank x sends each of its partners y one message, the
 *      blocks from every k with collector(k, y) = x, by k; receives one
 *      from each partner the same way (posted before phase 1), and
 *      unpacks.  Every block crosses the WAN once, in a message to its
 *      final destination, so no site needs a third, local phase.
 * All WAN messages are posted at once; Algorithm 1's ceil(n2/n1) steps
 * of n1 disjoint pairs are what one rank's messages amount to, and the
 * relays share the links among them.
 *
 * Cost, m bytes a pair: site A sends to site B max(n_A, n_B) messages
 * (Steffenel §VI.C: 2 max(n1, n2) in both directions for two clusters,
 * against 2 n1 n2 for the direct algorithm) carrying n_A n_B m bytes,
 * each block once; a site s sends sum over t != s of max(n_s, n_t)
 * messages and n_s (N - n_s) m bytes (N ranks in all).  Messages are
 * n_B m bytes (n_A > n_B: n_B m, between r m and (n_B + r) m with
 * r = n_A mod n_B in the last two groups) or n_A m (n_A <= n_B).  Time,
 * after eq. 7 with eq. 5 for the local phase:
 *   T = max_s T_C(s) + ceil(max(n_A, n_B) / s) (alpha_w + beta_w s m)
 * where T_C(s) is the local phase of site s, an all-to-all of about
 * m N / n_s bytes a pair.  Wins whenever the WAN is the bottleneck: it is
 * WAN-optimal in bytes with the fewest messages that still go straight to
 * their destinations, and each rank has at most ceil(max/min) WAN
 * messages out and in per remote site.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall.h"

/*
 * The rank of a site of n_send members (site rank) that carries across
 * the WAN the block of its member k for rank j of a site of n_recv.
 */
static int lg_collector(int n_send, int n_recv, int k, int j)
{
    if (n_send <= n_recv)
        return j % n_send;
    int x = k / n_recv * n_recv + j;
    return x < n_send ? x : x - n_recv;
}

struct lg_site {
    int site;
    int n;        /* its members */
    int step;     /* min(n, local size): partners are congruent mod step */
    int msg_base; /* index of this rank's first WAN message with the site */
};

struct lg {
    struct alltoall_call k;
    struct gc_comm *c;
    int n, me; /* this site's members, this rank's site rank */
    struct lg_site remote[GC_MAX_SITES];
    int remote_count;
    int entry_of_site[GC_MAX_SITES]; /* index into remote, or -1 */
    int msgs;                        /* WAN partners (messages each way) */
    /* Local phase, by local rank; blocks are bytes. */
    MPI_Count *scount, *rcount;
    MPI_Aint *sdispl, *rdispl;
    MPI_Datatype *types;
    int *blocks_to, *blocks_from; /* remote blocks per bundle */
    uint64_t *len_to, *len_from;  /* their sizes, bundles back to back */
    int *bundle;                  /* scratch: one bundle's destinations */
    unsigned char *sbund, *rbund;
    /* WAN messages, by partner: offsets [msgs + 1] and cursors */
    size_t *soff, *roff, *cursor;
    unsigned char *wsend, *wrecv;
    struct gc_xfer **reqs;
};

static int lg_partners(const struct lg_site *e, int me)
{
    return (e->n - 1 - me % e->step) / e->step + 1;
}

/* This rank's WAN message with site rank y of remote site e. */
static int lg_msg(const struct lg *g, const struct lg_site *e, int y)
{
    return e->msg_base + (y - g->me % e->step) / e->step;
}

static int lg_peer(const struct lg *g, const struct lg_site *e, int msg)
{
    return alltoall_member(&g->k, e->site,
                           g->me % e->step + (msg - e->msg_base) * e->step);
}

/*
 * The remote destinations (comm ranks) of the blocks member k bundles for
 * member x, in bundle order; returns how many.
 */
static int lg_bundle(const struct lg *g, int k, int x, int *dst)
{
    int count = 0;
    for (int i = 0; i < g->remote_count; i++) {
        const struct lg_site *e = &g->remote[i];
        for (int y = x % e->step; y < e->n; y += e->step)
            if (lg_collector(g->n, e->n, k, y) == x)
                dst[count++] = alltoall_member(&g->k, e->site, y);
    }
    return count;
}

static void lg_free(struct lg *g)
{
    alltoall_call_free(&g->k);
    free(g->scount);
    free(g->rcount);
    free(g->sdispl);
    free(g->rdispl);
    free(g->types);
    free(g->blocks_to);
    free(g->blocks_from);
    free(g->len_to);
    free(g->len_from);
    free(g->bundle);
    free(g->sbund);
    free(g->rbund);
    free(g->soff);
    free(g->roff);
    free(g->cursor);
    free(g->wsend);
    free(g->wrecv);
    free(g->reqs);
}

static int lg_init(const struct coll_args *a, struct lg *g)
{
    struct gc_comm *c = a->comm;
    g->c = c;
    g->n = c->local_size;
    g->me = c->local_rank;
    int status = alltoall_call_init(a, &g->k);
    if (status != MPI_SUCCESS)
        return status;
    for (int s = 0; s < GC_MAX_SITES; s++) {
        g->entry_of_site[s] = -1;
        if (g->k.map.count[s] == 0 || s == g->k.my_site)
            continue;
        struct lg_site *e = &g->remote[g->remote_count];
        e->site = s;
        e->n = g->k.map.count[s];
        e->step = e->n < g->n ? e->n : g->n;
        e->msg_base = g->msgs;
        g->msgs += lg_partners(e, g->me);
        g->entry_of_site[s] = g->remote_count++;
    }
    size_t n = (size_t)g->n, m = (size_t)g->msgs + 1;
    size_t remote = (size_t)(c->size - g->n);
    g->scount = malloc(n * sizeof *g->scount);
    g->rcount = malloc(n * sizeof *g->rcount);
    g->sdispl = malloc(n * sizeof *g->sdispl);
    g->rdispl = malloc(n * sizeof *g->rdispl);
    g->types = malloc(n * sizeof *g->types);
    g->blocks_to = malloc(n * sizeof *g->blocks_to);
    g->blocks_from = malloc(n * sizeof *g->blocks_from);
    g->len_to = coll_alloc(remote * sizeof *g->len_to);
    g->bundle = coll_alloc(remote * sizeof *g->bundle);
    g->soff = calloc(m, sizeof *g->soff);
    g->roff = calloc(m, sizeof *g->roff);
    g->cursor = malloc(m * sizeof *g->cursor);
    g->reqs = malloc(2 * m * sizeof *g->reqs);
    if (g->scount == NULL || g->rcount == NULL || g->sdispl == NULL ||
        g->rdispl == NULL || g->types == NULL || g->blocks_to == NULL ||
        g->blocks_from == NULL || g->len_to == NULL || g->bundle == NULL ||
        g->soff == NULL || g->roff == NULL || g->cursor == NULL ||
        g->reqs == NULL)
        return coll_no_mem(c);
    for (size_t x = 0; x < n; x++)
        g->types[x] = MPI_BYTE;
    return MPI_SUCCESS;
}

/*
 * The sizes of every bundled block, both ways: what this rank sends comes
 * from its own slen; what it collects is the block size (Alltoall) or
 * comes from the senders (v-forms).
 */
static int lg_sizes(struct lg *g)
{
    struct gc_comm *c = g->c;
    size_t to = 0, from = 0;
    for (int x = 0; x < g->n; x++) {
        g->blocks_to[x] = lg_bundle(g, g->me, x, g->bundle);
        for (int b = 0; b < g->blocks_to[x]; b++)
            g->len_to[to++] = g->k.slen[g->bundle[b]];
        g->blocks_from[x] = lg_bundle(g, x, g->me, g->bundle);
        from += (size_t)g->blocks_from[x];
    }
    g->len_from = coll_alloc(from * sizeof *g->len_from);
    if (g->len_from == NULL)
        return coll_no_mem(c);
    if (g->k.block == 0)
        return alltoall_local_sizes(&g->k, g->blocks_to, g->len_to,
                                    g->blocks_from, g->len_from);
    for (size_t i = 0; i < from; i++)
        g->len_from[i] = g->k.block;
    return MPI_SUCCESS;
}

/* Lay out both sides of the local phase and pack the outgoing bundles. */
static int lg_pack_bundles(struct lg *g)
{
    struct gc_comm *c = g->c;
    const uint64_t *to = g->len_to, *from = g->len_from;
    MPI_Aint stotal = 0, rtotal = 0;
    for (int x = 0; x < g->n; x++) {
        int r = c->local_to_comm[x];
        g->scount[x] = (MPI_Count)g->k.slen[r];
        g->rcount[x] = (MPI_Count)g->k.rlen[r];
        for (int b = 0; b < g->blocks_to[x]; b++)
            g->scount[x] += (MPI_Count)*to++;
        for (int b = 0; b < g->blocks_from[x]; b++)
            g->rcount[x] += (MPI_Count)*from++;
        g->sdispl[x] = stotal;
        g->rdispl[x] = rtotal;
        stotal += (MPI_Aint)g->scount[x];
        rtotal += (MPI_Aint)g->rcount[x];
    }
    g->sbund = coll_alloc((size_t)stotal);
    g->rbund = coll_alloc((size_t)rtotal);
    if (g->sbund == NULL || g->rbund == NULL)
        return coll_no_mem(c);
    int status = MPI_SUCCESS;
    for (int x = 0; x < g->n && status == MPI_SUCCESS; x++) {
        int r = c->local_to_comm[x];
        unsigned char *at = g->sbund + g->sdispl[x];
        status = alltoall_pack(&g->k, r, at);
        at += g->k.slen[r];
        int blocks = lg_bundle(g, g->me, x, g->bundle);
        for (int b = 0; b < blocks && status == MPI_SUCCESS; b++) {
            status = alltoall_pack(&g->k, g->bundle[b], at);
            at += g->k.slen[g->bundle[b]];
        }
    }
    return status;
}

/*
 * The message from each partner carries, by k, the blocks of every member
 * k of its site that the partner collects for this rank: sized from rlen.
 */
static int lg_receive_layout(struct lg *g)
{
    for (int i = 0; i < g->remote_count; i++) {
        const struct lg_site *e = &g->remote[i];
        for (int k = 0; k < e->n; k++) {
            int x = lg_collector(e->n, g->n, k, g->me);
            g->roff[lg_msg(g, e, x) + 1] +=
                g->k.rlen[alltoall_member(&g->k, e->site, k)];
        }
    }
    for (int m = 0; m < g->msgs; m++)
        g->roff[m + 1] += g->roff[m];
    g->wrecv = coll_alloc(g->roff[g->msgs]);
    return g->wrecv != NULL ? MPI_SUCCESS : coll_no_mem(g->c);
}

/* The message index of this rank's partner j (a comm rank). */
static int lg_msg_of_rank(const struct lg *g, int j)
{
    const struct lg_site *e = &g->remote[g->entry_of_site[g->c->site[j]]];
    return lg_msg(g, e, g->c->site_rank[j]);
}

/*
 * Regroup the collected blocks by partner (walking the received bundles
 * by k keeps every message in k order).
 */
static int lg_send_layout(struct lg *g)
{
    const uint64_t *len = g->len_from;
    for (int k = 0; k < g->n; k++) {
        int blocks = lg_bundle(g, k, g->me, g->bundle);
        for (int b = 0; b < blocks; b++)
            g->soff[lg_msg_of_rank(g, g->bundle[b]) + 1] += *len++;
    }
    for (int m = 0; m < g->msgs; m++)
        g->soff[m + 1] += g->soff[m];
    g->wsend = coll_alloc(g->soff[g->msgs]);
    if (g->wsend == NULL)
        return coll_no_mem(g->c);
    memcpy(g->cursor, g->soff, (size_t)g->msgs * sizeof *g->cursor);
    len = g->len_from;
    for (int k = 0; k < g->n; k++) {
        const unsigned char *at =
            g->rbund + g->rdispl[k] + g->k.rlen[g->c->local_to_comm[k]];
        int blocks = lg_bundle(g, k, g->me, g->bundle);
        for (int b = 0; b < blocks; b++, len++) {
            int m = lg_msg_of_rank(g, g->bundle[b]);
            memcpy(g->wsend + g->cursor[m], at, (size_t)*len);
            g->cursor[m] += (size_t)*len;
            at += *len;
        }
    }
    return MPI_SUCCESS;
}

/* Post every non-empty WAN message of one direction (both ends skip the
 * same ones: their sizes come from matching type signatures). */
static int lg_post(struct lg *g, int send, int *posted)
{
    const size_t *off = send ? g->soff : g->roff;
    unsigned char *buf = send ? g->wsend : g->wrecv;
    int status = MPI_SUCCESS;
    for (int i = 0; i < g->remote_count && status == MPI_SUCCESS; i++) {
        const struct lg_site *e = &g->remote[i];
        int end = e->msg_base + lg_partners(e, g->me);
        for (int m = e->msg_base; m < end && status == MPI_SUCCESS; m++) {
            size_t len = off[m + 1] - off[m];
            if (len == 0)
                continue;
            int peer = lg_peer(g, e, m);
            status = send ? coll_isend(g->c, peer, TAG_ALLTOALL, buf + off[m],
                                       len, g->reqs, posted)
                          : coll_irecv(g->c, peer, TAG_ALLTOALL, buf + off[m],
                                       len, g->reqs, posted);
        }
    }
    return status;
}

static int lg_local_phase(struct lg *g, const struct coll_args *a)
{
    struct alltoall_exchange x = {.sbuf = g->sbund,
                                  .scounts = g->scount,
                                  .sdispls = g->sdispl,
                                  .stypes = g->types,
                                  .rbuf = g->rbund,
                                  .rcounts = g->rcount,
                                  .rdispls = g->rdispl,
                                  .rtypes = g->types};
    /* Alltoall: a rank's N blocks spread over its site's n members. */
    size_t pair_bytes = g->k.block * (size_t)g->c->size / (size_t)g->n;
    return alltoall_local(g->c, a->fn, pair_bytes, &x);
}

/* Unpack the WAN messages, walking each remote site's members by k. */
static int lg_unpack_remote(struct lg *g)
{
    int status = MPI_SUCCESS;
    memcpy(g->cursor, g->roff, (size_t)g->msgs * sizeof *g->cursor);
    for (int i = 0; i < g->remote_count && status == MPI_SUCCESS; i++) {
        const struct lg_site *e = &g->remote[i];
        for (int k = 0; k < e->n && status == MPI_SUCCESS; k++) {
            int r = alltoall_member(&g->k, e->site, k);
            int m = lg_msg(g, e, lg_collector(e->n, g->n, k, g->me));
            status = alltoall_unpack(&g->k, r, g->wrecv + g->cursor[m]);
            g->cursor[m] += g->k.rlen[r];
        }
    }
    return status;
}

int alltoall_grid_lg(const struct coll_args *a)
{
    struct lg g = {0};
    int posted = 0, xfer_status = MPI_SUCCESS;
    int status = lg_init(a, &g);
    if (status == MPI_SUCCESS)
        status = lg_sizes(&g);
    if (status == MPI_SUCCESS)
        status = lg_pack_bundles(&g);
    if (status == MPI_SUCCESS)
        status = lg_receive_layout(&g);
    if (status == MPI_SUCCESS)
        xfer_status = lg_post(&g, 0, &posted);
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        status = lg_local_phase(&g, a);
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        status = lg_send_layout(&g);
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        xfer_status = lg_post(&g, 1, &posted);
    /* This site's blocks, while the WAN messages travel. */
    for (int x = 0;
         x < g.n && status == MPI_SUCCESS && xfer_status == MPI_SUCCESS; x++)
        status =
            alltoall_unpack(&g.k, g.c->local_to_comm[x], g.rbund + g.rdispl[x]);
    int wait_status = coll_wait(g.c, posted, g.reqs, xfer_status);
    if (status == MPI_SUCCESS)
        status = wait_status;
    if (status == MPI_SUCCESS)
        status = lg_unpack_remote(&g);
    lg_free(&g);
    return status;
}

/*
 * Steffenel eq. 7, generalized to any number of sites as in the header:
 * the slowest site's local phase (eq. 5 with bundles of m N / n_s bytes),
 * then the slowest ordered pair of sites, ⌈max/min⌉ (α_w + β_w min m) in
 * the paper's 1-port view.  All messages are in flight at once, so a
 * pair also takes at least α_w plus its n_A n_B m bytes at the link's
 * bulk rate and its messages' gaps, and at least the time the link takes
 * to exchange n_A n_B m bytes each way (the model's measured exchange:
 * both directions on the same relay streams, TCP's ramp and a loss's
 * round trip included); the largest counts.
 */
double alltoall_grid_lg_cost(const struct coll_cost_args *c)
{
    double m = (double)c->bytes, local = 0, wan = 0;
    for (int s = 0; s < c->site_count; s++) {
        int n = c->site_size[s];
        double t = cost_local_alltoall(c, s, n, m * c->size / n);
        local = t > local ? t : local;
    }
    for (int a = 0; a < c->site_count; a++)
        for (int b = 0; b < c->site_count; b++) {
            if (a == b)
                continue;
            const struct gc_model_link *l = cost_link(c, a, b);
            int na = c->site_size[a], nb = c->site_size[b];
            int lo = na < nb ? na : nb, hi = na < nb ? nb : na;
            double one_port =
                ((hi + lo - 1) / lo) * cost_wan_msg(c, a, b, lo * m);
            double bulk =
                l->alpha + (double)na * nb * m * l->beta_bulk + hi * l->gap;
            double both_ways = cost_wan_exchange(c, a, b, (double)na * nb * m);
            double t = one_port > bulk ? one_port : bulk;
            t = both_ways > t ? both_ways : t;
            wan = t > wan ? t : wan;
        }
    return local + wan;
}
