/*
 * Intercommunicator allgather and allgatherv (MPI 4.1 §6.2.2, §6.7: each
 * member receives one block from every member of the other group, in its
 * rank order; allgatherv places them by recvcounts and displs).
 * Cluster-aware design: MPICH's gather-exchange-broadcast for
 * intercommunicators, whose group phases are the grid gather and bcast
 * (MagPIe, Kielmann et al., PPoPP 1999, §3: each site's bundle, then one
 * copy per site, over the WAN).  Blocks travel packed: a group's gather
 * needs no type of the other group's.
 *
 * Allgatherv's blocks differ in size, and only the other group knows
 * them (from its recvcounts) before the call runs, while a group
 * collective is built before (ic_group): its members send their blocks
 * straight to the other group's rank 0, which knows every size, as
 * ic_rooted_v_direct.c's gatherv; each block still crosses the WAN once.
 *
 * Phases (one union schedule, every form; group collectives on
 * group_comm, ic_group):
 *  1. Allgather: gather of each group's packed blocks to its rank 0;
 *     allgatherv: every member's packed block to the other group's rank 0.
 *  2. Allgather: the two rank 0 exchange their bundles.
 *  3. Bcast of the other group's bundle in each group, which every member
 *     unpacks block by block.
 *
 * Cost, bundles of N bytes from m members: allgather T = T_gather + L +
 * N/B_wan + T_bcast(N); allgatherv T = L + N/B_wan + T_bcast(N), with up
 * to m messages at the other group's rank 0.  WAN: each block once
 * between the groups (allgather: in one bundle per direction), plus the
 * groups' own gather and bcast.
 */
#include <limits.h>

#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"

/* rcounts NULL: allgather, rcount from every remote member. */
static int gather_exchange_bcast(struct gc_comm *c, const char *fn,
                                 const void *sbuf, int scount,
                                 MPI_Datatype stype, void *rbuf, int rcount,
                                 const int *rcounts, const int *displs,
                                 MPI_Datatype rtype,
                                 const struct coll_form *form)
{
    int r = c->inter->remote_size, leader = gc_comm_group_rank(c) == 0;
    size_t block = 0, theirs_len = 0, len;
    MPI_Aint lb, extent = 0;
    int status = coll_check_buf(c, fn, scount, stype);
    if (status == MPI_SUCCESS)
        status = coll_check_type(c, fn, rtype);
    if (status == MPI_SUCCESS)
        status = coll_packed_size(c, scount, stype, &block);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_get_extent(rtype, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    /* Where each remote member's block starts in their bundle. */
    size_t *at = coll_sched_alloc(s, ((size_t)r + 1) * sizeof *at);
    if (at == NULL)
        status = coll_no_mem(c);
    for (int j = 0; j < r && status == MPI_SUCCESS; j++) {
        status =
            coll_packed_size(c, rcounts ? rcounts[j] : rcount, rtype, &len);
        at[j] = theirs_len;
        theirs_len += len;
    }
    if (status == MPI_SUCCESS && theirs_len > INT_MAX)
        status = gc_error(c->handle, MPI_ERR_COUNT, fn, "message too large");
    if (status != MPI_SUCCESS)
        return ic_sched_finish(s, status, form);
    at[r] = theirs_len;
    struct ic_bundle b;
    char *theirs = coll_sched_alloc(s, theirs_len);
    status = ic_bundle_alloc(s, fn, leader && rcounts == NULL, block, &b);
    if (status == MPI_SUCCESS && theirs == NULL)
        status = coll_no_mem(c);
    int packed = coll_sched_pack(s, sbuf, scount, stype, b.mine, block, -1);
    int in = -1, gathered, spread;
    if (status == MPI_SUCCESS && rcounts == NULL) {
        status = ic_group_blocks(s, fn, GC_COLL_GATHER, &b, packed, &gathered);
        if (status == MPI_SUCCESS && leader) {
            int pair[2] = {ic_send(s, ic_remote(c, 0), TAG_ALLGATHER, b.all,
                                   (int)block * c->inter->local_size, MPI_BYTE,
                                   gathered),
                           ic_recv(s, ic_remote(c, 0), TAG_ALLGATHER, theirs,
                                   (int)theirs_len, MPI_BYTE, -1)};
            in = coll_sched_join(s, pair, 2);
        }
    } else if (status == MPI_SUCCESS) {
        ic_send(s, ic_remote(c, 0), TAG_ALLGATHER, b.mine, (int)block, MPI_BYTE,
                packed);
        for (int j = 0; leader && j < r; j++)
            ic_recv(s, ic_remote(c, j), TAG_ALLGATHER, theirs + at[j],
                    (int)(at[j + 1] - at[j]), MPI_BYTE, -1);
        if (leader)
            in = coll_sched_fence(s);
    }
    struct coll_args a = {.fn = fn, .bytes = theirs_len};
    a.u.bcast =
        (struct coll_bcast_args){theirs, (MPI_Count)theirs_len, MPI_BYTE, 0};
    if (status == MPI_SUCCESS)
        status = ic_group(s, GC_COLL_BCAST, &a, in, &spread);
    for (int j = 0; j < r && status == MPI_SUCCESS; j++) {
        MPI_Aint to = rcounts ? displs[j] : (MPI_Aint)j * rcount;
        coll_sched_unpack(s, theirs + at[j], at[j + 1] - at[j],
                          (char *)rbuf + to * extent,
                          rcounts ? rcounts[j] : rcount, rtype, spread);
    }
    return ic_sched_finish(s, status, form);
}

int ic_allgather(struct gc_comm *c, const char *fn, const void *sbuf,
                 int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, const struct coll_form *form)
{
    return gather_exchange_bcast(c, fn, sbuf, scount, stype, rbuf, rcount, NULL,
                                 NULL, rtype, form);
}

int ic_allgatherv(struct gc_comm *c, const char *fn, const void *sbuf,
                  int scount, MPI_Datatype stype, void *rbuf,
                  const int *rcounts, const int *displs, MPI_Datatype rtype,
                  const struct coll_form *form)
{
    int status = ic_check_counts(c, fn, c->inter->remote_size, rcounts);
    if (status != MPI_SUCCESS)
        return status;
    return gather_exchange_bcast(c, fn, sbuf, scount, stype, rbuf, 0, rcounts,
                                 displs, rtype, form);
}
