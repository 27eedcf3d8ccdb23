/*
 * Intercommunicator gather (MPI 4.1 §6.2.2, §6.5: the root receives one
 * block from each member of the other group, in its rank order).
 * Cluster-aware design: the contributing group gathers with the grid
 * gather (MagPIe, Kielmann et al., PPoPP 1999, §3: one bundle per site
 * crosses the WAN), then its rank 0 sends the whole to the root once, as
 * MPICH's intercommunicator gather does.  Blocks travel packed, so the
 * group's gather needs no type of the root's.
 *
 * Phases:
 *  1. Gather of the packed blocks of the contributing group to its rank 0
 *     (group_comm).
 *  2. That rank 0 -> the root, unpacked there as recvcount x remote_size
 *     (union schedule).
 *
 * Cost, m members of b bytes: T = T_gather(m, b) + L + m b/B_wan.  WAN:
 * each site's blocks once inside the group, all of them once between the
 * groups.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

int ic_gather(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
              MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
              int root, const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    enum ic_role role;
    int root_member, m = c->inter->local_size;
    size_t block = 0;
    void *mine = NULL, *all = NULL;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_check_buf(c, fn, scount, stype);
    if (status == MPI_SUCCESS && role == IC_ROOT)
        status = coll_check_buf(c, fn, rcount, rtype);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_packed_size(c, scount, stype, &block);
    if (status != MPI_SUCCESS)
        return status;
    int leader = role == IC_LEAF && gc_comm_group_rank(c) == 0;
    if (block * (size_t)m > INT_MAX)
        return coll_arg_error(c, MPI_ERR_COUNT, fn, "message too large");
    if (role == IC_LEAF) {
        mine = coll_alloc(block);
        all = leader ? coll_alloc(block * (size_t)m) : NULL;
        if (mine == NULL || (leader && all == NULL)) {
            status = coll_no_mem(c);
            goto cleanup;
        }
        status = coll_pack(c, sbuf, scount, stype, mine, block);
        if (status == MPI_SUCCESS)
            status = MPI_Gather(mine, (int)block, MPI_BYTE, all, (int)block,
                                MPI_BYTE, 0, c->inter->group_comm);
        if (status != MPI_SUCCESS)
            goto cleanup;
    }
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader)
        ic_send(s, root_member, TAG_GATHER, all, (int)block * m, MPI_BYTE, -1);
    else if (role == IC_ROOT)
        ic_recv(s, ic_remote(c, 0), TAG_GATHER, rbuf,
                rcount * c->inter->remote_size, rtype, -1);
    status = ic_sched_run(s);
cleanup:
    free(mine);
    free(all);
    return status;
}
