/*
 * Bcast: van de Geijn's scatter + allgather, numbered site by site.
 *
 * Paper: "multi-lane broadcast" (multilane-bcast-grid.txt), §4.2 "van de
 * Geijn algorithm" and Table 1 (MPICH's long-message bcast,
 * scatter_ring_allgather).
 *
 * Phases: members in broadcast order (the root, the rest of its site,
 * then each other site in turn; bcast_common.h) get numbers v = 0..p-1,
 * and the packed message is cut into p blocks of ceil(M/p) bytes (the
 * last ones shorter or empty), block v belonging to member v.
 *  1. Scatter along the binomial tree of bcast_grid_binomial.c: v
 *     receives from its parent the blocks of its subtree, [v, v + lowbit
 *     v), and passes each child its subtree's share.
 *  2. Ring allgather in the same order (v sends to v+1, the last to the
 *     root): in step i = 0..p-2 member v sends block v-i and receives
 *     block v-i-1 (mod p), each sent as soon as it is in.  A block the
 *     receiver already holds from the scatter is not sent again.
 * The ring rather than recursive doubling: it keeps a site's members
 * neighbours, so only the S ring edges between sites cross the WAN,
 * and it needs no power-of-two size.
 *
 * Cost, p members, M bytes, link alpha + beta*bytes (Table 1:
 * 2 log p l + 2 p/(p-1) M/b with recursive doubling):
 *   scatter:   ceil(log2 p) alpha + (p-1)/p M beta
 *   allgather: (p-1) alpha + (p-1)/p M beta
 *   WAN: the scatter's edges between sites (as in the binomial tree, but
 *   each carrying only its subtree's blocks) plus the S ring edges that
 *   leave a site, each carrying the blocks its head does not hold, at
 *   most (p-1)/p M: about S M bytes in all, in up to p-1 messages per
 *   ring edge.
 *
 * When it wins: large messages inside a site where no member should send
 * more than about M (2M beta against binomial's log p M beta); across
 * sites the ring carries about M per WAN link in many small messages, so
 * multilane or the chain are better there.
 * Restriction: packed message up to 1 GiB (a scatter range is one step).
 */
#include <stdlib.h>

#include "coll/bcast/bcast_common.h"
#include "coll/gc_coll.h"
#include "core/gc_comm.h"

/* Lowest set bit of v; for the root (v = 0) the whole range. */
static int subtree(int v, int size)
{
    return v == 0 ? size : v & -v;
}

/* Whether member v holds block b after the scatter. */
static int holds(int v, int b, int size)
{
    return b >= v && b < v + subtree(v, size);
}

struct blocks {
    size_t len, block;
};

/* Byte range of blocks [first, first + n), clipped to the message. */
static void range(const struct blocks *k, int first, int n, size_t *off,
                  size_t *len)
{
    size_t lo = (size_t)first * k->block, hi = lo + (size_t)n * k->block;
    lo = lo < k->len ? lo : k->len;
    hi = hi < k->len ? hi : k->len;
    *off = lo;
    *len = hi - lo;
}

static int scatter_allgather_steps(struct bcast_plan *p,
                                   const struct coll_args *a,
                                   const struct bcast_order *o, size_t len)
{
    struct gc_comm *c = a->comm;
    int size = c->size, v = o->pos[c->rank];
    struct blocks k = {len, (len + (size_t)size - 1) / (size_t)size};
    size_t off, n;
    int *delivered = malloc((size_t)size * sizeof *delivered);
    if (delivered == NULL)
        return coll_no_mem(c);

    /* 1. Scatter: the step that brought this member's subtree blocks. */
    int mine = v + subtree(v, size) < size ? subtree(v, size) : size - v;
    int got = -1;
    if (v != 0) {
        range(&k, v, mine, &off, &n);
        if (n > 0)
            got = bcast_plan_recv(p, o->rank[v - subtree(v, size)], TAG_BCAST,
                                  off, n);
    }
    int top = v & -v; /* children are v + 2^j below it */
    if (v == 0) {
        top = 1;
        while (top < size)
            top <<= 1;
    }
    for (int mask = top >> 1; mask > 0; mask >>= 1) {
        int child = v + mask;
        if (child >= size)
            continue;
        range(&k, child, child + mask <= size ? mask : size - child, &off, &n);
        if (n > 0)
            bcast_plan_send(p, o->rank[child], TAG_BCAST, off, n, got);
    }
    for (int b = 0; b < size; b++)
        delivered[b] = got;

    /* 2. Ring allgather. */
    int left = o->rank[(v + size - 1) % size];
    int right_v = (v + 1) % size, right = o->rank[right_v];
    for (int i = 0; i < size - 1; i++) {
        int out = (v - i + size) % size, in = (v - i - 1 + size) % size;
        range(&k, out, 1, &off, &n);
        if (n > 0 && !holds(right_v, out, size))
            bcast_plan_send(p, right, TAG_BCAST, off, n, delivered[out]);
        range(&k, in, 1, &off, &n);
        if (n > 0 && !holds(v, in, size))
            delivered[in] = bcast_plan_recv(p, left, TAG_BCAST, off, n);
    }
    free(delivered);
    return MPI_SUCCESS;
}

int bcast_grid_scatter_allgather(struct coll_sched *s,
                                 const struct coll_args *a)
{
    return bcast_build(s, a, scatter_allgather_steps);
}

int bcast_grid_scatter_allgather_usable(const struct coll_args *a)
{
    return a->bytes <= BCAST_MAX_MESSAGE;
}

/*
 * The header's scatter and ring allgather, ⌈log2 p⌉ α + (p-1)/p Mβ and
 * (p-1)(α + Mβ/p), with α and β of the slowest link the steps use: every
 * ring step waits for the ring edges that leave a site.
 */
double bcast_grid_scatter_allgather_cost(const struct coll_cost_args *c)
{
    double alpha = 0, beta = 0, p = c->size, m = (double)c->bytes;
    for (int a = 0; a < c->site_count; a++) {
        const struct gc_model_site *s = cost_site(c, a);
        alpha = s->alpha > alpha ? s->alpha : alpha;
        beta = s->beta > beta ? s->beta : beta;
        for (int b = 0; b < c->site_count; b++)
            if (b != a) {
                const struct gc_model_link *l = cost_link(c, a, b);
                alpha = l->alpha > alpha ? l->alpha : alpha;
                beta = l->beta > beta ? l->beta : beta;
            }
    }
    int rounds = 0;
    while ((1 << rounds) < c->size)
        rounds++;
    return rounds * alpha + (p - 1) / p * m * beta +
           (p - 1) * (alpha + m / p * beta);
}
