/*
 * Multi-leader Allreduce across sites for long vectors: every member is a
 * leader for one slice of the vector.  The local phases are Mamidala's
 * (thesis ch. 9.2.2: the members of a node each reduce one sub-block of
 * the shared buffer, then every member copies the whole result; here
 * PMPI_Reduce_scatter and an intra-site allgather), the WAN
 * phase MagPIe's rule (Kielmann et al., PPoPP 1999, section 3: each datum
 * crosses each WAN link once), spread over all members' relay sessions
 * in parallel and segmented so the relay streams stay busy.
 *
 * Phases, S sites, n_s members on site s, count elements:
 *   1. Slices: site s cuts the vector into n_s slices, member j of s
 *      taking elements floor(count j / n_s) .. floor(count (j+1) / n_s).
 *      Every member knows every site's slices.
 *   2. Each member posts receives, from every member of every other site
 *      whose slice overlaps its own, for that site's partial result over
 *      the overlap, cut into segments of GRIDCOLL_ALLREDUCE_SEGSIZE bytes
 *      (default 256 KiB).
 *   3. Local PMPI_Reduce_scatter: each member gets its site's partial
 *      result over its slice.
 *   4. Each member sends that partial result over each overlap, in the
 *      same segments, to the member of the other site it overlaps with.
 *      With equal site sizes the slices line up and every member talks to
 *      its one counterpart per site; with uneven sizes a member talks to
 *      the one or few counterparts whose slices meet its own (at most
 *      n_s + n_t - 1 pairs between sites s and t), and still every
 *      element's partial result crosses each WAN link exactly once.
 *   5. As segments arrive, each member folds the S partial results of its
 *      slice in the order of the sites' first members, piece by piece
 *      (pieces cut where any site's slices or segments end), straight
 *      into recvbuf.  The same bytes in the same order on every site:
 *      bit-identical results everywhere.
 *   6. Local allgather of the packed slices with the site's intra-site
 *      strategy (GRIDCOLL_ALLGATHER_LOCAL, allgather_site.h), unpacked
 *      into recvbuf.  (Not PMPI_Allgatherv: MPICH 4.0's long-message
 *      ring pipelines in MPIR_CVAR_ALLGATHERV_PIPELINE_MSG_SIZE = 32 KiB
 *      pieces, each a dependent step; on oversubscribed loopback sites
 *      it took 2 s for 4 MiB, docs/algorithms.md.)
 * A zero count (or an empty datatype) is a no-op.
 *
 * Restriction: like hier, a non-commutative op needs every site's members
 * to be one contiguous range of comm ranks (MPICH's Reduce_scatter keeps
 * rank order within the site, the fold keeps site order), the same
 * argument and predicate (coll_site_partials_ok) as hier's: a
 * generalization of the commutative-only scheme.  Otherwise selection
 * moves on to the next rule.
 *
 * Cost, M bytes of vector, L and B the WAN latency and bandwidth, σ the
 * segment size, B_r what one member's relay session carries:
 *   T = T_rs(n_s, M) + L + max((S-1) M / B, (S-1) M / (n_s B_r)) + σ / B
 *       + (S-1) γ M / n_s + T_ag(n_s, M)
 *   WAN per site s: (S-1) M bytes, the same as hier but sent by all n_s
 *   members at once; messages: for every other site t and every pair of
 *   overlapping slices, ceil(overlap / σ) (n_s of them per site t when
 *   n_t = n_s and the slices are under σ).
 *
 * When it wins: long vectors, where hier's single leader per site moves
 * and combines the whole vector S times; here each member handles M/n_s.
 */
#include <stdlib.h>

#include "allgather_site.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"

/* One WAN message each way: elements lo..hi of the slice with `peer`,
 * from and to the site with fold position `site`. */
struct piece {
    int site;
    int peer;
    int lo, hi;
};

struct plan {
    struct site_map map;
    int order[GC_MAX_SITES]; /* fold position -> site index */
    int sites;
    int me;     /* my site's fold position */
    int lo, hi; /* my slice */
    struct piece *pieces;
    int npieces;
};

static int slice_start(int count, int members, int j)
{
    return (int)((long long)count * j / members);
}

static void plan_free(struct plan *p)
{
    site_map_free(&p->map);
    free(p->pieces);
}

/* Pieces grouped by fold position, each group in element order. */
static int plan_make(const struct gc_comm *c, int count, int seg,
                     struct plan *p)
{
    int status = site_map_build(c, &p->map);
    if (status != MPI_SUCCESS)
        return status;
    for (int q = 0; q < c->size; q++)
        if (c->leader[c->site[q]] == q) {
            if (c->site[q] == c->site[c->rank])
                p->me = p->sites;
            p->order[p->sites++] = c->site[q];
        }
    p->lo = slice_start(count, c->local_size, c->local_rank);
    p->hi = slice_start(count, c->local_size, c->local_rank + 1);
    for (int pass = 0; pass < 2; pass++) {
        p->npieces = 0;
        for (int u = 0; u < p->sites; u++) {
            int s = p->order[u], n = p->map.count[s];
            for (int i = 0; u != p->me && i < n; i++) {
                int lo = slice_start(count, n, i),
                    hi = slice_start(count, n, i + 1);
                lo = lo > p->lo ? lo : p->lo;
                hi = hi < p->hi ? hi : p->hi;
                for (int e = lo; e < hi; e += seg, p->npieces++)
                    if (pass == 1)
                        p->pieces[p->npieces] = (struct piece){
                            .site = u,
                            .peer = p->map.member[p->map.first[s] + i],
                            .lo = e,
                            .hi = hi - e > seg ? e + seg : hi,
                        };
            }
        }
        if (pass == 0 &&
            (p->pieces = malloc((size_t)(p->npieces > 0 ? p->npieces : 1) *
                                sizeof *p->pieces)) == NULL)
            return coll_no_mem(c);
    }
    return MPI_SUCCESS;
}

/*
 * Fold the slice as its pieces arrive: from `at`, the next stretch ends
 * where the first of the current pieces (one per other site) ends.
 * Transfer failures return in *xfer_status, everything else as the result.
 */
static int fold_slice(struct gc_comm *c, const struct coll_reduce_args *r,
                      const struct plan *p, const unsigned char *partials,
                      size_t stride, size_t esize, MPI_Aint extent,
                      struct gc_xfer **recvs, int *xfer_status)
{
    int next[GC_MAX_SITES] = {0};
    for (int k = p->npieces - 1; k >= 0; k--)
        next[p->pieces[k].site] = k;
    int status = MPI_SUCCESS;
    for (int at = p->lo; at < p->hi && status == MPI_SUCCESS;) {
        int end = p->hi;
        for (int u = 0; u < p->sites && *xfer_status == MPI_SUCCESS; u++) {
            if (u == p->me)
                continue;
            *xfer_status = gc_xfer_waitall(1, &recvs[next[u]]);
            if (p->pieces[next[u]].hi < end)
                end = p->pieces[next[u]].hi;
        }
        if (*xfer_status != MPI_SUCCESS)
            break;
        size_t offset = (size_t)(at - p->lo) * esize;
        status = coll_combine(
            c, partials + offset, p->sites, stride, (size_t)(end - at) * esize,
            (char *)r->rbuf + (MPI_Aint)at * extent, end - at, r->type, r->op);
        for (int u = 0; u < p->sites; u++)
            if (u != p->me && p->pieces[next[u]].hi == end)
                next[u]++;
        at = end;
    }
    return status;
}

/*
 * Every member's folded slice to every member of the site: packed, through
 * the site's intra-site allgather strategy (allgather_site.h), unpacked.
 */
static int site_allgather(struct gc_comm *c, const char *fn,
                          const struct coll_reduce_args *r,
                          const struct plan *p, size_t esize, MPI_Aint extent)
{
    int status = MPI_SUCCESS;
    size_t total = (size_t)r->count * esize;
    MPI_Aint *off = malloc((size_t)(c->local_size + 1) * sizeof *off);
    unsigned char *all = coll_alloc(total);
    if (off == NULL || all == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int j = 0; j <= c->local_size; j++)
        off[j] =
            (MPI_Aint)slice_start(r->count, c->local_size, j) * (MPI_Aint)esize;
    status = coll_pack(c, (char *)r->rbuf + (MPI_Aint)p->lo * extent,
                       p->hi - p->lo, r->type, all + off[c->local_rank],
                       (size_t)(p->hi - p->lo) * esize);
    if (status == MPI_SUCCESS)
        status = allgather_site_run(c, fn, all, off);
    if (status == MPI_SUCCESS)
        status = coll_unpack(c, all, total, r->rbuf, r->count, r->type);
cleanup:
    free(off);
    free(all);
    return status;
}

int allreduce_grid_multileader(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    struct plan p = {0};
    struct coll_temp slice = {0};
    struct gc_xfer **reqs = NULL;
    unsigned char *partials = NULL;
    int *counts = NULL;
    int n = 0, xfer_status = MPI_SUCCESS;
    size_t esize;
    MPI_Aint lb, extent;
    int status = coll_packed_size(c, 1, r->type, &esize);
    if (status != MPI_SUCCESS || r->count == 0 || esize == 0)
        return status;
    status = PMPI_Type_get_extent(r->type, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    size_t seg = a->segsize / esize > 0 ? a->segsize / esize : 1;
    status = plan_make(c, r->count,
                       seg < (size_t)r->count ? (int)seg : r->count, &p);
    if (status != MPI_SUCCESS)
        goto cleanup;
    size_t stride = (size_t)(p.hi - p.lo) * esize;
    counts = malloc((size_t)c->local_size * sizeof *counts);
    reqs = malloc((size_t)(2 * p.npieces + 1) * sizeof *reqs);
    partials = coll_alloc(stride * (size_t)p.sites);
    if (counts == NULL || reqs == NULL || partials == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int j = 0; j < c->local_size; j++)
        counts[j] = slice_start(r->count, c->local_size, j + 1) -
                    slice_start(r->count, c->local_size, j);
    for (int k = 0; k < p.npieces && xfer_status == MPI_SUCCESS; k++) {
        const struct piece *x = &p.pieces[k];
        xfer_status = coll_irecv(c, x->peer, TAG_ALLREDUCE_SLICE,
                                 partials + (size_t)x->site * stride +
                                     (size_t)(x->lo - p.lo) * esize,
                                 (size_t)(x->hi - x->lo) * esize, reqs, &n);
    }
    status = coll_temp_alloc(c, p.hi - p.lo, r->type, 1, &slice);
    if (status == MPI_SUCCESS)
        status =
            PMPI_Reduce_scatter(r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
                                slice.base, counts, r->type, r->op, c->local);
    unsigned char *mine = partials + (size_t)p.me * stride;
    if (status == MPI_SUCCESS)
        status = coll_pack(c, slice.base, p.hi - p.lo, r->type, mine, stride);
    for (int k = 0;
         k < p.npieces && status == MPI_SUCCESS && xfer_status == MPI_SUCCESS;
         k++) {
        const struct piece *x = &p.pieces[k];
        xfer_status = coll_isend(c, x->peer, TAG_ALLREDUCE_SLICE,
                                 mine + (size_t)(x->lo - p.lo) * esize,
                                 (size_t)(x->hi - x->lo) * esize, reqs, &n);
    }
    /* Receives were posted first, one per piece: reqs[k] is piece k's,
     * unless posting stopped early (then nothing is folded). */
    if (status == MPI_SUCCESS && xfer_status == MPI_SUCCESS)
        status = fold_slice(c, r, &p, partials, stride, esize, extent, reqs,
                            &xfer_status);
    xfer_status = coll_wait(c, n, reqs, xfer_status);
    if (status == MPI_SUCCESS)
        status = xfer_status;
    if (status == MPI_SUCCESS)
        status = site_allgather(c, a->fn, r, &p, esize, extent);
cleanup:
    plan_free(&p);
    free(slice.mem);
    free(reqs);
    free(partials);
    free(counts);
    return status;
}
