/*
 * Private interface of the point-to-point engine (gc_p2p_engine.c) to
 * its two users: the MPI point-to-point calls (gc_p2p.c) and the internal
 * transfers of the collectives (gc_xfer.c).  Not for the rest of the
 * library, which sees gc_progress and gc_idle (core/gc_progress.h) and
 * gc_xfer_* (gc_xfer.h).
 */
#ifndef GC_P2P_ENGINE_H
#define GC_P2P_ENGINE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gc_comm.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "relay_client/gc_relay_client.h"

enum op_kind { OP_RECV, OP_SEND };

/* A message from another site, from its first chunk (or its rendezvous
 * announcement) until it is received (the engine's own; gc_p2p.c holds
 * the ones MPI_Mprobe took). */
struct op;
struct rx {
    /* engine.arriving: bytes still coming; for a rendezvous message, the
     * rendezvous' list of messages whose data has not all arrived */
    struct rx *next_arriving;
    struct rx *next_unexpected; /* engine.unexpected: no receive yet */
    /* the message's envelope; for a rendezvous message its real context,
     * tag and length, and the msg_seq of its announcement */
    struct gc_rc_msg_info info;
    void *data; /* library buffer, NULL when landing in the receive's */
    int arrived;
    int withdrawn; /* cancelled by its sender while still arriving */
    int rndv;      /* announced (gc_p2p_rndv.c): data comes on request */
    int receiving; /* rendezvous: its data's first chunk is here */
    struct op *op; /* the matching receive, NULL while unexpected */
};

/*
 * Messages on the acknowledgement context whose first byte says what they
 * are (docs/protocol.md, "Library messages"); the empty one is a
 * synchronous send's acknowledgement, one with a negative tag the data of
 * a rendezvous.
 */
enum control {
    CANCEL_ASK,
    CANCEL_DONE,
    CANCEL_REFUSED,
    RNDV_RTS,  /* sender: this message waits for its receive */
    RNDV_HOLD, /* receiver: announcement read, no receive yet */
    RNDV_CTS,  /* receiver: matched, send the data */
    /* receiver: what its matching took of the eager bytes sent to it, and
     * the receives it has posted for the sender (24 bytes) */
    RNDV_CREDIT,
};

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
    /* bytes this receive, posted for a rank on another site, adds to the
     * sender's credit until it is matched (gc_rndv_posted) */
    uint64_t credit;
    struct rx *rx;
    MPI_Request local; /* PMPI_Imrecv of a message from this site */
    /* send */
    struct gc_rc_send *wire;
    void *owned; /* packed or buffered copy sent instead of buf */
    int sync;
    /* always eager (counted in the window): MPI_Rsend, whose receive is
     * posted, and buffered sends, which MPI_Buffer_detach waits for */
    int eager_only;
    int acked;
    /* rendezvous send (gc_p2p_rndv.c), while op->wire is its RTS */
    int rndv;
    int rndv_heard;          /* HOLD or CTS came: never push unasked */
    uint64_t rndv_since_ns;  /* when the RTS left */
    const void *rndv_data;   /* buf or owned */
    struct gc_rc_send *bulk; /* the data, once asked or pushed */
    unsigned char rts[16];   /* the RTS payload, alive until sent */
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

/* ---- between the engine and the rendezvous (gc_p2p_rndv.c) ------------ */

/* Context base of a relay context id (its communicator's). */
static inline uint32_t gc_ctx_base(uint32_t context)
{
    return context - context % GC_CTX_STRIDE;
}
/* Match a message that just arrived or was announced against the posted
 * receives (match_remote), else queue it as unexpected; its receive or
 * NULL. */
struct op *gc_engine_arrival(struct rx *rx);
/* Copy a received message out, free rx and complete its receive. */
void gc_engine_deliver(struct op *op, struct rx *rx);
/* All of rx's data is here (in `buf` when the library allocated it):
 * hand it to its receive, free it if withdrawn, else keep it unexpected. */
void gc_rx_arrived(struct rx *rx, void *buf, int library_allocated);
/* A message of up to GC_RC_COPIED bytes on the acknowledgement context of
 * context's communicator; a one-byte control message. */
void gc_engine_send_ack_context(uint32_t to, uint32_t context, int32_t tag,
                                const void *msg, size_t len);
void gc_engine_send_control(uint32_t to, uint32_t context, int32_t tag,
                            enum control control);
/* The pending remote send whose wire message info->tag names (its msg_seq,
 * 31 bits) to info's source on info's communicator, or NULL. */
struct op *gc_engine_send_named(const struct gc_rc_msg_info *info);

/* Whether op, a send to another site, goes by rendezvous (beyond what the
 * receiver's credit allows it eager); an eager one is counted. */
int gc_rndv_choose(struct op *op);
/* rx, an eager point-to-point message, leaves the receiver's queues
 * (matched or withdrawn): its sender's window opens again. */
void gc_rndv_taken(const struct rx *rx);
/* op, a receive, was posted unmatched: if it names a rank on another
 * site, its capacity is credit for that sender until gc_rndv_unposted
 * (matched, cancelled or failed). */
void gc_rndv_posted(struct op *op);
void gc_rndv_unposted(struct op *op);
/* Announce op (data: buf or its packed copy) on context class cls; the
 * data follows when the receiver asks (or unasked, GRIDCOLL_RNDV_PUSH_MS). */
void gc_rndv_start(struct op *op, const void *data, uint32_t cls);
/* A rendezvous send may complete (and pushes its data when it is time). */
int gc_rndv_send_done(struct op *op);
/* A control message that is the rendezvous' (RTS, HOLD, CTS): 1 when
 * handled. */
int gc_rndv_control(const struct gc_rc_msg_info *info, const void *buf);
/* The receive that rx, announced, has been matched to: ask for the data. */
void gc_rndv_matched(struct rx *rx);
/* A rendezvous' data (negative tag on the acknowledgement context):
 * where its bytes go, and their arrival. */
void *gc_rndv_data_alloc(const struct gc_rc_msg_info *info);
void gc_rndv_data_complete(const struct gc_rc_msg_info *info, void *buf,
                           int library_allocated);
/* rx, announced and never received, is being freed: 0 when it may be now,
 * 1 when its data is arriving (then it is freed as that completes). */
int gc_rndv_forget(struct rx *rx);
/* MPI_Finalize: free what is still waiting for data. */
void gc_rndv_shutdown(void);

/* The relay session's callbacks: the engine matches what arrives. */
void gc_p2p_callbacks(gc_rc_alloc_fn *on_alloc_fn,
                      gc_rc_complete_fn *on_complete_fn);
/* The engine's part of each progress pass (the runtime registers it
 * first). */
extern const struct gc_progress_hook gc_p2p_progress_hook;

#endif
