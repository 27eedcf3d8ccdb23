/*
 * Intercommunicator allreduce (MPI 4.1 §6.2.2, §6.9.6: each group
 * receives the reduction of the other group's buffers).  Cluster-aware
 * design: MPICH's reduce-exchange-broadcast for intercommunicators, whose
 * group phases are the grid reduce and bcast (MagPIe, Kielmann et al.,
 * PPoPP 1999, §3: one partial result or copy per site link).
 *
 * Phases:
 *  1. Reduce of each group to its rank 0 (group_comm).
 *  2. The two rank 0 exchange their results (union schedule).
 *  3. Bcast of the other group's result in each group (group_comm).
 *
 * Cost, n bytes: T = T_reduce(n) + L + n/B_wan + T_bcast(n), the groups'
 * phases running side by side.  WAN: one result each way between the
 * groups, plus the groups' own reduce and bcast.
 */
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

int ic_allreduce(struct gc_comm *c, const char *fn, const void *sbuf,
                 void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                 const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    struct coll_temp t = {0};
    int leader = gc_comm_group_rank(c) == 0;
    int status = coll_check_buf(c, fn, count, type);
    if (status == MPI_SUCCESS)
        status = coll_check_op(c, fn, op, type);
    if (status == MPI_SUCCESS && leader)
        status = coll_temp_alloc(c, count, type, 1, &t);
    if (status == MPI_SUCCESS)
        status =
            MPI_Reduce(sbuf, t.base, count, type, op, 0, c->inter->group_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader) {
        ic_send(s, ic_remote(c, 0), TAG_ALLREDUCE, t.base, count, type, -1);
        ic_recv(s, ic_remote(c, 0), TAG_ALLREDUCE, rbuf, count, type, -1);
    }
    status = ic_sched_run(s);
    if (status == MPI_SUCCESS)
        status = MPI_Bcast(rbuf, count, type, 0, c->inter->group_comm);
cleanup:
    free(t.mem);
    return status;
}
