/*
 * Intercommunicator allreduce (MPI 4.1 §6.2.2, §6.9.6: each group
 * receives the reduction of the other group's buffers).  Cluster-aware
 * design: MPICH's reduce-exchange-broadcast for intercommunicators, whose
 * group phases are the grid reduce and bcast (MagPIe, Kielmann et al.,
 * PPoPP 1999, §3: one partial result or copy per site link).
 *
 * Phases (one union schedule, every form; group collectives on
 * group_comm, ic_group):
 *  1. Reduce of each group to its rank 0.
 *  2. The two rank 0 exchange their results.
 *  3. Bcast of the other group's result in each group.
 *
 * Cost, n bytes: T = T_reduce(n) + L + n/B_wan + T_bcast(n), the groups'
 * phases running side by side.  WAN: one result each way between the
 * groups, plus the groups' own reduce and bcast.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"

int ic_allreduce(struct gc_comm *c, const char *fn, const void *sbuf,
                 void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                 const struct coll_form *form)
{
    int reduced, got = -1, spread;
    void *result;
    int status = coll_check_buf(c, fn, count, type);
    if (status == MPI_SUCCESS)
        status = coll_check_op(c, fn, op, type);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    status = ic_group_reduce(s, fn, sbuf, count, type, op, &result, &reduced);
    if (status == MPI_SUCCESS && gc_comm_group_rank(c) == 0) {
        int pair[2] = {
            ic_send(s, ic_remote(c, 0), TAG_ALLREDUCE, result, count, type,
                    reduced),
            ic_recv(s, ic_remote(c, 0), TAG_ALLREDUCE, rbuf, count, type, -1)};
        got = coll_sched_join(s, pair, 2);
    }
    struct coll_args b = {.fn = fn};
    gc_packed_size(count, type, &b.bytes);
    b.u.bcast = (struct coll_bcast_args){rbuf, count, type, 0};
    if (status == MPI_SUCCESS)
        status = ic_group(s, GC_COLL_BCAST, &b, got, &spread);
    return ic_sched_finish(s, status, form);
}
