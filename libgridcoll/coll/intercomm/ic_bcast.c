/*
 * Intercommunicator broadcast (MPI 4.1 §6.2.2, §6.4: the root's buffer
 * reaches every member of the other group; the rest of the root's group
 * takes no part).  Cluster-aware design: MagPIe's flat tree between sites
 * (Kielmann et al., PPoPP 1999, §3): the root sends the data once to a
 * coordinator on each site that has members of the receiving group (its
 * first member there), which passes it on to the group's other members on
 * its site along a binomial tree.  One union schedule, so the nonblocking
 * and persistent forms run it too.
 *
 * Phases:
 *  1. Root -> the receiving group's first member on each of its sites
 *     (over the WAN unless that site is the root's).
 *  2. On each site, a binomial tree over the receiving group's members
 *     there, in group-rank order, rooted at that first member.
 *
 * Cost, S sites of the receiving group, at most m of its members on a
 * site, n bytes: T = L + (S-1) n/B_wan + ceil(log2 m) (l + n/b): the
 * root's S messages leave at once, so its WAN link carries S-1 copies
 * (one per other site) and every other site link one.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

int ic_bcast(struct gc_comm *c, const char *fn, void *buf, int count,
             MPI_Datatype type, int root, const struct coll_form *form)
{
    enum ic_role role;
    int root_member;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_buf(c, fn, count, type);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    if (role == IC_ROOT) {
        int seen[GC_MAX_SITES] = {0};
        for (int j = 0; j < c->inter->remote_size; j++) {
            int member = ic_remote(c, j);
            if (!seen[c->site[member]]++)
                ic_send(s, member, TAG_BCAST, buf, count, type, -1);
        }
    } else if (role == IC_LEAF) {
        /* My group's members on my site, in group-rank order. */
        int here = c->site[c->rank], n = 0, me = 0;
        int *site =
            coll_sched_alloc(s, (size_t)c->inter->local_size * sizeof *site);
        for (int i = 0; site != NULL && i < c->inter->local_size; i++)
            if (c->site[ic_local(c, i)] == here) {
                if (ic_local(c, i) == c->rank)
                    me = n;
                site[n++] = ic_local(c, i);
            }
        int got = -1, top = 1;
        while (top <= me)
            top <<= 1;
        if (site != NULL)
            got = me == 0
                      ? ic_recv(s, root_member, TAG_BCAST, buf, count, type, -1)
                      : ic_recv(s, site[me - top / 2], TAG_BCAST, buf, count,
                                type, -1);
        for (int step = top; site != NULL && me + step < n; step <<= 1)
            ic_send(s, site[me + step], TAG_BCAST, buf, count, type, got);
    }
    return ic_sched_finish(s, MPI_SUCCESS, form);
}
