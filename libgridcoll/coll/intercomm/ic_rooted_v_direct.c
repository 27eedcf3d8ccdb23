/*
 * Intercommunicator gatherv and scatterv (MPI 4.1 §6.2.2, §6.5, §6.6:
 * blocks of sizes only the root knows, between the root and each member
 * of the other group).  Design: direct, as MPICH's intercommunicator
 * gatherv and scatterv: every member of the other group exchanges its
 * block with the root.  Bundling per site (MagPIe, Kielmann et al., PPoPP
 * 1999, §3) would first need every member's size at its site's
 * coordinator, one more WAN round before the data; the direct form moves
 * the same bytes over the root's link, one message per member.
 *
 * Phases: one, the root's receives (sends) of every block and each
 * member's send (receive) of its own (union schedule).
 *
 * Cost, m members of b_i bytes: T = L + sum b_i/B_wan over the root's
 * link.  WAN: each block once.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

/* Gatherv (`to_root`) or scatterv: rooted side counts/displs x type at
 * buf, the other side count x ltype at lbuf. */
static int direct(struct gc_comm *c, const char *fn, int to_root, void *buf,
                  const int *counts, const int *displs, MPI_Datatype type,
                  void *lbuf, int count, MPI_Datatype ltype, int root,
                  const struct coll_form *form)
{
    enum ic_role role;
    int root_member;
    MPI_Aint lb, extent;
    int status = ic_role_of(c, fn, root, &role, &root_member);
    if (status == MPI_SUCCESS && role == IC_LEAF)
        status = coll_check_buf(c, fn, count, ltype);
    if (status == MPI_SUCCESS && role == IC_ROOT)
        status = ic_check_counts(c, fn, c->inter->remote_size, counts);
    if (status == MPI_SUCCESS && role == IC_ROOT)
        status = coll_check_type(c, fn, type);
    if (status == MPI_SUCCESS && role == IC_ROOT)
        status = PMPI_Type_get_extent(type, &lb, &extent);
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    for (int j = 0; role == IC_ROOT && j < c->inter->remote_size; j++) {
        char *block = (char *)buf + (MPI_Aint)displs[j] * extent;
        if (to_root)
            ic_recv(s, ic_remote(c, j), TAG_GATHER, block, counts[j], type, -1);
        else
            ic_send(s, ic_remote(c, j), TAG_SCATTER, block, counts[j], type,
                    -1);
    }
    if (role == IC_LEAF && to_root)
        ic_send(s, root_member, TAG_GATHER, lbuf, count, ltype, -1);
    else if (role == IC_LEAF)
        ic_recv(s, root_member, TAG_SCATTER, lbuf, count, ltype, -1);
    return ic_sched_finish(s, MPI_SUCCESS, form);
}

int ic_gatherv(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
               MPI_Datatype stype, void *rbuf, const int *rcounts,
               const int *displs, MPI_Datatype rtype, int root,
               const struct coll_form *form)
{
    return direct(c, fn, 1, rbuf, rcounts, displs, rtype, (void *)sbuf, scount,
                  stype, root, form);
}

int ic_scatterv(struct gc_comm *c, const char *fn, const void *sbuf,
                const int *scounts, const int *displs, MPI_Datatype stype,
                void *rbuf, int rcount, MPI_Datatype rtype, int root,
                const struct coll_form *form)
{
    return direct(c, fn, 0, (void *)sbuf, scounts, displs, stype, rbuf, rcount,
                  rtype, root, form);
}
