/*
 * Intercommunicator scatter (MPI 4.1 §6.2.2, §6.6: the root's i-th block
 * goes to rank i of the other group).  Cluster-aware design: the root
 * sends the whole buffer once to the receiving group's rank 0, which
 * scatters it with the grid scatter (MagPIe, Kielmann et al., PPoPP 1999,
 * §3: each site's blocks cross the WAN once), as MPICH's
 * intercommunicator scatter does.  Blocks travel packed, so the group's
 * scatter needs no type of the root's.
 *
 * Phases (one union schedule, every form):
 *  1. Root -> the receiving group's rank 0, packed.
 *  2. Scatter of the packed blocks in the receiving group (a group
 *     collective on group_comm, ic_group), unpacked by each member into
 *     recvcount x recvtype.
 *
 * Cost, m members of b bytes: T = L + m b/B_wan + T_scatter(m, b).  WAN:
 * all blocks once between the groups, each site's once inside the group.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

int ic_scatter(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
               MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
               int root, const struct coll_form *form)
{
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    struct ic_bundle b;
    int status = ic_bundle_make(s, fn, root, rcount, rtype, scount, stype, &b);
    int got = -1, scattered = -1;
    if (status == MPI_SUCCESS && b.leader)
        got = ic_recv(s, b.root_member, TAG_SCATTER, b.all,
                      (int)b.block * c->inter->local_size, MPI_BYTE, -1);
    else if (status == MPI_SUCCESS && b.role == IC_ROOT)
        ic_send(s, ic_remote(c, 0), TAG_SCATTER, sbuf,
                scount * c->inter->remote_size, stype, -1);
    if (status == MPI_SUCCESS && b.role == IC_LEAF)
        status = ic_group_blocks(s, fn, GC_COLL_SCATTER, &b, got, &scattered);
    if (status == MPI_SUCCESS && b.role == IC_LEAF)
        coll_sched_unpack(s, b.mine, b.block, rbuf, rcount, rtype, scattered);
    return ic_sched_finish(s, status, form);
}
