/*
 * MPICH communicator duplications made without blocking, kept clear of
 * an endless loop in MPICH 4.0.2's context-id allocation (gc_ctxid.c).
 */
#include "core/gc_progress.h"
#ifndef GC_CTXID_H
#define GC_CTXID_H

/*
 * PMPI_Comm_idup(_with_info, unless info is MPI_INFO_NULL) of an MPICH
 * communicator: *request completes when *newcomm is made, through the
 * engine's progress (MPI_Test*, MPI_Wait*, coll_sched's reaping).  MPICH
 * 4.0.2's own collective order holds: a communicator of several members
 * is duplicated at once.  MPI_SUCCESS or MPICH's error.
 */
int gc_ctxid_idup(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                  MPI_Request *request);
/* Completes what can be in each progress pass; outstanding while a
 * duplication is (the runtime registers it). */
extern const struct gc_progress_hook gc_ctxid_progress_hook;
/* Wait for a request gc_ctxid_idup handed out, driving the engine. */
void gc_ctxid_wait(MPI_Request *request);

#endif
