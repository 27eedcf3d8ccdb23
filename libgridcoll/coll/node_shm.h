/*
 * The node layer: shared-memory steps inside a site (Mamidala, "Scalable
 * and High Performance Collective Communication for Next Generation
 * Multicore InfiniBand Clusters", thesis, ch. 6.2-6.3 and 9.2), and the
 * node-level local phases built on it:
 *   allgather_site_shm.c  intra-site allgather strategy `shm`
 *   bcast_site_shm.c      site bcast through node leaders and shared memory
 *   reduce_site_shm.c     cyclic parallel reduction in shared memory
 *
 * Per grid communicator, made on first use by every member of this site
 * (like coll_local_p2p) and freed with the communicator (gc_comm_release):
 *   - `comm`: the site's members on this node, from PMPI_Comm_split_type
 *     (local, MPI_COMM_TYPE_SHARED), ordered by local rank; with
 *     GRIDCOLL_NODE_SIZE=k (a testing knob) that node is cut further into
 *     virtual nodes of up to k consecutive members (k,cyclic: every
 *     ceil(s/k)-th member, so nodes interleave in rank order), so that one
 *     machine can run the leaders' network steps;
 *   - `leaders`: one leader per node (its lowest local rank), ordered by
 *     local rank, so local rank 0 is rank 0 there;
 *   - one shared segment per node, PMPI_Win_allocate_shared, made by the
 *     first call that moves data through it: GRIDCOLL_SHM_BYTES of data
 *     (default 4 MiB) plus a control area, a 64-byte flag word per member
 *     and a few words the leader publishes.  Larger messages go through
 *     the data in chunks.
 *
 * Synchronization.  The window lives in one passive-target epoch
 * (PMPI_Win_lock_all with MPI_MODE_NOCHECK, from creation to free), so
 * that PMPI_Win_sync is allowed at any time.  Every member owns one flag
 * word, a 64-bit counter only it writes, which only grows: node_post()
 * is PMPI_Win_sync (the memory barrier MPI's unified model asks for
 * after the stores, MPI 4.0 section 12.7) and then a C11 release store
 * of the next value; waiting is an acquire load that sees the value or a
 * larger one, then PMPI_Win_sync again before the data is read.  The
 * release/acquire pair orders the data stores before the loads for the
 * compiler and the CPU, the two PMPI_Win_sync calls do the same for MPI.
 * No counter is reset, so a flag can never be mistaken for an older one.
 *
 * Counting: within one operation every member of a node posts the same
 * number of times (a member with nothing to say still posts), so all
 * counters are equal between operations.  A member that starts an
 * operation records its counter as `fence`; before it writes into the
 * shared data it waits until every member's counter has reached the
 * fence (everyone has finished reading the previous operation), and
 * within the operation it waits for the posts the protocol names.
 * Bcasts are the exception: they use the data as a ring of slots and
 * count slots, a chunk of k slots moving every counter on by k; a chunk
 * waits for the members to have read what used its slots before, so
 * back-to-back bcasts keep the fence of the first of them and overlap.
 *
 * Waiting yields the processor (on an oversubscribed node the member
 * being waited for needs it) and drives MPICH's progress engine (a
 * message this member received may still owe its sender an
 * acknowledgement, and the sender may be the member it waits for).
 *
 * Choices: the site level of bcast's, allreduce's and allgather's tables
 * (gc_coll_select.c) has `shm`, forced by GRIDCOLL_BCAST_LOCAL,
 * GRIDCOLL_ALLREDUCE_LOCAL and GRIDCOLL_ALLGATHER_LOCAL.  By default
 * allreduce and allgather use shm on sites that are one node of several
 * members (coll_node_default), bcast from 256 KiB (measured,
 * docs/algorithms/README.md).  Every member of a site sees the same environment
 * and the same nodes, so a site's members agree.
 */
#ifndef NODE_SHM_H
#define NODE_SHM_H

#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include <stdint.h>
#include <stdio.h>

struct node_flag;

struct coll_node {
    MPI_Comm comm;    /* this site's members on this node */
    MPI_Comm leaders; /* the site's node leaders; MPI_COMM_NULL elsewhere */
    int size;         /* members of this node */
    int rank;         /* in comm; 0 is the node's leader */
    int nodes;        /* nodes of the site */
    int index;        /* this node's rank in `leaders` */
    int max_size;     /* the site's largest node */
    int contiguous;   /* every node's members are consecutive local ranks */
    int *node_of;     /* [local_size] node index of each local rank */
    int *leader;      /* [nodes] local rank of each node's leader */
    MPI_Win win;
    struct node_flag *flags; /* [size], shared */
    int *published;          /* [nodes], shared: written by the leader */
    unsigned char *data;     /* shared data, `bytes` long, 64-byte aligned */
    size_t bytes;
    uint64_t seq;    /* this member's last posted value */
    uint64_t fence;  /* seq when the current operation started (for a
                        run of bcast-slot operations: when the run did) */
    uint64_t issued; /* bcast slots handed out (bcast_site_shm.c) */
    int slots;       /* the last operation used the bcast slots only */
};

/*
 * c's node layer, its communicators made on first use (every member of
 * this site must be in the same collective call then).  Errors return
 * (MPI error codes, not reported).
 */
int coll_node_get(struct gc_comm *c, struct coll_node **node);
/*
 * The same with its shared segment (made on first use, by every member
 * of this site), and a new operation started.  `slots`: the operation
 * only uses the bcast slots (bcast_site_shm.c), whose chunks wait for
 * the slot they reuse, so it need not wait for a previous such operation
 * to finish everywhere; every other operation waits for the node.
 */
int coll_node_begin(struct gc_comm *c, int slots, struct coll_node **node);
/*
 * The default of the shm local phases: *shm = 1 when this site has
 * several members, all on one node (where the shm phases were measured
 * to win, docs/algorithms/README.md).  Makes the node communicators (every
 * member of this site calls it together); errors through c's handler.
 */
int coll_node_default(struct gc_comm *c, const char *fn, int *shm);

/* The node layer's variables (gridcoll-info). */
void coll_node_print(FILE *out);

/* Publish the next counter value: what this member wrote is visible. */
int node_post(struct coll_node *n);
/* The same, the counter jumping to `value` (> seq). */
int node_post_to(struct coll_node *n, uint64_t value);
/* 1 when `member`'s counter reached `value` (the data it covers is then
 * readable), else 0. */
int node_reached(struct coll_node *n, int member, uint64_t value);
/* The same for every other member of the node. */
int node_all_reached(struct coll_node *n, uint64_t value);
/* Blocking forms. */
int node_wait(struct coll_node *n, int member, uint64_t value);
int node_wait_all(struct coll_node *n, uint64_t value);

/* The data split into `slots` parts, each a multiple of 64 bytes (0 when
 * the data is too small for that many). */
size_t node_slot_bytes(const struct coll_node *n, int slots);

/*
 * Elements of a datatype as they lie in memory: element 0 at `at`, the
 * bytes n elements touch are at + lo(n) .. at + lo(n) + span(n).
 */
struct node_type {
    MPI_Datatype type;
    MPI_Aint extent;
    MPI_Aint true_lb, true_extent;
    MPI_Count size;
    int plain; /* n elements are n * size bytes from `at` */
};
int node_type_get(MPI_Datatype type, struct node_type *t);
/* Bytes n >= 1 elements span; the offset of their lowest byte. */
MPI_Aint node_type_span(const struct node_type *t, MPI_Aint n);
MPI_Aint node_type_lo(const struct node_type *t, MPI_Aint n);
/* The most elements whose span fits in `bytes` (0: not even one). */
MPI_Aint node_type_fit(const struct node_type *t, size_t bytes);
/* n elements from `from` to `to`, both laid out as the type says;
 * `bounce` holds n * size bytes unless the type is plain. */
int node_type_copy(const struct node_type *t, const void *from, void *to, int n,
                   void *bounce);

/* ---- the node-level local phases ---------------------------------------- */

/*
 * Whether the local phase of a call `fn` of `kind` (bcast or allreduce)
 * uses the node layer: the site level of its table (coll_site_select,
 * `bytes` the packed message) chose shm, on a site of several members.
 * Errors through c's handler.
 */
int site_local_shm(struct gc_comm *c, const char *fn, enum gc_coll_kind kind,
                   int blocking, size_t bytes, int *shm);

/*
 * One chunk of a site bcast through the node layer (bcast_site_shm.c):
 * `count` elements of `type` at `buf` (packing to at most
 * node_bcast_chunk() bytes) from the member of local rank `root` to
 * every member of the site.  Started in the same order on every member;
 * tested until done.
 */
struct node_bcast {
    struct gc_comm *comm;
    struct coll_node *node;
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int root;
    uint64_t after;  /* this member's counter once the chunk before is done */
    uint64_t ticket; /* its first slot (counted since the layer began) */
    uint64_t end;    /* one past its last slot: the counter it posts */
    int role;
    int publisher; /* node rank of the member that writes the slot */
    int posted;    /* this member posted for the chunk */
    MPI_Request *reqs;
    int nreqs;
};
size_t node_bcast_chunk(const struct coll_node *n);
int node_bcast_start(struct node_bcast *op, struct gc_comm *c,
                     struct coll_node *n, void *buf, MPI_Count count,
                     MPI_Datatype type, int root);
int node_bcast_test(struct node_bcast *op, int *done);
/* The chunk as a schedule's poll step (coll_sched_poll): its argument. */
struct node_bcast_args {
    struct gc_comm *comm;
    struct coll_node *node;
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int root;
};
extern const struct sched_poll_ops node_bcast_poll;
/* The whole buffer from local rank 0 (PMPI_Bcast_c when one element is
 * larger than a chunk). */
int bcast_site_shm(struct gc_comm *c, void *buf, MPI_Count count,
                   MPI_Datatype type);

/*
 * Reduce of every site member's `sbuf` (MPI_IN_PLACE at local rank 0:
 * its rbuf) into rbuf at local rank 0, by cyclic parallel reduction in
 * each node's shared memory and a reduce between node leaders.
 */
int reduce_site_shm(struct gc_comm *c, const void *sbuf, void *rbuf,
                    MPI_Count count, MPI_Datatype type, MPI_Op op);
/*
 * PMPI_Reduce_scatter's contract on the site's members (`input`
 * count elements, member j gets rcounts[j] of them after those of
 * members before it, in `out`), by the same cyclic reduction when the
 * site is one node; otherwise PMPI_Reduce_scatter.
 */
int reduce_scatter_site_shm(struct gc_comm *c, const void *input, void *out,
                            const MPI_Count *rcounts, MPI_Datatype type,
                            MPI_Op op);

#endif
