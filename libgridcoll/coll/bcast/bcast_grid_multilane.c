/*
 * Bcast: multi-lane trees, pipelined, chained across sites.
 *
 * Paper: "multi-lane broadcast" (multilane-bcast-grid.txt), §3.1 "Single
 * site algorithm" (two binary trees, half the message each, leaves swap
 * their half into the other tree, pipelined), §3.2 "Multiple sites
 * algorithm" (a leaf of each tree feeds that tree's root on the next
 * site), Table 1.
 *
 * Phases (one, pipelined): the packed message is split into half A (the
 * first ceil(M/2) bytes) and half B, each cut into segments of
 * s = GRIDCOLL_BCAST_SEGSIZE bytes.  Sites are taken in broadcast order
 * (the root's, then the next ones cyclically; bcast_common.h).  Every
 * member receives each segment of each half once and forwards it at once
 * to at most two members in all, so every member sends at most two
 * streams of M/2: all of its up- and downlink is used, as in the paper.
 *
 * The trees for any number of members (the paper has 2^k - 1 per tree):
 * on each site, the members other than the root, in order, are split into
 * A = the first ceil(n/2) and B = the rest.  Lane A's tree is A as a
 * binary heap (A[i]'s children A[2i+1], A[2i+2]), fed at A[0] by the root
 * or by the previous site; lane B's likewise over B (over A[0] alone when
 * B is empty, n = 1).  Each member has two sends; a heap of t members
 * uses t-1 of its 2t, and the t+1 left serve the leaf-to-tree swap and
 * the chain to the next site, lane A first, then lane B:
 *   receivers of the lane, in this order: the next site's root of that
 *   lane's tree (the chain, §3.2), then the site's members outside the
 *   tree that still have a send left, then the others;
 *   each receiver gets the lane from the first member, in tree order and
 *   then in the order they got it, that has a send left.
 * Lane A's tree always has room (|A| + 1 >= |B| + 1).  When |A| = |B| + 1
 * and a next site follows, lane B's tree is one send short; the member of
 * A with a send left then takes lane B from B's tree and passes it on:
 * that is why members with sends left are served first.  Sends needed
 * per site: 2n - 2 + 2 (chain) <= the 2n available, so the greedy never
 * runs out (tests/unit/test_bcast_trees.c checks 2464 layouts).  The
 * root's two sends feed A[0] and B[0] of its site, or the next site's two
 * roots when it is alone on its site.
 *
 * Every byte crosses each WAN link between consecutive sites in the
 * order exactly once, one relay message per segment, so the receiving
 * site forwards segment k while k+1 is on the WAN; halves A and B leave
 * a site from two members (two relay sessions) unless it has only one
 * member to spare.
 *
 * Cost, p members on S sites with n_k members, M bytes; a segment costs
 * alpha + s beta inside a site and alpha_w + s beta_w between sites
 * (Table 1: log p l + M/b):
 *   T ~ sum_k (log2(n_k) + 2) alpha + (S-1) alpha_w
 *       + (M + O(log p) s) max(beta, beta_w)
 *   every member receives M and sends at most M (two streams of M/2);
 *   the latency term grows with log n per site instead of p.
 *   WAN: (S-1) M bytes in (S-1)(ceil(M_A/s) + ceil(M_B/s)) messages;
 *   every site but the last in the order sends exactly M.
 *
 * When it wins: large messages, especially with many members per site
 * (chain's p alpha) or where two relay sessions per WAN link carry more
 * than one.  Small messages pay two tree depths per site: hier is better.
 */
#include <stdlib.h>

#include "coll/bcast/bcast_common.h"
#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"

enum { LANE_A, LANE_B, LANES };

/* The members of a site that the site's trees span, as positions. */
struct site_nodes {
    int first, n;
    int a; /* tree A: the first a of them */
};

static struct site_nodes site_nodes(const struct bcast_order *o, int k)
{
    int root_here = k == 0; /* the root is first in the order */
    struct site_nodes s = {o->first[k] + root_here, o->count[k] - root_here, 0};
    s.a = (s.n + 1) / 2;
    return s;
}

static int tree_size(const struct site_nodes *s, int lane)
{
    if (lane == LANE_A)
        return s->a;
    return s->n > 1 ? s->n - s->a : 1;
}

static int tree_node(const struct site_nodes *s, int lane, int i)
{
    if (lane == LANE_A)
        return s->first + i;
    return s->n > 1 ? s->first + s->a + i : s->first;
}

static int in_tree(const struct site_nodes *s, int lane, int v)
{
    if (lane == LANE_A)
        return v < s->first + s->a;
    return s->n > 1 ? v >= s->first + s->a : 1;
}

/* from[lane][v]: the position sending that lane to position v (-1: root). */
struct lanes {
    int *from[LANES];
    int *sends_left; /* per position */
    int *holders;    /* scratch: members holding the lane, in that order */
};

/* Position x gets the lane from the first holder with a send left. */
static int attach(struct lanes *t, int lane, int x, int nh)
{
    for (int j = 0; j < nh; j++) {
        int h = t->holders[j];
        if (t->sends_left[h] > 0) {
            t->from[lane][x] = h;
            t->sends_left[h]--;
            return 0;
        }
    }
    return -1;
}

static int connect_site(struct lanes *t, const struct bcast_order *o, int k)
{
    struct site_nodes s = site_nodes(o, k);
    for (int lane = 0; lane < LANES; lane++) {
        int next = -1;
        if (k + 1 < o->sites) {
            struct site_nodes after = site_nodes(o, k + 1);
            next = tree_node(&after, lane, 0);
        }
        if (s.n == 0) { /* the root alone on its site */
            t->holders[0] = 0;
            if (next >= 0 && attach(t, lane, next, 1) != 0)
                return -1;
            continue;
        }
        int nh = tree_size(&s, lane);
        for (int i = 0; i < nh; i++)
            t->holders[i] = tree_node(&s, lane, i);
        if (k == 0) {
            t->from[lane][t->holders[0]] = 0;
            t->sends_left[0]--;
        }
        for (int i = 1; i < nh; i++) {
            int parent = t->holders[(i - 1) / 2];
            t->from[lane][t->holders[i]] = parent;
            t->sends_left[parent]--;
        }
        if (next >= 0 && attach(t, lane, next, nh) != 0)
            return -1;
        for (int pass = 0; pass < 2; pass++)
            for (int v = s.first; v < s.first + s.n; v++) {
                if (in_tree(&s, lane, v) || t->from[lane][v] >= 0 ||
                    (t->sends_left[v] > 0) == pass)
                    continue;
                if (attach(t, lane, v, nh) != 0)
                    return -1;
                t->holders[nh++] = v;
            }
    }
    return 0;
}

int bcast_multilane_trees(const struct bcast_order *o, int size, int *from,
                          int *scratch)
{
    struct lanes t = {{from, from + size}, scratch, scratch + size};
    for (int v = 0; v < size; v++) {
        from[v] = from[size + v] = -1;
        t.sends_left[v] = 2;
    }
    for (int k = 0; k < o->sites; k++)
        if (connect_site(&t, o, k) != 0)
            return -1;
    return 0;
}

static int multilane_steps(struct bcast_plan *p, const struct coll_args *a,
                           const struct bcast_order *o, size_t len)
{
    struct gc_comm *c = a->comm;
    int size = c->size, me = o->pos[c->rank];
    int *from = malloc(4 * (size_t)size * sizeof *from);
    int status = MPI_SUCCESS;
    if (from == NULL)
        return coll_no_mem(c);
    if (bcast_multilane_trees(o, size, from, from + 2 * size) != 0) {
        status = gc_error(c->handle, MPI_ERR_INTERN,
                          "MPI_Bcast: multilane trees ran out of sends "
                          "(GridColl bug)",
                          NULL);
        goto cleanup;
    }
    size_t half = len - len / 2, seg = bcast_segsize(a);
    for (int lane = 0; lane < LANES; lane++) {
        const int *lane_from = from + lane * size;
        int children[2], n = 0;
        for (int v = 0; v < size && n < 2; v++)
            if (lane_from[v] == me)
                children[n++] = o->rank[v];
        bcast_plan_relay(
            p, lane_from[me] >= 0 ? o->rank[lane_from[me]] : -1, children, n,
            lane == LANE_A ? TAG_BCAST : TAG_BCAST_LANE,
            lane == LANE_A ? 0 : half, lane == LANE_A ? half : len - half, seg);
    }
cleanup:
    free(from);
    return status;
}

int bcast_grid_multilane(struct coll_sched *s, const struct coll_args *a)
{
    return bcast_build(s, a, multilane_steps);
}

/* Levels of a binary heap of n members. */
static int heap_depth(int n)
{
    int depth = 0;
    while (n > 0) {
        depth++;
        n >>= 1;
    }
    return depth;
}

/*
 * The header's T ~ Σ_k (log2 n_k + 2) α + (S-1) α_w + (M + O(log p) s)
 * max(β, β_w) as a pipeline of ⌈M/2s⌉ segments per lane: the first
 * segment passes each site's tree (heap depth of half the site) and the
 * leaf-to-tree swap, and the S - 1 WAN hops (both lanes' segments at
 * once); then each further segment
 * takes the slowest stage: a member's two sends, or the two lanes'
 * segments over one WAN link at its bulk rate, at least two gaps.
 */
double bcast_grid_multilane_cost(const struct coll_cost_args *c)
{
    int sites = c->site_count;
    double half = (double)((c->bytes + 1) / 2);
    double seg = (double)c->segsize < half ? (double)c->segsize : half;
    double fill = 0, step = 0;
    for (int i = 0; i < sites; i++) {
        int s = (c->root_site + i) % sites;
        int members = c->site_size[s] - (i == 0);
        if (members > 0) {
            fill +=
                (heap_depth((members + 1) / 2) + 1) * cost_local_msg(c, s, seg);
            double sends =
                cost_site(c, s)->alpha + 2 * seg * cost_site(c, s)->beta;
            step = sends > step ? sends : step;
        }
        if (i + 1 < sites) {
            int next = (s + 1) % sites;
            const struct gc_model_link *l = cost_link(c, s, next);
            double both =
                2 * l->beta_bulk > l->beta ? 2 * l->beta_bulk : l->beta;
            fill += l->alpha + seg * both;
            double hop = 2 * seg * l->beta_bulk;
            hop = 2 * l->gap > hop ? 2 * l->gap : hop;
            step = hop > step ? hop : step;
        }
    }
    size_t k = (size_t)((half + seg - 1) / seg);
    return cost_pipeline(fill, step, k > 0 ? k : 1);
}
