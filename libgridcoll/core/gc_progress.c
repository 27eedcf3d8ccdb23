/*
 * Progress passes and the waits built on them (gc_progress.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "relay_client/gc_relay_client.h"

/* The engine, layer requests, context ids, schedules, and room to grow. */
#define MAX_HOOKS 8

static const struct gc_progress_hook *hooks[MAX_HOOKS];
static int hook_count;
/* Under the library lock, so one thread's: the passes and the steps
 * (gc_progress_step_begin) it is inside. */
static int passes;
static int steps;

void gc_progress_register(const struct gc_progress_hook *hook)
{
    for (int i = 0; i < hook_count; i++)
        if (hooks[i] == hook)
            return;
    if (hook_count == MAX_HOOKS) {
        fprintf(stderr,
                "gridcoll: internal error: more than %d progress "
                "hooks (%s)\n",
                MAX_HOOKS, hook->name);
        abort();
    }
    hooks[hook_count++] = hook;
}

int gc_progress_in_pass(void)
{
    return passes > 0;
}

void gc_progress_step_begin(void)
{
    steps++;
}

void gc_progress_step_end(void)
{
    steps--;
}

/* A pass or a step is half done: waits keep the lock. */
static int keep_lock(void)
{
    return passes > 0 || steps > 0;
}

void gc_progress(int timeout_ms)
{
    /* MPICH calls poll_fn from inside PMPI_Test, which the engine itself
     * calls: one level is enough. */
    if (passes > 0 || !gc_world.active)
        return;
    if (!gc_lock_held()) {
        /* An MPI function without GC_ENTER: a race with the progress
         * thread would corrupt the engine silently. */
        fprintf(stderr, "gridcoll: internal error: progress without the "
                        "library lock\n");
        abort();
    }
    passes++;
    for (int i = 0; i < hook_count; i++)
        if (hooks[i]->before_poll != NULL && hooks[i]->before_poll() > 0)
            timeout_ms = 0;
    if (gc_rc_progress(gc_world.rc, timeout_ms) < 0)
        gc_fatal_relay("relay session");
    for (int i = 0; i < hook_count; i++)
        if (hooks[i]->after_poll != NULL)
            hooks[i]->after_poll();
    passes--;
}

#define GC_SPIN_POLLS 100

void gc_nap(unsigned *idle_polls)
{
    static const struct timespec nap = {0, 50 * 1000};
    if (*idle_polls < GC_SPIN_POLLS) {
        ++*idle_polls;
        sched_yield();
    } else {
        nanosleep(&nap, NULL);
    }
}

unsigned gc_block_begin(void)
{
    /* Inside a progress pass (a blocking step of a schedule) the engine's
     * state is half updated: keep the lock. */
    return keep_lock() ? 0 : gc_lock_suspend();
}

void gc_block_end(unsigned held)
{
    gc_lock_restore(held);
}

void gc_idle(unsigned *idle_polls)
{
    unsigned held = gc_block_begin();
    gc_nap(idle_polls);
    gc_block_end(held);
}

void gc_wait_relay(int timeout_ms)
{
    if (!gc_lock_needed || keep_lock()) {
        gc_progress(timeout_ms);
        return;
    }
    /* The same wait in poll(), but without the lock: another thread may
     * drive the session meanwhile, and then this one finds its work done
     * when it has the lock back. */
    gc_progress(0);
    struct pollfd relay = {.fd = gc_rc_fd(gc_world.rc),
                           .events = (short)gc_rc_poll_events(gc_world.rc)};
    unsigned held = gc_lock_suspend();
    int n = poll(&relay, 1, timeout_ms);
    int poll_errno = errno;
    gc_lock_restore(held);
    if (n < 0 && poll_errno != EINTR)
        gc_fatal_relay("waiting for the relay session");
}

int gc_progress_pending(void)
{
    for (int i = 0; i < hook_count; i++)
        if (hooks[i]->pending != NULL && hooks[i]->pending())
            return 1;
    return 0;
}

void gc_progress_from_mpich(void)
{
    /* With the progress thread MPICH runs at MPI_THREAD_MULTIPLE, where
     * an MPI call from inside its callbacks fails an assertion (its
     * global lock is held); the thread and the layer's completion calls,
     * which progress before they test, drive the engine instead. */
    if (!gc_lock_needed)
        gc_progress(0);
}

int gc_grequest_poll(void *extra, MPI_Status *status)
{
    (void)extra;
    (void)status;
    gc_progress_from_mpich();
    return MPI_SUCCESS;
}
