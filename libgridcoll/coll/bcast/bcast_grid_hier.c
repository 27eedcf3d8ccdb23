/*
 * Bcast: MagPIe hierarchy, the root talks to one leader per site.
 *
 * Paper: Kielmann et al., "MagPIe: MPI's collective communication
 * operations for clustered wide area systems", PPoPP 1999, §3 (flat tree
 * between sites, one WAN latency); the segmentation over the WAN follows
 * the pipelining of "multi-lane broadcast" (multilane-bcast-grid.txt) §2.2.
 * Also phase_bcast, the bcast other collectives' schedules use (gc_coll.h).
 *
 * Phases:
 *  1. The root packs the message and sends it to the leader (first
 *     member) of every other site, in segments of s =
 *     GRIDCOLL_BCAST_SEGSIZE bytes, one relay message each, to all
 *     leaders at once.
 *  2. At the same time the root's site broadcasts locally from the root
 *     with the user's datatype (no packing); every other site broadcasts
 *     the packed bytes from its leader, one local bcast per segment as
 *     soon as the leader has it, so the local phase overlaps the WAN
 *     transfer; then its members unpack.  With the site algorithm shm
 *     (GRIDCOLL_BCAST_LOCAL) the local bcasts go through the node
 *     layer instead (bcast_site_shm.c: chunks through each node's shared
 *     memory, node leaders fed over PMPI), on the root's site in the
 *     user's datatype as well.
 *
 * Cost, S sites, n_k members on site k, M bytes; local bcast of m bytes
 * on site k B_k(m) (MPICH's: binomial or scatter-allgather); WAN link
 * alpha_w + beta_w*bytes:
 *   T ~ alpha_w + (S-1) M beta_r + B_k(s) + M beta_w, where beta_r is
 *   the root's own rate into its relay: it sends M to each of the S-1
 *   leaders.
 *   WAN: S-1 links, root -> leader, each carries M once: the root's site
 *   sends (S-1) M bytes in (S-1) ceil(M/s) messages, other sites none.
 *
 * When it wins: small messages: one WAN latency, the least any bcast
 * across sites can have, and no extra hops.  For large messages with
 * three or more sites the root's uplink carries (S-1) M: multilane and
 * the chain send M per site.
 */
#include "coll/bcast/bcast_common.h"
#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_world.h"

/* `after`: the step every step of this bcast waits for (-1: none); `a`:
 * the user's call, NULL for a phase of another collective. */
static int hier(struct coll_sched *s, const struct coll_bcast_args *b,
                size_t seg, const struct coll_args *a, int after)
{
    struct gc_comm *c = coll_sched_comm(s);
    int root_site = c->site[b->root];
    struct bcast_plan p = {.sched = s};
    struct coll_node *node = NULL;
    size_t len;
    int shm = 0;
    int status = bcast_msg_open(s, b, after, &p.bytes, &len, &p.ready);
    /* Nothing to move: no message at all (a bcast does not synchronize). */
    if (status != MPI_SUCCESS || len == 0)
        return status;
    /* Inside another collective: MPICH's local bcasts (the node layer
     * serves one collective at a time). */
    if (a != NULL)
        status = site_local_shm(c, a->fn, GC_COLL_BCAST, coll_may_block(a), len,
                                &shm);
    if (status == MPI_SUCCESS && shm &&
        (status = coll_node_begin(c, 1, &node)) != MPI_SUCCESS)
        status = gc_error(c->handle, status, a->fn, "node layer failed");
    if (status != MPI_SUCCESS)
        return status;
    if (c->site[c->rank] == root_site) {
        if (c->rank == b->root)
            for (int t = 0; t < GC_MAX_SITES; t++)
                if (c->leader[t] >= 0 && t != root_site)
                    bcast_plan_relay(&p, -1, &c->leader[t], 1, TAG_BCAST, 0,
                                     len, seg);
        /* In the user's datatype: nothing to unpack on the root's site. */
        bcast_plan_local(&p, node, c->site_rank[b->root], b->buf, b->count,
                         b->type, p.ready);
        return MPI_SUCCESS;
    }
    for (size_t off = 0; off < len; off += seg) {
        size_t piece = len - off < seg ? len - off : seg;
        int got = c->local_rank == 0
                      ? bcast_plan_recv(&p, b->root, TAG_BCAST, off, piece)
                      : p.ready;
        bcast_plan_local(&p, node, 0, p.bytes + off, (MPI_Count)piece, MPI_BYTE,
                         got);
    }
    return bcast_msg_finish(s, b, p.bytes, len);
}

int bcast_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    return hier(s, &a->u.bcast, bcast_segsize(a), a, -1);
}

int phase_bcast(struct coll_sched *s, void *buf, MPI_Count count,
                MPI_Datatype type, int root, int after, int *done)
{
    struct coll_bcast_args b = {buf, count, type, root};
    size_t seg = coll_table_of(GC_COLL_BCAST)->default_segsize;
    int status = hier(s, &b, seg < BCAST_MAX_MESSAGE ? seg : BCAST_MAX_MESSAGE,
                      NULL, after);
    *done = coll_sched_fence(s);
    return status;
}

/*
 * The header's T ~ α_w + (S-1) M β_r + M β_w + B_k(s) as a pipeline of
 * ⌈M/s⌉ segments per site: the first segment's WAN message and local
 * bcast fill it; then each segment takes the longest of the root's
 * uplink shared by S-1 sites, the link's gap and the site's local bcast.
 * The root's own site broadcasts the whole message meanwhile.
 */
double bcast_grid_hier_cost(const struct coll_cost_args *c)
{
    int r = c->root_site, sites = c->site_count;
    double seg = c->segsize < c->bytes ? (double)c->segsize : (double)c->bytes;
    size_t k = cost_segments(c, c->bytes);
    double worst = cost_local_bcast(c, r, c->site_size[r], (double)c->bytes);
    for (int t = 0; t < sites; t++) {
        if (t == r)
            continue;
        const struct gc_model_link *l = cost_link(c, r, t);
        double local = cost_local_bcast(c, t, c->site_size[t], seg);
        double step = (sites - 1) * seg * l->beta_bulk;
        step = l->gap > step ? l->gap : step;
        step = local > step ? local : step;
        double time =
            cost_pipeline(cost_wan_msg(c, r, t, seg) + local, step, k);
        worst = time > worst ? time : worst;
    }
    return worst;
}
