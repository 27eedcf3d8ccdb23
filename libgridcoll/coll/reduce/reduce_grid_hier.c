/*
 * Reduce: MagPIe hierarchy with the leaders' partial results sent to the
 * root in segments.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3: reduce
 * inside each site first, then a flat tree between sites (the root talks
 * to one coordinator per site), so each site's partial result crosses
 * one WAN link once and the call costs one WAN latency.  The
 * segmentation follows the pipelining of "multi-lane broadcast"
 * (multilane-bcast-grid.txt) §2.2 run backwards: the relay streams stay
 * busy and the root folds one segment while the next ones arrive.  Also
 * phase_reduce, the Reduce phase other collectives' schedules are built
 * of (gc_coll.h).
 *
 * Phases, S sites with members, M bytes of vector, σ =
 * GRIDCOLL_REDUCE_SEGSIZE (default 256 KiB) rounded down to whole
 * elements:
 *  1. The root posts, for every other site's leader (first member), one
 *     receive per segment of that site's partial result.
 *  2. Local PMPI_Reduce on every site: to the root on the root's site, to
 *     the leader elsewhere (MPICH keeps local-rank order, which is
 *     comm-rank order, for non-commutative ops).
 *  3. Each leader packs its site's partial result and sends it to the
 *     root in segments of σ, all at once.
 *  4. The root folds the S partial results segment by segment as the
 *     segments arrive, in the order of the sites' first members, straight
 *     into recvbuf.
 * A zero count (or an empty datatype) is a no-op.
 *
 * Non-commutative op over sites that are not contiguous rank ranges (a
 * sub-communicator can interleave them): no site's partial result is a
 * contiguous piece of the rank-order product, so every contribution goes
 * to the root (the hier Gatherv: one message per site), which folds them
 * in rank order.  That is the issue-3 scheme, kept as it was.
 *
 * Cost, L and B the WAN latency and bandwidth, n_s the members of site
 * s, γ the per-byte cost of the op:
 *   T = T_reduce(n_s, M) + L + (S-1) M / B_root + σ / B + γ σ
 *       + (S-1) γ M (overlapping the transfer)
 *   B_root what the root's relay session takes in.  WAN per site: the
 *   root's site sends nothing; every other site sends M bytes in
 *   ceil(M / σ) messages.  Interleaved non-commutative case: every other
 *   site sends 1 message of n_s M bytes.
 *
 * When it wins: always across sites; the result has one destination, so
 * the root's incoming link bounds every algorithm, and this one adds one
 * WAN latency and the fold of the last segment to it.
 */
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/reduce/reduce_common.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

/*
 * Non-commutative op over sites that interleave in rank order: no
 * site's partial result is a contiguous piece of the answer, so every
 * contribution goes to the root (the hier Gatherv), which folds them.
 */
static int reduce_gathered(struct coll_sched *s, const void *sbuf, void *rbuf,
                           MPI_Count count, MPI_Datatype type, MPI_Op op,
                           int root, size_t len, int after, int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    int is_root = c->rank == root;
    struct coll_blocks b = COLL_BLOCKS_INIT;
    unsigned char *mine = coll_sched_alloc(s, len);
    unsigned char *all =
        is_root ? coll_sched_alloc(s, len * (size_t)c->size) : NULL;
    if (mine == NULL || (is_root && all == NULL))
        return coll_no_mem(c);
    int status = coll_blocks_make(c, (MPI_Count)len, MPI_BYTE, is_root, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    int packed = coll_sched_pack(s, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count,
                                 type, mine, len, after);
    status = phase_gatherv(s, mine, b.count, b.type, all, b.counts, b.displs,
                           b.type, root, 1, packed, done);
    if (status != MPI_SUCCESS || !is_root)
        goto cleanup;
    struct coll_fold *f = coll_sched_alloc(s, sizeof *f);
    if (f == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    *f = (struct coll_fold){.partials = all,
                            .sources = c->size,
                            .stride = len,
                            .len = len,
                            .rbuf = rbuf,
                            .count = count,
                            .type = coll_sched_type(s, type),
                            .op = op};
    *done = coll_sched_call(s, coll_fold_step, f, *done);
cleanup:
    coll_blocks_free(&b);
    return status;
}

/*
 * The root: its site's partial result (local reduce into rbuf, packed),
 * the leaders' segments, and one fold per segment once every site's
 * piece of it is in.
 */
static int reduce_root(struct coll_sched *s, const void *sbuf, void *rbuf,
                       MPI_Count count, MPI_Datatype type, MPI_Op op,
                       size_t esize, MPI_Count seg, int after, int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t len = (size_t)count * esize;
    MPI_Count segments = (count - 1) / seg + 1;
    unsigned char *partials = coll_sched_alloc(s, len * (size_t)c->site_count);
    int *pieces = coll_sched_alloc(
        s, (size_t)segments * (size_t)(c->site_count + 1) * sizeof *pieces);
    if (partials == NULL || pieces == NULL)
        return coll_no_mem(c);
    MPI_Aint lb, extent;
    int status = PMPI_Type_get_extent(type, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    type = coll_sched_type(s, type);
    /* Partials in the order of the sites' rank ranges (first members);
     * segment k's pieces at pieces[k * (sites + 1) ...]. */
    int sites = 0, slot = 0, width = c->site_count + 1;
    for (int r = 0; r < c->size; r++) {
        if (c->leader[c->site[r]] != r)
            continue;
        if (c->site[r] == c->site[c->rank])
            slot = sites;
        for (MPI_Count k = 0; k < segments && c->site[r] != c->site[c->rank];
             k++) {
            MPI_Count lo = k * seg, hi = count - lo > seg ? lo + seg : count;
            pieces[k * width + sites] = coll_sched_recv(
                s, r, TAG_REDUCE, partials + (size_t)sites * len + lo * esize,
                (MPI_Count)((size_t)(hi - lo) * esize), MPI_BYTE, after);
        }
        sites++;
    }
    struct sched_local l = {.op = LOCAL_REDUCE,
                            .sbuf = sbuf,
                            .rbuf = rbuf,
                            .count = count,
                            .type = type,
                            .mop = op,
                            .root = c->local_rank};
    int own =
        coll_sched_pack(s, rbuf, count, type, partials + (size_t)slot * len,
                        len, coll_sched_local(s, &l, after));
    for (MPI_Count k = 0; k < segments; k++) {
        MPI_Count lo = k * seg, hi = count - lo > seg ? lo + seg : count;
        struct coll_fold *f = coll_sched_alloc(s, sizeof *f);
        if (f == NULL)
            return coll_no_mem(c);
        /* Segment k of every site's partial result, into rbuf. */
        *f = (struct coll_fold){.partials = partials + (size_t)lo * esize,
                                .sources = sites,
                                .stride = len,
                                .len = (size_t)(hi - lo) * esize,
                                .rbuf = (char *)rbuf + lo * extent,
                                .count = hi - lo,
                                .type = type,
                                .op = op};
        pieces[k * width + slot] = own;
        coll_sched_call(s, coll_fold_step, f,
                        coll_sched_join(s, pieces + k * width, sites));
    }
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}

/* The leader of a site without the root: its site's partial result, in
 * segments. */
static int reduce_leader(struct coll_sched *s, const void *sbuf,
                         MPI_Count count, MPI_Datatype type, MPI_Op op,
                         int root, size_t esize, MPI_Count seg, int after,
                         int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t len = (size_t)count * esize;
    void *partial;
    unsigned char *bytes = coll_sched_alloc(s, len);
    int status = coll_sched_temp(s, count, type, &partial);
    if (status != MPI_SUCCESS)
        return status;
    if (bytes == NULL)
        return coll_no_mem(c);
    type = coll_sched_type(s, type);
    struct sched_local l = {.op = LOCAL_REDUCE,
                            .sbuf = sbuf,
                            .rbuf = partial,
                            .count = count,
                            .type = type,
                            .mop = op};
    int packed = coll_sched_pack(s, partial, count, type, bytes, len,
                                 coll_sched_local(s, &l, after));
    for (MPI_Count lo = 0; lo < count; lo += seg) {
        MPI_Count hi = count - lo > seg ? lo + seg : count;
        coll_sched_send(s, root, TAG_REDUCE, bytes + (size_t)lo * esize,
                        (MPI_Count)((size_t)(hi - lo) * esize), MPI_BYTE,
                        packed);
    }
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}

int phase_reduce(struct coll_sched *s, const void *sbuf, void *rbuf,
                 MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                 size_t segsize, int after, int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    int in_order;
    size_t esize;
    *done = after;
    int status = coll_site_partials_ok(c, op, &in_order);
    if (status == MPI_SUCCESS)
        status = coll_packed_size(c, 1, type, &esize);
    if (status != MPI_SUCCESS || count == 0 || esize == 0)
        return status;
    if (!in_order)
        return reduce_gathered(s, sbuf, rbuf, count, type, op, root,
                               (size_t)count * esize, after, done);
    MPI_Count seg = reduce_segment(segsize, esize);
    if (c->rank == root)
        return reduce_root(s, sbuf, rbuf, count, type, op, esize, seg, after,
                           done);
    if (c->site[c->rank] != c->site[root] && c->local_rank == 0)
        return reduce_leader(s, sbuf, count, type, op, root, esize, seg, after,
                             done);
    /* Another member: the local reduce to the root or its leader. */
    struct sched_local l = {
        .op = LOCAL_REDUCE,
        .sbuf = sbuf,
        .count = count,
        .type = coll_sched_type(s, type),
        .mop = op,
        .root = c->site[c->rank] == c->site[root] ? c->site_rank[root] : 0};
    coll_sched_local(s, &l, after);
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}

int reduce_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    int done;
    return phase_reduce(s, r->sbuf, r->rbuf, r->count, r->type, r->op, r->root,
                        a->segsize, -1, &done);
}

/*
 * The header's T_reduce(n_s, M) + L + (S-1) M / B_root + σ / B: local
 * reduces (costed as MPICH's bcast), then S - 1 leaders' segments into
 * the root's site, at the link's bulk rate or its gaps, after the first
 * segment's α_w + σβ_w.  The fold overlaps the transfer and is left out.
 */
double reduce_grid_hier_cost(const struct coll_cost_args *c)
{
    int r = c->root_site, others = c->site_count - 1;
    double m = (double)c->bytes;
    double seg = c->segsize < c->bytes ? (double)c->segsize : m;
    double k = (double)cost_segments(c, c->bytes);
    double local = 0, wan = 0;
    for (int s = 0; s < c->site_count; s++) {
        double t = cost_local_bcast(c, s, c->site_size[s], m);
        local = t > local ? t : local;
        if (s == r)
            continue;
        const struct gc_model_link *l = cost_link(c, s, r);
        double flow = others * m * l->beta_bulk;
        double gaps = others * k * l->gap;
        flow = gaps > flow ? gaps : flow;
        double w = cost_wan_msg(c, s, r, seg) + flow;
        wan = w > wan ? w : wan;
    }
    return local + wan;
}
