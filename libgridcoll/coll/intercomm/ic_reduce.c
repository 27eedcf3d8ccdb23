/*
 * Intercommunicator reduce (MPI 4.1 §6.2.2, §6.9.1: the root receives the
 * reduction of the other group's buffers, in that group's rank order).
 * Cluster-aware design: the contributing group reduces with the grid
 * reduce (MagPIe, Kielmann et al., PPoPP 1999, §3: one partial result per
 * site crosses the WAN, rank order kept for non-commutative operations),
 * then its rank 0 sends the result to the root once, as MPICH's
 * intercommunicator reduce does.
 *
 * Phases:
 *  1. Reduce of the contributing group to its rank 0 (group_comm).
 *  2. That rank 0 -> the root (union schedule).
 *
 * Cost, S sites of the contributing group, n bytes: T = T_reduce(S, n) +
 * L + n/B_wan.  WAN: S-1 partial results inside the group, one result
 * between the groups.
 */
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

int ic_reduce(struct gc_comm *c, const char *fn, const void *sbuf, void *rbuf,
              int count, MPI_Datatype type, MPI_Op op, int root,
              const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    enum ic_role role;
    int root_member;
    struct coll_temp t = {0};
    struct coll_sched *s = NULL;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_buf(c, fn, count, type);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_op(c, fn, op, type);
    if (status != MPI_SUCCESS)
        return status;
    int leader = role == IC_LEAF && gc_comm_group_rank(c) == 0;
    if (role == IC_LEAF)
        status = leader ? coll_temp_alloc(c, count, type, 1, &t) : MPI_SUCCESS;
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status =
            MPI_Reduce(sbuf, t.base, count, type, op, 0, c->inter->group_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if ((s = ic_sched_new(c, fn)) == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader)
        ic_send(s, root_member, TAG_REDUCE, t.base, count, type, -1);
    else if (role == IC_ROOT)
        ic_recv(s, ic_remote(c, 0), TAG_REDUCE, rbuf, count, type, -1);
    status = ic_sched_run(s);
cleanup:
    free(t.mem);
    return status;
}
