/*
 * Shared by the bcast algorithms (coll/bcast/bcast_grid_*.c,
 * docs/algorithms/bcast.md):
 *
 * - the broadcast order: the root, the rest of its site, then every other
 *   site in turn, so each site's members are contiguous in the trees and
 *   chains built on it and most of their edges stay inside a site;
 * - the packed message the algorithms move (the user's buffer itself
 *   when the datatype packs to its memory image);
 * - plans: the steps one member takes (sends, receives and local bcasts
 *   of byte ranges, each possibly waiting for the receive that brings its
 *   bytes) on a schedule, so a member forwards a segment while the next
 *   ones still arrive.
 */
#ifndef BCAST_COMMON_H
#define BCAST_COMMON_H

#include <stddef.h>

#include "coll/engine/coll_sched.h"
#include "coll/node_shm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/*
 * The largest message a plan step moves: segment sizes are capped to it,
 * so a larger broadcast is still pipelined between sites.
 */
#define BCAST_MAX_MESSAGE ((size_t)1 << 30)

/*
 * Members in broadcast order: the root, the other members of its site,
 * then each other site with members (site indices after the root's,
 * cyclically), members of a site in site-rank order.
 */
struct bcast_order {
    int *rank; /* [size] member at each position */
    int *pos;  /* [size] position of each comm rank */
    int sites;
    int first[GC_MAX_SITES]; /* position of the k-th site's first member */
    int count[GC_MAX_SITES]; /* members of the k-th site */
};
/* Free with bcast_order_free, also after a failure. */
int bcast_order_make(const struct gc_comm *c, int root, struct bcast_order *o);
void bcast_order_free(struct bcast_order *o);

/* Segment size from GRIDCOLL_BCAST_SEGSIZE or the default, capped. */
size_t bcast_segsize(const struct coll_args *a);

/*
 * A member's bcast steps, on a schedule (engine/coll_sched.h): byte
 * steps address the packed message `bytes`.  Sends and receives between
 * members of one site go through PMPI, others over the relays.
 */
struct bcast_plan {
    struct coll_sched *sched;
    unsigned char *bytes;
    int ready; /* what every step waits for: the root's packing, or -1 */
};
/* Byte steps on [off, off + len) of the message (len <= max message);
 * their step index or -1 (out of memory, reported when the run starts).
 * A step with no `after` waits for p->ready. */
int bcast_plan_send(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len, int after);
int bcast_plan_recv(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len);
/*
 * Broadcast count x type at buf among this site's members from its
 * member `root` (a site rank) once step `after` (-1: none) finished:
 * one PMPI_Ibcast, or with the node layer `node` (NULL: none) chunks
 * through shared memory, unless one element is larger than a chunk.
 */
void bcast_plan_local(struct bcast_plan *p, struct coll_node *node, int root,
                      void *buf, MPI_Count count, MPI_Datatype type, int after);
/*
 * Forward [off, off + len) in segments of at most `seg` bytes: receive
 * each from `from` (-1: this member has them) and send it on to each of
 * to[0..n) as soon as it is in.
 */
void bcast_plan_relay(struct bcast_plan *p, int from, const int *to, int n,
                      int tag, size_t off, size_t len, size_t seg);

/*
 * The packed message: the user's buffer itself when count x type packs
 * to its memory image, else room in the schedule that the root packs
 * into first (a step: a persistent bcast packs at every start) and the
 * others unpack from last (bcast_msg_finish).  *len 0: nothing moves.
 * *ready: what this member's first steps wait for, the packing or
 * `after`.
 */
int bcast_msg_open(struct coll_sched *s, const struct coll_bcast_args *b,
                   int after, unsigned char **bytes, size_t *len, int *ready);
/* Non-roots unpack once every step so far finished. */
int bcast_msg_finish(struct coll_sched *s, const struct coll_bcast_args *b,
                     unsigned char *bytes, size_t len);

/*
 * Multilane's trees (bcast_grid_multilane.c) over the positions of `o`
 * (p members): from[lane * p + v] is the position that sends lane `lane`
 * (0: the first half, 1: the second) to position v, -1 for the root;
 * `scratch` holds 2p ints.  0, or -1 if some member would need a third
 * send (the construction rules that out; tests/unit/test_bcast_trees.c
 * checks it on every small layout).
 */
int bcast_multilane_trees(const struct bcast_order *o, int p, int *from,
                          int *scratch);

/*
 * What an algorithm adds on bcast_build's skeleton: this member's steps
 * for a message of `len` (> 0) bytes, given the order.  An error is
 * reported through the communicator's handler and returned.
 */
typedef int bcast_build_fn(struct bcast_plan *p, const struct coll_args *a,
                           const struct bcast_order *o, size_t len);
/*
 * The root packs, everyone adds its steps, non-roots unpack; a message of
 * 0 bytes moves nothing.
 */
int bcast_build(struct coll_sched *s, const struct coll_args *a,
                bcast_build_fn *build);

#endif
