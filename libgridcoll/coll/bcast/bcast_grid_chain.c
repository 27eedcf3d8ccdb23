/*
 * Bcast: pipelined chain through every member, site by site.
 *
 * Paper: "multi-lane broadcast" (multilane-bcast-grid.txt), §2.2 "Simple
 * algorithms" (single chain, pipelined), §6 (the chain on two sites: the
 * tail of the first site feeds the head of the second) and Table 1.
 *
 * Phases (one, pipelined): members in broadcast order (the root, the
 * rest of its site, then each other site in turn; bcast_common.h); the
 * packed message is cut into segments of s = GRIDCOLL_BCAST_SEGSIZE
 * bytes; each member receives segment k from its predecessor and sends
 * it on to its successor at once, while segment k+1 arrives.  The last
 * member of a site feeds the first member of the next site over the
 * relays, one relay message per segment.
 *
 * Cost, p members on S sites, M bytes; a segment costs alpha + s beta
 * inside a site and alpha_w + s beta_w between sites (Table 1:
 * (p-1) l + M/b):
 *   T ~ (p-S) alpha + (S-1) alpha_w + (M + (p-2) s) max(beta, beta_w)
 *   Every member receives and sends M once: the bandwidth term is the
 *   least any bcast can have; the latency term grows with p.
 *   WAN: S-1 links crossed, each carries every byte once: (S-1) M bytes
 *   in (S-1) ceil(M/s) messages; every site but the last in the order
 *   sends M.
 *
 * When it wins: large messages over few ranks, where p alpha is small
 * against M beta.  Multilane has the same bandwidth term and a log p
 * latency term, so it overtakes the chain as sites grow.
 */
#include "coll/bcast/bcast_common.h"
#include "coll/gc_coll.h"
#include "core/gc_comm.h"

static int chain_steps(struct bcast_plan *p, const struct coll_args *a,
                       const struct bcast_order *o, size_t len)
{
    const struct gc_comm *c = a->comm;
    int v = o->pos[c->rank];
    int prev = v > 0 ? o->rank[v - 1] : -1;
    int next = v + 1 < c->size ? o->rank[v + 1] : -1;
    bcast_plan_relay(p, prev, &next, next >= 0, TAG_BCAST, 0, len,
                     bcast_segsize(a));
    return MPI_SUCCESS;
}

int bcast_grid_chain(struct coll_sched *s, const struct coll_args *a)
{
    return bcast_build(s, a, chain_steps);
}

/*
 * The header's pipeline (Table 1: (p-1) l + M/b): the first segment
 * passes p - S local hops (α + sβ) and S - 1 WAN hops (α_w + sβ_w); then
 * each further segment takes the slowest hop: a local send, or a WAN
 * segment at the link's bulk rate (many segments in flight), at least
 * its gap.
 */
double bcast_grid_chain_cost(const struct coll_cost_args *c)
{
    int sites = c->site_count;
    double seg = c->segsize < c->bytes ? (double)c->segsize : (double)c->bytes;
    double fill = 0, step = 0;
    for (int i = 0; i < sites; i++) {
        int s = (c->root_site + i) % sites;
        if (c->site_size[s] > 1) {
            double hop = cost_local_msg(c, s, seg);
            fill += (c->site_size[s] - 1) * hop;
            step = hop > step ? hop : step;
        }
        if (i + 1 < sites) {
            int next = (s + 1) % sites;
            const struct gc_model_link *l = cost_link(c, s, next);
            fill += cost_wan_msg(c, s, next, seg);
            double hop = seg * l->beta_bulk;
            hop = l->gap > hop ? l->gap : hop;
            step = hop > step ? hop : step;
        }
    }
    return cost_pipeline(fill, step, cost_segments(c, c->bytes));
}
