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
 * coll_reduce, the fixed Reduce other collectives call (gc_coll.h).
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
#include <stdlib.h>

#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "reduce_common.h"

/*
 * Reduce of a non-commutative op over sites that interleave in rank
 * order: no site's partial result is a contiguous piece of the answer,
 * so every contribution goes to the root (Gather), which combines them.
 */
static int reduce_gathered(struct gc_comm *c, const void *sbuf, void *rbuf,
                           int count, MPI_Datatype type, MPI_Op op, int root,
                           size_t len)
{
    unsigned char *mine = NULL, *all = NULL;
    struct coll_blocks b = COLL_BLOCKS_INIT;
    int status = coll_pack_input(c, sbuf, rbuf, count, type, len,
                                 c->rank == root, &mine, &b);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c->rank == root && (all = coll_alloc(len * (size_t)c->size)) == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    status = coll_gatherv(c, mine, b.count, b.type, all, b.counts, b.displs,
                          b.type, root, 1);
    if (status == MPI_SUCCESS && c->rank == root)
        status = coll_combine(c, all, c->size, len, len, rbuf, count, type, op);
cleanup:
    free(mine);
    free(all);
    coll_blocks_free(&b);
    return status;
}

/* The root: its site's partial and the leaders' segments, folded. */
static int reduce_root(struct gc_comm *c, const void *sbuf, void *rbuf,
                       int count, MPI_Datatype type, MPI_Op op, size_t esize,
                       int seg)
{
    struct reduce_pieces pieces = {0};
    struct gc_xfer **reqs = NULL;
    int n = 0, sites = 0, slot = 0, xfer_status = MPI_SUCCESS;
    size_t len = (size_t)count * esize;
    MPI_Aint lb, extent;
    unsigned char *partials = coll_alloc(len * (size_t)c->site_count);
    int status = PMPI_Type_get_extent(type, &lb, &extent);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* Partials in the order of the sites' rank ranges (first members). */
    for (int r = 0; r < c->size; r++) {
        if (c->leader[c->site[r]] != r)
            continue;
        if (c->site[r] == c->site[c->rank])
            slot = sites;
        else
            reduce_pieces_add(&pieces, sites, r, 0, count, seg);
        sites++;
    }
    if (partials == NULL || pieces.no_mem ||
        (reqs = malloc((size_t)(pieces.count + 1) * sizeof *reqs)) == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int k = 0; k < pieces.count && xfer_status == MPI_SUCCESS; k++) {
        const struct reduce_piece *x = &pieces.at[k];
        xfer_status = coll_irecv(c, x->peer, TAG_REDUCE,
                                 partials + (size_t)x->source * len +
                                     (size_t)x->lo * esize,
                                 (size_t)(x->hi - x->lo) * esize, reqs, &n);
    }
    status =
        coll_local_reduce(sbuf, rbuf, count, type, op, c->local_rank, c->local);
    if (status == MPI_SUCCESS)
        status =
            coll_pack(c, rbuf, count, type, partials + (size_t)slot * len, len);
    /* Receives were posted first, one per piece: reqs[k] is piece k's,
     * unless posting stopped early (then nothing is folded). */
    struct reduce_fold f = {
        .partials = partials,
        .stride = len,
        .esize = esize,
        .sources = sites,
        .lo = 0,
        .hi = count,
        .rbuf = rbuf,
        .extent = extent,
        .type = type,
        .op = op,
    };
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        status =
            reduce_fold_run(c, &f, pieces.at, pieces.count, reqs, &xfer_status);
    xfer_status = coll_wait(c, n, reqs, xfer_status);
    if (status == MPI_SUCCESS)
        status = xfer_status;
cleanup:
    reduce_pieces_free(&pieces);
    free(reqs);
    free(partials);
    return status;
}

/* The leader of a site without the root: its site's partial result, in
 * segments. */
static int reduce_leader(struct gc_comm *c, const void *sbuf, int count,
                         MPI_Datatype type, MPI_Op op, int root, size_t esize,
                         int seg)
{
    struct coll_temp t = {0};
    struct gc_xfer **reqs = NULL;
    unsigned char *bytes = NULL;
    size_t len = (size_t)count * esize;
    int n = 0;
    int status = coll_temp_alloc(c, count, type, 1, &t);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = coll_local_reduce(sbuf, t.base, count, type, op, 0, c->local);
    if (status != MPI_SUCCESS)
        goto cleanup;
    int segments = (count - 1) / seg + 1;
    bytes = coll_alloc(len);
    reqs = malloc((size_t)segments * sizeof *reqs);
    if (bytes == NULL || reqs == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    status = coll_pack(c, t.base, count, type, bytes, len);
    if (status != MPI_SUCCESS)
        goto cleanup;
    for (int lo = 0; lo < count && status == MPI_SUCCESS; lo += seg) {
        int hi = count - lo > seg ? lo + seg : count;
        status = coll_isend(c, root, TAG_REDUCE, bytes + (size_t)lo * esize,
                            (size_t)(hi - lo) * esize, reqs, &n);
    }
    status = coll_wait(c, n, reqs, status);
cleanup:
    free(reqs);
    free(bytes);
    free(t.mem);
    return status;
}

static int reduce(struct gc_comm *c, const void *sbuf, void *rbuf, int count,
                  MPI_Datatype type, MPI_Op op, int root, size_t segsize)
{
    int in_order;
    size_t esize;
    int status = coll_site_partials_ok(c, op, &in_order);
    if (status == MPI_SUCCESS)
        status = coll_packed_size(c, 1, type, &esize);
    if (status != MPI_SUCCESS || count == 0 || esize == 0)
        return status;
    if (!in_order)
        return reduce_gathered(c, sbuf, rbuf, count, type, op, root,
                               (size_t)count * esize);
    int seg = reduce_segment(segsize, esize);
    if (c->rank == root)
        return reduce_root(c, sbuf, rbuf, count, type, op, esize, seg);
    if (c->site[c->rank] == c->site[root])
        return coll_local_reduce(sbuf, NULL, count, type, op,
                                 c->site_rank[root], c->local);
    if (c->local_rank != 0)
        return coll_local_reduce(sbuf, NULL, count, type, op, 0, c->local);
    return reduce_leader(c, sbuf, count, type, op, root, esize, seg);
}

int reduce_grid_hier(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    return reduce(a->comm, r->sbuf, r->rbuf, r->count, r->type, r->op, r->root,
                  a->segsize);
}

int coll_reduce(struct gc_comm *c, const void *sbuf, void *rbuf, int count,
                MPI_Datatype type, MPI_Op op, int root)
{
    return reduce(c, sbuf, rbuf, count, type, op, root,
                  coll_table_of(GC_COLL_REDUCE)->default_segsize);
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
