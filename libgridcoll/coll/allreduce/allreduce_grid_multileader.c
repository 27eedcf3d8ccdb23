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
 *      result over its slice (GRIDCOLL_ALLREDUCE_LOCAL=shm on a site that
 *      is one node: the cyclic reduction in shared memory of
 *      reduce_site_shm.c, each member reducing its own slice).
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
 *      it took 2 s for 4 MiB, docs/algorithms/allgather.md.)
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

#include "coll/allgather/allgather_site.h"
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "coll/reduce/reduce_common.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

struct plan {
    struct site_map map;
    int order[GC_MAX_SITES]; /* fold position -> site index */
    int sites;
    int me;           /* my site's fold position */
    MPI_Count lo, hi; /* my slice */
    /* One WAN message each way: part of the slice with `peer`, from and
     * to the site with fold position `source`. */
    struct reduce_pieces pieces;
};

static MPI_Count slice_start(MPI_Count count, int members, int j)
{
    return count * j / members;
}

static void plan_free(struct plan *p)
{
    site_map_free(&p->map);
    reduce_pieces_free(&p->pieces);
}

/* Pieces grouped by fold position, each group in element order. */
static int plan_make(const struct gc_comm *c, MPI_Count count, MPI_Count seg,
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
    for (int u = 0; u < p->sites; u++) {
        int s = p->order[u], n = p->map.count[s];
        for (int i = 0; u != p->me && i < n; i++) {
            MPI_Count lo = slice_start(count, n, i),
                      hi = slice_start(count, n, i + 1);
            reduce_pieces_add(&p->pieces, u, p->map.member[p->map.first[s] + i],
                              lo > p->lo ? lo : p->lo, hi < p->hi ? hi : p->hi,
                              seg);
        }
    }
    return p->pieces.no_mem ? coll_no_mem(c) : MPI_SUCCESS;
}

/*
 * Every member's folded slice to every member of the site: packed into
 * its place, through the site's intra-site allgather, unpacked.
 */
struct slices {
    struct gc_comm *c;
    const char *fn;
    const struct coll_reduce_args *r; /* a copy in the schedule */
    const struct plan *p;
    unsigned char *all;
    MPI_Aint *off; /* [local_size + 1] each member's slice, in bytes */
    size_t esize;
    MPI_Aint extent;
    /* blocking calls: the node layer's reduce-scatter */
    const void *input;
    void *slice;
    MPI_Count *counts;
    /* The site's allgather strategy (nonblocking calls: mpich, run as
     * MPICH's Iallgatherv). */
    const struct coll_algo *site;
};

static int pack_slice(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct slices *x = arg;
    const struct plan *p = x->p;
    return coll_pack(x->c, (char *)x->r->rbuf + (MPI_Aint)p->lo * x->extent,
                     p->hi - p->lo, x->r->type,
                     x->all + x->off[x->c->local_rank],
                     (size_t)(p->hi - p->lo) * x->esize);
}

static int unpack_all(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct slices *x = arg;
    return coll_unpack(x->c, x->all, (size_t)x->r->count * x->esize, x->r->rbuf,
                       x->r->count, x->r->type);
}

/* Blocking calls: the site strategies and node layer, blocking code. */
static int site_allgather(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct slices *x = arg;
    return allgather_site_run(x->c, x->fn, x->site, x->all, x->off);
}

static int shm_reduce_scatter(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct slices *x = arg;
    return reduce_scatter_site_shm(x->c, x->input, x->slice, x->counts,
                                   x->r->type, x->r->op);
}

int allreduce_grid_multileader(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    struct plan p = {0};
    int shm = 0, blocking = coll_may_block(a);
    size_t esize;
    MPI_Aint lb, extent;
    int status = coll_packed_size(c, 1, r->type, &esize);
    if (status != MPI_SUCCESS || r->count == 0 || esize == 0)
        return status;
    status = PMPI_Type_get_extent(r->type, &lb, &extent);
    if (status == MPI_SUCCESS)
        status = plan_make(c, r->count, reduce_segment(a->segsize, esize), &p);
    if (status == MPI_SUCCESS)
        status = site_local_shm(c, a->fn, GC_COLL_ALLREDUCE, blocking, a->bytes,
                                &shm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    size_t n = (size_t)c->local_size;
    size_t stride = (size_t)(p.hi - p.lo) * esize;
    struct slices *x = coll_sched_alloc(s, sizeof *x);
    struct coll_reduce_args *kept = coll_sched_alloc(s, sizeof *kept);
    struct plan *kept_plan = coll_sched_alloc(s, sizeof *kept_plan);
    unsigned char *partials = coll_sched_alloc(s, stride * (size_t)p.sites);
    MPI_Count *counts = coll_sched_alloc(s, n * sizeof *counts);
    int *steps = coll_sched_alloc(
        s, (size_t)(p.pieces.count > 0 ? p.pieces.count : 1) * sizeof *steps);
    if (x == NULL || kept == NULL || kept_plan == NULL || partials == NULL ||
        counts == NULL || steps == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    *kept = *r;
    kept->type = coll_sched_type(s, r->type);
    /* The steps need only the slice bounds of the plan. */
    *kept_plan = (struct plan){.lo = p.lo, .hi = p.hi};
    *x = (struct slices){.c = c,
                         .fn = a->fn,
                         .r = kept,
                         .p = kept_plan,
                         .all = coll_sched_alloc(s, (size_t)r->count * esize),
                         .off = coll_sched_alloc(s, (n + 1) * sizeof *x->off),
                         .esize = esize,
                         .extent = extent,
                         .input = r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
                         .counts = counts};
    if (x->all == NULL || x->off == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (size_t j = 0; j <= n; j++)
        x->off[j] = slice_start(r->count, (int)n, (int)j) * (MPI_Aint)esize;
    for (size_t j = 0; j < n; j++)
        counts[j] = slice_start(r->count, (int)n, (int)j + 1) -
                    slice_start(r->count, (int)n, (int)j);
    status = allgather_site_select(c, a->fn, blocking, x->off, &x->site);
    if (status != MPI_SUCCESS)
        goto cleanup;
    status = coll_sched_temp(s, p.hi - p.lo, r->type, &x->slice);
    if (status != MPI_SUCCESS)
        goto cleanup;
    /* 1. Receives first, one per piece. */
    for (int k = 0; k < p.pieces.count; k++) {
        const struct reduce_piece *y = &p.pieces.at[k];
        steps[k] = coll_sched_recv(s, y->peer, TAG_ALLREDUCE_SLICE,
                                   partials + (size_t)y->source * stride +
                                       (size_t)(y->lo - p.lo) * esize,
                                   (MPI_Count)((size_t)(y->hi - y->lo) * esize),
                                   MPI_BYTE, -1);
    }
    /* 2. The site's reduce-scatter: this member's slice of its site's
     * partial result. */
    int reduced;
    if (shm) {
        reduced = coll_sched_call_blocking(s, shm_reduce_scatter, x, -1);
    } else {
        struct sched_local l = {.op = LOCAL_REDUCE_SCATTER,
                                .sbuf = x->input,
                                .rbuf = x->slice,
                                .counts = counts,
                                .type = kept->type,
                                .mop = r->op};
        reduced = coll_sched_local(s, &l, -1);
    }
    unsigned char *mine = partials + (size_t)p.me * stride;
    int own = coll_sched_pack(s, x->slice, p.hi - p.lo, kept->type, mine,
                              stride, reduced);
    /* 3. The slice's pieces to their counterparts on the other sites. */
    for (int k = 0; k < p.pieces.count; k++) {
        const struct reduce_piece *y = &p.pieces.at[k];
        coll_sched_send(s, y->peer, TAG_ALLREDUCE_SLICE,
                        mine + (size_t)(y->lo - p.lo) * esize,
                        (MPI_Count)((size_t)(y->hi - y->lo) * esize), MPI_BYTE,
                        own);
    }
    /* 4. The fold into this member's slice of rbuf, stretch by stretch. */
    struct reduce_fold f = {
        .partials = partials,
        .stride = stride,
        .esize = esize,
        .sources = p.sites,
        .lo = p.lo,
        .hi = p.hi,
        .rbuf = (char *)r->rbuf + (MPI_Aint)p.lo * extent,
        .extent = extent,
        .type = kept->type,
        .op = r->op,
    };
    int folded =
        reduce_fold_steps(s, &f, p.pieces.at, steps, p.pieces.count, own);
    /* 5. Every slice to every member of the site. */
    int gathered, packed = coll_sched_call(s, pack_slice, x, folded);
    if (blocking) {
        gathered = coll_sched_call_blocking(s, site_allgather, x, packed);
    } else {
        /* The packed slices, in bytes. */
        MPI_Count *bytes = coll_sched_alloc(s, n * sizeof *bytes);
        if (bytes == NULL) {
            status = coll_no_mem(c);
            goto cleanup;
        }
        for (size_t j = 0; j < n; j++)
            bytes[j] = x->off[j + 1] - x->off[j];
        struct sched_local g = {.op = LOCAL_ALLGATHERV,
                                .sbuf = MPI_IN_PLACE,
                                .rbuf = x->all,
                                .counts = bytes,
                                .displs = x->off,
                                .rtype = MPI_BYTE};
        gathered = coll_sched_local(s, &g, packed);
    }
    coll_sched_call(s, unpack_all, x, gathered);
cleanup:
    plan_free(&p);
    return status;
}

/*
 * The header's T_rs(n_s, M) + L + max((S-1) M / B, (S-1) M / (n_s B_r))
 * + σ / B + T_ag(n_s, M), ring reduce-scatter and allgather inside the
 * site, B the link's bulk rate, B_r one session's (β_w), and the site's
 * segments of at most σ (n_s slices to each other site) at the link's
 * gap.  The fold is left out, as in allreduce hier.
 */
double allreduce_grid_multileader_cost(const struct coll_cost_args *c)
{
    double m = (double)c->bytes, worst = 0;
    int others = c->site_count - 1;
    for (int s = 0; s < c->site_count; s++) {
        int n = c->site_size[s];
        double slice = m / n;
        double seg = (double)c->segsize < slice ? (double)c->segsize : slice;
        double segments = n * (double)cost_segments(c, (size_t)slice + 1);
        double wan = 0;
        for (int t = 0; t < c->site_count; t++)
            if (t != s) {
                const struct gc_model_link *l = cost_link(c, s, t);
                double flow = others * m * l->beta_bulk;
                double session = others * slice * l->beta;
                double gaps = others * segments * l->gap;
                flow = session > flow ? session : flow;
                flow = gaps > flow ? gaps : flow;
                double w = cost_wan_msg(c, s, t, seg) + flow;
                wan = w > wan ? w : wan;
            }
        double time = 2 * cost_local_ring(c, s, n, m) + wan;
        worst = time > worst ? time : worst;
    }
    return worst;
}
