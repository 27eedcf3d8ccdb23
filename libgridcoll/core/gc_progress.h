/*
 * Progress: one pass drives the relay session and then every part of the
 * layer that registered a hook (as MPICH's progress hooks do,
 * src/mpi/init/mpir_progress_hook.c), so that the floor that polls knows
 * none of the floors above it.  The runtime registers, at start-up and in
 * this order: the point-to-point engine, the layer's generalized
 * requests, the context-id agreement, the schedule engine.
 */
#ifndef GC_PROGRESS_H
#define GC_PROGRESS_H

#include <mpi.h>

struct gc_progress_hook {
    const char *name;
    /*
     * Before the relay session is polled (NULL: nothing to do); returns
     * > 0 when it completed work, so that the poll must not wait: a
     * caller blocked on that work would otherwise sit out the timeout.
     */
    int (*before_poll)(void);
    /* After the poll: advance what the arrivals let go on. */
    void (*after_poll)(void);
    /* Whether work is outstanding (NULL: never); the progress thread
     * keeps polling while any hook has some. */
    int (*pending)(void);
};

/* Add `hook` (static storage) at the end of the pass; a hook already
 * registered stays where it is. */
void gc_progress_register(const struct gc_progress_hook *hook);

/*
 * One pass: the hooks' before_poll, the relay session (write queued data,
 * read and hand incoming messages to the engine, waiting up to
 * `timeout_ms` for the socket when nothing is ready, 0 = poll), the hooks'
 * after_poll.  A broken session ends the job (gc_fatal_relay).  A pass
 * started inside a pass returns at once.
 */
void gc_progress(int timeout_ms);

/* Inside a pass (a pass started now would return at once). */
int gc_progress_in_pass(void);
/*
 * Around a step a part of the layer advances outside a pass (a schedule
 * started by its call runs its first steps): its state is half updated,
 * so blocking waits inside keep the library lock, as they do in a pass;
 * unlike a pass, the step may itself drive progress.
 */
void gc_progress_step_begin(void);
void gc_progress_step_end(void);

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
/* Whether any hook has work outstanding. */
int gc_progress_pending(void);
/* gc_progress for MPICH's poll and wait callbacks of the layer's
 * generalized requests: only without the progress thread. */
void gc_progress_from_mpich(void);
/* The poll_fn of the layer's generalized request classes (MPICH's
 * MPIX_Grequest_class): gc_progress_from_mpich. */
int gc_grequest_poll(void *extra, MPI_Status *status);

#endif
