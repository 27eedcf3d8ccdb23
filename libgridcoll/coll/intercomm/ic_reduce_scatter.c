/*
 * Intercommunicator reduce-scatter and reduce-scatter-block (MPI 4.1
 * §6.2.2, §6.10: the reduction of one group's vectors is scattered over
 * the other group by its recvcounts; both groups reduce the same number
 * of elements).  Cluster-aware design: MPICH's reduce-exchange-scatterv
 * for intercommunicators, whose group phases are the grid reduce and
 * scatterv (MagPIe, Kielmann et al., PPoPP 1999, §3: one partial result
 * or one site's part per site link).
 *
 * Phases (one union schedule, every form; group collectives on
 * group_comm, ic_group):
 *  1. Reduce of each group's vectors to its rank 0.
 *  2. The two rank 0 exchange their reductions.
 *  3. Scatterv of the other group's reduction in each group, by the
 *     group's recvcounts.
 *
 * Cost, N elements of size e: T = T_reduce(N e) + L + N e/B_wan +
 * T_scatterv(N e).  WAN: one reduction each way between the groups.
 */
#include <limits.h>

#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"

int ic_reduce_scatter(struct gc_comm *c, const char *fn, const void *sbuf,
                      void *rbuf, const int *rcounts, int rcount,
                      MPI_Datatype type, MPI_Op op,
                      const struct coll_form *form)
{
    int n = c->inter->local_size, me = gc_comm_group_rank(c);
    int leader = me == 0, total = 0, status = MPI_SUCCESS;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    /* The group's layout, as the scatterv of phase 3 takes it. */
    MPI_Count *counts = coll_sched_alloc(s, (size_t)n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, (size_t)n * sizeof *displs);
    if (counts == NULL || displs == NULL)
        status = coll_no_mem(c);
    for (int i = 0; i < n && status == MPI_SUCCESS; i++) {
        counts[i] = rcounts != NULL ? rcounts[i] : rcount;
        displs[i] = total;
        if (counts[i] < 0 || counts[i] > INT_MAX - total)
            status = gc_error(c->handle, MPI_ERR_COUNT, fn,
                              "invalid or too large recvcounts");
        else
            total += (int)counts[i];
    }
    if (status == MPI_SUCCESS)
        status = coll_check_buf(c, fn, total, type);
    if (status == MPI_SUCCESS)
        status = coll_check_op(c, fn, op, type);
    void *mine = NULL, *theirs = NULL;
    int reduced, got = -1, spread;
    if (status == MPI_SUCCESS)
        status = ic_group_reduce(s, fn, sbuf, total, type, op, &mine, &reduced);
    if (status == MPI_SUCCESS && leader)
        status = coll_sched_temp(s, total, type, &theirs);
    if (status == MPI_SUCCESS && leader) {
        int pair[2] = {ic_send(s, ic_remote(c, 0), TAG_REDUCE_SCATTER, mine,
                               total, type, reduced),
                       ic_recv(s, ic_remote(c, 0), TAG_REDUCE_SCATTER, theirs,
                               total, type, -1)};
        got = coll_sched_join(s, pair, 2);
    }
    struct coll_args b = {.fn = fn};
    if (rcounts == NULL) /* Reduce_scatter_block: one size everywhere */
        gc_packed_size(rcount, type, &b.bytes);
    b.u.rooted = (struct coll_rooted_args){
        .sbuf = theirs,
        .rbuf = rbuf,
        .block_count = status == MPI_SUCCESS ? counts[me] : 0,
        .block_type = type,
        .counts = counts,
        .displs = displs,
        .many_type = type,
        .root = 0,
        .uniform = rcounts == NULL,
    };
    if (status == MPI_SUCCESS)
        status = ic_group(s, GC_COLL_SCATTERV, &b, got, &spread);
    return ic_sched_finish(s, status, form);
}
