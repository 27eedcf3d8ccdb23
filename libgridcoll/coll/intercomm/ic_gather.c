/*
 * Intercommunicator gather (MPI 4.1 §6.2.2, §6.5: the root receives one
 * block from each member of the other group, in its rank order).
 * Cluster-aware design: the contributing group gathers with the grid
 * gather (MagPIe, Kielmann et al., PPoPP 1999, §3: one bundle per site
 * crosses the WAN), then its rank 0 sends the whole to the root once, as
 * MPICH's intercommunicator gather does.  Blocks travel packed, so the
 * group's gather needs no type of the root's.
 *
 * Phases (one union schedule, every form):
 *  1. Gather of the packed blocks of the contributing group to its rank 0
 *     (a group collective on group_comm, ic_group).
 *  2. That rank 0 -> the root, unpacked there as recvcount x remote_size.
 *
 * Cost, m members of b bytes: T = T_gather(m, b) + L + m b/B_wan.  WAN:
 * each site's blocks once inside the group, all of them once between the
 * groups.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

int ic_gather(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
              MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
              int root, const struct coll_form *form)
{
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    struct ic_bundle b;
    int status = ic_bundle_make(s, fn, root, scount, stype, rcount, rtype, &b);
    int gathered = -1;
    if (status == MPI_SUCCESS && b.role == IC_LEAF) {
        int packed =
            coll_sched_pack(s, sbuf, scount, stype, b.mine, b.block, -1);
        status = ic_group_blocks(s, fn, GC_COLL_GATHER, &b, packed, &gathered);
    }
    if (status == MPI_SUCCESS && b.leader)
        ic_send(s, b.root_member, TAG_GATHER, b.all,
                (int)b.block * c->inter->local_size, MPI_BYTE, gathered);
    else if (status == MPI_SUCCESS && b.role == IC_ROOT)
        ic_recv(s, ic_remote(c, 0), TAG_GATHER, rbuf,
                rcount * c->inter->remote_size, rtype, -1);
    return ic_sched_finish(s, status, form);
}
