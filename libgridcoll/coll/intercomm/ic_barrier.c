/*
 * Intercommunicator barrier (MPI 4.1 §6.2.2, §6.3: a member leaves once
 * every member of the other group has entered).  Cluster-aware design:
 * MagPIe's (Kielmann et al., PPoPP 1999, §3) one coordinator per site,
 * so a site link carries one message each way per group: each group
 * gathers empty messages at its first member on each site, then at its
 * rank 0; the two rank 0 exchange; the release goes back the same way.
 * One union schedule, so the nonblocking and persistent forms run it too.
 *
 * Phases (each group):
 *  1. Every member -> its group's first member on its site.
 *  2. Those coordinators -> the group's rank 0, once their site is in.
 *  3. The two rank 0 exchange, once their group is in.
 *  4. Rank 0 -> the coordinators -> the members: the other group is in.
 *
 * Cost, S sites of a group, m members on a site: T = 2 L_wan (phases 2
 * and 4, when the group spans sites) + L_wan (phase 3) + 2 m l_site.
 * WAN: 2 (S-1) empty messages per group and 2 between the groups.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

int ic_barrier(struct gc_comm *c, const char *fn, const struct coll_form *form)
{
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    int n = c->inter->local_size, here = c->site[c->rank];
    int leader = ic_local(c, 0), coord = -1;
    int *in = coll_sched_alloc(s, (size_t)n * sizeof *in);
    int *members = coll_sched_alloc(s, (size_t)n * sizeof *members);
    int *coords = coll_sched_alloc(s, (size_t)n * sizeof *coords);
    int nm = 0, nc = 0, ni = 0;
    /* My site's members and every site's coordinator, of my group. */
    for (int i = 0; members != NULL && coords != NULL && i < n; i++) {
        int m = ic_local(c, i), first = 1;
        for (int k = 0; k < nc && first; k++)
            first = c->site[coords[k]] != c->site[m];
        if (first)
            coords[nc++] = m;
        if (c->site[m] == here && coord < 0)
            coord = m;
        else if (c->site[m] == here)
            members[nm++] = m;
    }
    if (in == NULL || members == NULL || coords == NULL)
        return ic_sched_finish(s, MPI_SUCCESS, form); /* fails: out of memory */
    if (c->rank != coord) {
        coll_sched_send(s, coord, TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
        coll_sched_recv(s, coord, TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
        return ic_sched_finish(s, MPI_SUCCESS, form);
    }
    for (int k = 0; k < nm; k++)
        in[ni++] =
            coll_sched_recv(s, members[k], TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
    int released;
    if (c->rank != leader) {
        int site_in = coll_sched_join(s, in, ni);
        coll_sched_send(s, leader, TAG_BARRIER, NULL, 0, MPI_BYTE, site_in);
        released =
            coll_sched_recv(s, leader, TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
    } else {
        for (int k = 1; k < nc; k++)
            in[ni++] = coll_sched_recv(s, coords[k], TAG_BARRIER, NULL, 0,
                                       MPI_BYTE, -1);
        int group_in = coll_sched_join(s, in, ni);
        int pair[2] = {coll_sched_send(s, ic_remote(c, 0), TAG_BARRIER, NULL, 0,
                                       MPI_BYTE, group_in),
                       coll_sched_recv(s, ic_remote(c, 0), TAG_BARRIER, NULL, 0,
                                       MPI_BYTE, -1)};
        released = coll_sched_join(s, pair, 2);
        for (int k = 1; k < nc; k++)
            coll_sched_send(s, coords[k], TAG_BARRIER, NULL, 0, MPI_BYTE,
                            released);
    }
    for (int k = 0; k < nm; k++)
        coll_sched_send(s, members[k], TAG_BARRIER, NULL, 0, MPI_BYTE,
                        released);
    return ic_sched_finish(s, MPI_SUCCESS, form);
}
