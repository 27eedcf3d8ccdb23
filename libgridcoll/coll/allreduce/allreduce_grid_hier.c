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
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/* The node layer's site phases, written as blocking code (blocking
 * calls only, GRIDCOLL_ALLREDUCE_LOCAL=shm). */
struct shm_phase {
    const void *sbuf;
    void *rbuf;
    const struct coll_reduce_args *r;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
};

static int shm_reduce(struct coll_sched *s, void *arg)
{
    struct shm_phase *x = arg;
    return reduce_site_shm(coll_sched_comm(s), x->sbuf, x->rbuf, x->count,
                           x->type, x->op);
}

static int shm_bcast(struct coll_sched *s, void *arg)
{
    struct shm_phase *x = arg;
    return bcast_site_shm(coll_sched_comm(s), x->rbuf, x->count, x->type);
}

/* The site's reduce to local rank 0 and, with `bcast`, its bcast from
 * it: MPICH's nonblocking collectives, or the node layer's. */
static int site_phase(struct coll_sched *s, int shm, int bcast,
                      const void *sbuf, void *rbuf,
                      const struct coll_reduce_args *r, int after)
{
    MPI_Datatype type = coll_sched_type(s, r->type);
    if (shm) {
        struct shm_phase *x = coll_sched_alloc(s, sizeof *x);
        if (x == NULL)
            return -1;
        *x = (struct shm_phase){sbuf, rbuf, r, r->count, type, r->op};
        return coll_sched_call_blocking(s, bcast ? shm_bcast : shm_reduce, x,
                                        after);
    }
    struct sched_local l = {.op = bcast ? LOCAL_BCAST : LOCAL_REDUCE,
                            .sbuf = sbuf,
                            .rbuf = rbuf,
                            .count = r->count,
                            .type = type,
                            .mop = r->op};
    return coll_sched_local(s, &l, after);
}

int allreduce_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    size_t len;
    int shm = 0;
    if (r->count == 0)
        return MPI_SUCCESS;
    int status = coll_packed_size(c, r->count, r->type, &len);
    if (status == MPI_SUCCESS)
        status = site_local_shm(c, a->fn, GC_COLL_ALLREDUCE, coll_may_block(a),
                                len, &shm);
    if (status != MPI_SUCCESS)
        return status;
    if (c->local_rank != 0) {
        int reduced =
            site_phase(s, shm, 0, r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf,
                       NULL, r, -1);
        site_phase(s, shm, 1, NULL, r->rbuf, r, reduced);
        return MPI_SUCCESS;
    }
    /* The leader: partials in the order of the sites' first members,
     * receives first so early partials land in place. */
    unsigned char *partials = coll_sched_alloc(s, len * (size_t)c->site_count);
    int *in = coll_sched_alloc(s, (size_t)(c->site_count + 1) * sizeof *in);
    struct coll_fold *f = coll_sched_alloc(s, sizeof *f);
    if (partials == NULL || in == NULL || f == NULL)
        return coll_no_mem(c);
    int slot = 0, sites = 0;
    for (int q = 0; q < c->size; q++) {
        if (c->leader[c->site[q]] != q)
            continue;
        if (q == c->rank)
            slot = sites;
        else
            in[sites] = coll_sched_recv(s, q, TAG_ALLREDUCE,
                                        partials + (size_t)sites * len,
                                        (MPI_Count)len, MPI_BYTE, -1);
        sites++;
    }
    unsigned char *mine = partials + (size_t)slot * len;
    in[slot] = coll_sched_pack(s, r->rbuf, r->count, r->type, mine, len,
                               site_phase(s, shm, 0, r->sbuf, r->rbuf, r, -1));
    for (int t = 0; t < GC_MAX_SITES; t++)
        if (c->leader[t] >= 0 && c->leader[t] != c->rank)
            coll_sched_send(s, c->leader[t], TAG_ALLREDUCE, mine,
                            (MPI_Count)len, MPI_BYTE, in[slot]);
    /* Every site folds the same bytes in the same order: bit-identical
     * results everywhere, also for floating-point sums. */
    *f = (struct coll_fold){.partials = partials,
                            .sources = sites,
                            .stride = len,
                            .len = len,
                            .rbuf = r->rbuf,
                            .count = r->count,
                            .type = coll_sched_type(s, r->type),
                            .op = r->op};
    int folded =
        coll_sched_call(s, coll_fold_step, f, coll_sched_join(s, in, sites));
    site_phase(s, shm, 1, NULL, r->rbuf, r, folded);
    return MPI_SUCCESS;
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
