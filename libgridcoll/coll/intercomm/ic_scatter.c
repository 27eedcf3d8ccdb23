/*
 * Intercommunicator scatter (MPI 4.1 §6.2.2, §6.6: the root's i-th block
 * goes to rank i of the other group).  Cluster-aware design: the root
 * sends the whole buffer once to the receiving group's rank 0, which
 * scatters it with the grid scatter (MagPIe, Kielmann et al., PPoPP 1999,
 * §3: each site's blocks cross the WAN once), as MPICH's
 * intercommunicator scatter does.  Blocks travel packed, so the group's
 * scatter needs no type of the root's.
 *
 * Phases:
 *  1. Root -> the receiving group's rank 0, packed (union schedule).
 *  2. Scatter of the packed blocks in the receiving group (group_comm),
 *     unpacked by each member into recvcount x recvtype.
 *
 * Cost, m members of b bytes: T = L + m b/B_wan + T_scatter(m, b).  WAN:
 * all blocks once between the groups, each site's once inside the group.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/intercomm/intercomm.h"

int ic_scatter(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
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
    if (status == MPI_SUCCESS && role == IC_ROOT)
        status = coll_check_buf(c, fn, scount, stype);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_check_buf(c, fn, rcount, rtype);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_packed_size(c, rcount, rtype, &block);
    if (status != MPI_SUCCESS)
        return status;
    if (block * (size_t)m > INT_MAX)
        return coll_arg_error(c, MPI_ERR_COUNT, fn, "message too large");
    int leader = role == IC_LEAF && gc_comm_group_rank(c) == 0;
    if (role == IC_LEAF) {
        mine = coll_alloc(block);
        all = leader ? coll_alloc(block * (size_t)m) : NULL;
        if (mine == NULL || (leader && all == NULL)) {
            status = coll_no_mem(c);
            goto cleanup;
        }
    }
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL) {
        status = MPI_ERR_NO_MEM;
        goto cleanup;
    }
    if (leader)
        ic_recv(s, root_member, TAG_SCATTER, all, (int)block * m, MPI_BYTE, -1);
    else if (role == IC_ROOT)
        ic_send(s, ic_remote(c, 0), TAG_SCATTER, sbuf,
                scount * c->inter->remote_size, stype, -1);
    status = ic_sched_run(s);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = MPI_Scatter(all, (int)block, MPI_BYTE, mine, (int)block,
                             MPI_BYTE, 0, c->inter->group_comm);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_unpack(c, mine, block, rbuf, rcount, rtype);
cleanup:
    free(mine);
    free(all);
    return status;
}
