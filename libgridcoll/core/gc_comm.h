/*
 * Grid communicators: the object every floor above uses, its relay
 * contexts, the addressing of its members and peers, and the registry
 * behind the program's handles (gc_comm.c).  Creating them from a parent
 * is comm/'s.
 */
#ifndef GC_COMM_H
#define GC_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gc_lock.h"
#include "core/gc_world.h"

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

struct gc_inter;

/*
 * What a floor above core/ attaches to a communicator (the node layer, a
 * topology, an intercommunicator's groups) says how it goes, so that the
 * registry frees it without knowing it: `release` at MPI_Comm_free
 * (collective over the members, as the free is; newest attachment first,
 * an order every member agrees on), `destroy` when the last reference
 * goes.  `dup` gives a duplicate made by MPI_Comm_dup or MPI_Comm_idup
 * its own copy (a topology: MPI-4.0 §7.4.2), MPI_SUCCESS or
 * MPI_ERR_NO_MEM.  Any may be NULL.
 */
struct gc_comm;
struct gc_comm_part {
    const char *name;
    void (*release)(struct gc_comm *c);
    void (*destroy)(struct gc_comm *c);
    int (*dup)(const struct gc_comm *from, struct gc_comm *to);
};
/* The node layer, a topology, the intercommunicator part, and room. */
#define GC_COMM_PARTS 4

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
     * NULL until a collective first needs it, released with the
     * communicator (gc_comm_attach).
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
    /* The same as the neighbourhood collectives see it
     * (coll/neighbor/neighbor_plan.h), NULL without a topology. */
    struct coll_neighborhood *neighborhood;
    uint64_t coll_seq; /* collectives started, for diagnostics */
    uint32_t idup_seq; /* MPI_Comm_idup calls on it (gc_context_derived) */
    int refs;          /* the registry's, and one per pending operation */
    /* An intercommunicator (gc_intercomm.h): the members above are the
     * union of its two groups; NULL for an intracommunicator. */
    struct gc_inter *inter;
    const struct gc_comm_part *parts[GC_COMM_PARTS]; /* gc_comm_attach */
    int part_count;
};

struct gc_inter {
    int local_size;
    int remote_size;
    int local_offset;  /* union rank of local group rank 0 */
    int remote_offset; /* union rank of remote group rank 0 */
    /*
     * The local group as an intracommunicator (a grid communicator, or an
     * MPICH one when it lives on this site alone), for the phases of the
     * intercommunicator collectives inside a group.
     */
    MPI_Comm group_comm;
};

/* Ranks the program names: the remote group's on an intercommunicator. */
static inline int gc_comm_peer_count(const struct gc_comm *c)
{
    return c->inter != NULL ? c->inter->remote_size : c->size;
}

/* Peer rank (remote group rank on an intercommunicator) -> member. */
static inline int gc_comm_peer_member(const struct gc_comm *c, int rank)
{
    return c->inter != NULL && rank >= 0 ? rank + c->inter->remote_offset
                                         : rank;
}

/* A message source's member rank -> the rank its status reports. */
static inline int gc_comm_member_peer(const struct gc_comm *c, int member)
{
    return c->inter != NULL && member >= 0 ? member - c->inter->remote_offset
                                           : member;
}

/* The program's view of its own group: size, rank and grid ranks. */
static inline int gc_comm_group_size(const struct gc_comm *c)
{
    return c->inter != NULL ? c->inter->local_size : c->size;
}
static inline int gc_comm_group_rank(const struct gc_comm *c)
{
    return c->inter != NULL ? c->rank - c->inter->local_offset : c->rank;
}
static inline const int *gc_comm_group_members(const struct gc_comm *c)
{
    return c->inter != NULL ? c->grid_rank + c->inter->local_offset
                            : c->grid_rank;
}

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
 * Unregister (does not free the MPICH handles) and release its parts
 * (gc_comm_attach; a collective: every member releases the communicator
 * together).  The struct lives on while operations still
 * pending on it hold references: MPI lets a program free a communicator
 * with requests outstanding.
 */
void gc_comm_release(struct gc_comm *c);
void gc_comm_retain(struct gc_comm *c);
/* Attach `part` (static storage) to c; attached already, nothing. */
void gc_comm_attach(struct gc_comm *c, const struct gc_comm_part *part);
/* Copy to duplicate `to` what c's parts copy (their `dup`), in attachment
 * order; the first error, MPI_SUCCESS when none. */
int gc_comm_dup_parts(const struct gc_comm *c, struct gc_comm *to);
void gc_comm_unref(struct gc_comm *c);
/* Whether a registered communicator uses relay context block `context`. */
int gc_comm_context_taken(uint32_t context);
/* Free every registered grid communicator (MPI_Finalize), newest first:
 * an order every process agrees on. */
void gc_comm_release_all(void);

#endif
