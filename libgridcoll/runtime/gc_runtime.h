/*
 * Joining and leaving the grid (gc_runtime.c), for MPI sessions.
 */
#ifndef GC_RUNTIME_H
#define GC_RUNTIME_H

/*
 * MPI_Session_init joins the grid (after PMPI_Session_init): the first
 * user of the layer, MPI_Init or a session, starts it.  Every join is
 * matched by a gc_runtime_leave (MPI_Finalize: world_model 1,
 * MPI_Session_finalize: 0); the last closes the relay session, at once
 * for MPI_Finalize, at exit for a session.
 */
int gc_runtime_session_join(void);
void gc_runtime_leave(int world_model);

#endif
