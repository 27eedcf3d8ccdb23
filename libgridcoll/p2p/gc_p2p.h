/*
 * What the point-to-point calls of gc_p2p.c share with the other files of
 * MPI point-to-point: persistent, partitioned and nonblocking
 * send-receive requests (gc_p2p_persistent.c) and the buffered sends
 * (gc_bsend.c).
 */
#ifndef GC_P2P_H
#define GC_P2P_H

#include <mpi.h>

#include "core/gc_comm.h"

enum send_mode { MODE_STANDARD, MODE_SYNC, MODE_READY, MODE_BUFFERED };

/*
 * The checks MPICH makes on a rank (MPI_ANY_SOURCE allowed with
 * wildcard_ok; on an intercommunicator *rank names the remote group and
 * becomes the member's rank) and on a send's or receive's arguments; the
 * error went through c's handler.
 */
int check_rank(struct gc_comm *c, int *rank, int wildcard_ok,
               const char *function);
int check_args(struct gc_comm *c, const void *buf, MPI_Count count,
               MPI_Datatype type, int tag, int wildcard_ok,
               const char *function);

/*
 * A buffered send (MPI_Bsend) of `count` elements on comm (c its grid
 * communicator, NULL for one of MPICH's): packed into the attached
 * buffer, then sent from there.  MPI_ERR_BUFFER (through comm's handler)
 * when the buffer has no room for it.
 */
int gc_bsend(MPI_Comm comm, struct gc_comm *c, const void *buf, MPI_Count count,
             MPI_Datatype type, int dst, int tag, const char *function);
/* MPI_Finalize, while the relay session is up: deliver the buffered
 * messages still in the attached buffer. */
void gc_bsend_flush(void);

/* Drop unreceived messages (MPI_Finalize, after the session closed). */
void gc_p2p_shutdown(void);

#endif
