/*
 * Intercommunicator barrier (MPI 4.1 §6.2.2, §6.3: a member leaves once
 * every member of the other group has entered).  Cluster-aware design:
 * MagPIe's (Kielmann et al., PPoPP 1999, §3) one WAN latency between
 * coordinators; within each group the grid barrier, which is MagPIe's
 * own between the group's sites.
 *
 * Phases:
 *  1. Barrier of each group (group_comm).
 *  2. The groups' rank 0 exchange an empty message (union schedule).
 *  3. Barrier of each group again: it releases the members once their
 *     rank 0 has heard from the other group.
 *
 * Cost: T = 2 B_group + L, B_group one WAN latency when the group spans
 * sites.  WAN: two empty messages between the groups, plus the groups'
 * own barriers.
 */
#include "coll/intercomm/intercomm.h"

int ic_barrier(struct gc_comm *c, const char *fn, const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    int status = MPI_Barrier(c->inter->group_comm);
    struct coll_sched *s = ic_sched_new(c, fn);
    if (status != MPI_SUCCESS || s == NULL) {
        if (s != NULL)
            coll_sched_free(s);
        return status != MPI_SUCCESS ? status : MPI_ERR_NO_MEM;
    }
    if (gc_comm_group_rank(c) == 0) {
        coll_sched_send(s, ic_remote(c, 0), TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
        coll_sched_recv(s, ic_remote(c, 0), TAG_BARRIER, NULL, 0, MPI_BYTE, -1);
    }
    status = ic_sched_run(s);
    return status != MPI_SUCCESS ? status : MPI_Barrier(c->inter->group_comm);
}
