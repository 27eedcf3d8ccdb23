/*
 * Intercommunicator broadcast (MPI 4.1 §6.2.2, §6.4: the root's buffer
 * reaches every member of the other group; the rest of the root's group
 * takes no part).  Cluster-aware design: MagPIe's flat tree between sites
 * (Kielmann et al., PPoPP 1999, §3): the root sends the data once to a
 * coordinator on each site that has members of the receiving group (its
 * first member there), which broadcasts it among them with MPICH.
 *
 * Phases:
 *  1. Root -> the receiving group's first member on each of its sites
 *     (union schedule; over the WAN unless that site is the root's).
 *  2. Each coordinator -> its group's members on its site (site_comm,
 *     MPICH's broadcast).
 *
 * Cost, S sites of the receiving group, n bytes: T = L + (S-1) n/B_wan +
 * T_site(n): the root's S messages leave at once, so its WAN link carries
 * S-1 copies (one per other site) and every other site link one.
 */
#include "coll/intercomm/intercomm.h"

int ic_bcast(struct gc_comm *c, const char *fn, void *buf, int count,
             MPI_Datatype type, int root, const struct coll_form *form)
{
    int form_status = ic_blocking_only(c, fn, form);
    if (form_status != MPI_SUCCESS)
        return form_status;
    enum ic_role role;
    int root_member;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role != IC_IDLE)
        status = coll_check_buf(c, fn, count, type);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    int site_rank = 0;
    PMPI_Comm_rank(c->inter->site_comm, &site_rank);
    if (role == IC_ROOT) {
        int seen[GC_MAX_SITES] = {0};
        for (int j = 0; j < c->inter->remote_size; j++) {
            int member = ic_remote(c, j);
            if (!seen[c->site[member]]++)
                ic_send(s, member, TAG_BCAST, buf, count, type);
        }
    } else if (role == IC_LEAF && site_rank == 0) {
        ic_recv(s, root_member, TAG_BCAST, buf, count, type);
    }
    status = ic_sched_run(s);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_local_bcast(buf, count, type, 0, c->inter->site_comm);
    return status;
}
