/*
 * The library lock: one mutex around the layer's state (communicator
 * registry, matching engine, relay session, collective schedules), taken
 * by every MPI function the layer defines, as MPICH's global critical
 * section is (docs/design/mpi-layer.md, "Threads").
 *
 * It is only needed, and only taken, while a second thread can enter the
 * layer: a program at MPI_THREAD_MULTIPLE, or the progress thread of
 * GRIDCOLL_ASYNC_PROGRESS=1 (runtime/gc_progress_thread.c).  Without either an
 * entry costs two calls (gc_lock_enter and gc_lock_leave) and their branches.
 *
 * Nesting: an MPI function the layer calls from inside another (MPI_Wait
 * from MPI_Send) or a callback MPICH makes from inside PMPI_Test
 * (poll_fn, free_fn) runs under the lock its caller already holds; a
 * per-thread depth counts the levels, so the mutex is plain.
 *
 * Never held while waiting: a thread that holds the lock while it waits
 * for another process can deadlock against a thread of its own process
 * that the other process waits for (two threads making communicators from
 * different parents, MPI 4.1 section 11.6.3).  So the lock is given up
 *  - for the rest of a call on a communicator that does not span sites
 *    (GC_LEAVE: MPICH alone serves it, and protects itself);
 *  - between the polls of every wait (gc_idle, gc_wait_relay);
 *  - around a blocking MPICH call the layer makes (gc_block_begin/end).
 *
 * Lock order: the library lock before MPICH's global lock.  A thread
 * holding MPICH's lock (inside a PMPI_ call) never waits for the library
 * lock, because MPICH calls back into the layer only from completion
 * calls the layer itself made under its lock; and the progress thread
 * only ever try-locks.  gc_idle releases the lock between polls, so it
 * must not be called from inside an MPICH callback (gc_nap is).
 */
#ifndef GC_LOCK_H
#define GC_LOCK_H

#include <stdatomic.h>

/* Set (before a second thread can enter the layer) while the lock is
 * needed. */
extern int gc_lock_needed;
/* The program runs at MPI_THREAD_MULTIPLE: take the lock from now on. */
void gc_lock_enable(void);

/* Returns 1 when this call took a level of the lock, for gc_lock_leave. */
int gc_lock_enter(void);
void gc_lock_leave(const int *entered);
/* The progress thread's entry: 1 when it now holds the lock. */
int gc_lock_try(void);
/* Release the level gc_lock_try took. */
void gc_lock_drop(void);
/*
 * The progress thread: while *sleeping is set, a thread releasing the
 * lock with work outstanding calls wake().
 */
void gc_lock_set_waker(atomic_int *sleeping, void (*wake)(void));
/* Whether this thread may touch the layer's state now. */
int gc_lock_held(void);

/*
 * Give the lock up completely, whatever the depth, and return what to
 * hand gc_lock_restore to take it back: the blocking waits, so that the
 * progress thread (later, another application thread) runs meanwhile.
 */
unsigned gc_lock_suspend(void);
void gc_lock_restore(unsigned depth);

/*
 * First statement of every MPI function the layer defines: holds the
 * library lock until the function returns, whichever return it takes.
 * (The cleanup attribute, supported by GCC and Clang, is what makes one
 * line enough for functions with many exits.)
 */
#define GC_ENTER()                                                             \
    __attribute__((cleanup(gc_lock_leave), unused)) int gc_entered_ =          \
        gc_lock_enter()

/*
 * In a function that began with GC_ENTER(): the call turned out to be
 * MPICH's alone (its communicator does not span sites); give the lock up
 * for the rest of it, so that a blocking MPICH call does not keep the
 * program's other threads out of the layer.  Called from inside another
 * of the layer's calls, it gives the callers' levels up too and takes
 * them back at the return (outside a progress pass, gc_block_begin).
 */
#define GC_LEAVE() gc_lock_leave_early(&gc_entered_)
void gc_lock_leave_early(int *entered);

#endif
