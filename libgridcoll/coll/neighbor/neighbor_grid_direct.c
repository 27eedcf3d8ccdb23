/*
 * Neighbourhood collectives (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w), their I and _init forms) on grid
 * communicators with a process topology: every rank exchanges its blocks
 * with its neighbours directly.
 *
 * Source: the definition in MPI-4.0 section 8.6 (each neighbourhood
 * collective is equivalent to sends to the destinations and receives
 * from the sources in the order gc_topo_neighbors gives); Hoefler and
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
 * Not done yet: bundling the messages of a site's ranks to one other
 * site into one relay transfer per step (fewer, larger WAN messages
 * when many ranks sit on the cut).
 */
#include <limits.h>

#include "engine/coll_sched.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"

int neighbor_grid_direct(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const struct coll_neighbor_args *n = &a->u.neighbor;
    int my_site = c->site[c->rank];
    for (int k = 0; k < n->indegree; k++) {
        int j = n->cart ? k ^ 1 : k;
        int peer = n->sources[j];
        if (peer == MPI_PROC_NULL || n->rcounts[j] == 0)
            continue;
        char *at = (char *)n->rbuf + n->rdispls[j];
        MPI_Datatype type = coll_sched_type(s, n->rtypes[j]);
        if (c->site[peer] == my_site) {
            coll_sched_recv(s, peer, TAG_NEIGHBOR, at, n->rcounts[j], type, -1);
            continue;
        }
        size_t len;
        int status = coll_packed_size(c, n->rcounts[j], type, &len);
        if (status != MPI_SUCCESS)
            return status;
        if (len > INT_MAX)
            return coll_arg_error(c, MPI_ERR_COUNT, a->fn,
                                  "a block to another site is over 2 GiB");
        unsigned char *bytes = coll_sched_alloc(s, len);
        if (bytes == NULL)
            return coll_no_mem(c);
        coll_sched_unpack(s, bytes, len, at, n->rcounts[j], type,
                          coll_sched_recv(s, peer, TAG_NEIGHBOR, bytes,
                                          (int)len, MPI_BYTE, -1));
    }
    for (int i = 0; i < n->outdegree; i++) {
        int peer = n->destinations[i];
        if (peer == MPI_PROC_NULL || n->scounts[i] == 0)
            continue;
        const char *at = (const char *)n->sbuf + n->sdispls[i];
        MPI_Datatype type = coll_sched_type(s, n->stypes[i]);
        if (c->site[peer] == my_site) {
            coll_sched_send(s, peer, TAG_NEIGHBOR, at, n->scounts[i], type, -1);
            continue;
        }
        size_t len;
        int status = coll_packed_size(c, n->scounts[i], type, &len);
        if (status != MPI_SUCCESS)
            return status;
        if (len > INT_MAX)
            return coll_arg_error(c, MPI_ERR_COUNT, a->fn,
                                  "a block to another site is over 2 GiB");
        unsigned char *bytes = coll_sched_alloc(s, len);
        if (bytes == NULL)
            return coll_no_mem(c);
        coll_sched_send(
            s, peer, TAG_NEIGHBOR, bytes, (int)len, MPI_BYTE,
            coll_sched_pack(s, at, n->scounts[i], type, bytes, len, -1));
    }
    return MPI_SUCCESS;
}
