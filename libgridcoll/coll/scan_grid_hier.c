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

#include "gc_coll.h"
#include "gc_coll_algo.h"

int scan_grid_hier(const struct coll_args *a)
{
    const struct coll_reduce_args *r = &a->u.reduce;
    struct gc_comm *c = a->comm;
    struct gc_xfer *reqs[GC_MAX_SITES];
    int leader_at[GC_MAX_SITES], last_of[GC_MAX_SITES];
    int n = 0, sites = 0, me = 0, xfer_status = MPI_SUCCESS;
    unsigned char *totals = NULL, *total = NULL;
    struct coll_temp input = {0}, prefix = {0};
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
    const void *own = r->sbuf == MPI_IN_PLACE ? r->rbuf : r->sbuf;
    if ((sends && (total = coll_alloc(len)) == NULL) ||
        (receives && (totals = coll_alloc(len * (size_t)me)) == NULL)) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int u = 0; receives && u < me && xfer_status == MPI_SUCCESS; u++)
        xfer_status = coll_irecv(c, last_of[c->site[leader_at[u]]], TAG_SCAN,
                                 totals + (size_t)u * len, len, reqs, &n);
    /* Exscan overwrites an in-place input, which the site total needs. */
    if (status == MPI_SUCCESS && sends && r->exclusive)
        status = coll_pack(c, own, r->count, r->type, total, len);
    if (status == MPI_SUCCESS)
        status = r->exclusive ? PMPI_Exscan(r->sbuf, r->rbuf, r->count, r->type,
                                            r->op, c->local)
                              : PMPI_Scan(r->sbuf, r->rbuf, r->count, r->type,
                                          r->op, c->local);
    if (status == MPI_SUCCESS && sends && !r->exclusive)
        status = coll_pack(c, r->rbuf, r->count, r->type, total, len);
    if (status == MPI_SUCCESS && sends && r->exclusive && c->local_size > 1) {
        /* T_u = (the inputs before mine) op mine. */
        status = coll_temp_alloc(c, r->count, r->type, 1, &input);
        if (status == MPI_SUCCESS)
            status = coll_unpack(c, total, len, input.base, r->count, r->type);
        if (status == MPI_SUCCESS)
            status = PMPI_Reduce_local(r->rbuf, input.base, r->count, r->type,
                                       r->op);
        if (status == MPI_SUCCESS)
            status = coll_pack(c, input.base, r->count, r->type, total, len);
    }
    for (int u = me + 1; sends && u < sites && status == MPI_SUCCESS &&
                         xfer_status == MPI_SUCCESS;
         u++)
        xfer_status =
            coll_isend(c, leader_at[u], TAG_SCAN, total, len, reqs, &n);
    /* Sends finish before the local bcast below, where the sites after
     * this one would otherwise wait for this site's prefix too. */
    if (sends || receives)
        xfer_status = coll_wait(c, n, reqs, xfer_status);
    if (status == MPI_SUCCESS)
        status = xfer_status;
    if (status != MPI_SUCCESS || me == 0)
        goto cleanup;
    void *p = r->exclusive && leader ? r->rbuf : NULL;
    if (p == NULL) {
        status = coll_temp_alloc(c, r->count, r->type, 1, &prefix);
        p = prefix.base;
    }
    if (status == MPI_SUCCESS && leader)
        status =
            coll_combine(c, totals, me, len, len, p, r->count, r->type, r->op);
    if (status == MPI_SUCCESS)
        status = coll_local_bcast(p, r->count, r->type, 0, c->local);
    if (status == MPI_SUCCESS && p != r->rbuf)
        status = PMPI_Reduce_local(p, r->rbuf, r->count, r->type, r->op);
cleanup:
    free(totals);
    free(total);
    free(input.mem);
    free(prefix.mem);
    return status;
}
