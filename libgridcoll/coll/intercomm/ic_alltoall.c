/*
 * Intercommunicator alltoall, alltoallv and alltoallw (MPI 4.1 §6.2.2,
 * §6.8: member i of one group sends its j-th block to member j of the
 * other group and receives that member's i-th block).  Design: direct,
 * as MPICH's intercommunicator alltoall (pairwise): every block is
 * distinct, so nothing can be combined, and each crosses the WAN once
 * whatever the route; a per-site bundling (MagPIe, Kielmann et al., PPoPP
 * 1999, §3; Steffenel's LG, §VI.B) saves WAN latencies, not bytes, at the
 * price of two more local phases.
 *
 * Phases: one, every member's send to and receive from every member of
 * the other group, posted together (union schedule: relays between sites,
 * MPICH inside one; the engine keeps the number in flight bounded).
 *
 * Cost, m x r members, blocks of b bytes: T = L + m r b/B_wan on the
 * narrowest link between the groups.  WAN: every block once.
 */
#include "coll/intercomm/intercomm.h"
#include "core/gc_comm.h"

/* Where block j of `x` starts, and its count and type. */
static int block_of(const struct ic_blocks *x, int j, char **at, int *count,
                    MPI_Datatype *type)
{
    MPI_Aint lb, extent = 1;
    *type = x->types != NULL ? x->types[j] : x->type;
    *count = x->counts != NULL ? x->counts[j] : x->count;
    if (x->types == NULL) {
        int status = PMPI_Type_get_extent(*type, &lb, &extent);
        if (status != MPI_SUCCESS)
            return status;
    }
    MPI_Aint displ = x->displs != NULL ? x->displs[j] : (MPI_Aint)j * *count;
    *at = (char *)x->buf + displ * extent;
    return MPI_SUCCESS;
}

int ic_alltoall(struct gc_comm *c, const char *fn, const struct ic_blocks *send,
                const struct ic_blocks *recv, const struct coll_form *form)
{
    int r = c->inter->remote_size, status = MPI_SUCCESS;
    for (int j = 0; j < r && status == MPI_SUCCESS; j++) {
        char *at;
        int count;
        MPI_Datatype type;
        status = block_of(send, j, &at, &count, &type);
        if (status == MPI_SUCCESS)
            status = coll_check_buf(c, fn, count, type);
        if (status == MPI_SUCCESS)
            status = block_of(recv, j, &at, &count, &type);
        if (status == MPI_SUCCESS)
            status = coll_check_buf(c, fn, count, type);
    }
    if (status != MPI_SUCCESS)
        return status;
    struct coll_sched *s = ic_sched_new(c, fn);
    if (s == NULL)
        return MPI_ERR_NO_MEM;
    for (int j = 0; j < r; j++) {
        /* block_of succeeded for every block above */
        char *at = NULL;
        int count = 0;
        MPI_Datatype type = MPI_DATATYPE_NULL;
        block_of(recv, j, &at, &count, &type);
        ic_recv(s, ic_remote(c, j), TAG_ALLTOALL, at, count, type, -1);
        block_of(send, j, &at, &count, &type);
        ic_send(s, ic_remote(c, j), TAG_ALLTOALL, at, count, type, -1);
    }
    return ic_sched_finish(s, MPI_SUCCESS, form);
}
