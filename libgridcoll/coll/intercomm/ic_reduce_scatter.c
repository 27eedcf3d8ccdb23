/*
 * Intercommunicator reduce-scatter and reduce-scatter-block (MPI 4.1
 * §6.2.2, §6.10: the reduction of one group's vectors is scattered over
 * the other group by its recvcounts; both groups reduce the same number
 * of elements).  Cluster-aware design: MPICH's reduce-exchange-scatterv
 * for intercommunicators, whose group phases are the grid reduce and
 * scatterv (MagPIe, Kielmann et al., PPoPP 1999, §3: one partial result
 * or one site's part per site link).
 *
 * Phases:
 *  1. Reduce of each group's vectors to its rank 0 (group_comm).
 *  2. The two rank 0 exchange their reductions (union schedule).
 *  3. Scatterv of the other group's reduction in each group, by the
 *     group's recvcounts (group_comm).
 *
 * Cost, N elements of size e: T = T_reduce(N e) + L + N e/B_wan +
 * T_scatterv(N e).  WAN: one reduction each way between the groups.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

int ic_reduce_scatter(struct gc_comm *c, const char *fn, const void *sbuf,
                      void *rbuf, const int *rcounts, int rcount,
                      MPI_Datatype type, MPI_Op op,
                      const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    int n = c->inter->local_size, leader = gc_comm_group_rank(c) == 0;
    struct coll_temp mine = {0}, theirs = {0};
    int *counts = malloc((size_t)n * sizeof *counts);
    int *displs = malloc((size_t)n * sizeof *displs);
    int total = 0, status = MPI_SUCCESS;
    if (counts == NULL || displs == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    for (int i = 0; i < n && status == MPI_SUCCESS; i++) {
        counts[i] = rcounts != NULL ? rcounts[i] : rcount;
        displs[i] = total;
        if (counts[i] < 0 || counts[i] > INT_MAX - total)
            status = coll_arg_error(c, MPI_ERR_COUNT, fn,
                                    "invalid or too large recvcounts");
        else
            total += counts[i];
    }
    if (status == MPI_SUCCESS)
        status = coll_check_buf(c, fn, total, type);
    if (status == MPI_SUCCESS)
        status = coll_check_op(c, fn, op, type);
    if (status == MPI_SUCCESS && leader)
        status = coll_temp_alloc(c, total, type, 1, &mine);
    if (status == MPI_SUCCESS && leader)
        status = coll_temp_alloc(c, total, type, 1, &theirs);
    if (status == MPI_SUCCESS)
        status = MPI_Reduce(sbuf, mine.base, total, type, op, 0,
                            c->inter->group_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader) {
        ic_send(s, ic_remote(c, 0), TAG_REDUCE_SCATTER, mine.base, total, type,
                -1);
        ic_recv(s, ic_remote(c, 0), TAG_REDUCE_SCATTER, theirs.base, total,
                type, -1);
    }
    status = ic_sched_run(s);
    if (status == MPI_SUCCESS)
        status = MPI_Scatterv(theirs.base, counts, displs, type, rbuf,
                              counts[gc_comm_group_rank(c)], type, 0,
                              c->inter->group_comm);
cleanup:
    free(mine.mem);
    free(theirs.mem);
    free(counts);
    free(displs);
    return status;
}
