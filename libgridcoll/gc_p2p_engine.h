/*
 * Private interface of the point-to-point engine (gc_p2p_engine.c) to
 * its two users: the MPI point-to-point calls (gc_p2p.c) and the internal
 * transfers of the collectives (gc_xfer.c).  Not for the rest of the
 * library, which sees gc_progress, gc_idle and gc_xfer_* (gc_mpi.h).
 */
#ifndef GC_P2P_ENGINE_H
#define GC_P2P_ENGINE_H

#include <mpi.h>
#include <stddef.h>

#include "gc_mpi.h"
#include "gc_relay_client.h"

enum op_kind { OP_RECV, OP_SEND };

/* A message from another site, from its first chunk until it is received
 * (the engine's own; gc_p2p.c holds the ones MPI_Mprobe took). */
struct rx;

/*
 * One send or receive the engine carries out: the application's, behind a
 * generalized request, or an internal transfer of a collective.
 */
struct op {
    struct op *next; /* engine.recvs or engine.sends */
    enum op_kind kind;
    /* generalized request; NULL for internal ones and the runs of the
     * layer's requests (engine/layer_request.h) */
    MPI_Request request;
    struct gc_comm *comm;
    /* Internal transfer (gc_xfer_*): its context class (GC_CTX_COLL,
     * GC_CTX_CREATE); 0 (GC_CTX_P2P) for the user's point-to-point. */
    int coll;
    int peer; /* comm rank; MPI_ANY_SOURCE for wildcard receives */
    int tag;  /* MPI_ANY_TAG for wildcard receives */
    void *buf;
    MPI_Count count;
    MPI_Datatype type; /* a receive's own reference (gc_type_hold) */
    size_t capacity;   /* bytes the receive buffer holds, packed */
    int contiguous;
    int exact_length; /* internal transfer: any other length is an error */
    /* receive */
    int matched;
    struct rx *rx;
    MPI_Request local; /* PMPI_Imrecv of a message from this site */
    /* send */
    struct gc_rc_send *wire;
    void *owned; /* packed or buffered copy sent instead of buf */
    int sync;
    int acked;
    int released; /* MPI_Request_free while pending: free when done */
    /* result */
    int done;
    int source;
    int result_tag;
    int error;
    int cancelled;
    int cancel_asked;    /* MPI_Cancel: withdrawn by the engine's next turn */
    int cancel_sent;     /* send: the receiver was asked to withdraw it */
    int cancel_answered; /* and said whether it did (cancelled) */
    size_t bytes;
};

static inline int is_local_member(const struct gc_comm *c, int rank)
{
    return c->site[rank] == gc_world.site_index;
}

/* Whether a message from another site can match `op` (a receive or a
 * probe's envelope). */
static inline int can_match_remote(const struct op *op)
{
    return op->peer == MPI_ANY_SOURCE || !is_local_member(op->comm, op->peer);
}

/*
 * A new operation on c with a reference to c (and, for a receive, to its
 * datatype), or NULL when out of memory or the type is not usable.
 */
struct op *gc_op_new(enum op_kind kind, struct gc_comm *c, int peer, int tag,
                     void *buf, MPI_Count count, MPI_Datatype type);
/* Free an operation nobody waits for any more (no generalized request). */
void gc_op_free(struct op *op);
/* Give op a generalized request (op->request) for the application. */
int gc_op_start_request(struct op *op);
/* Release an operation that failed before the application saw it. */
void gc_op_discard(struct op *op);
/*
 * Post a receive: matched at once against the unexpected messages from
 * other sites, handed to MPICH when it names a source on this site and no
 * earlier wildcard could take the message, queued otherwise.
 */
void gc_op_post_recv(struct op *op);
/*
 * Post a receive whose message is already chosen (MPI_Imrecv): `rx` from
 * another site, or NULL when op->local is MPICH's receive of it.
 */
void gc_op_post_matched(struct op *op, struct rx *rx);
/* Put a send to another site on the wire (packed or copied if needed);
 * MPI_ERR_COUNT beyond what one relay message carries (GC_MAX_MESSAGE). */
int gc_op_start_remote_send(struct op *op, int copy);

/*
 * The oldest unexpected message from another site that `probe` (an
 * operation used as an envelope: comm, peer, tag, coll) matches, or NULL.
 * With `take` it leaves the queue: nothing else will match it.
 */
struct rx *gc_engine_find_unexpected(const struct op *probe, int take);
const struct gc_rc_msg_info *gc_rx_info(const struct rx *rx);
/* Free a message taken out of matching and never received. */
void gc_rx_free(struct rx *rx);
/* Drop the engine's queues (MPI_Finalize, after the session closed). */
void gc_engine_shutdown(void);

#endif
