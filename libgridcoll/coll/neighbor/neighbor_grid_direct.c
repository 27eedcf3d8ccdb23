/*
 * Neighbourhood collectives (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w), their I and _init forms) on grid
 * communicators with a process topology: every rank exchanges its blocks
 * with its neighbours directly.
 *
 * Source: the definition in MPI-4.0 section 8.6 (each neighbourhood
 * collective is equivalent to sends to the destinations and receives
 * from the sources in the order coll_neighborhood gives them); Hoefler and
 * Träff, "Sparse collective operations for MPI", IPDPS 2009, section 3,
 * which introduced them and shows the direct exchange is optimal in
 * messages for a sparse pattern.
 *
 * Phases (one, all steps independent):
 *  - a neighbour on this site: PMPI_Isend / PMPI_Irecv of the typed
 *    block on the communicator's private site communicator;
 *  - a neighbour on another site: the block packed and sent over the
 *    relays; a received one unpacked once it is in.
 *  Blocks to (and from) one neighbour go in list order with one tag, so
 *  a neighbour that appears twice in a graph matches its blocks first to
 *  first, as MPICH does.  On a Cartesian grid the receives of each
 *  dimension are posted +1 neighbour first: where both neighbours are
 *  one process (a periodic dimension of size 1 or 2), its block for the
 *  -1 direction, sent first, then lands in the +1 slot, as MPI-4.0
 *  section 8.6 requires and MPICH 4.0.2 does.
 *
 * Cost, d neighbours of which d_w on other sites, m bytes a block:
 *   T = max(local exchange, L + d_w m / B)
 *   WAN: d_w messages per rank.  A halo exchange on a grid reordered by
 *   MPI_Cart_create(reorder = 1) (topo/topo_reorder.c) keeps d_w to the
 *   ranks on the cut between sites.
 *
 * neighbor_grid_bundled.c sends the blocks between two sites with many
 * cut edges in one relay message instead.
 */
#include "coll/neighbor/neighbor.h"

#include "coll/gc_coll.h"
#include "core/gc_comm.h"

int neighbor_direct_recv(struct coll_sched *s, const struct coll_args *a, int j)
{
    struct gc_comm *c = a->comm;
    const struct coll_neighbor_args *n = &a->u.neighbor;
    int peer = n->sources[j];
    if (peer == MPI_PROC_NULL || n->rcounts[j] == 0)
        return MPI_SUCCESS;
    char *at = (char *)n->rbuf + n->rdispls[j];
    MPI_Datatype type = coll_sched_type(s, n->rtypes[j]);
    if (c->site[peer] == c->site[c->rank]) {
        coll_sched_recv(s, peer, TAG_NEIGHBOR, at, n->rcounts[j], type, -1);
        return MPI_SUCCESS;
    }
    size_t len;
    int status = coll_packed_size(c, n->rcounts[j], type, &len);
    if (status != MPI_SUCCESS)
        return status;
    unsigned char *bytes = coll_sched_alloc(s, len);
    if (bytes == NULL)
        return coll_no_mem(c);
    coll_sched_unpack(s, bytes, len, at, n->rcounts[j], type,
                      coll_sched_recv(s, peer, TAG_NEIGHBOR, bytes,
                                      (MPI_Count)len, MPI_BYTE, -1));
    return MPI_SUCCESS;
}

int neighbor_direct_send(struct coll_sched *s, const struct coll_args *a, int i)
{
    struct gc_comm *c = a->comm;
    const struct coll_neighbor_args *n = &a->u.neighbor;
    int peer = n->destinations[i];
    if (peer == MPI_PROC_NULL || n->scounts[i] == 0)
        return MPI_SUCCESS;
    const char *at = (const char *)n->sbuf + n->sdispls[i];
    MPI_Datatype type = coll_sched_type(s, n->stypes[i]);
    if (c->site[peer] == c->site[c->rank]) {
        coll_sched_send(s, peer, TAG_NEIGHBOR, at, n->scounts[i], type, -1);
        return MPI_SUCCESS;
    }
    size_t len;
    int status = coll_packed_size(c, n->scounts[i], type, &len);
    if (status != MPI_SUCCESS)
        return status;
    unsigned char *bytes = coll_sched_alloc(s, len);
    if (bytes == NULL)
        return coll_no_mem(c);
    coll_sched_send(
        s, peer, TAG_NEIGHBOR, bytes, (MPI_Count)len, MPI_BYTE,
        coll_sched_pack(s, at, n->scounts[i], type, bytes, len, -1));
    return MPI_SUCCESS;
}

int neighbor_grid_direct(struct coll_sched *s, const struct coll_args *a)
{
    const struct coll_neighbor_args *n = &a->u.neighbor;
    int status = MPI_SUCCESS;
    for (int k = 0; k < n->indegree && status == MPI_SUCCESS; k++)
        status = neighbor_direct_recv(s, a, n->cart ? k ^ 1 : k);
    for (int i = 0; i < n->outdegree && status == MPI_SUCCESS; i++)
        status = neighbor_direct_send(s, a, i);
    return status;
}
