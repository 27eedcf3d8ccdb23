/*
 * Leader-based bcast inside a site through shared memory: Mamidala's
 * thesis, ch. 6.3.2 ("Leader-based Approach": one designated process per
 * node receives the network message and hands it to the node's other
 * processes through shared memory) and ch. 9.2.1 (the leader does all
 * inter-node communication; copying out of the shared buffer overlaps
 * the network transfers).  The local phase of bcast hier
 * (GRIDCOLL_BCAST_LOCAL=shm, steps run by bcast_common.c's plan runner)
 * and of allreduce hier's result (bcast_site_shm).
 *
 * Each node's shared data is a ring of K slots, K = D / 64 KiB (at least
 * 4; D = GRIDCOLL_SHM_BYTES, 4 MiB: 64 slots of 64 KiB).  The message goes
 * in chunks of at most s = min(segment, D/4) bytes, each in as many
 * consecutive slots as it needs, never wrapping round the ring.  Per
 * chunk, from the site's source (the root on its own site, the leader
 * that receives the WAN segments elsewhere):
 *   1. The source sends the chunk to every other node's leader (PMPI on
 *      the private site communicator), which receives it in place.
 *   2. The source, and each of those leaders once its chunk is in, waits
 *      until its node has copied out whatever used those slots on the
 *      previous lap, packs the chunk into them and posts.
 *   3. Every other member waits for that post, unpacks the slots into its
 *      buffer and posts.
 * Counters count slots: a chunk moves every member's counter to one past
 * its last slot, so "counter >= x" means "read everything before slot x".
 * Small messages take one slot each, so a source can run up to K of them
 * ahead of a reader that is off the processor.
 * A member finishes its chunks in order; several are in flight, so
 * members copy chunk k out while chunk k+1 arrives (from the WAN at a
 * leader, from the source at the other leaders) and is written.
 *
 * Cost, M bytes, N nodes of p members, α, β the site network's cost,
 * β_m memory's per byte, t_f a flag handoff; a pipeline of M/s chunks
 * whose slowest stage sets the pace:
 *   T = (s β_m + t_f + s β_m) + (α + s β)[N > 1]
 *       + (M/s - 1) max(s β_m, (N-1)(α + s β))
 *   against log p dependent message steps of a binomial tree through
 *   MPICH's shared-memory queues per segment, each copying the bytes
 *   twice.  No WAN traffic.
 *
 * When it wins: several members per node and messages from a few KiB,
 * where one writer and p-1 parallel readers beat log p hops; and a
 * network between nodes where the source's N-1 sends per chunk do not
 * become the bottleneck (a flat tree between node leaders, as MagPIe's
 * between sites).
 */
#include <sched.h>
#include <stdlib.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/*
 * Slots of 64 KiB, at least four: a chunk takes as many consecutive
 * slots as it needs, up to a quarter of the ring.  Small messages take
 * one slot each, so a source may run up to D / 64 KiB of them ahead of
 * its slowest reader (on a busy node a reader can be off the processor
 * for milliseconds); large ones go in chunks of up to D/4, few enough
 * handoffs, several in flight.
 */
#define SLOT_BYTES ((size_t)64 * 1024)
#define MIN_SLOTS  4
/* Chunks in flight in bcast_site_shm. */
#define WINDOW 64

static uint64_t slots(const struct coll_node *n)
{
    size_t k = n->bytes / SLOT_BYTES;
    return k > MIN_SLOTS ? k : MIN_SLOTS;
}

static size_t slot_bytes(const struct coll_node *n)
{
    return node_slot_bytes(n, (int)slots(n));
}

enum { ROLE_SOURCE, ROLE_LEADER, ROLE_MEMBER };

size_t node_bcast_chunk(const struct coll_node *n)
{
    return slot_bytes(n) * (size_t)(slots(n) / MIN_SLOTS);
}

static unsigned char *slot_of(const struct node_bcast *op)
{
    struct coll_node *n = op->node;
    return n->data + (size_t)(op->ticket % slots(n)) * slot_bytes(n);
}

static MPI_Count room(const struct node_bcast *op)
{
    return (MPI_Count)((op->end - op->ticket) * slot_bytes(op->node));
}

/* The node rank of local rank r (nodes are ordered by local rank). */
static int node_rank_of(const struct coll_node *n, int r)
{
    int rank = 0;
    for (int k = 0; k < r; k++)
        rank += n->node_of[k] == n->node_of[r];
    return rank;
}

int node_bcast_start(struct node_bcast *op, struct gc_comm *c,
                     struct coll_node *n, void *buf, MPI_Count count,
                     MPI_Datatype type, int root)
{
    MPI_Count len;
    int status = PMPI_Type_size_c(type, &len);
    if (status != MPI_SUCCESS)
        return status;
    uint64_t k = ((uint64_t)(len * count) + slot_bytes(n) - 1) / slot_bytes(n);
    k = k > 0 ? k : 1;
    *op = (struct node_bcast){.comm = c,
                              .node = n,
                              .buf = buf,
                              .count = count,
                              .type = type,
                              .root = root,
                              .after = n->issued};
    /* A chunk does not wrap round the ring: the slots left at its end are
     * skipped (every member skips the same ones). */
    if (n->issued % slots(n) + k > slots(n))
        n->issued += slots(n) - n->issued % slots(n);
    op->ticket = n->issued;
    op->end = n->issued += k;
    int root_node = n->node_of[root];
    if (c->local_rank == root)
        op->role = ROLE_SOURCE;
    else if (n->rank == 0 && n->index != root_node)
        op->role = ROLE_LEADER;
    else
        op->role = ROLE_MEMBER;
    /* A member reads what the source, or else its node's leader, wrote. */
    op->publisher = root_node == n->index ? node_rank_of(n, root) : 0;
    if (op->role == ROLE_MEMBER || n->nodes == 1)
        return MPI_SUCCESS;
    MPI_Comm p2p;
    status = coll_local_p2p(c, &p2p);
    if (status != MPI_SUCCESS)
        return status;
    op->reqs = malloc((size_t)n->nodes * sizeof *op->reqs);
    if (op->reqs == NULL)
        return MPI_ERR_NO_MEM;
    if (op->role == ROLE_LEADER)
        return PMPI_Irecv_c(buf, count, type, root, TAG_NODE_BCAST, p2p,
                            &op->reqs[op->nreqs++]);
    for (int j = 0; j < n->nodes && status == MPI_SUCCESS; j++)
        if (j != root_node)
            status = PMPI_Isend_c(buf, count, type, n->leader[j],
                                  TAG_NODE_BCAST, p2p, &op->reqs[op->nreqs++]);
    return status;
}

/* Source and leaders: the chunk into the slot once the slot is free. */
static int write_slot(struct node_bcast *op)
{
    struct coll_node *n = op->node;
    if (n->size > 1) {
        /* Every reader has read through slot end-1 of the previous lap. */
        uint64_t reused = op->end >= slots(n) ? op->end - slots(n) : 0;
        if (!node_all_reached(n, reused > n->fence ? reused : n->fence))
            return MPI_SUCCESS;
        MPI_Count position = 0;
        int status = PMPI_Pack_c(op->buf, op->count, op->type, slot_of(op),
                                 room(op), &position, gc_world.site_self);
        if (status != MPI_SUCCESS)
            return status;
    }
    op->posted = 1;
    return node_post_to(n, op->end);
}

static int test(struct node_bcast *op, int *done)
{
    struct coll_node *n = op->node;
    int status = MPI_SUCCESS, flag = 1;
    if (op->role == ROLE_MEMBER) {
        if (!node_reached(n, op->publisher, op->end))
            return MPI_SUCCESS;
        MPI_Count position = 0;
        status = PMPI_Unpack_c(slot_of(op), room(op), &position, op->buf,
                               op->count, op->type, gc_world.site_self);
        if (status == MPI_SUCCESS)
            status = node_post_to(n, op->end);
        *done = 1;
        return status;
    }
    if (op->role == ROLE_LEADER && !op->posted)
        status = PMPI_Test(&op->reqs[0], &flag, MPI_STATUS_IGNORE);
    if (status == MPI_SUCCESS && flag && !op->posted)
        status = write_slot(op);
    if (status != MPI_SUCCESS || !op->posted)
        return status;
    /* One PMPI_Test each (GCC misreads PMPI_Testall's
     * MPI_STATUSES_IGNORE as a too-small array); finished requests are
     * MPI_REQUEST_NULL and test as done. */
    int all = 1;
    for (int i = 0; i < op->nreqs && status == MPI_SUCCESS; i++) {
        status = PMPI_Test(&op->reqs[i], &flag, MPI_STATUS_IGNORE);
        all = all && flag;
    }
    *done = all;
    return status;
}

int node_bcast_test(struct node_bcast *op, int *done)
{
    *done = 0;
    /* Chunks are posted in the order they started: a member's posts
     * count them. */
    if (!op->posted && op->node->seq != op->after)
        return MPI_SUCCESS;
    int status = test(op, done);
    if (status != MPI_SUCCESS)
        *done = 1; /* given up: the caller reports the failure */
    if (*done) {
        free(op->reqs);
        op->reqs = NULL;
    }
    return status;
}

static int poll_start(void *state, void *arg)
{
    struct node_bcast *op = state;
    const struct node_bcast_args *a = arg;
    int status = node_bcast_start(op, a->comm, a->node, a->buf, a->count,
                                  a->type, a->root);
    if (status != MPI_SUCCESS) {
        free(op->reqs);
        op->reqs = NULL;
    }
    return status;
}

static int poll_test(void *state, int *done)
{
    return node_bcast_test(state, done);
}

const struct sched_poll_ops node_bcast_poll = {
    .state_size = sizeof(struct node_bcast),
    .start = poll_start,
    .test = poll_test,
};

int bcast_site_shm(struct gc_comm *c, void *buf, MPI_Count count,
                   MPI_Datatype type)
{
    struct node_bcast ops[WINDOW];
    struct coll_node *n;
    struct node_type t;
    if (c->local_size == 1 || count == 0)
        return MPI_SUCCESS;
    int status = node_type_get(type, &t);
    if (status == MPI_SUCCESS)
        status = coll_node_begin(c, 1, &n);
    if (status != MPI_SUCCESS || t.size == 0)
        return status;
    MPI_Count per = (MPI_Count)node_bcast_chunk(n) / t.size;
    /* An element larger than a slot: MPICH's bcast. */
    if (per == 0)
        return PMPI_Bcast_c(buf, count, type, 0, c->local);
    MPI_Count chunks = (count + per - 1) / per, started = 0, finished = 0;
    while (finished < chunks && status == MPI_SUCCESS) {
        while (started < chunks && started - finished < WINDOW &&
               status == MPI_SUCCESS) {
            MPI_Count first = started * per;
            status = node_bcast_start(
                &ops[started % WINDOW], c, n, (char *)buf + first * t.extent,
                count - first < per ? count - first : per, type, 0);
            started++;
        }
        /* Chunks finish in order; testing the oldest also drives MPICH. */
        int done = 0;
        if (status == MPI_SUCCESS)
            status = node_bcast_test(&ops[finished % WINDOW], &done);
        if (done)
            finished++;
        else
            sched_yield();
    }
    /* After a failure: what never finished. */
    for (; finished < started; finished++)
        free(ops[finished % WINDOW].reqs);
    return status;
}
