/*
 * Hierarchical Allreduce across sites for short vectors: MagPIe (Kielmann
 * et al., PPoPP 1999, section 3: one coordinator per site, one WAN
 * latency for latency-bound operations) with leader-based local phases
 * (Mamidala's thesis, ch. 6.3 and 9.2: one leader per node does the
 * network part, the others reduce into and read from it).
 *
 * Phases, S sites with members:
 *   1. Each leader (local rank 0) posts receives for the other sites'
 *      partial results.
 *   2. Local PMPI_Reduce to the leader (MPICH keeps local-rank order,
 *      which is comm-rank order, for non-commutative ops).
 *   3. Every leader sends its packed partial result to every other leader:
 *      S(S-1) WAN messages in one round, one vector per ordered site pair.
 *   4. Every leader folds the S partials in the order of the sites' first
 *      members (coll_combine), the same order with the same bytes on
 *      every site, so all sites get bit-identical results even for
 *      floating-point sums.
 *   5. Local PMPI_Bcast of the result from the leader.
 * With GRIDCOLL_ALLREDUCE_LOCAL=shm, phases 2 and 5 use the node layer:
 * cyclic parallel reduction in each node's shared memory, then PMPI
 * between node leaders (reduce_site_shm.c), and the result back through
 * the leaders and shared memory (bcast_site_shm.c).
 * A zero count is a no-op: nothing is sent.
 *
 * Restriction: a non-commutative op needs every site's members to be one
 * contiguous range of comm ranks, so that the site-ordered fold is the
 * rank-order result; otherwise this algorithm declines (its usable
 * predicate, coll_site_partials_ok): the default rules move on to
 * reduce_bcast, which folds every contribution in rank order at rank 0,
 * and forcing it is an MPI error naming the restriction.
 *
 * Cost, M bytes of vector, L and B the WAN latency and bandwidth:
 *   T = T_reduce(n_s, M) + L + (S-1) M / B + (S-1) γ M + T_bcast(n_s, M)
 *   WAN per site: S-1 messages, (S-1) M bytes; one WAN latency against
 *   two for reduce_bcast.
 *
 * When it wins: short vectors, where the WAN latency is the cost; for
 * long ones every byte funnels through one leader per site, which
 * multileader (allreduce_grid_multileader.c) spreads over all members.
 */
#include <stdlib.h>

#include "gc_coll.h"
#include "gc_coll_algo.h"
#include "node_shm.h"

/* The site's reduce to local rank 0 (GRIDCOLL_ALLREDUCE_LOCAL). */
static int site_reduce(struct gc_comm *c, int shm, const void *sbuf, void *rbuf,
                       const struct coll_reduce_args *r)
{
    return shm ? reduce_site_shm(c, sbuf, rbuf, r->count, r->type, r->op)
               : coll_local_reduce(sbuf, rbuf, r->count, r->type, r->op, 0,
                                   c->local);
}

/* The leader: local reduce into rbuf, exchange, fold into rbuf. */
static int leader_part(struct gc_comm *c, const struct coll_reduce_args *r,
                       size_t len, int shm)
{
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    int n = 0, slot = 0, sites = 0;
    int status = MPI_SUCCESS, local_status = MPI_SUCCESS;
    unsigned char *partials = coll_alloc(len * (size_t)c->site_count);
    if (partials == NULL)
        return coll_no_mem(c);
    /* Partials in the order of the sites' first members; receives posted
     * first so early partials land in place. */
    for (int q = 0; q < c->size && status == MPI_SUCCESS; q++) {
        if (c->leader[c->site[q]] != q)
            continue;
        if (q == c->rank)
            slot = sites;
        else
            status = coll_irecv(c, q, TAG_ALLREDUCE,
                                partials + (size_t)sites * len, len, reqs, &n);
        sites++;
    }
    unsigned char *mine = partials + (size_t)slot * len;
    if (status == MPI_SUCCESS)
        local_status = site_reduce(c, shm, r->sbuf, r->rbuf, r);
    if (status == MPI_SUCCESS && local_status == MPI_SUCCESS)
        local_status = coll_pack(c, r->rbuf, r->count, r->type, mine, len);
    for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS &&
                    local_status == MPI_SUCCESS;
         s++)
        if (c->leader[s] >= 0 && c->leader[s] != c->rank)
            status =
                coll_isend(c, c->leader[s], TAG_ALLREDUCE, mine, len, reqs, &n);
    status = coll_wait(c, n, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
    if (status == MPI_SUCCESS)
        status = coll_combine(c, partials, sites, len, len, r->rbuf, r->count,
                              r->type, r->op);
    free(partials);
    return status;
}

int allreduce_grid_hier(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    size_t len;
    int shm;
    if (r->count == 0)
        return MPI_SUCCESS;
    int status = coll_packed_size(c, r->count, r->type, &len);
    if (status == MPI_SUCCESS)
        status = site_local_shm(c, a->fn, SITE_LOCAL_ALLREDUCE, len, &shm);
    if (status != MPI_SUCCESS)
        return status;
    if (c->local_rank == 0)
        status = leader_part(c, r, len, shm);
    else
        status = site_reduce(
            c, shm, r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf, NULL, r);
    if (status == MPI_SUCCESS)
        status =
            shm ? bcast_site_shm(c, r->rbuf, r->count, r->type)
                : coll_local_bcast(r->rbuf, r->count, r->type, 0, c->local);
    return status;
}

/*
 * The header's T_reduce(n_s, M) + L + (S-1) M / B + T_bcast(n_s, M),
 * the slowest site: each leader sends its M bytes to S - 1 leaders at
 * once, at least one message alone (α_w + Mβ_w).  No computation rate is
 * measured, so the (S-1) γ M of folding is left out.
 */
double allreduce_grid_hier_cost(const struct coll_cost_args *c)
{
    double m = (double)c->bytes, worst = 0;
    for (int s = 0; s < c->site_count; s++) {
        int n = c->site_size[s];
        double wan = 0;
        for (int t = 0; t < c->site_count; t++)
            if (t != s) {
                const struct gc_model_link *l = cost_link(c, s, t);
                double one = cost_wan_msg(c, s, t, m);
                double all = l->alpha + (c->site_count - 1) * m * l->beta_bulk;
                double w = one > all ? one : all;
                wan = w > wan ? w : wan;
            }
        double time = 2 * cost_local_bcast(c, s, n, m) + wan;
        worst = time > worst ? time : worst;
    }
    return worst;
}
