/*
 * Bcast: binomial tree over all members, numbered site by site.
 *
 * Paper: "multi-lane broadcast" (multilane-bcast-grid.txt), §4.1
 * "Binomial tree" (MPICH's short-message bcast) and Table 1; the
 * numbering follows the site-aware trees of §3.2 and MagPIe.
 *
 * Phases (one): members in broadcast order (the root, the rest of its
 * site, then each other site in turn; bcast_common.h) get tree numbers
 * v = 0..p-1; v's parent is v minus its lowest set bit, its children are
 * v + 2^j for every 2^j below that bit (every 2^j < p for the root).
 * Each member receives the whole packed message from its parent, then
 * sends it to its children, farthest first.  No pipelining (§4: it does
 * not suit this tree); messages over 1 GiB go in 1 GiB pieces.
 *
 * Because a site's members are contiguous in the numbering, an edge
 * crosses sites only where a subtree starts on another site than its
 * parent: the WAN messages per call are the members u of each site other
 * than the root's, occupying numbers [f, f+n), whose parent u - lowbit(u)
 * lies below f; at most ceil(log2 p) per site, at least one.  Each
 * carries M bytes.  Examples, root 0: sites 3+5: 2 messages (2M from
 * the root's site); 2+1+2: 3 (2M from the first site, M from the
 * second).
 *
 * Cost, p members, M bytes, link alpha + beta*bytes (Table 1:
 * log p (l + M/b)):
 *   T ~ ceil(log2 p) (alpha + M beta), with one or more of those steps
 *   over the WAN (alpha_w + M beta_w) on a multi-site path.
 *
 * When it wins: small messages inside large sites (log p latency, no
 * segmentation overhead); hier is better across sites because its
 * WAN term is one message per site from the root.
 */
#include <float.h>
#include <stdlib.h>

#include "coll/bcast/bcast_common.h"
#include "coll/gc_coll.h"
#include "core/gc_comm.h"

static int binomial_steps(struct bcast_plan *p, const struct coll_args *a,
                          const struct bcast_order *o, size_t len)
{
    const struct gc_comm *c = a->comm;
    int size = c->size, v = o->pos[c->rank];
    int parent = -1, children[32], n = 0;
    int mask = 1;
    while (mask < size && !(v & mask))
        mask <<= 1;
    if (v != 0)
        parent = o->rank[v - mask];
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (v + mask < size)
            children[n++] = o->rank[v + mask];
    bcast_plan_relay(p, parent, children, n, TAG_BCAST, 0, len,
                     BCAST_MAX_MESSAGE);
    return MPI_SUCCESS;
}

int bcast_grid_binomial(struct coll_sched *s, const struct coll_args *a)
{
    return bcast_build(s, a, binomial_steps);
}

/*
 * The header's ⌈log2 p⌉ steps of the whole message, each edge α + Mβ
 * inside a site or α_w + Mβ_w across, on the tree of the broadcast
 * order: every member sends to its children farthest first, one after
 * the other, and the call ends when the last member has the message.
 */
double bcast_grid_binomial_cost(const struct coll_cost_args *c)
{
    int p = c->size, sites = c->site_count;
    double m = (double)c->bytes;
    double *ready = malloc((size_t)p * sizeof *ready);
    int *site_at = malloc((size_t)p * sizeof *site_at);
    /* Out of memory: never the cheapest. */
    double end = DBL_MAX;
    if (ready == NULL || site_at == NULL)
        goto cleanup;
    end = 0;
    for (int i = 0, v = 0; i < sites; i++) {
        int s = (c->root_site + i) % sites;
        for (int j = 0; j < c->site_size[s]; j++)
            site_at[v++] = s;
    }
    int top = 1;
    while (top < p)
        top <<= 1;
    ready[0] = 0;
    for (int v = 0; v < p; v++) {
        double now = ready[v];
        for (int bit = v == 0 ? top >> 1 : (v & -v) >> 1; bit > 0; bit >>= 1) {
            int child = v + bit;
            if (child >= p)
                continue;
            int a = site_at[v], b = site_at[child];
            now += a == b ? cost_local_msg(c, a, m) : cost_wan_msg(c, a, b, m);
            ready[child] = now;
        }
        end = now > end ? now : end;
    }
cleanup:
    free(ready);
    free(site_at);
    return end;
}
