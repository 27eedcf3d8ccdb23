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
 * Phases, coordinator = site rank 0, as one schedule (engine/coll_sched.h)
 * for the blocking, nonblocking and persistent forms:
 *   0. The v-forms only: the coordinator gathers (MPICH Igatherv on the
 *      site's communicator) every member's block sizes for other sites
 *      and its total expected from each other site; Alltoall's are known
 *      everywhere from the one block size.
 *   1. Local phase: every member sends each member of its site its block
 *      for it, and the coordinator, in the same bundle, all its blocks
 *      for other sites (by site, then site rank).  Blocking runs take the
 *      site level's schedule, the other forms one MPICH Ialltoallw, so
 *      they never block (alltoall_bundles_exchange).
 *   2. WAN phase: the coordinator sends every other site's coordinator
 *      one message, the blocks for that site by destination, then source
 *      (the receiving coordinator splits it by destination); it receives
 *      one from each (posted before phase 1 for Alltoall, once the sizes
 *      are in for the v-forms).  Members unpack their own site's blocks
 *      meanwhile.
 *   3. Local scatter (MPICH Iscatterv on the site's communicator): each
 *      member gets what came for it from every other site, and unpacks.
 *
 * Cost for S sites, m bytes a pair, N ranks: S - 1 WAN messages per site
 * (one per ordered pair of sites), n_s n_t m bytes from site s to site t,
 * each block crossing once; time
 *   T_C1 + max over sites (alpha_w + beta_w n_s (N - n_s) m) + T_scatter
 * where the coordinator alone injects and absorbs all of its site's WAN
 * traffic and the local phase funnels (N - n_s) m bytes from every
 * member into it; the v-forms add the size gather, N - n_s + S - 1
 * uint64 from every member.  Wins for small messages and many sites, where the
 * S - 1 start-ups per site (against sum max(n_s, n_t) for LG) dominate.
 */
#include <string.h>

#include "coll/alltoall/alltoall.h"
#include "coll/engine/coll_sched.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

struct hier {
    struct alltoall_call k;
    struct gc_comm *c;
    const char *fn;
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
    struct alltoall_bundles b; /* the local phase */
    size_t rbund_cap;
    /* WAN (coordinator), by remote site index: offsets [remote + 1] */
    size_t soff[GC_MAX_SITES + 1], roff[GC_MAX_SITES + 1];
    size_t *dest_off, *cursor; /* per remote rank: its part of wsend */
    unsigned char *wsend, *wrecv;
    size_t wsend_cap, wrecv_cap;
    int send_step[GC_MAX_SITES], recv_step[GC_MAX_SITES];
    /* Scatter: the coordinator's by member, into its `mine` in place */
    MPI_Count *ccount;
    MPI_Aint *cdispl;
    unsigned char *scat, *mine;
    size_t scat_cap;
    MPI_Count mine_len; /* this rank's bytes from other sites */
    int scatter_step;
};

static const uint64_t *hier_row(const struct hier *h, int x)
{
    return h->lens + (size_t)x * (size_t)h->row;
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
 * Everything in schedule memory (a persistent alltoall reuses it), with
 * what this rank alone decides: its row, its outgoing bundles' layout,
 * and every member's row at the coordinator of an Alltoall.
 */
static int hier_init(struct coll_sched *s, const struct coll_args *a,
                     struct hier *h)
{
    struct gc_comm *c = a->comm;
    h->c = c;
    h->fn = a->fn;
    h->n = c->local_size;
    h->me = c->local_rank;
    h->scatter_step = -1;
    int status = alltoall_call_sched(s, a, &h->k);
    /* Alltoall: a rank's N blocks over its site's n members. */
    if (status == MPI_SUCCESS)
        status = alltoall_bundles_init(
            s, a, h->k.block * (size_t)c->size / (size_t)h->n, &h->b);
    if (status != MPI_SUCCESS)
        return status;
    for (int t = 0; t < GC_MAX_SITES; t++)
        if (h->k.map.count[t] > 0 && t != h->k.my_site)
            h->remote[h->remote_count++] = t;
    h->remote_ranks = c->size - h->n;
    h->row = h->remote_ranks + h->remote_count;
    size_t n = (size_t)h->n, remote = (size_t)h->remote_ranks;
    size_t rows = h->me == 0 ? n : 1;
    h->lens = coll_sched_alloc(s, rows * (size_t)h->row * sizeof *h->lens);
    h->dest_off = coll_sched_alloc(s, 2 * remote * sizeof *h->dest_off);
    h->ccount = coll_sched_alloc(s, n * sizeof *h->ccount);
    h->cdispl = coll_sched_alloc(s, n * sizeof *h->cdispl);
    if (h->lens == NULL || h->dest_off == NULL || h->ccount == NULL ||
        h->cdispl == NULL)
        return coll_no_mem(c);
    h->cursor = h->dest_off + remote;
    hier_my_row(h, h->lens);
    if (h->me == 0 && h->k.block > 0)
        for (int x = 1; x < h->n; x++)
            memcpy(h->lens + (size_t)x * (size_t)h->row, h->lens,
                   (size_t)h->row * sizeof *h->lens);
    MPI_Aint stotal = 0;
    for (int x = 0; x < h->n; x++) {
        h->b.scount[x] = (MPI_Count)h->k.slen[c->local_to_comm[x]];
        for (int i = 0; x == 0 && i < h->remote_ranks; i++)
            h->b.scount[x] += (MPI_Count)h->lens[i];
        h->b.sdispl[x] = stotal;
        stotal += (MPI_Aint)h->b.scount[x];
    }
    uint64_t mine = 0;
    for (int t = 0; t < h->remote_count; t++)
        mine += h->lens[h->remote_ranks + t];
    h->mine_len = (MPI_Count)mine;
    h->b.sbuf = coll_sched_alloc(s, (size_t)stotal);
    h->mine = h->me == 0 ? NULL : coll_sched_alloc(s, (size_t)mine);
    if (h->b.sbuf == NULL || (h->me != 0 && h->mine == NULL))
        return coll_no_mem(c);
    return MPI_SUCCESS;
}

/*
 * Coordinator: the WAN messages' layout.  The message to site t holds, by
 * destination y, the blocks of every member x for y (from dest_off[i],
 * y remote rank i); the one from site t, by member x of this site, x's
 * total from t; the scatter gives member x its parts of every site's
 * message.
 */
static int lay_out_wan(struct coll_sched *s, struct hier *h)
{
    size_t at = 0;
    int i = 0;
    for (int t = 0; t < h->remote_count; t++) {
        h->soff[t] = at;
        for (int y = 0; y < h->k.map.count[h->remote[t]]; y++, i++) {
            h->dest_off[i] = at;
            for (int x = 0; x < h->n; x++)
                at += hier_row(h, x)[i];
        }
    }
    h->soff[h->remote_count] = at;
    h->roff[0] = 0;
    for (int t = 0; t < h->remote_count; t++) {
        h->roff[t + 1] = h->roff[t];
        for (int x = 0; x < h->n; x++)
            h->roff[t + 1] += hier_row(h, x)[h->remote_ranks + t];
    }
    size_t scat = 0;
    for (int x = 0; x < h->n; x++) {
        size_t part = 0;
        for (int t = 0; t < h->remote_count; t++)
            part += hier_row(h, x)[h->remote_ranks + t];
        h->ccount[x] = (MPI_Count)part;
        h->cdispl[x] = (MPI_Aint)scat;
        scat += part;
    }
    size_t sent = h->soff[h->remote_count], got = h->roff[h->remote_count];
    if (alltoall_room(s, &h->wsend, &h->wsend_cap, sent) != 0 ||
        alltoall_room(s, &h->wrecv, &h->wrecv_cap, got) != 0 ||
        alltoall_room(s, &h->scat, &h->scat_cap, scat) != 0)
        return MPI_ERR_NO_MEM;
    /* The coordinator's own part stays at the scatter's start. */
    h->mine = h->scat;
    coll_sched_local_args(s, h->scatter_step)->sbuf = h->scat;
    for (int t = 0; t < h->remote_count; t++) {
        size_t out = h->soff[t + 1] - h->soff[t],
               in = h->roff[t + 1] - h->roff[t];
        /* Empty: skipped, as the other coordinator skips it (both
         * compute the same size from matching type signatures). */
        coll_sched_retarget(s, h->send_step[t], h->wsend + h->soff[t],
                            out > 0 ? (MPI_Count)out : -1);
        coll_sched_retarget(s, h->recv_step[t], h->wrecv + h->roff[t],
                            in > 0 ? (MPI_Count)in : -1);
    }
    return MPI_SUCCESS;
}

/*
 * Once this rank knows every size it needs (the coordinator every
 * member's row): the bundles it receives, and at the coordinator the WAN
 * and scatter layout, with the steps that use them pointed at the right
 * bytes.  At build time but for the coordinator of a v-form, whose rows
 * come in with step 0.
 */
static int lay_out(struct coll_sched *s, void *arg)
{
    struct hier *h = arg;
    struct gc_comm *c = h->c;
    MPI_Aint rtotal = 0;
    for (int x = 0; x < h->n; x++) {
        h->b.rcount[x] = (MPI_Count)h->k.rlen[c->local_to_comm[x]];
        for (int i = 0; h->me == 0 && i < h->remote_ranks; i++)
            h->b.rcount[x] += (MPI_Count)hier_row(h, x)[i];
        h->b.rdispl[x] = rtotal;
        rtotal += (MPI_Aint)h->b.rcount[x];
    }
    if (alltoall_room(s, &h->b.rbuf, &h->rbund_cap, (size_t)rtotal) != 0)
        return MPI_ERR_NO_MEM;
    alltoall_bundles_buffers(s, &h->b, h->b.sbuf, h->b.rbuf);
    return h->me == 0 && h->remote_count > 0 ? lay_out_wan(s, h) : MPI_SUCCESS;
}

/* Pack the outgoing bundles: the block for each member, and in the
 * coordinator's, after its block, every block for other sites. */
static int pack_bundles(struct coll_sched *s, void *arg)
{
    (void)s;
    struct hier *h = arg;
    struct gc_comm *c = h->c;
    int status = MPI_SUCCESS;
    for (int x = 0; x < h->n && status == MPI_SUCCESS; x++)
        status = alltoall_pack(&h->k, c->local_to_comm[x],
                               h->b.sbuf + h->b.sdispl[x]);
    unsigned char *at = h->b.sbuf + h->k.slen[c->local_to_comm[0]];
    for (int t = 0; t < h->remote_count && status == MPI_SUCCESS; t++) {
        int site = h->remote[t];
        for (int y = 0; y < h->k.map.count[site] && status == MPI_SUCCESS;
             y++) {
            int r = alltoall_member(&h->k, site, y);
            status = alltoall_pack(&h->k, r, at);
            at += h->k.slen[r];
        }
    }
    return status;
}

/* The coordinator regroups its members' blocks for other sites by
 * destination; every member unpacks its own site's blocks, while the WAN
 * messages travel. */
static int regroup(struct coll_sched *s, void *arg)
{
    (void)s;
    struct hier *h = arg;
    const int *to_comm = h->c->local_to_comm;
    if (h->me == 0 && h->remote_count > 0) {
        memcpy(h->cursor, h->dest_off,
               (size_t)h->remote_ranks * sizeof *h->cursor);
        for (int x = 0; x < h->n; x++) {
            const uint64_t *row = hier_row(h, x);
            const unsigned char *from =
                h->b.rbuf + h->b.rdispl[x] + h->k.rlen[to_comm[x]];
            for (int i = 0; i < h->remote_ranks; i++) {
                memcpy(h->wsend + h->cursor[i], from, (size_t)row[i]);
                h->cursor[i] += (size_t)row[i];
                from += row[i];
            }
        }
    }
    int status = MPI_SUCCESS;
    for (int x = 0; x < h->n && status == MPI_SUCCESS; x++)
        status = alltoall_unpack(&h->k, to_comm[x], h->b.rbuf + h->b.rdispl[x]);
    return status;
}

/* Coordinator: every site's message split by member, for the scatter. */
static int collect(struct coll_sched *s, void *arg)
{
    (void)s;
    struct hier *h = arg;
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
    return MPI_SUCCESS;
}

/* This rank's blocks from other sites: by site, then source. */
static int unpack_remote(struct coll_sched *s, void *arg)
{
    (void)s;
    struct hier *h = arg;
    const unsigned char *at = h->mine;
    int status = MPI_SUCCESS;
    for (int t = 0; t < h->remote_count && status == MPI_SUCCESS; t++) {
        int site = h->remote[t];
        for (int y = 0; y < h->k.map.count[site] && status == MPI_SUCCESS;
             y++) {
            int r = alltoall_member(&h->k, site, y);
            status = alltoall_unpack(&h->k, r, at);
            at += h->k.rlen[r];
        }
    }
    return status;
}

/* Step 0 of the v-forms: every member's row to the coordinator, whose
 * own is in place. */
static int sizes_step(struct coll_sched *s, struct hier *h)
{
    MPI_Count *counts = NULL;
    MPI_Aint *displs = NULL;
    if (h->me == 0) {
        counts = coll_sched_alloc(s, (size_t)h->n * sizeof *counts);
        displs = coll_sched_alloc(s, (size_t)h->n * sizeof *displs);
        if (counts == NULL || displs == NULL)
            return -1;
        for (int x = 0; x < h->n; x++) {
            counts[x] = h->row;
            displs[x] = (MPI_Aint)x * h->row;
        }
    }
    struct sched_local l = {.op = LOCAL_GATHERV,
                            .sbuf = h->me == 0 ? MPI_IN_PLACE : h->lens,
                            .count = h->row,
                            .type = MPI_UINT64_T,
                            .rbuf = h->lens,
                            .counts = counts,
                            .displs = displs,
                            .rtype = MPI_UINT64_T};
    return coll_sched_local(s, &l, -1);
}

int alltoall_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    struct hier *h = coll_sched_alloc(s, sizeof *h);
    struct coll_args kept = *a;
    if (h == NULL)
        return coll_no_mem(c);
    int status = alltoall_keep_sides(s, a, &kept);
    if (status == MPI_SUCCESS)
        status = hier_init(s, &kept, h);
    if (status != MPI_SUCCESS)
        return status;
    int coordinator = h->me == 0, wan = h->remote_count > 0;
    int sizes = -1, laid = -1;
    int late = coordinator && wan && h->k.block == 0;
    if (wan && h->k.block == 0)
        sizes = sizes_step(s, h);
    if (late)
        laid = coll_sched_call(s, lay_out, h, sizes);
    /* The WAN messages in, sized by lay_out. */
    int in[GC_MAX_SITES + 1];
    for (int t = 0; coordinator && t < h->remote_count; t++)
        in[t] = h->recv_step[t] = coll_sched_recv(
            s, c->leader[h->remote[t]], TAG_ALLTOALL, NULL, -1, MPI_BYTE, laid);
    int packed = coll_sched_call(s, pack_bundles, h, -1);
    /* Every member starts the exchange after the size gather, as the
     * coordinator must: a member blocked in the exchange (blocking runs)
     * before it posted the gather would leave the coordinator waiting. */
    int before[3] = {packed, sizes, laid};
    int exchanged =
        alltoall_bundles_exchange(s, &h->b, coll_sched_join(s, before, 3));
    int grouped = coll_sched_call(s, regroup, h, exchanged);
    if (wan) {
        for (int t = 0; coordinator && t < h->remote_count; t++)
            h->send_step[t] =
                coll_sched_send(s, c->leader[h->remote[t]], TAG_ALLTOALL, NULL,
                                -1, MPI_BYTE, grouped);
        /* In place, blocks from other sites go where outgoing ones were,
         * packed away before the exchange. */
        int scatter_after = exchanged;
        if (coordinator) {
            in[h->remote_count] = exchanged;
            scatter_after = coll_sched_call(
                s, collect, h, coll_sched_join(s, in, h->remote_count + 1));
        }
        struct sched_local l = {.op = LOCAL_SCATTERV,
                                .counts = h->ccount,
                                .displs = h->cdispl,
                                .type = MPI_BYTE,
                                .rbuf = coordinator ? MPI_IN_PLACE : h->mine,
                                .rcount = h->mine_len,
                                .rtype = MPI_BYTE};
        h->scatter_step = coll_sched_local(s, &l, scatter_after);
        coll_sched_call(s, unpack_remote, h, h->scatter_step);
    }
    if (!late && lay_out(s, h) != MPI_SUCCESS)
        return coll_no_mem(c);
    return MPI_SUCCESS;
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
