/*
 * The library lock (gc_lock.h): a plain mutex and a per-thread depth.
 * The progress thread (runtime/gc_progress_thread.c) registers how to wake it,
 * so that work a program leaves behind when it releases the lock is not left
 * until the next relay traffic.
 */
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

int gc_lock_needed;

static pthread_mutex_t library_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local unsigned depth;

static struct {
    atomic_int *sleeping;
    void (*wake)(void);
} waker;

int gc_lock_enter(void)
{
    if (!gc_lock_needed)
        return 0;
    if (depth++ == 0)
        pthread_mutex_lock(&library_lock);
    return 1;
}

void gc_lock_leave(const int *entered)
{
    if (*entered < 0) { /* gc_lock_leave_early gave the callers' up */
        gc_lock_restore((unsigned)-*entered);
        return;
    }
    if (!*entered || --depth > 0)
        return;
    /* Work the program left behind would otherwise wait for the next
     * relay traffic to wake the thread. */
    int hand_over = waker.sleeping != NULL && atomic_load(waker.sleeping) &&
                    gc_progress_pending();
    pthread_mutex_unlock(&library_lock);
    if (hand_over)
        waker.wake();
}

void gc_lock_leave_early(int *entered)
{
    gc_lock_leave(entered);
    /* Called from inside another of the layer's calls (MPI_Allreduce on
     * a site's communicator inside MPI_Intercomm_create): MPICH's call that
     * follows may block, so the callers' levels are given up as well, as
     * every wait of the layer gives them up, until this function
     * returns. */
    *entered = depth > 0 ? -(int)gc_block_begin() : 0;
}

void gc_lock_enable(void)
{
    gc_lock_needed = 1;
}

int gc_lock_try(void)
{
    if (pthread_mutex_trylock(&library_lock) != 0)
        return 0;
    depth = 1;
    return 1;
}

void gc_lock_drop(void)
{
    depth = 0;
    pthread_mutex_unlock(&library_lock);
}

void gc_lock_set_waker(atomic_int *sleeping, void (*wake)(void))
{
    waker.sleeping = sleeping;
    waker.wake = wake;
}

int gc_lock_held(void)
{
    return !gc_lock_needed || depth > 0;
}

unsigned gc_lock_suspend(void)
{
    unsigned held = depth;
    if (!gc_lock_needed || held == 0)
        return 0;
    depth = 0;
    pthread_mutex_unlock(&library_lock);
    return held;
}

void gc_lock_restore(unsigned held)
{
    if (held == 0)
        return;
    pthread_mutex_lock(&library_lock);
    depth = held;
}
