/*
 * Intercommunicator allgather and allgatherv (MPI 4.1 §6.2.2, §6.7: each
 * member receives one block from every member of the other group, in its
 * rank order; allgatherv places them by recvcounts and displs).
 * Cluster-aware design: MPICH's gather-exchange-broadcast for
 * intercommunicators, whose group phases are the grid gather(v) and bcast
 * (MagPIe, Kielmann et al., PPoPP 1999, §3: each site's bundle, then one
 * copy per site, over the WAN).  Blocks travel packed: a group's gather
 * needs no type of the other group's.
 *
 * Phases:
 *  1. Gatherv of each group's packed blocks to its rank 0 (group_comm;
 *     the sizes first, allgatherv's may differ per member).
 *  2. The two rank 0 exchange their bundles (union schedule).
 *  3. Bcast of the other group's bundle in each group (group_comm), which
 *     every member unpacks block by block.
 *
 * Cost, bundles of N bytes: T = T_gather + L + N/B_wan + T_bcast(N).
 * WAN: each bundle once each way between the groups, plus the groups'
 * own gather and bcast.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

/* rcounts NULL: allgather, rcount from every remote member. */
static int gather_exchange_bcast(struct gc_comm *c, const char *fn,
                                 const void *sbuf, int scount,
                                 MPI_Datatype stype, void *rbuf, int rcount,
                                 const int *rcounts, const int *displs,
                                 MPI_Datatype rtype)
{
    int m = c->inter->local_size, r = c->inter->remote_size;
    int leader = gc_comm_group_rank(c) == 0;
    int *sizes = calloc((size_t)m + (size_t)r, sizeof *sizes);
    int *offsets = calloc((size_t)m, sizeof *offsets);
    void *mine = NULL, *ours = NULL, *theirs = NULL;
    size_t block = 0, ours_len = 0, theirs_len = 0, len;
    MPI_Aint lb, extent = 0;
    int status = coll_check_buf(c, fn, scount, stype);
    if (status == MPI_SUCCESS)
        status = coll_check_type(c, fn, rtype);
    if (status == MPI_SUCCESS)
        status = coll_packed_size(c, scount, stype, &block);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_get_extent(rtype, &lb, &extent);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (sizes == NULL || offsets == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    int *remote_sizes = sizes + m;
    for (int j = 0; j < r && status == MPI_SUCCESS; j++) {
        status =
            coll_packed_size(c, rcounts ? rcounts[j] : rcount, rtype, &len);
        remote_sizes[j] = (int)len;
        theirs_len += len;
    }
    int own = (int)block;
    if (status == MPI_SUCCESS)
        status = MPI_Gather(&own, 1, MPI_INT, sizes, 1, MPI_INT, 0,
                            c->inter->group_comm);
    for (int i = 0; i < m && leader; i++) {
        offsets[i] = (int)ours_len;
        ours_len += (size_t)sizes[i];
    }
    if (status == MPI_SUCCESS && (ours_len > INT_MAX || theirs_len > INT_MAX))
        status = coll_arg_error(c, MPI_ERR_COUNT, fn, "message too large");
    if (status != MPI_SUCCESS)
        goto cleanup;
    mine = coll_alloc(block);
    ours = coll_alloc(ours_len);
    theirs = coll_alloc(theirs_len);
    if (mine == NULL || ours == NULL || theirs == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    status = coll_pack(c, sbuf, scount, stype, mine, block);
    if (status == MPI_SUCCESS)
        status = MPI_Gatherv(mine, own, MPI_BYTE, ours, sizes, offsets,
                             MPI_BYTE, 0, c->inter->group_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader) {
        ic_send(s, ic_remote(c, 0), TAG_ALLGATHER, ours, (int)ours_len,
                MPI_BYTE, -1);
        ic_recv(s, ic_remote(c, 0), TAG_ALLGATHER, theirs, (int)theirs_len,
                MPI_BYTE, -1);
    }
    status = ic_sched_run(s);
    if (status == MPI_SUCCESS)
        status = MPI_Bcast(theirs, (int)theirs_len, MPI_BYTE, 0,
                           c->inter->group_comm);
    const char *in = theirs;
    for (int j = 0; j < r && status == MPI_SUCCESS; j++) {
        MPI_Aint at = rcounts ? displs[j] : (MPI_Aint)j * rcount;
        status = coll_unpack(c, in, (size_t)remote_sizes[j],
                             (char *)rbuf + at * extent,
                             rcounts ? rcounts[j] : rcount, rtype);
        in += remote_sizes[j];
    }
cleanup:
    free(sizes);
    free(offsets);
    free(mine);
    free(ours);
    free(theirs);
    return status;
}

int ic_allgather(struct gc_comm *c, const char *fn, const void *sbuf,
                 int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    return gather_exchange_bcast(c, fn, sbuf, scount, stype, rbuf, rcount, NULL,
                                 NULL, rtype);
}

int ic_allgatherv(struct gc_comm *c, const char *fn, const void *sbuf,
                  int scount, MPI_Datatype stype, void *rbuf,
                  const int *rcounts, const int *displs, MPI_Datatype rtype,
                  const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    int status = ic_check_counts(c, fn, c->inter->remote_size, rcounts);
    if (status != MPI_SUCCESS)
        return status;
    return gather_exchange_bcast(c, fn, sbuf, scount, stype, rbuf, 0, rcounts,
                                 displs, rtype);
}
