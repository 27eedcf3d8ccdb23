/*
 * Shared by the bcast algorithms (coll/bcast_grid_*.c, docs/algorithms.md
 * "Bcast"):
 *
 * - the broadcast order: the root, the rest of its site, then every other
 *   site in turn, so each site's members are contiguous in the trees and
 *   chains built on it and most of their edges stay inside a site;
 * - the packed message the algorithms move (the user's buffer itself
 *   when the datatype packs to its memory image);
 * - plans: the steps one member takes (sends, receives and local bcasts
 *   of byte ranges, each possibly waiting for the receive that brings its
 *   bytes), run by one loop that drives MPICH and the relay together, so
 *   a member forwards a segment while the next ones still arrive.
 */
#ifndef BCAST_COMMON_H
#define BCAST_COMMON_H

#include <stddef.h>

#include "gc_coll_algo.h"
#include "gc_mpi.h"

/*
 * The largest message a plan step moves: MPICH's and the relay client's
 * int counts; segment sizes are capped to it.
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

/*
 * The message as packed bytes: the root packs the user's buffer, others
 * get room to receive it.  When the datatype is a named type without
 * holes, `bytes` is the user's buffer and nothing is copied.
 */
struct bcast_msg {
    unsigned char *bytes;
    size_t len;
    void *owned; /* allocated room, NULL when bytes is the user's buffer */
};
int bcast_msg_open(struct gc_comm *c, const struct coll_bcast_args *b,
                   struct bcast_msg *m);
/* Non-roots unpack when `status` is MPI_SUCCESS; frees; returns status. */
int bcast_msg_close(struct gc_comm *c, const struct coll_bcast_args *b,
                    struct bcast_msg *m, int status);

/* Segment size from GRIDCOLL_BCAST_SEGSIZE or the default, capped. */
size_t bcast_segsize(const struct coll_args *a);

enum bcast_step_kind {
    BCAST_SEND,
    BCAST_RECV,
    BCAST_LOCAL_BCAST, /* PMPI_Ibcast among this site's members */
};

struct bcast_step {
    enum bcast_step_kind kind;
    int peer; /* comm rank; for a local bcast the root's rank on this site */
    int tag;
    void *buf;
    int count;
    MPI_Datatype type;
    int after; /* step (a receive) that must finish first, or -1 */
};

/*
 * Steps of one member.  Sends and receives between members of one site
 * go through PMPI on the communicator's private local communicator
 * (coll_local_p2p), others over the relays (counted as WAN traffic).
 * Steps with the same kind, peer and tag form a stream: they are posted
 * in the order they were added, at most a window of them at a time, so
 * both ends match them in the same order.
 */
struct bcast_plan {
    struct gc_comm *comm;
    unsigned char *bytes; /* the packed message byte steps address */
    struct bcast_step *steps;
    int count;
    int cap;
    int no_mem;
};
void bcast_plan_init(struct bcast_plan *p, struct gc_comm *c,
                     unsigned char *bytes);
void bcast_plan_free(struct bcast_plan *p);
/* Append a step; its index, or -1 (out of memory, reported by run). */
int bcast_plan_add(struct bcast_plan *p, const struct bcast_step *s);
/* Byte steps on [off, off + len) of the message (len <= max message). */
int bcast_plan_send(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len, int after);
int bcast_plan_recv(struct bcast_plan *p, int peer, int tag, size_t off,
                    size_t len);
/*
 * Forward [off, off + len) in segments of at most `seg` bytes: receive
 * each from `from` (-1: this member has them) and send it on to each of
 * to[0..n) as soon as it is in.
 */
void bcast_plan_relay(struct bcast_plan *p, int from, const int *to, int n,
                      int tag, size_t off, size_t len, size_t seg);
/*
 * Run every step; errors go through the communicator's handler, with
 * `fn` ("MPI_Bcast") in the message.
 */
int bcast_plan_run(struct bcast_plan *p, const char *fn);

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
 * What an algorithm adds to run on bcast_run's skeleton: this member's
 * steps for a message of `len` (> 0) bytes, given the order.  An error is
 * reported through the communicator's handler and returned.
 */
typedef int bcast_build_fn(struct bcast_plan *p, const struct coll_args *a,
                           const struct bcast_order *o, size_t len);
/*
 * The root packs, everyone builds its steps and runs them, non-roots
 * unpack; a message of 0 bytes moves nothing.
 */
int bcast_run(const struct coll_args *a, bcast_build_fn *build);

#endif
