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
 *   1. Local phase (alltoall_bundles_exchange: the site level's schedule
 *      in blocking calls, MPICH's Ialltoallw in the others): rank k
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
#include <string.h>

#include "coll/alltoall/alltoall.h"
#include "coll/engine/coll_sched.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

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
    const char *fn;
    int n, me; /* this site's members, this rank's site rank */
    struct lg_site remote[GC_MAX_SITES];
    int remote_count;
    int entry_of_site[GC_MAX_SITES]; /* index into remote, or -1 */
    int msgs;                        /* WAN partners (messages each way) */
    struct alltoall_bundles b;       /* the local phase */
    int *blocks_to, *blocks_from;    /* remote blocks per bundle */
    uint64_t *len_to, *len_from;     /* their sizes, bundles back to back */
    int *bundle;                     /* scratch: one bundle's destinations */
    size_t sbund_cap, rbund_cap, wsend_cap;
    /* WAN messages, by partner: offsets [msgs + 1] and cursors */
    size_t *soff, *roff, *cursor;
    unsigned char *wsend, *wrecv;
    int *send_step; /* [msgs] this rank's WAN sends, retargeted by lay_out */
    struct coll_sched *sched;
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

/* The message index of this rank's partner j (a comm rank). */
static int lg_msg_of_rank(const struct lg *g, int j)
{
    const struct lg_site *e = &g->remote[g->entry_of_site[g->c->site[j]]];
    return lg_msg(g, e, g->c->site_rank[j]);
}

/* Everything in schedule memory: a persistent alltoall reuses it. */
static int lg_init(struct coll_sched *s, const struct coll_args *a,
                   struct lg *g)
{
    struct gc_comm *c = a->comm;
    g->c = c;
    g->fn = a->fn;
    g->sched = s;
    g->n = c->local_size;
    g->me = c->local_rank;
    int status = alltoall_call_sched(s, a, &g->k);
    /* Alltoall: a rank's N blocks spread over its site's n members. */
    if (status == MPI_SUCCESS)
        status = alltoall_bundles_init(
            s, a, g->k.block * (size_t)c->size / (size_t)g->n, &g->b);
    if (status != MPI_SUCCESS)
        return status;
    for (int t = 0; t < GC_MAX_SITES; t++) {
        g->entry_of_site[t] = -1;
        if (g->k.map.count[t] == 0 || t == g->k.my_site)
            continue;
        struct lg_site *e = &g->remote[g->remote_count];
        e->site = t;
        e->n = g->k.map.count[t];
        e->step = e->n < g->n ? e->n : g->n;
        e->msg_base = g->msgs;
        g->msgs += lg_partners(e, g->me);
        g->entry_of_site[t] = g->remote_count++;
    }
    size_t n = (size_t)g->n, m = (size_t)g->msgs + 1;
    size_t remote = (size_t)(c->size - g->n);
    g->blocks_to = coll_sched_alloc(s, n * sizeof *g->blocks_to);
    g->blocks_from = coll_sched_alloc(s, n * sizeof *g->blocks_from);
    g->len_to = coll_sched_alloc(s, remote * sizeof *g->len_to);
    g->bundle = coll_sched_alloc(s, remote * sizeof *g->bundle);
    g->soff = coll_sched_alloc(s, m * sizeof *g->soff);
    g->roff = coll_sched_alloc(s, m * sizeof *g->roff);
    g->cursor = coll_sched_alloc(s, m * sizeof *g->cursor);
    g->send_step = coll_sched_alloc(s, m * sizeof *g->send_step);
    if (g->blocks_to == NULL || g->blocks_from == NULL || g->len_to == NULL ||
        g->bundle == NULL || g->soff == NULL || g->roff == NULL ||
        g->cursor == NULL || g->send_step == NULL)
        return coll_no_mem(c);
    /* The sizes of the blocks this rank bundles, from its own slen; how
     * many it collects from each member. */
    size_t to = 0, from = 0;
    for (int x = 0; x < g->n; x++) {
        g->blocks_to[x] = lg_bundle(g, g->me, x, g->bundle);
        for (int b = 0; b < g->blocks_to[x]; b++)
            g->len_to[to++] = g->k.slen[g->bundle[b]];
        g->blocks_from[x] = lg_bundle(g, x, g->me, g->bundle);
        from += (size_t)g->blocks_from[x];
    }
    g->len_from = coll_sched_alloc(s, from * sizeof *g->len_from);
    if (g->len_from == NULL)
        return coll_no_mem(c);
    /* Alltoall: every block has the one size every member knows. */
    for (size_t i = 0; g->k.block > 0 && i < from; i++)
        g->len_from[i] = g->k.block;
    return MPI_SUCCESS;
}

/*
 * The v-forms: the sizes of the collected blocks come from their
 * senders, one MPICH alltoallw of uint64_t among the site's members.
 */
static int lg_sizes_step(struct coll_sched *s, struct lg *g)
{
    size_t n = (size_t)g->n;
    MPI_Count *counts = coll_sched_alloc(s, 2 * n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, 2 * n * sizeof *displs);
    MPI_Datatype *types = coll_sched_alloc(s, n * sizeof *types);
    if (counts == NULL || displs == NULL || types == NULL)
        return -1;
    MPI_Aint to = 0, from = 0;
    for (size_t x = 0; x < n; x++) {
        counts[x] = g->blocks_to[x];
        counts[n + x] = g->blocks_from[x];
        displs[x] = to;
        displs[n + x] = from;
        types[x] = MPI_UINT64_T;
        to += g->blocks_to[x] * (MPI_Aint)sizeof(uint64_t);
        from += g->blocks_from[x] * (MPI_Aint)sizeof(uint64_t);
    }
    struct sched_local l = {.op = LOCAL_ALLTOALLW,
                            .sbuf = g->len_to,
                            .rbuf = g->len_from,
                            .scounts = counts,
                            .sdispls = displs,
                            .stypes = types,
                            .rcounts = counts + n,
                            .rdispls = displs + n,
                            .rtypes = types};
    return coll_sched_local(s, &l, -1);
}

/*
 * Once every size is known: the bundles' layout (both sides of the
 * local exchange) and the WAN messages' (soff), with the buffers and the
 * steps that use them pointed at the right bytes.  At build time for
 * Alltoall, as a step after the sizes for the v-forms.
 */
static int lay_out(struct coll_sched *s, void *arg)
{
    struct lg *g = arg;
    struct gc_comm *c = g->c;
    const uint64_t *to = g->len_to, *from = g->len_from;
    MPI_Aint stotal = 0, rtotal = 0;
    for (int x = 0; x < g->n; x++) {
        int r = c->local_to_comm[x];
        g->b.scount[x] = (MPI_Count)g->k.slen[r];
        g->b.rcount[x] = (MPI_Count)g->k.rlen[r];
        for (int b = 0; b < g->blocks_to[x]; b++)
            g->b.scount[x] += (MPI_Count)*to++;
        for (int b = 0; b < g->blocks_from[x]; b++)
            g->b.rcount[x] += (MPI_Count)*from++;
        g->b.sdispl[x] = stotal;
        g->b.rdispl[x] = rtotal;
        stotal += (MPI_Aint)g->b.scount[x];
        rtotal += (MPI_Aint)g->b.rcount[x];
    }
    /* Regrouped by partner: walking the received bundles by k keeps
     * every message in k order. */
    for (int m = 0; m <= g->msgs; m++)
        g->soff[m] = 0;
    const uint64_t *len = g->len_from;
    for (int k = 0; k < g->n; k++) {
        int blocks = lg_bundle(g, k, g->me, g->bundle);
        for (int b = 0; b < blocks; b++)
            g->soff[lg_msg_of_rank(g, g->bundle[b]) + 1] += *len++;
    }
    for (int m = 0; m < g->msgs; m++)
        g->soff[m + 1] += g->soff[m];
    if (alltoall_room(s, &g->b.sbuf, &g->sbund_cap, (size_t)stotal) != 0 ||
        alltoall_room(s, &g->b.rbuf, &g->rbund_cap, (size_t)rtotal) != 0 ||
        alltoall_room(s, &g->wsend, &g->wsend_cap, g->soff[g->msgs]) != 0)
        return MPI_ERR_NO_MEM;
    alltoall_bundles_buffers(s, &g->b, g->b.sbuf, g->b.rbuf);
    for (int m = 0; m < g->msgs; m++) {
        size_t bytes = g->soff[m + 1] - g->soff[m];
        /* Empty: skipped, as the receiver skips it (same signatures). */
        coll_sched_retarget(s, g->send_step[m], g->wsend + g->soff[m],
                            bytes > 0 ? (MPI_Count)bytes : -1);
    }
    return MPI_SUCCESS;
}

/* Pack the outgoing bundles: own block for x, then the remote blocks x
 * collects. */
static int pack_bundles(struct coll_sched *s, void *arg)
{
    (void)s;
    struct lg *g = arg;
    int status = MPI_SUCCESS;
    for (int x = 0; x < g->n && status == MPI_SUCCESS; x++) {
        int r = g->c->local_to_comm[x];
        unsigned char *at = g->b.sbuf + g->b.sdispl[x];
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

/* The collected blocks, regrouped by WAN partner; then this site's own
 * blocks unpacked, while the WAN messages travel. */
static int regroup(struct coll_sched *s, void *arg)
{
    (void)s;
    struct lg *g = arg;
    memcpy(g->cursor, g->soff, (size_t)g->msgs * sizeof *g->cursor);
    const uint64_t *len = g->len_from;
    for (int k = 0; k < g->n; k++) {
        const unsigned char *at =
            g->b.rbuf + g->b.rdispl[k] + g->k.rlen[g->c->local_to_comm[k]];
        int blocks = lg_bundle(g, k, g->me, g->bundle);
        for (int b = 0; b < blocks; b++, len++) {
            int m = lg_msg_of_rank(g, g->bundle[b]);
            memcpy(g->wsend + g->cursor[m], at, (size_t)*len);
            g->cursor[m] += (size_t)*len;
            at += *len;
        }
    }
    int status = MPI_SUCCESS;
    for (int x = 0; x < g->n && status == MPI_SUCCESS; x++)
        status = alltoall_unpack(&g->k, g->c->local_to_comm[x],
                                 g->b.rbuf + g->b.rdispl[x]);
    return status;
}

/* Unpack the WAN messages, walking each remote site's members by k. */
static int unpack_remote(struct coll_sched *s, void *arg)
{
    (void)s;
    struct lg *g = arg;
    int status = MPI_SUCCESS;
    size_t *cursor = g->cursor; /* regroup is done with it */
    memcpy(cursor, g->roff, (size_t)g->msgs * sizeof *cursor);
    for (int i = 0; i < g->remote_count && status == MPI_SUCCESS; i++) {
        const struct lg_site *e = &g->remote[i];
        for (int k = 0; k < e->n && status == MPI_SUCCESS; k++) {
            int r = alltoall_member(&g->k, e->site, k);
            int m = lg_msg(g, e, lg_collector(e->n, g->n, k, g->me));
            status = alltoall_unpack(&g->k, r, g->wrecv + cursor[m]);
            cursor[m] += g->k.rlen[r];
        }
    }
    return status;
}

int alltoall_grid_lg(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    struct lg *g = coll_sched_alloc(s, sizeof *g);
    struct coll_args kept = *a;
    int in_place = a->u.alltoall.sbuf == MPI_IN_PLACE;
    if (g == NULL)
        return coll_no_mem(c);
    int status = alltoall_keep_sides(s, a, &kept);
    if (status == MPI_SUCCESS)
        status = lg_init(s, &kept, g);
    if (status != MPI_SUCCESS)
        return status;
    /* The messages from each partner, sized from rlen: posted first. */
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
    if ((g->wrecv = coll_sched_alloc(s, g->roff[g->msgs])) == NULL)
        return coll_no_mem(c);
    int *in = coll_sched_alloc(s, ((size_t)g->msgs + 1) * sizeof *in), n = 0;
    if (in == NULL)
        return coll_no_mem(c);
    for (int i = 0; i < g->remote_count; i++) {
        const struct lg_site *e = &g->remote[i];
        int end = e->msg_base + lg_partners(e, g->me);
        for (int m = e->msg_base; m < end; m++)
            if (g->roff[m + 1] > g->roff[m])
                in[n++] = coll_sched_recv(
                    s, lg_peer(g, e, m), TAG_ALLTOALL, g->wrecv + g->roff[m],
                    (MPI_Count)(g->roff[m + 1] - g->roff[m]), MPI_BYTE, -1);
    }
    /* Alltoall knows every size now; the v-forms after the sizes step. */
    int laid = -1;
    if (g->k.block == 0)
        laid = coll_sched_call(s, lay_out, g, lg_sizes_step(s, g));
    int packed = coll_sched_call(s, pack_bundles, g, laid);
    int exchanged = alltoall_bundles_exchange(s, &g->b, packed);
    int grouped = coll_sched_call(s, regroup, g, exchanged);
    for (int i = 0; i < g->remote_count; i++) {
        const struct lg_site *e = &g->remote[i];
        int end = e->msg_base + lg_partners(e, g->me);
        for (int m = e->msg_base; m < end; m++)
            g->send_step[m] = coll_sched_send(s, lg_peer(g, e, m), TAG_ALLTOALL,
                                              NULL, -1, MPI_BYTE, grouped);
    }
    if (g->k.block > 0 && (status = lay_out(s, g)) != MPI_SUCCESS)
        return status == MPI_ERR_NO_MEM ? coll_no_mem(c) : status;
    /* In place, blocks from other sites go where outgoing ones were,
     * packed away by then. */
    in[n++] = in_place ? packed : -1;
    coll_sched_call(s, unpack_remote, g, coll_sched_join(s, in, n));
    return MPI_SUCCESS;
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
