/*
 * The progress thread of GRIDCOLL_ASYNC_PROGRESS=1
 * (gc_progress_thread.c).
 */
#ifndef GC_PROGRESS_THREAD_H
#define GC_PROGRESS_THREAD_H

/* Start it (GRIDCOLL_ASYNC_PROGRESS=1, MPICH at MPI_THREAD_MULTIPLE) and
 * stop it before MPI_Finalize tears the layer down.  0 or -1, said why. */
int gc_thread_start(void);
void gc_thread_stop(void);

#endif
