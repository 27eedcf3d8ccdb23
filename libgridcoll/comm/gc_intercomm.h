/*
 * Intercommunicators whose groups span sites (gc_intercomm.c;
 * docs/design/mpi-layer.md, "Intercommunicators").
 *
 * An intercommunicator is a grid communicator over the union of its two
 * groups, with a context of its own: the group whose first member has the
 * lower grid rank comes first, then the other, each in group-rank order,
 * so every member of both groups numbers the union alike.  The engine
 * carries its point-to-point traffic as for any grid communicator; the
 * entry points translate a rank of the remote group into a union rank,
 * and the union rank of a message's source back into a remote rank (every
 * message on an intercommunicator comes from the remote group).
 */
#ifndef GC_INTERCOMM_H
#define GC_INTERCOMM_H

#include "core/gc_mpi.h"

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

/*
 * The intercommunicator parts of c, a new union made from an
 * intercommunicator's (dup, split): its groups' sizes and which comes
 * first.  Collective over the union.  MPI_SUCCESS or an error reported
 * to c's handler naming `function`.
 */
int gc_inter_attach(struct gc_comm *c, int first_size, int local_first,
                    const char *function);
/* MPI_Comm_free of an intercommunicator: free its group communicators
 * (collective, like the free); the struct goes with the communicator. */
void gc_inter_release(struct gc_comm *c);
/*
 * An MPICH intercommunicator the layer made (all its members on this
 * site): its union as an MPICH intracommunicator (`whole`, the group
 * whose first member has the lower grid rank first) and the union rank of
 * remote rank 0.  0 for any other communicator, e.g. one MPICH's own
 * MPI_Comm_dup made.  MPICH 4.0.2's partitioned requests match the
 * sender's context id against the receiver's, never its receive context,
 * so on an intercommunicator whose groups' context ids differ they never
 * match; gc_partitioned.c runs them on the union instead.  MPICH's
 * MPI_Comm_idup, split and create of it make intercommunicators without
 * one.
 */
int gc_inter_site_union(MPI_Comm intercomm, MPI_Comm *whole,
                        int *remote_offset);
/* MPI_Comm_dup (and _with_info) of such an intercommunicator: newcomm,
 * MPICH's duplicate, gets a duplicate of the union (collective over it,
 * as the dup is).  MPI_SUCCESS at once for any other communicator. */
int gc_inter_site_dup(MPI_Comm intercomm, MPI_Comm newcomm);
/* MPI_Comm_split and MPI_Comm_create of an intercommunicator (MPI 4.1
 * §7.4.2); `own_error`: what this member found wrong, already reported. */
int gc_inter_split(struct gc_comm *c, int color, int key, int own_error,
                   MPI_Comm *newcomm, const char *function);
int gc_inter_create(struct gc_comm *c, MPI_Group group, MPI_Comm *newcomm);

#endif
