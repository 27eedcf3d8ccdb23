/*
 * Intercommunicators whose groups span sites (gc_intercomm.c;
 * docs/design/mpi-layer.md, "Intercommunicators").
 *
 * The struct and the peer addressing every call uses are in
 * core/gc_comm.h.
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

#include "core/gc_comm.h"

/*
 * The intercommunicator parts of c, a new union made from an
 * intercommunicator's (dup, split): its groups' sizes and which comes
 * first.  Collective over the union.  MPI_SUCCESS or an error reported
 * to c's handler naming `function`.
 */
int gc_inter_attach(struct gc_comm *c, int first_size, int local_first,
                    const char *function);
/* Give c the intercommunicator part `in` (malloc'd): its group
 * communicators are freed with c, the struct with c's last reference. */
void gc_inter_adopt(struct gc_comm *c, struct gc_inter *in);
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
