/*
 * Scan and Exscan across sites whose members are contiguous rank ranges:
 * a scan inside each site, the site totals to the sites after it (one
 * WAN latency), a prefix applied inside each site.
 *
 * Source: MagPIe's rules (Kielmann et al., PPoPP 1999, §3): do the work
 * inside each site first, let each datum cross each WAN link at most
 * once, and cost one WAN latency; the intra-site part is the scan MPICH
 * runs on the site's communicator.
 *
 * Notation: S sites with members, in the order of their rank ranges
 * (fold position u = 0 .. S-1), x_r member r's input, T_u the op of the
 * inputs of site u's members in rank order (its total), P_u = T_0 op ...
 * op T_{u-1} the prefix of the sites before u.
 *
 * Phases:
 *  1. The leader (first member) of every site u > 0 posts receives for
 *     T_0 .. T_{u-1}.
 *  2. PMPI_Scan on the site's communicator: member r gets the op of the
 *     inputs of its site's members up to r.  (Exscan: PMPI_Exscan, the
 *     members before r; the site's last member keeps its input aside to
 *     make T_u.)
 *  3. The last member of every site u < S-1 has T_u (Scan: its result;
 *     Exscan: its result op its input) and sends it to the leaders of
 *     sites u+1 .. S-1, all at once: every site total crosses each WAN
 *     link at most once, and every site waits for one WAN latency, not
 *     for a chain through the sites before it.
 *  4. The leader of every site u > 0 folds P_u = T_0 op ... op T_{u-1} in
 *     that order and broadcasts it on its site (PMPI_Bcast); every
 *     member applies it in front of its result: recvbuf = P_u op recvbuf
 *     (PMPI_Reduce_local).  Exscan: the leader's result is P_u itself;
 *     rank 0's buffer is never written (its result is undefined).
 * A zero count (or an empty datatype) is a no-op.
 *
 * Restriction, for every op, commutative or not: every site's members
 * must be one contiguous range of comm ranks.  Member r's result needs,
 * from every other site t, the op of t's members with ranks below r;
 * that is 0 or all of t's members (nothing or T_t) for every r of every
 * site exactly when every site is one contiguous range (if some site s
 * had a member of t between two of its own, that member of t would see
 * part of s, neither nothing nor T_s).  Commutativity does not help: the
 * partial sums of t up to r would still differ from member to member.
 * Interleaved sites take gather_scatter.
 *
 * Cost, M bytes of vector, L and B the WAN latency and bandwidth, γ the
 * per-byte cost of the op:
 *   T = T_scan(n_s, M) + L + (S-1-u) M / B_r + (u-1) γ M + T_bcast(n_s, M)
 *       + γ M
 *   WAN: the site at position u sends S-1-u messages of M bytes (the last
 *   site none): S(S-1)/2 messages in all, against gather_scatter's
 *   2(S-1) messages carrying every member's M twice (n_s M from each site
 *   to rank 0 and back) and two WAN latencies.
 *
 * When it wins: whenever it can run the call; most for long vectors and
 * many members per site, where gather_scatter funnels N M bytes through
 * rank 0.
 */
#include <stdlib.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/* Exscan: the site total T_u = (the inputs before mine) op mine, from
 * this member's exscan result and its input packed before the exscan. */
struct site_total {
    unsigned char *total; /* in: the input; out: T_u */
    size_t len;
    void *input; /* typed room */
    const void *before;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
};

static int exclusive_total(struct coll_sched *s, void *arg)
{
    struct site_total *t = arg;
    struct gc_comm *c = coll_sched_comm(s);
    int status = coll_unpack(c, t->total, t->len, t->input, t->count, t->type);
    if (status == MPI_SUCCESS)
        status =
            PMPI_Reduce_local_c(t->before, t->input, t->count, t->type, t->op);
    if (status == MPI_SUCCESS)
        status = coll_pack(c, t->input, t->count, t->type, t->total, t->len);
    return status;
}

int scan_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    int leader_at[GC_MAX_SITES], last_of[GC_MAX_SITES], in[GC_MAX_SITES + 1];
    int sites = 0, me = 0;
    size_t len;
    int status = coll_packed_size(c, r->count, r->type, &len);
    if (status != MPI_SUCCESS || len == 0)
        return status;
    for (int q = 0; q < c->size; q++) {
        last_of[c->site[q]] = q;
        if (c->leader[c->site[q]] != q)
            continue;
        if (c->site[q] == c->site[c->rank])
            me = sites;
        leader_at[sites++] = q;
    }
    int leader = c->local_rank == 0, last = c->local_rank == c->local_size - 1;
    int sends = last && me < sites - 1, receives = leader && me > 0;
    MPI_Datatype type = coll_sched_type(s, r->type);
    const void *own = r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf;
    unsigned char *total = sends ? coll_sched_alloc(s, len) : NULL;
    unsigned char *totals =
        receives ? coll_sched_alloc(s, len * (size_t)me) : NULL;
    if ((sends && total == NULL) || (receives && totals == NULL))
        return coll_no_mem(c);
    for (int u = 0; receives && u < me; u++)
        in[u] = coll_sched_recv(s, last_of[c->site[leader_at[u]]], TAG_SCAN,
                                totals + (size_t)u * len, (MPI_Count)len,
                                MPI_BYTE, -1);
    /* Exscan overwrites an in-place input, which the site total needs. */
    int ready = sends && r->exclusive
                    ? coll_sched_pack(s, own, r->count, type, total, len, -1)
                    : -1;
    struct sched_local l = {.op = r->exclusive ? LOCAL_EXSCAN : LOCAL_SCAN,
                            .sbuf = r->sbuf,
                            .rbuf = r->rbuf,
                            .count = r->count,
                            .type = type,
                            .mop = r->op};
    int scanned = coll_sched_local(s, &l, ready);
    int counted = scanned;
    if (sends && !r->exclusive)
        counted =
            coll_sched_pack(s, r->rbuf, r->count, type, total, len, scanned);
    if (sends && r->exclusive && c->local_size > 1) {
        struct site_total *t = coll_sched_alloc(s, sizeof *t);
        if (t == NULL)
            return coll_no_mem(c);
        *t = (struct site_total){.total = total,
                                 .len = len,
                                 .before = r->rbuf,
                                 .count = r->count,
                                 .type = type,
                                 .op = r->op};
        status = coll_sched_temp(s, r->count, r->type, &t->input);
        if (status != MPI_SUCCESS)
            return status;
        counted = coll_sched_call(s, exclusive_total, t, scanned);
    }
    for (int u = me + 1; sends && u < sites; u++)
        coll_sched_send(s, leader_at[u], TAG_SCAN, total, (MPI_Count)len,
                        MPI_BYTE, counted);
    if (me == 0)
        return MPI_SUCCESS;
    /* P_u, the prefix of the sites before this one: folded by the
     * leader, broadcast on the site, applied in front of each result. */
    void *p = r->exclusive && leader ? r->rbuf : NULL;
    if (p == NULL &&
        (status = coll_sched_temp(s, r->count, r->type, &p)) != MPI_SUCCESS)
        return status;
    int prefix = -1;
    if (leader) {
        struct coll_fold *f = coll_sched_alloc(s, sizeof *f);
        if (f == NULL)
            return coll_no_mem(c);
        *f = (struct coll_fold){.partials = totals,
                                .sources = me,
                                .stride = len,
                                .len = len,
                                .rbuf = p,
                                .count = r->count,
                                .type = type,
                                .op = r->op};
        /* Exscan folds into rbuf, which an in-place local exscan reads
         * as the leader's input: after it. */
        in[me] = scanned;
        prefix = coll_sched_call(s, coll_fold_step, f,
                                 coll_sched_join(s, in, me + 1));
    }
    struct sched_local b = {
        .op = LOCAL_BCAST, .rbuf = p, .count = r->count, .type = type};
    int known = coll_sched_local(s, &b, prefix);
    if (p != r->rbuf) {
        int both[2] = {known, counted};
        coll_sched_reduce(s, p, r->rbuf, r->count, type, r->op,
                          coll_sched_join(s, both, 2));
    }
    return MPI_SUCCESS;
}
