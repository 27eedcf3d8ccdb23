/*
 * Reduce_scatter and Reduce_scatter_block across sites: every site
 * reduces locally, split over its members, and each member sends every
 * piece of its site's partial result straight to the member of another
 * site that owns it; owners fold the sites' partial results in a fixed
 * order.
 *
 * Sources: MagPIe (Kielmann et al., PPoPP 1999, §3): reduce inside each
 * site before anything crosses the WAN, each datum crosses each WAN link
 * at most once, one WAN latency.  The local phase is Mamidala's
 * multi-leader reduction (thesis ch. 9.2.2: every member of a node
 * reduces one sub-block, so no single leader does all the work), here a
 * PMPI_Reduce_scatter; the WAN phase spreads over all members' relay
 * sessions like allreduce multileader's (allreduce_grid_multileader.c).
 *
 * Notation: N members, block r (member r's result) is elements d_r ..
 * d_r + c_r of the T-element vector, in rank order.  For a site s,
 * E_s is the sequence of the elements owned by members of other sites,
 * in vector order, R_s = |E_s|; site s's member j (local rank, n_s
 * members) has the share j of E_s: its elements floor(R_s j / n_s) ..
 * floor(R_s (j+1) / n_s).  Every member computes every site's shares
 * from recvcounts[].
 *
 * Phases:
 *  1. Each member posts its receives: from every member of every other
 *     site whose share meets its own block, the overlap, in segments of
 *     σ = GRIDCOLL_REDUCE_SCATTER_SEGSIZE bytes (default 256 KiB).
 *  2. Each member copies its input into a temporary in the order
 *     [block of local rank 0, share 0, block of local rank 1, share 1,
 *     ...] (a local permutation: pack and unpack), and the site runs
 *     PMPI_Reduce_scatter on it: member j gets its site's partial result
 *     over its own block and over its share.  MPICH's Reduce_scatter
 *     combines in local-rank order, which is comm-rank order.
 *  3. Each member sends the pieces of its share, in the same segments,
 *     to their owners: every element's partial result from site s
 *     crosses the WAN once, to the site that needs it, and never comes
 *     back.
 *  4. Each owner folds the S partial results of its block (its own
 *     site's from step 2) in the order of the sites' first members, as
 *     the pieces arrive, straight into recvbuf: no local scatter is left.
 * A vector of 0 elements (or an empty datatype) is a no-op.
 *
 * MPI_IN_PLACE: the input is read from recvbuf into the temporary of
 * step 2 before step 4 writes the block there.
 *
 * Restriction: a non-commutative op only when every site's members are
 * one contiguous range of comm ranks (coll_site_partials_ok, as allreduce
 * hier): then the site-ordered fold of the sites' rank-ordered partial
 * results is MPI's rank order.  Commutative ops always.
 *
 * Cost, M = T e bytes of vector (e bytes per element), L and B the WAN
 * latency and bandwidth, B_r what one member's relay session carries, γ
 * the per-byte cost of the op:
 *   T = T_perm(M) + T_rs(n_s, M) + L + max(R_s e / B, R_s e / (n_s B_r))
 *       + σ / B + (S-1) γ c_r e
 *   WAN per site s: R_s e bytes (the elements other sites own, once);
 *   messages: Σ over s's members j and the blocks b of members of other
 *   sites of ceil(|share j ∩ b| / σ), at most n_s + N - n_s - 1 when the
 *   pieces are under σ.  Against reduce_scatterv (Reduce of the whole
 *   vector to rank 0, then Scatterv): one WAN latency instead of two,
 *   and R_s e bytes per site instead of M to rank 0 and the blocks back.
 *
 * When it wins: across sites, always when it can run the call; the
 * difference grows with the vector and the site count.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/reduce/reduce_common.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/* Elements lo .. hi of member `owner`'s block, at position `at` of E_s. */
struct span {
    int owner;
    MPI_Count lo, hi;
    MPI_Count at;
};

struct plan {
    struct site_map map;
    int order[GC_MAX_SITES]; /* fold position -> site index */
    int sites;
    int me; /* my site's fold position */
    MPI_Count
        *displ; /* [size + 1]: block r is elements displ[r] .. displ[r+1] */
    MPI_Count *counts; /* [local_size]: the local Reduce_scatter's counts */
    struct span *copy; /* the permuted input, as vector ranges in order */
    int ncopy;
    MPI_Count share_lo, share_hi; /* my share, in E of my site */
    struct reduce_pieces sends;   /* in share coordinates (0 = share_lo) */
    struct reduce_pieces recvs;   /* in vector coordinates */
};

static void plan_free(struct plan *p)
{
    site_map_free(&p->map);
    free(p->displ);
    free(p->counts);
    free(p->copy);
    reduce_pieces_free(&p->sends);
    reduce_pieces_free(&p->recvs);
}

static MPI_Count share_start(MPI_Count remote, int members, int j)
{
    return remote * j / members;
}

/* R_s: the elements of the vector owned by members of other sites. */
static MPI_Count remote_elements(const struct gc_comm *c,
                                 const MPI_Count *displ, int s)
{
    MPI_Count own = 0;
    for (int q = 0; q < c->size; q++)
        if (c->site[q] == s)
            own += displ[q + 1] - displ[q];
    return displ[c->size] - own;
}

/*
 * The blocks of members of other sites than s that meet elements a .. b
 * of E_s, cut to them, in vector order, appended to out[*n].
 */
static void remote_spans(const struct gc_comm *c, const MPI_Count *displ, int s,
                         MPI_Count a, MPI_Count b, struct span *out, int *n)
{
    MPI_Count at = 0;
    for (int q = 0; q < c->size && at < b; q++) {
        if (c->site[q] == s)
            continue;
        MPI_Count len = displ[q + 1] - displ[q];
        MPI_Count lo = a > at ? a : at, hi = b < at + len ? b : at + len;
        if (lo < hi)
            out[(*n)++] = (struct span){.owner = q,
                                        .lo = displ[q] + lo - at,
                                        .hi = displ[q] + hi - at,
                                        .at = lo};
        at += len;
    }
}

/*
 * My receives: from every other site, grouped by fold position, the
 * pieces of my block its members' shares hold (my block is a range of
 * that site's E, the members' shares in order).
 */
static void plan_receives(const struct gc_comm *c, struct plan *p,
                          MPI_Count seg)
{
    MPI_Count d = p->displ[c->rank], end = p->displ[c->rank + 1];
    for (int u = 0; u < p->sites && end > d; u++) {
        int t = p->order[u], n = p->map.count[t];
        if (u == p->me)
            continue;
        MPI_Count remote = remote_elements(c, p->displ, t), before = 0;
        for (int q = 0; q < c->rank; q++)
            if (c->site[q] == t)
                before += p->displ[q + 1] - p->displ[q];
        MPI_Count at = d - before; /* my block's position in t's E */
        for (int j = 0; j < n; j++) {
            MPI_Count lo = share_start(remote, n, j),
                      hi = share_start(remote, n, j + 1);
            lo = lo > at ? lo : at;
            hi = hi < at + (end - d) ? hi : at + (end - d);
            if (lo < hi)
                reduce_pieces_add(&p->recvs, u,
                                  p->map.member[p->map.first[t] + j],
                                  d + lo - at, d + hi - at, seg);
        }
    }
}

static int plan_make(const struct gc_comm *c, const MPI_Count *rcounts,
                     MPI_Count seg, struct plan *p)
{
    int status = site_map_build(c, &p->map);
    if (status != MPI_SUCCESS)
        return status;
    int s = c->site[c->rank], n = c->local_size;
    p->displ = malloc((size_t)(c->size + 1) * sizeof *p->displ);
    p->counts = malloc((size_t)n * sizeof *p->counts);
    /* Own blocks, plus each share's spans: at most one per remote block
     * and one more per share boundary. */
    p->copy = malloc((size_t)(2 * c->size + 1) * sizeof *p->copy);
    if (p->displ == NULL || p->counts == NULL || p->copy == NULL)
        return coll_no_mem(c);
    p->displ[0] = 0;
    for (int q = 0; q < c->size; q++)
        p->displ[q + 1] = p->displ[q] + rcounts[q];
    for (int q = 0; q < c->size; q++)
        if (c->leader[c->site[q]] == q) {
            if (c->site[q] == s)
                p->me = p->sites;
            p->order[p->sites++] = c->site[q];
        }
    MPI_Count remote = remote_elements(c, p->displ, s);
    for (int j = 0; j < n; j++) {
        int r = c->local_to_comm[j];
        MPI_Count lo = share_start(remote, n, j),
                  hi = share_start(remote, n, j + 1);
        if (rcounts[r] > 0)
            p->copy[p->ncopy++] = (struct span){
                .owner = r, .lo = p->displ[r], .hi = p->displ[r + 1]};
        int first = p->ncopy;
        remote_spans(c, p->displ, s, lo, hi, p->copy, &p->ncopy);
        p->counts[j] = rcounts[r] + hi - lo;
        if (j != c->local_rank)
            continue;
        p->share_lo = lo;
        p->share_hi = hi;
        for (int k = first; k < p->ncopy; k++) {
            const struct span *x = &p->copy[k];
            reduce_pieces_add(&p->sends, -1, x->owner, x->at - lo,
                              x->at - lo + x->hi - x->lo, seg);
        }
    }
    plan_receives(c, p, seg);
    return p->sends.no_mem || p->recvs.no_mem ? coll_no_mem(c) : MPI_SUCCESS;
}

/* The input in the plan's order, as typed elements at `in` (a step). */
struct permute {
    struct gc_comm *c;
    const void *input;
    struct span *copy; /* the plan's, in schedule memory */
    int ncopy;
    MPI_Count total;
    unsigned char *bytes;
    void *in;
    MPI_Datatype type;
    size_t esize;
    MPI_Aint extent;
};

static int permute_input(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct permute *x = arg;
    size_t at = 0;
    int status = MPI_SUCCESS;
    for (int k = 0; k < x->ncopy && status == MPI_SUCCESS; k++) {
        const struct span *y = &x->copy[k];
        size_t piece = (size_t)(y->hi - y->lo) * x->esize;
        status = coll_pack(x->c,
                           (const char *)x->input + (MPI_Aint)y->lo * x->extent,
                           y->hi - y->lo, x->type, x->bytes + at, piece);
        at += piece;
    }
    if (status == MPI_SUCCESS)
        status = coll_unpack(x->c, x->bytes, (size_t)x->total * x->esize, x->in,
                             x->total, x->type);
    return status;
}

int reduce_scatter_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_scatter_args *r = &a->u.reduce_scatter;
    struct gc_comm *c = a->comm;
    struct plan p = {0};
    MPI_Count total = 0;
    size_t esize;
    MPI_Aint lb, extent;
    for (int q = 0; q < c->size; q++)
        total += r->rcounts[q];
    int status = coll_packed_size(c, 1, r->type, &esize);
    if (status != MPI_SUCCESS || total == 0 || esize == 0)
        return status;
    status = PMPI_Type_get_extent(r->type, &lb, &extent);
    if (status == MPI_SUCCESS)
        status =
            plan_make(c, r->rcounts, reduce_segment(a->segsize, esize), &p);
    if (status != MPI_SUCCESS)
        goto cleanup;
    MPI_Datatype type = coll_sched_type(s, r->type);
    MPI_Count mine = r->rcounts[c->rank], share = p.share_hi - p.share_lo;
    size_t stride = (size_t)mine * esize;
    struct permute *x = coll_sched_alloc(s, sizeof *x);
    unsigned char *partials = coll_sched_alloc(s, stride * (size_t)p.sites);
    unsigned char *shared = coll_sched_alloc(s, (size_t)share * esize);
    MPI_Count *counts =
        coll_sched_alloc(s, (size_t)c->local_size * sizeof *counts);
    int *steps = coll_sched_alloc(
        s, (size_t)(p.recvs.count > 0 ? p.recvs.count : 1) * sizeof *steps);
    void *out = NULL;
    if (x == NULL || partials == NULL || shared == NULL || counts == NULL ||
        steps == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    *x = (struct permute){
        .c = c,
        .input = r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
        .copy = coll_sched_alloc(s, (size_t)(p.ncopy + 1) * sizeof *x->copy),
        .ncopy = p.ncopy,
        .total = total,
        .bytes = coll_sched_alloc(s, (size_t)total * esize),
        .type = type,
        .esize = esize,
        .extent = extent};
    if (x->copy == NULL || x->bytes == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    memcpy(x->copy, p.copy, (size_t)p.ncopy * sizeof *x->copy);
    memcpy(counts, p.counts, (size_t)c->local_size * sizeof *counts);
    status = coll_sched_temp(s, total, r->type, &x->in);
    if (status == MPI_SUCCESS)
        status = coll_sched_temp(s, counts[c->local_rank], r->type, &out);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* 1. Receives first, one per piece. */
    for (int k = 0; k < p.recvs.count; k++) {
        const struct reduce_piece *y = &p.recvs.at[k];
        steps[k] = coll_sched_recv(
            s, y->peer, TAG_REDUCE_SCATTER,
            partials + (size_t)y->source * stride +
                (size_t)(y->lo - p.displ[c->rank]) * esize,
            (MPI_Count)((size_t)(y->hi - y->lo) * esize), MPI_BYTE, -1);
    }
    /* 2. The permuted input, reduced over the site. */
    struct sched_local l = {.op = LOCAL_REDUCE_SCATTER,
                            .sbuf = x->in,
                            .rbuf = out,
                            .counts = counts,
                            .type = type,
                            .mop = r->op};
    int reduced =
        coll_sched_local(s, &l, coll_sched_call(s, permute_input, x, -1));
    int own = coll_sched_pack(
        s, out, mine, type, partials + (size_t)p.me * stride, stride, reduced);
    /* 3. The share's pieces to their owners. */
    int packed =
        coll_sched_pack(s, (char *)out + (MPI_Aint)mine * extent, share, type,
                        shared, (size_t)share * esize, reduced);
    for (int k = 0; k < p.sends.count; k++) {
        const struct reduce_piece *y = &p.sends.at[k];
        coll_sched_send(
            s, y->peer, TAG_REDUCE_SCATTER, shared + (size_t)y->lo * esize,
            (MPI_Count)((size_t)(y->hi - y->lo) * esize), MPI_BYTE, packed);
    }
    /* 4. The fold, stretch by stretch as the pieces arrive. */
    struct reduce_fold f = {
        .partials = partials,
        .stride = stride,
        .esize = esize,
        .sources = p.sites,
        .lo = p.displ[c->rank],
        .hi = p.displ[c->rank + 1],
        .rbuf = r->rbuf,
        .extent = extent,
        .type = type,
        .op = r->op,
    };
    reduce_fold_steps(s, &f, p.recvs.at, steps, p.recvs.count, own);
cleanup:
    plan_free(&p);
    return status;
}
