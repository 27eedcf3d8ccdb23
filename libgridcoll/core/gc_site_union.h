/*
 * MPICH intercommunicators the layer made whose members are all on this
 * site keep their union (comm/gc_intercomm.c makes them).
 */
#ifndef GC_SITE_UNION_H
#define GC_SITE_UNION_H

#include <mpi.h>

/*
 * An MPICH intercommunicator the layer made (all its members on this
 * site): its union as an MPICH intracommunicator (`whole`, the group
 * whose first member has the lower grid rank first) and the union rank of
 * remote rank 0.  0 for any other communicator, e.g. one MPICH's own
 * MPI_Comm_dup made.  Kept in core/, below both its users: MPICH 4.0.2's
 * partitioned requests match the sender's context id against the receiver's,
 * never its receive context, so on an intercommunicator whose groups' context
 * ids differ they never match; p2p/gc_partitioned.c runs them on the union
 * instead.  MPICH's MPI_Comm_idup, split and create of it make
 * intercommunicators without one.
 */
int gc_site_union(MPI_Comm intercomm, MPI_Comm *whole, int *remote_offset);
/*
 * Give intercomm its union `whole`, an MPICH intracommunicator in union
 * order, its errors returned to the layer; MPICH's own MPI_Comm_dup does
 * not copy it, so no two intercommunicators share one.  On failure the
 * caller still owns whole.
 */
int gc_site_union_attach(MPI_Comm intercomm, MPI_Comm whole, int remote_offset);

#endif
