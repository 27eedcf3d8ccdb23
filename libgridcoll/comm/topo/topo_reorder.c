/*
 * WAN-aware rank reordering for process topologies: which site each
 * vertex of a Cartesian grid or a graph goes to, with the site sizes
 * fixed, so that few (little weight of) edges cross sites.  Pure
 * functions (topo_reorder.h); gc_topo.c turns a partition into the new
 * communicator's rank order.
 *
 * Built on:
 *  - J. L. Träff, "Implementing the MPI process topology mechanism",
 *    SC 2002: Cartesian reordering as partitioning the grid among the
 *    machine's (here: the sites') processor sets, with dimension orders
 *    and consecutive ranges as the cheap candidates.
 *  - T. Hoefler and M. Snir, "Generic topology mapping strategies for
 *    large-scale parallel architectures", ICS 2011: greedy growth and
 *    recursive bisection followed by local refinement for graphs.
 *  - B. W. Kernighan and S. Lin, "An efficient heuristic procedure for
 *    partitioning graphs", Bell System Technical Journal 49(2), 1970: the
 *    refinement, pairwise exchanges that keep the part sizes fixed (here
 *    only improving exchanges: hill climbing, no tentative moves).
 *
 * Cost, n vertices, m edges, k sites, d non-trivial dimensions:
 *  - Cartesian candidates: P = min(d!, 720) dimension orders times
 *    K = min(k!, 24) site orders, each O(n d): O(P K n d); recursive
 *    bisection: per level, O(2^k) site splits times P orders, a sort of
 *    the region each: O(2^k P n log n) over the log k levels.
 *  - Graph growth: O(n^2 + m) per site order (a scan for the best
 *    vertex at each step); skipped above GROWTH_MAX_N vertices.
 *  - Refinement: each exchange O(k^2 n T) to find (T = 16 best gains per
 *    side), at most 4n + 16 exchanges, and bounded by REFINE_WORK.
 * The identity assignment is always a candidate and kept on ties, so the
 * result never cuts more than reorder = 0.
 */
#include "comm/topo/topo_reorder.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DIM_ORDERS  720 /* every order of up to 6 dimensions */
#define MAX_SITE_ORDERS 24  /* every order of up to 4 sites */
#define MAX_SPLIT_SITES 8   /* every split of up to 8 sites in bisection */
#define GROWTH_MAX_N    8192
#define REFINE_TOP      16
#define REFINE_WORK     200000000LL

/* ---- graphs ------------------------------------------------------------- */

struct pair {
    int u, v; /* u < v */
    int64_t w;
};

static int by_ends(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->u != y->u)
        return x->u < y->u ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

int gc_topo_graph_from_edges(int n, int64_t nedges, const int *src,
                             const int *dst, const int *weight,
                             struct gc_topo_graph *g)
{
    int status = -1;
    int64_t count = 0, merged = 0;
    struct pair *pairs =
        malloc((size_t)(nedges > 0 ? nedges : 1) * sizeof *pairs);
    memset(g, 0, sizeof *g);
    g->n = n;
    g->xadj = calloc((size_t)n + 1, sizeof *g->xadj);
    if (pairs == NULL || g->xadj == NULL)
        goto cleanup;
    for (int64_t i = 0; i < nedges; i++) {
        int64_t w = weight != NULL ? weight[i] : 1;
        if (src[i] == dst[i] || w <= 0)
            continue; /* never cut */
        int u = src[i] < dst[i] ? src[i] : dst[i];
        pairs[count++] = (struct pair){u, src[i] < dst[i] ? dst[i] : src[i], w};
    }
    qsort(pairs, (size_t)count, sizeof *pairs, by_ends);
    for (int64_t i = 0; i < count; i++) {
        if (merged > 0 && pairs[merged - 1].u == pairs[i].u &&
            pairs[merged - 1].v == pairs[i].v)
            pairs[merged - 1].w += pairs[i].w;
        else
            pairs[merged++] = pairs[i];
    }
    for (int64_t i = 0; i < merged; i++) {
        g->xadj[pairs[i].u + 1]++;
        g->xadj[pairs[i].v + 1]++;
    }
    for (int v = 0; v < n; v++)
        g->xadj[v + 1] += g->xadj[v];
    g->adj = malloc((size_t)(g->xadj[n] > 0 ? g->xadj[n] : 1) * sizeof *g->adj);
    g->w = malloc((size_t)(g->xadj[n] > 0 ? g->xadj[n] : 1) * sizeof *g->w);
    int *fill = malloc((size_t)(n > 0 ? n : 1) * sizeof *fill);
    if (g->adj == NULL || g->w == NULL || fill == NULL) {
        free(fill);
        goto cleanup;
    }
    memcpy(fill, g->xadj, (size_t)n * sizeof *fill);
    /* Pairs are sorted, so every adjacency list comes out ascending. */
    for (int64_t i = 0; i < merged; i++) {
        int a = fill[pairs[i].u]++, b = fill[pairs[i].v]++;
        g->adj[a] = pairs[i].v;
        g->w[a] = pairs[i].w;
        g->adj[b] = pairs[i].u;
        g->w[b] = pairs[i].w;
    }
    free(fill);
    status = 0;
cleanup:
    free(pairs);
    if (status != 0)
        gc_topo_graph_free(g);
    return status;
}

static int64_t grid_size(int ndims, const int *dims)
{
    int64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    return n;
}

int gc_topo_cart_graph(int ndims, const int *dims, const int *periods,
                       struct gc_topo_graph *g)
{
    int64_t n = grid_size(ndims, dims), count = 0;
    int status = -1;
    int *src = malloc((size_t)(n * ndims > 0 ? n * ndims : 1) * sizeof(int));
    int *dst = malloc((size_t)(n * ndims > 0 ? n * ndims : 1) * sizeof(int));
    if (src == NULL || dst == NULL)
        goto cleanup;
    for (int64_t v = 0; v < n; v++) {
        int64_t stride = n;
        for (int d = 0; d < ndims; d++) {
            stride /= dims[d];
            int64_t c = (v / stride) % dims[d];
            if (c + 1 < dims[d]) {
                src[count] = (int)v;
                dst[count++] = (int)(v + stride);
            } else if (periods[d] && dims[d] > 2) {
                /* The wrap edge; with 2 positions it is the same pair as
                 * the inner edge, with 1 a self-loop. */
                src[count] = (int)v;
                dst[count++] = (int)(v - c * stride);
            }
        }
    }
    status = gc_topo_graph_from_edges((int)n, count, src, dst, NULL, g);
cleanup:
    free(src);
    free(dst);
    return status;
}

void gc_topo_graph_free(struct gc_topo_graph *g)
{
    free(g->xadj);
    free(g->adj);
    free(g->w);
    memset(g, 0, sizeof *g);
}

int64_t gc_topo_cut(const struct gc_topo_graph *g, const int *part)
{
    int64_t cut = 0;
    for (int u = 0; u < g->n; u++)
        for (int j = g->xadj[u]; j < g->xadj[u + 1]; j++)
            if (g->adj[j] > u && part[g->adj[j]] != part[u])
                cut += g->w[j];
    return cut;
}

/* ---- refinement --------------------------------------------------------- */

/* Insert (v, gain) into the descending list top[0..*count-1] of at most
 * REFINE_TOP; equal gains keep the lower vertex first (v comes in
 * ascending order), so the choice is deterministic. */
static void top_insert(int *top, int64_t *gain, int *count, int v, int64_t g)
{
    int i = *count < REFINE_TOP ? (*count)++ : REFINE_TOP;
    if (i == REFINE_TOP && g <= gain[REFINE_TOP - 1])
        return;
    if (i == REFINE_TOP)
        i = REFINE_TOP - 1;
    while (i > 0 && gain[i - 1] < g) {
        top[i] = top[i - 1];
        gain[i] = gain[i - 1];
        i--;
    }
    top[i] = v;
    gain[i] = g;
}

static int64_t edge_weight(const struct gc_topo_graph *g, int u, int v)
{
    /* Adjacency lists are ascending: binary search. */
    int lo = g->xadj[u], hi = g->xadj[u + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (g->adj[mid] == v)
            return g->w[mid];
        if (g->adj[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static void move_vertex(const struct gc_topo_graph *g, int k, int64_t *conn,
                        int *part, int v, int to)
{
    for (int j = g->xadj[v]; j < g->xadj[v + 1]; j++) {
        conn[(int64_t)g->adj[j] * k + part[v]] -= g->w[j];
        conn[(int64_t)g->adj[j] * k + to] += g->w[j];
    }
    part[v] = to;
}

int gc_topo_refine(const struct gc_topo_graph *g, int k, int *part,
                   int64_t *cut)
{
    int n = g->n;
    int64_t *conn = calloc((size_t)n * (size_t)k + 1, sizeof *conn);
    if (conn == NULL)
        return -1;
    for (int v = 0; v < n; v++)
        for (int j = g->xadj[v]; j < g->xadj[v + 1]; j++)
            conn[(int64_t)v * k + part[g->adj[j]]] += g->w[j];
    *cut = gc_topo_cut(g, part);
    int64_t max_steps = 4LL * n + 16;
    int64_t per_step = (int64_t)n * k * k + 1;
    if (max_steps > REFINE_WORK / per_step)
        max_steps = REFINE_WORK / per_step + 1;
    for (int64_t step = 0; step < max_steps; step++) {
        int64_t best = 0;
        int bu = -1, bv = -1;
        for (int a = 0; a < k; a++)
            for (int b = a + 1; b < k; b++) {
                int ta[REFINE_TOP], tb[REFINE_TOP], na = 0, nb = 0;
                int64_t ga[REFINE_TOP], gb[REFINE_TOP];
                for (int v = 0; v < n; v++) {
                    const int64_t *cv = conn + (int64_t)v * k;
                    if (part[v] == a)
                        top_insert(ta, ga, &na, v, cv[b] - cv[a]);
                    else if (part[v] == b)
                        top_insert(tb, gb, &nb, v, cv[a] - cv[b]);
                }
                for (int i = 0; i < na; i++)
                    for (int j = 0; j < nb; j++) {
                        int64_t gain =
                            ga[i] + gb[j] - 2 * edge_weight(g, ta[i], tb[j]);
                        if (gain > best) {
                            best = gain;
                            bu = ta[i];
                            bv = tb[j];
                        }
                    }
            }
        if (bu < 0)
            break;
        int pu = part[bu], pv = part[bv];
        move_vertex(g, k, conn, part, bu, pv);
        move_vertex(g, k, conn, part, bv, pu);
        *cut -= best;
    }
    free(conn);
    return 0;
}

/* ---- Cartesian candidates ----------------------------------------------- */

struct cart {
    int ndims;
    const int *dims;
    int n;
    const struct gc_topo_graph *g;
    int k;
    const int *site_size;
    /* orders of the non-trivial dimensions, slowest first */
    int norders;
    int (*order)[16];
    int nd;
    int64_t *stride; /* [ndims] */
};

/* Next permutation in lexicographic order; 0 after the last. */
static int next_permutation(int *a, int len)
{
    int i = len - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = len - 1;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int l = i + 1, r = len - 1; l < r; l++, r--) {
        t = a[l];
        a[l] = a[r];
        a[r] = t;
    }
    return 1;
}

/* Sort key of position v under dimension order `o`: its index in the
 * row-major numbering with o[0] slowest. */
static int64_t order_key(const struct cart *x, const int *o, int v)
{
    int64_t key = 0;
    for (int i = 0; i < x->nd; i++) {
        int d = o[i];
        key = key * x->dims[d] + (v / x->stride[d]) % x->dims[d];
    }
    return key;
}

struct keyed {
    int64_t key;
    int v;
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* Consecutive ranges of every dimension order, for every site order. */
static void curves(const struct cart *x, int *part, int *best, int64_t *cut)
{
    int sites[64];
    int nsite_orders = 0;
    int site_orders[MAX_SITE_ORDERS][64];
    for (int s = 0; s < x->k; s++)
        sites[s] = s;
    if (x->k <= 4) {
        do
            memcpy(site_orders[nsite_orders++], sites, sizeof sites);
        while (next_permutation(sites, x->k));
    } else {
        memcpy(site_orders[nsite_orders++], sites, sizeof sites);
        for (int s = 0; s < x->k; s++)
            site_orders[1][s] = x->k - 1 - s;
        nsite_orders++;
    }
    struct keyed *seq = malloc((size_t)x->n * sizeof *seq);
    if (seq == NULL)
        return; /* a candidate less; the identity stays */
    for (int o = 0; o < x->norders; o++) {
        for (int v = 0; v < x->n; v++)
            seq[v] = (struct keyed){order_key(x, x->order[o], v), v};
        qsort(seq, (size_t)x->n, sizeof *seq, by_key);
        for (int so = 0; so < nsite_orders; so++) {
            int i = 0;
            for (int s = 0; s < x->k; s++) {
                int site = site_orders[so][s];
                for (int c = 0; c < x->site_size[site]; c++)
                    part[seq[i++].v] = site;
            }
            int64_t c = gc_topo_cut(x->g, part);
            if (c < *cut) {
                *cut = c;
                memcpy(best, part, (size_t)x->n * sizeof *part);
            }
        }
    }
    free(seq);
}

/* The edges of x's graph between the first `first` cells and the rest. */
static int64_t split_cut(const struct cart *x, const struct keyed *cells,
                         int count, int first, unsigned char *side)
{
    int64_t c = 0;
    for (int i = 0; i < count; i++)
        side[cells[i].v] = i < first ? 1 : 2;
    for (int i = 0; i < first; i++) {
        int v = cells[i].v;
        for (int j = x->g->xadj[v]; j < x->g->xadj[v + 1]; j++)
            if (side[x->g->adj[j]] == 2)
                c += x->g->w[j];
    }
    for (int i = 0; i < count; i++)
        side[cells[i].v] = 0;
    return c;
}

static void sort_cells(const struct cart *x, const int *order,
                       struct keyed *cells, int count)
{
    for (int i = 0; i < count; i++)
        cells[i].key = order_key(x, order, cells[i].v);
    qsort(cells, (size_t)count, sizeof *cells, by_key);
}

/*
 * Recursive bisection of a region (`cells`) among `sites` (m of them):
 * split the sites into two sets every way (up to MAX_SPLIT_SITES sites,
 * else the first half against the rest), give the first set the first
 * cells of the region under the dimension order that cuts least between
 * the two sets, and recurse into both halves.  Up to FULL_SPLIT_SITES
 * sites every split is followed to the end and the one whose region cuts
 * least in total wins (a greedy choice by the first cut alone is fooled
 * by ties: 4x4x4 on 16+16+32 cuts 32 instead of 24); beyond, the first
 * cut decides.  *total: the cut inside the region.  `side` is zero on
 * entry and exit.
 */
#define FULL_SPLIT_SITES 4
static void bisect(const struct cart *x, struct keyed *cells, int count,
                   const int *sites, int m, int *part, unsigned char *side,
                   int64_t *total)
{
    *total = 0;
    if (m == 1) {
        for (int i = 0; i < count; i++)
            part[cells[i].v] = sites[0];
        return;
    }
    unsigned long masks = m <= MAX_SPLIT_SITES ? (1ul << m) - 1 : 2;
    int64_t best = INT64_MAX;
    unsigned long best_mask = 0;
    int best_order = 0;
    for (unsigned long mask = 1; mask < masks; mask++) {
        unsigned long split =
            m <= MAX_SPLIT_SITES ? mask : (1ul << (m / 2)) - 1;
        int first = 0, a[64], b[64], ma = 0, mb = 0, order = 0;
        for (int s = 0; s < m; s++) {
            if (split & (1ul << s)) {
                a[ma++] = sites[s];
                first += x->site_size[sites[s]];
            } else {
                b[mb++] = sites[s];
            }
        }
        int64_t level = INT64_MAX;
        for (int o = 0; o < x->norders; o++) {
            sort_cells(x, x->order[o], cells, count);
            int64_t c = split_cut(x, cells, count, first, side);
            if (c < level) {
                level = c;
                order = o;
            }
        }
        if (m <= FULL_SPLIT_SITES) {
            int64_t ta, tb;
            sort_cells(x, x->order[order], cells, count);
            bisect(x, cells, first, a, ma, part, side, &ta);
            bisect(x, cells + first, count - first, b, mb, part, side, &tb);
            level += ta + tb;
        }
        if (level < best) {
            best = level;
            best_mask = split;
            best_order = order;
        }
    }
    /* The chosen split again, which writes its assignment to `part`. */
    int first = 0, a[64], b[64], ma = 0, mb = 0;
    int64_t ta, tb;
    for (int s = 0; s < m; s++) {
        if (best_mask & (1ul << s)) {
            a[ma++] = sites[s];
            first += x->site_size[sites[s]];
        } else {
            b[mb++] = sites[s];
        }
    }
    sort_cells(x, x->order[best_order], cells, count);
    int64_t level = split_cut(x, cells, count, first, side);
    bisect(x, cells, first, a, ma, part, side, &ta);
    bisect(x, cells + first, count - first, b, mb, part, side, &tb);
    *total = level + ta + tb;
}

/* Keep `cand` in `best` when it cuts strictly less after refinement. */
static int consider(const struct gc_topo_graph *g, int k, int *cand, int *best,
                    int64_t *best_cut)
{
    int64_t c;
    if (gc_topo_refine(g, k, cand, &c) != 0)
        return -1;
    if (c < *best_cut) {
        *best_cut = c;
        memcpy(best, cand, (size_t)g->n * sizeof *cand);
    }
    return 0;
}

int gc_topo_cart_partition(int ndims, const int *dims, const int *periods,
                           int k, const int *site_size, const int *identity,
                           int *part, int64_t *cut)
{
    struct gc_topo_graph g = {0};
    struct cart x = {
        .ndims = ndims, .dims = dims, .k = k, .site_size = site_size};
    int status = -1, nontrivial[16], sites[64];
    int *cand = NULL, *curve = NULL;
    struct keyed *cells = NULL;
    unsigned char *side = NULL;
    x.n = (int)grid_size(ndims, dims);
    memcpy(part, identity, (size_t)x.n * sizeof *part);
    *cut = 0;
    if (k <= 1)
        return 0; /* one site: nothing is cut */
    x.stride = malloc((size_t)(ndims > 0 ? ndims : 1) * sizeof *x.stride);
    if (x.stride == NULL || gc_topo_cart_graph(ndims, dims, periods, &g) != 0)
        goto cleanup;
    x.g = &g;
    *cut = gc_topo_cut(&g, identity);
    for (int d = 0; d < ndims; d++) {
        x.stride[d] = grid_size(ndims - d - 1, dims + d + 1);
        if (dims[d] > 1 && x.nd < 16)
            nontrivial[x.nd++] = d;
    }
    status = 0;
    if (x.nd == 0 || x.nd >= 16 || k > 64)
        goto cleanup; /* nothing to order (a grid of 2^16 or more) */
    status = -1;
    x.order = malloc(MAX_DIM_ORDERS * sizeof *x.order);
    cand = malloc((size_t)x.n * sizeof *cand);
    curve = malloc((size_t)x.n * sizeof *curve);
    cells = malloc((size_t)x.n * sizeof *cells);
    side = calloc((size_t)x.n, 1);
    if (x.order == NULL || cand == NULL || curve == NULL || cells == NULL ||
        side == NULL)
        goto cleanup;
    if (x.nd <= 6) {
        int o[16];
        memcpy(o, nontrivial, sizeof o);
        do
            memcpy(x.order[x.norders++], o, sizeof o);
        while (next_permutation(o, x.nd));
    } else {
        /* The given order, and longest dimension slowest (stable). */
        memcpy(x.order[x.norders++], nontrivial, sizeof nontrivial);
        int *o = x.order[x.norders++];
        memcpy(o, nontrivial, sizeof nontrivial);
        for (int i = 1; i < x.nd; i++)
            for (int j = i; j > 0 && dims[o[j]] > dims[o[j - 1]]; j--) {
                int t = o[j];
                o[j] = o[j - 1];
                o[j - 1] = t;
            }
    }
    /* Candidates, each refined.  The identity comes first: refinement
     * only makes exchanges that lower the cut, so it stays unchanged
     * unless it can be improved, and later candidates replace it only
     * when they cut strictly less. */
    int64_t best_cut = *cut + 1;
    memcpy(cand, identity, (size_t)x.n * sizeof *cand);
    if (consider(&g, k, cand, part, &best_cut) != 0)
        goto cleanup;
    int64_t curve_cut = INT64_MAX;
    curves(&x, cand, curve, &curve_cut);
    if (curve_cut != INT64_MAX && consider(&g, k, curve, part, &best_cut) != 0)
        goto cleanup;
    for (int s = 0; s < k; s++)
        sites[s] = s;
    for (int v = 0; v < x.n; v++)
        cells[v] = (struct keyed){0, v};
    int64_t bisect_cut;
    bisect(&x, cells, x.n, sites, k, cand, side, &bisect_cut);
    if (consider(&g, k, cand, part, &best_cut) != 0)
        goto cleanup;
    *cut = best_cut;
    status = 0;
cleanup:
    gc_topo_graph_free(&g);
    free(x.stride);
    free(x.order);
    free(cand);
    free(curve);
    free(cells);
    free(side);
    return status;
}

/* ---- graphs ------------------------------------------------------------- */

/* Greedy growth: site after site (in `order`), start at the lowest
 * unassigned vertex, then add the unassigned vertex most connected to
 * the site so far (lowest index on ties); the last site takes the rest. */
static int grow(const struct gc_topo_graph *g, int k, const int *site_size,
                const int *order, int *part)
{
    int n = g->n;
    int64_t *link = malloc((size_t)(n > 0 ? n : 1) * sizeof *link);
    if (link == NULL)
        return -1;
    for (int v = 0; v < n; v++)
        part[v] = -1;
    for (int i = 0; i < k - 1; i++) {
        int site = order[i];
        memset(link, 0, (size_t)n * sizeof *link);
        for (int c = 0; c < site_size[site]; c++) {
            int pick = -1;
            for (int v = 0; v < n; v++)
                if (part[v] < 0 && (pick < 0 || link[v] > link[pick]))
                    pick = v;
            part[pick] = site;
            for (int j = g->xadj[pick]; j < g->xadj[pick + 1]; j++)
                link[g->adj[j]] += g->w[j];
        }
    }
    for (int v = 0; v < n; v++)
        if (part[v] < 0)
            part[v] = order[k - 1];
    free(link);
    return 0;
}

int gc_topo_graph_partition(const struct gc_topo_graph *g, int k,
                            const int *site_size, const int *identity,
                            int *part, int64_t *cut)
{
    int n = g->n, status = -1;
    int *cand = malloc((size_t)(n > 0 ? n : 1) * sizeof *cand);
    memcpy(part, identity, (size_t)n * sizeof *part);
    *cut = gc_topo_cut(g, identity);
    if (cand == NULL)
        goto cleanup;
    if (k <= 1) {
        status = 0;
        goto cleanup;
    }
    int64_t best_cut = *cut + 1;
    memcpy(cand, identity, (size_t)n * sizeof *cand);
    if (consider(g, k, cand, part, &best_cut) != 0)
        goto cleanup;
    if (n <= GROWTH_MAX_N) {
        int order[2][64];
        for (int s = 0; s < k; s++)
            order[0][s] = order[1][s] = s;
        /* Largest sites first (stable), so the last, which takes what
         * is left, is small. */
        for (int i = 1; i < k; i++)
            for (int j = i;
                 j > 0 && site_size[order[1][j]] > site_size[order[1][j - 1]];
                 j--) {
                int t = order[1][j];
                order[1][j] = order[1][j - 1];
                order[1][j - 1] = t;
            }
        for (int o = 0; o < 2; o++)
            if (grow(g, k, site_size, order[o], cand) != 0 ||
                consider(g, k, cand, part, &best_cut) != 0)
                goto cleanup;
    }
    *cut = best_cut;
    status = 0;
cleanup:
    free(cand);
    return status;
}

int gc_topo_assign(int n, int k, const int *part, const int *member_site,
                   int *vertex_of_member)
{
    int *next = calloc((size_t)k, sizeof *next);
    if (next == NULL)
        return -1;
    /* next[s]: the next vertex of site s not yet given out. */
    for (int i = 0; i < n; i++) {
        int s = member_site[i];
        while (next[s] < n && part[next[s]] != s)
            next[s]++;
        if (next[s] == n) {
            free(next);
            return -1;
        }
        vertex_of_member[i] = next[s]++;
    }
    for (int s = 0; s < k; s++) {
        while (next[s] < n && part[next[s]] != s)
            next[s]++;
        if (next[s] != n) { /* site s has more vertices than members */
            free(next);
            return -1;
        }
    }
    free(next);
    return 0;
}
