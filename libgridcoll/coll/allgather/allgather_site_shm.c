/*
 * Shared-memory allgather inside a site: Mamidala's thesis, ch. 6.2
 * ("RDMA and Shared Memory based Collectives": one shared buffer per node
 * for both the intra-node and the network transfers, network operations
 * between one leader per node only, copy-out overlapped with the network
 * steps) and ch. 9.2.1 (the leader does all inter-node communication,
 * the others copy out of the shared buffer as the data arrives).  The
 * node layer (node_shm.h) gives the nodes, their leaders and the buffer.
 *
 * Phases, per round (one round when every block fits in its slot of
 * GRIDCOLL_SHM_BYTES / P; otherwise round r moves bytes r s .. (r+1) s of
 * every block, s the slot size):
 *   0. Every member waits until the node has finished reading the
 *      previous round; each leader posts its receives for the other
 *      nodes' blocks, straight into their slots.
 *   1. Every member copies its block into its slot and posts.
 *   2. Once the node's blocks are all in, its leader sends them (one
 *      message, a datatype over the slots) to every other node's leader,
 *      PMPI on the leaders' communicator; meanwhile every member copies
 *      its own node's blocks out (the overlap of ch. 6.2: copy-out runs
 *      while the network works).
 *   3. The leader publishes each other node's blocks as their message
 *      completes (in arrival order, in a shared word), and every member
 *      copies them out while the next ones still travel.
 *   4. Every member posts that it is done with the buffer.
 * One node (a site on one machine): phases 0, 1, 2's copy-out and 4.
 * Nodes need not be contiguous ranges of ranks, blocks may differ in size
 * or be empty (empty nodes are published at once, without a message).
 *
 * Cost, P members on N nodes of p members, m bytes per block, α, β the
 * network's and β_m memory's cost per byte, t_f a flag handoff:
 *   T = m β_m + t_f + max((N-1)(α + p m β), (p-1) m β_m)
 *       + p m β_m + t_f                                    (one round)
 *   each member copies its block in once and every other block out
 *   once: P m bytes of copies per member, where a point-to-point
 *   schedule through MPICH's shared memory copies every received byte
 *   twice (into and out of its queue) and takes P-1 or log P dependent
 *   steps; across nodes each block crosses the network once per other
 *   node, N(N-1) leader messages per round.  No WAN traffic.
 *
 * When it wins: several members per node.  The members of a node wait
 * for one flag instead of log P or P-1 message rounds, which is what
 * counts for short blocks on busy nodes, and copy half the bytes an
 * MPICH schedule copies, which counts for long ones.  A site of
 * one-member nodes gains nothing over the leaders' direct exchange.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/allgather_site.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"

enum { LEADER_TAG = 1 };

struct round {
    const struct site_blocks *b;
    struct coll_node *n;
    size_t slot;   /* bytes per block and round */
    MPI_Aint from; /* offset of this round in every block */
};

static MPI_Aint piece(const struct round *r, int k, MPI_Aint *start)
{
    MPI_Aint len = r->b->off[k + 1] - r->b->off[k];
    *start = r->from < len ? r->from : len;
    MPI_Aint end =
        r->from + (MPI_Aint)r->slot < len ? r->from + (MPI_Aint)r->slot : len;
    return end - *start;
}

/* Node j's pieces of this round as one datatype over the data; `empty`
 * when there are none (then no type is made). */
static int node_type(const struct round *r, int j, MPI_Datatype *type,
                     int *empty)
{
    int p = r->b->size, runs = 0;
    MPI_Count *lens = malloc(2 * (size_t)p * sizeof *lens);
    if (lens == NULL)
        return MPI_ERR_NO_MEM;
    MPI_Count *displs = lens + p;
    for (int k = 0; k < p; k++) {
        MPI_Aint start, len = piece(r, k, &start);
        if (r->n->node_of[k] != j || len == 0)
            continue;
        MPI_Aint at = (MPI_Aint)((size_t)k * r->slot);
        if (runs > 0 && displs[runs - 1] + lens[runs - 1] == at)
            lens[runs - 1] += len;
        else {
            displs[runs] = at;
            lens[runs++] = len;
        }
    }
    int status = MPI_SUCCESS;
    *empty = runs == 0;
    if (runs > 0)
        status =
            PMPI_Type_create_hindexed_c(runs, lens, displs, MPI_BYTE, type);
    if (runs > 0 && status == MPI_SUCCESS) {
        status = PMPI_Type_commit(type);
        if (status != MPI_SUCCESS)
            PMPI_Type_free(type);
    }
    free(lens);
    return status;
}

/* Node j's blocks, other than this member's own, out of the buffer. */
static void copy_out(const struct round *r, int j)
{
    for (int k = 0; k < r->b->size; k++) {
        MPI_Aint start, len = piece(r, k, &start);
        if (r->n->node_of[k] == j && k != r->b->rank && len > 0)
            memcpy(r->b->buf + r->b->off[k] + start,
                   r->n->data + (size_t)k * r->slot, (size_t)len);
    }
}

/* Post one message to or from each other node's leader; empty ones are
 * skipped and stay MPI_REQUEST_NULL. */
static int exchange(const struct round *r, MPI_Request *reqs, int send)
{
    struct coll_node *n = r->n;
    MPI_Datatype type;
    int empty, status = MPI_SUCCESS;
    for (int j = 0; j < n->nodes; j++)
        reqs[j] = MPI_REQUEST_NULL;
    if (send) {
        status = node_type(r, n->index, &type, &empty);
        if (status != MPI_SUCCESS || empty)
            return status;
    }
    for (int j = 0; j < n->nodes && status == MPI_SUCCESS; j++) {
        if (j == n->index)
            continue;
        if (!send) {
            status = node_type(r, j, &type, &empty);
            if (status != MPI_SUCCESS || empty)
                continue;
        }
        status = send ? PMPI_Isend(n->data, 1, type, j, LEADER_TAG, n->leaders,
                                   &reqs[j])
                      : PMPI_Irecv(n->data, 1, type, j, LEADER_TAG, n->leaders,
                                   &reqs[j]);
        /* MPI keeps a type alive while operations use it. */
        if (!send)
            PMPI_Type_free(&type);
    }
    if (send)
        PMPI_Type_free(&type);
    return status;
}

/* The leader: publish every other node's blocks as they arrive. */
static int leader_arrivals(const struct round *r, MPI_Request *recvs)
{
    struct coll_node *n = r->n;
    int arrived = 0, status = MPI_SUCCESS;
    for (int j = 0; j < n->nodes && status == MPI_SUCCESS; j++)
        if (j != n->index && recvs[j] == MPI_REQUEST_NULL) {
            n->published[arrived++] = j;
            status = node_post(n);
        }
    while (arrived < n->nodes - 1 && status == MPI_SUCCESS) {
        int j;
        status = PMPI_Waitany(n->nodes, recvs, &j, MPI_STATUS_IGNORE);
        if (status != MPI_SUCCESS)
            break;
        n->published[arrived++] = j;
        status = node_post(n);
        copy_out(r, j);
    }
    return status;
}

static int run_round(const struct round *r, MPI_Request *recvs,
                     MPI_Request *sends)
{
    const struct site_blocks *b = r->b;
    struct coll_node *n = r->n;
    int leader = n->rank == 0, status = node_wait_all(n, n->seq);
    if (status == MPI_SUCCESS && leader)
        status = exchange(r, recvs, 0);
    MPI_Aint start, len = piece(r, b->rank, &start);
    if (status == MPI_SUCCESS) {
        memcpy(n->data + (size_t)b->rank * r->slot,
               b->buf + b->off[b->rank] + start, (size_t)len);
        status = node_post(n);
    }
    if (status == MPI_SUCCESS)
        status = node_wait_all(n, n->seq);
    if (status == MPI_SUCCESS && leader)
        status = exchange(r, sends, 1);
    if (status != MPI_SUCCESS)
        return status;
    copy_out(r, n->index);
    if (leader) {
        status = leader_arrivals(r, recvs);
        /* The sends read the buffer: finished before the last post. */
        int wait_status = coll_local_waitall(n->nodes, sends);
        if (status == MPI_SUCCESS)
            status = wait_status;
    } else {
        uint64_t base = n->seq;
        for (int a = 0; a < n->nodes - 1 && status == MPI_SUCCESS; a++) {
            status = node_wait(n, 0, base + 1 + (uint64_t)a);
            if (status == MPI_SUCCESS) {
                copy_out(r, n->published[a]);
                status = node_post(n);
            }
        }
    }
    return status == MPI_SUCCESS ? node_post(n) : status;
}

int allgather_site_shm(const struct site_blocks *b)
{
    struct coll_node *n;
    int status = coll_node_begin(b->grid, 0, &n);
    if (status != MPI_SUCCESS)
        return status;
    struct round r = {.b = b, .n = n, .slot = node_slot_bytes(n, b->size)};
    if (r.slot == 0)
        r.slot = n->bytes / (size_t)b->size;
    if (r.slot == 0)
        return MPI_ERR_NO_MEM; /* more members than bytes of shared data */
    MPI_Aint longest = 0;
    for (int k = 0; k < b->size; k++)
        if (b->off[k + 1] - b->off[k] > longest)
            longest = b->off[k + 1] - b->off[k];
    MPI_Request *reqs = malloc(2 * (size_t)n->nodes * sizeof *reqs);
    if (reqs == NULL)
        return MPI_ERR_NO_MEM;
    for (r.from = 0; r.from < longest && status == MPI_SUCCESS;
         r.from += (MPI_Aint)r.slot)
        status = run_round(&r, reqs, reqs + n->nodes);
    free(reqs);
    return status;
}
