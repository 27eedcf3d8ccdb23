/*
 * Intercommunicator reduce (MPI 4.1 §6.2.2, §6.9.1: the root receives the
 * reduction of the other group's buffers, in that group's rank order).
 * Cluster-aware design: the contributing group reduces with the grid
 * reduce (MagPIe, Kielmann et al., PPoPP 1999, §3: one partial result per
 * site crosses the WAN, rank order kept for non-commutative operations),
 * then its rank 0 sends the result to the root once, as MPICH's
 * intercommunicator reduce does.
 *
 * Phases (one union schedule, every form):
 *  1. Reduce of the contributing group to its rank 0 (a group collective
 *     on group_comm, ic_group).
 *  2. That rank 0 -> the root, once it has the result.
 *
 * Cost, S sites of the contributing group, n bytes: T = T_reduce(S, n) +
 * L + n/B_wan.  WAN: S-1 partial results inside the group, one result
 * between the groups.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

int ic_reduce(struct gc_comm *c, const char *fn, const void *sbuf, void *rbuf,
              int count, MPI_Datatype type, MPI_Op op, int root,
              const struct coll_form *form)
{
    enum ic_role role;
    int root_member;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_buf(c, fn, count, type);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_op(c, fn, op, type);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    if (role == IC_ROOT) {
        ic_recv(s, ic_remote(c, 0), TAG_REDUCE, rbuf, count, type, -1);
    } else if (role == IC_LEAF) {
        void *result;
        int reduced;
        status =
            ic_group_reduce(s, fn, sbuf, count, type, op, &result, &reduced);
        if (status == MPI_SUCCESS && gc_comm_group_rank(c) == 0)
            ic_send(s, root_member, TAG_REDUCE, result, count, type, reduced);
    }
    return ic_sched_finish(s, status, form);
}
