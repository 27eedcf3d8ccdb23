/*
 * libgridcoll MPI layer: internal interface between the runtime
 * (gc_runtime.c), grid communicators (gc_comm.c, gc_comm_create.c,
 * gc_group.c), the point-to-point engine (gc_p2p_engine.c), the MPI
 * point-to-point calls (gc_p2p.c), the collectives' internal transfers
 * (gc_xfer.c), the completion calls (gc_request.c), the library lock
 * and progress thread (gc_thread.c), collectives (gc_coll*.c, coll/),
 * datatypes (gc_datatype.c) and the generated wrappers (gc_wrappers.c,
 * from gen_wrappers.py).
 * docs/design/mpi-layer.md explains the design.
 */
#ifndef GC_MPI_H
#define GC_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gc_lock.h"
#include "gc_proto.h"
#include "relay_client/gc_relay_client.h"
#include "patterns/gc_sched.h"

#define GC_MAX_SITES 64

/*
 * Relay context ids.  Every grid communicator owns GC_CTX_STRIDE
 * consecutive ids from `context`, one per traffic class, so user messages,
 * synchronous-send acknowledgements and collective traffic never match
 * each other.  Ids from GC_CTX_LIBRARY up are the library's own.
 */
enum gc_ctx_class {
    GC_CTX_P2P = 0,  /* user point-to-point */
    GC_CTX_SYNC = 1, /* user point-to-point that wants a match ack */
    GC_CTX_ACK = 2,  /* payload: the acked message's msg_seq */
    GC_CTX_COLL = 3, /* collectives between sites */
    /* Constructors collective over a group's members only
     * (MPI_Comm_create_group, MPI_Comm_create_from_group): none of the
     * parent's collectives may be used, so the members agree on the new
     * context here, on the program's tag. */
    GC_CTX_CREATE = 4,
    GC_CTX_STRIDE = 5,
};
#define GC_CTX_LIBRARY 0xfffffff0u
/* Ids from here to GC_CTX_LIBRARY are derived from the parent's, without
 * an agreement (MPI_Comm_idup); below, they are agreed on. */
#define GC_CTX_DERIVED (0x80000000u / GC_CTX_STRIDE * GC_CTX_STRIDE)

struct gc_site {
    char name[GC_NAME_MAX + 1];
    int offset; /* grid rank of the site's local rank 0 */
    int size;
};

/* What every part of the layer knows about the job (gc_runtime.c). */
struct gc_world {
    int active; /* several sites: grid semantics on MPI_COMM_WORLD */
    int site_count;
    int site_index; /* our site */
    struct gc_site sites[GC_MAX_SITES];
    int size; /* grid world size */
    int grid_rank;
    int thread_level;
    /* MPICH's communicator of this site's processes: MPI_COMM_WORLD, or,
     * when a session started the layer, one of the layer's own session
     * (MPICH's MPI_COMM_WORLD is not valid without MPI_Init). */
    MPI_Comm site_world;
    /* MPI_COMM_SELF, or under sessions alone the same made from the
     * layer's session (for the layer's private self communicators). */
    MPI_Comm site_self;
    struct gc_rc *rc;
    /* Our site's network from GRIDCOLL_FATTREE (gridrun passes the machine
     * file's fattree= or --fattree). */
    int has_fattree;
    struct gc_sched_fattree fattree;
};
extern struct gc_world gc_world;

/*
 * The fat tree of this process's site, or NULL when none was given.  The
 * same on every rank of a site, but sites differ: only choices confined
 * to one site's members may depend on it.
 */
const struct gc_sched_fattree *gc_site_fattree(void);

/*
 * A communicator whose members live on more than one site.  Members are
 * numbered by comm rank; for each we know its grid rank and site.  This
 * process talks to members on its own site through `local`, an MPICH
 * communicator of exactly those members, ordered by comm rank, so a
 * member's rank in `local` is the number of same-site members before it.
 */
struct gc_comm {
    MPI_Comm handle; /* what the application holds */
    MPI_Comm local;  /* this site's members (== handle except for WORLD) */
    /*
     * The same members on a context of their own, for the point-to-point
     * steps of collectives (which on `local` could match the application's
     * wildcard receives), made with the communicator.
     */
    MPI_Comm local_p2p;
    /*
     * Shared-memory node layer of this site's members (coll/node_shm.h):
     * NULL until a collective first needs it, freed by gc_comm_release.
     */
    struct coll_node *node;
    uint32_t context;
    int size;
    int rank;
    int *grid_rank;     /* [size] comm rank -> grid rank */
    int *site;          /* [size] comm rank -> site index */
    int *site_rank;     /* [size] comm rank -> rank in its site's `local` */
    int *local_to_comm; /* [local_size] local rank -> comm rank */
    int local_size;
    int local_rank;
    int site_count; /* sites with at least one member */
    int *leader;    /* [GC_MAX_SITES] comm rank of a site's first member,
                       -1 when the site has none */
    int *comm_rank_of_grid; /* [gc_world.size] grid rank -> comm rank or -1 */
    /* Process topology (topo/gc_topo.h), NULL without one; freed with
     * the struct, after pending operations. */
    struct gc_topo *topo;
    uint64_t coll_seq; /* collectives started, for diagnostics */
    uint32_t idup_seq; /* MPI_Comm_idup calls on it (gc_context_derived) */
    int refs;          /* the registry's, and one per pending operation */
    /* An intercommunicator (gc_intercomm.h): the members above are the
     * union of its two groups; NULL for an intracommunicator. */
    struct gc_inter *inter;
};

/* ---- communicator registry (gc_comm.c) -------------------------------- */

/* The grid communicator behind `handle`, or NULL (not a grid comm). */
struct gc_comm *gc_comm_find(MPI_Comm handle);
/*
 * gc_comm_find at the start of an MPI function (after GC_ENTER) whose
 * call is MPICH's alone when `handle` is not a grid communicator: then
 * the library lock is given up for the rest of the call (gc_lock.h).
 */
#define GC_FIND(handle) gc_comm_find_or_leave((handle), &gc_entered_)
struct gc_comm *gc_comm_find_or_leave(MPI_Comm handle, int *entered);

/*
 * 1 when `comm` spans more than one site, so site-local MPICH semantics
 * would be wrong for it; 0 otherwise (single-site job, MPI_COMM_NULL, a
 * communicator whose members are all on this site, MPI_COMM_SELF, ...).
 */
int gc_comm_is_grid(MPI_Comm comm);

/*
 * Build and register a grid communicator of every grid rank under
 * `handle` (an MPICH communicator of this site's processes), on relay
 * context block `context` (after the runtime filled gc_world).
 */
struct gc_comm *gc_comm_world_init(MPI_Comm handle, uint32_t context);

/*
 * Make a grid communicator from `parent`'s member list: `members[i]` is
 * the grid rank of new rank i (size entries, every member agrees on the
 * list), `local` the MPICH communicator of this site's members ordered by
 * new rank (this process must be a member), `context` agreed by all.
 * Registers it under handle `local`.  NULL on allocation failure.
 */
struct gc_comm *gc_comm_build(const int *members, int size, MPI_Comm local,
                              uint32_t context);
/* The same with local_p2p made already (MPI_Comm_idup, which must not
 * block on a split); the struct owns it, also on failure. */
struct gc_comm *gc_comm_build_p2p(const int *members, int size, MPI_Comm local,
                                  MPI_Comm local_p2p, uint32_t context);
/*
 * Unregister (does not free the MPICH handles) and free the node layer
 * (a collective over this site's members: every member releases the
 * communicator together).  The struct lives on while operations still
 * pending on it hold references: MPI lets a program free a communicator
 * with requests outstanding.
 */
void gc_comm_release(struct gc_comm *c);
void gc_comm_retain(struct gc_comm *c);
void gc_comm_unref(struct gc_comm *c);
/*
 * MPI_Comm_split of grid communicator c (gc_comm_create.c), for the
 * topology constructors: `own_error` is what this member found wrong with
 * its arguments (already reported); any member's error fails the call on
 * every member.  A result all of whose members are on this site is that
 * MPICH communicator, unregistered.
 */
int gc_comm_split_grid(struct gc_comm *c, int color, int key, int own_error,
                       MPI_Comm *newcomm, const char *function);
/*
 * Relay context id of a communicator being made (gc_context.c): rounds
 * over the parent, each member proposing gc_ctx_propose's id (0: it yields
 * this round to another creation of its process); with every member's
 * proposal gathered, gc_ctx_decide returns the agreed id, or 0 when a
 * member yielded and another round is needed.  The claim's priority is
 * the parent's context, then `tag`: creations that may run at once on one
 * parent (MPI_Comm_create_group) differ in their tag, the others pass 0.
 * The claim lives from gc_ctx_claim_begin to gc_ctx_claim_end.
 * Agreed ids stay below GC_CTX_DERIVED (gc_ctx_decide returns 0 and
 * *exhausted is set when they ran out).
 */
struct gc_ctx_claim {
    uint64_t priority;
    unsigned rounds; /* rounds decided so far */
    struct gc_ctx_claim *next;
};
void gc_ctx_claim_begin(struct gc_ctx_claim *claim, uint32_t parent_context,
                        int tag);
static inline uint64_t gc_ctx_priority(uint32_t parent_context, int tag)
{
    return (uint64_t)parent_context << 32 | (uint32_t)tag;
}
uint32_t gc_ctx_propose(struct gc_ctx_claim *claim);
uint32_t gc_ctx_decide(struct gc_ctx_claim *claim, uint32_t largest,
                       int any_yielded, int *exhausted);
void gc_ctx_claim_end(struct gc_ctx_claim *claim);
/*
 * The context of the n-th MPI_Comm_idup of a communicator on block
 * `parent`: every member starts a communicator's collectives in the same
 * order, so all derive the same id without exchanging anything, as a
 * nonblocking call must.  A hash into the ids from GC_CTX_DERIVED: two
 * communicators of one process collide with probability about 1 in 4e8,
 * which gc_comm_context_taken detects.
 */
uint32_t gc_context_derived(uint32_t parent, uint32_t n);
/* Whether a registered communicator uses relay context block `context`. */
int gc_comm_context_taken(uint32_t context);
/* Free every registered grid communicator (MPI_Finalize), newest first:
 * an order every process agrees on. */
void gc_comm_release_all(void);

/* ---- runtime (gc_runtime.c) -------------------------------------------- */

/*
 * MPI_Session_init joins the grid (after PMPI_Session_init): the first
 * user of the layer, MPI_Init or a session, starts it.  Every join is
 * matched by a gc_runtime_leave (MPI_Finalize: world_model 1,
 * MPI_Session_finalize: 0); the last closes the relay session, at once
 * for MPI_Finalize, at exit for a session.
 */
int gc_runtime_session_join(void);
void gc_runtime_leave(int world_model);
/* A grid communicator of every grid rank that the layer alone uses (its
 * closing barrier, the group constructors' agreement); NULL when the job
 * is not a grid job. */
struct gc_comm *gc_runtime_grid(void);

/* ---- errors ------------------------------------------------------------ */

/*
 * Report that `function` (e.g. "MPI_Win_create") is not supported on the
 * multi-site communicator `comm`: invokes comm's error handler with an
 * error code whose string names the function, and returns that code (for
 * MPI_ERRORS_RETURN).  With MPI_ERRORS_ARE_FATAL the whole grid job ends
 * with the message.
 */
int gc_unsupported(MPI_Comm comm, const char *function);

/*
 * Invoke comm's error handler for an error detected by the layer
 * (`code` an MPI error class or code, `detail` names the call and the
 * problem) and return the code.
 */
int gc_error(MPI_Comm comm, int code, const char *detail);

/* The relay connection is lost or refused us: say why and end the job. */
void gc_fatal_relay(const char *during);

/* ---- progress (gc_p2p_engine.c) ---------------------------------------- */

/*
 * Drive the relay session: write queued data, read and match incoming
 * messages.  Waits up to `timeout_ms` for the socket when nothing is
 * ready (0 = poll).  A broken session ends the job (gc_fatal_relay).
 */
void gc_progress(int timeout_ms);

/*
 * Between two polls that found nothing done: the first GC_SPIN_POLLS of a
 * wait (*idle_polls counts them, start it at 0) only yield, for latency;
 * later ones sleep 50 us, so that the processes that must make progress
 * (relays, gridwan, peers on an oversubscribed node) get the processor
 * instead of a rank spinning in MPICH's or our progress loop.  gc_idle
 * gives the library lock (gc_lock.h) up meanwhile, unless this thread is
 * inside a progress pass; gc_nap keeps it, for MPICH's callbacks.
 */
void gc_idle(unsigned *idle_polls);
void gc_nap(unsigned *idle_polls);
/*
 * Wait up to `timeout_ms` for the relay session (gc_progress(timeout_ms),
 * but without the library lock while it sleeps).
 */
void gc_wait_relay(int timeout_ms);
/*
 * Around a blocking MPICH call (a communicator constructor, a large local
 * phase): give the library lock up meanwhile, unless this thread is inside
 * a progress pass (gc_lock.h says why); gc_block_end takes it back.
 */
unsigned gc_block_begin(void);
void gc_block_end(unsigned held);
/* Whether operations or schedules are outstanding (the progress thread
 * polls while they are). */
int gc_progress_pending(void);
/* gc_progress for MPICH's poll and wait callbacks of the layer's
 * generalized requests: only without the progress thread. */
void gc_progress_from_mpich(void);
/* The poll_fn of the layer's generalized request classes (MPICH's
 * MPIX_Grequest_class): gc_progress_from_mpich. */
int gc_grequest_poll(void *extra, MPI_Status *status);

/* ---- progress thread (gc_thread.c) ------------------------------------- */

/* Start it (GRIDCOLL_ASYNC_PROGRESS=1, MPICH at MPI_THREAD_MULTIPLE) and
 * stop it before MPI_Finalize tears the layer down.  0 or -1, said why. */
int gc_thread_start(void);
void gc_thread_stop(void);

/* ---- completion calls (gc_request.c) ---------------------------------- */

/*
 * The grid operation behind `request` failed with `error` (an MPI error
 * class or code) on `comm`: recorded by the operation's query function
 * while a completion call completes it, raised by that call.
 */
void gc_request_failed(MPI_Request request, int error, MPI_Comm comm);
/* MPI_Wait for the layer's own blocking calls (MPI_Send, MPI_Recv, ...). */
int gc_request_wait(MPI_Request *request, MPI_Status *status);

/* ---- internal transfers of the collectives (gc_xfer.c) ---------------- */

/*
 * Byte transfers between members of a grid communicator on different
 * sites, on its collective context; `tag` tells concurrent collective
 * phases apart.  Received length must equal `len` exactly.  Completed
 * together by gc_xfer_waitall, which keeps draining incoming traffic
 * while it waits, so two sites sending to each other first never
 * deadlock; or tested one by one (gc_xfer_test).
 */
struct gc_xfer;
int gc_xfer_isend(struct gc_comm *c, int dst, int tag, const void *buf,
                  size_t len, struct gc_xfer **req);
int gc_xfer_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
                  struct gc_xfer **req);
/* The same on context class `cls` of c (GC_CTX_CREATE). */
int gc_xfer_isend_on(struct gc_comm *c, enum gc_ctx_class cls, int dst, int tag,
                     const void *buf, size_t len, struct gc_xfer **req);
int gc_xfer_irecv_on(struct gc_comm *c, enum gc_ctx_class cls, int src, int tag,
                     void *buf, size_t len, struct gc_xfer **req);
int gc_xfer_waitall(int count, struct gc_xfer **reqs);
/*
 * Whether *req finished (*done), without driving progress (gc_progress
 * does).  A finished transfer is freed and *req set to NULL; the result
 * is its status (MPI_SUCCESS while it runs), MPI_ERR_TRUNCATE when a
 * receive got another length than expected (its bytes are in: the
 * schedule engine finishes the collective, then reports it).
 */
int gc_xfer_test(struct gc_xfer **req, int *done);

/* ---- collectives used by the layer itself (coll/internal_coll.c) ------- */

/* Barrier over every member of c, one WAN round between site leaders. */
int gc_coll_barrier(struct gc_comm *c);
/*
 * Every member contributes `len` bytes; `all` (c->size * len bytes)
 * receives them in comm-rank order on every member.
 */
int gc_coll_allgather_bytes(struct gc_comm *c, const void *mine, size_t len,
                            void *all);

/* The relay session's callbacks: the engine matches what arrives
 * (gc_p2p_engine.c). */
void gc_p2p_callbacks(gc_rc_alloc_fn *on_alloc_fn,
                      gc_rc_complete_fn *on_complete_fn);
/* Drop unreceived messages (MPI_Finalize, after the session closed;
 * gc_p2p.c). */
void gc_p2p_shutdown(void);

/*
 * WAN accounting (gc_coll_select.c): every internal transfer crosses the
 * WAN; it counts for the collective algorithm running, or for the layer.
 */
void gc_coll_account_wan(size_t bytes);
/* GRIDCOLL_STATS=1: each site prints its totals (collective, every rank). */
void gc_coll_print_stats(void);

/* ---- datatypes (gc_datatype.c) ---------------------------------------- */

/* Bytes of `count` elements of `type` once packed (PMPI_Pack_size exact). */
int gc_packed_size(MPI_Count count, MPI_Datatype type, size_t *bytes);
/* 1 for a predefined datatype (which is never freed). */
int gc_type_is_named(MPI_Datatype type);
/*
 * A reference to `type` for an operation that uses it after the call
 * returns (MPI lets the program free the type meanwhile): *held is `type`
 * itself when predefined, a duplicate otherwise.  gc_type_release drops it.
 */
int gc_type_hold(MPI_Datatype type, MPI_Datatype *held);
void gc_type_release(MPI_Datatype *held);
/*
 * PMPI_Pack_c / PMPI_Unpack_c that also take MPI_BOTTOM with a datatype
 * of absolute addresses (MPICH 4.0.2 rejects a NULL buffer).
 */
int gc_pack(const void *buf, MPI_Count count, MPI_Datatype type, void *out,
            MPI_Count size, MPI_Count *position, MPI_Comm comm);
int gc_unpack(const void *in, MPI_Count size, MPI_Count *position, void *buf,
              MPI_Count count, MPI_Datatype type, MPI_Comm comm);
/*
 * MPI_ERR_TYPE for MPI_DATATYPE_NULL or an uncommitted type, MPI_ERR_OP
 * for MPI_OP_NULL or a predefined op on a predefined type it is not
 * defined for; MPI_SUCCESS otherwise.  Nothing is reported.
 */
int gc_type_check(MPI_Datatype type);
int gc_op_check(MPI_Op op, MPI_Datatype type);

#endif
