/*
 * The progress thread of GRIDCOLL_ASYNC_PROGRESS=1 (docs/design/mpi-layer.md,
 * "Threads").
 *
 * Why a thread: the layer moves a rank's bytes between the relay socket
 * and the program's buffers, and a collective schedule posts its next
 * steps, only inside MPI calls.  A program that computes for a long time
 * between MPI_Ialltoall and MPI_Wait leaves the WAN idle once the socket
 * buffers are full, and the next phases of a hierarchical schedule not
 * started.  The thread does what MPI_Test would do, when it can take the
 * library lock: it only try-locks, so it never waits for the program and
 * never holds the lock while it sleeps.
 *
 * When it wakes: the relay socket readable (or writable while data is
 * queued), a wake-up from the program leaving the layer with work
 * outstanding, or, while operations are outstanding, every POLL_BUSY_NS
 * (MPICH's shared memory and the site-local steps have no descriptor to
 * wait on).  With nothing outstanding it sleeps in poll() and costs
 * nothing.
 *
 * Like MPICH's own MPIR_CVAR_ASYNC_PROGRESS, it needs MPICH at
 * MPI_THREAD_MULTIPLE (the program may call MPICH functions the layer
 * does not define while the thread is inside PMPI_Test); MPI_Init asks
 * for it when the setting is on.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "relay_client/gc_relay_client.h"
#include "runtime/gc_progress_thread.h"

/*
 * Poll period while operations are outstanding.  Short against the WAN
 * round trips (milliseconds) and the time a site-local step of 64 KiB
 * takes in shared memory (~20 us here); long enough that the thread's
 * wake-ups cost the computing program little (each is a poll() and a
 * few PMPI_Test, a few microseconds: 2 % of a core at 200 us).
 */
#define POLL_BUSY_NS (200 * 1000)

static struct {
    pthread_t id;
    int running;
    int wake_fd;         /* eventfd: the program kicks, MPI_Finalize stops */
    atomic_int sleeping; /* in poll() with nothing outstanding */
    atomic_int stop;
} progress = {.wake_fd = -1};

static void kick(void)
{
    uint64_t one = 1;
    /* Fails only when the counter is saturated: a wake-up is pending. */
    if (write(progress.wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        fprintf(stderr, "gridcoll: waking the progress thread: %s\n",
                strerror(errno));
}

/*
 * One turn under the lock: whether work is outstanding, and what to poll
 * the relay socket for.  With none, `sleeping` is set before the lock is
 * released, so that a program posting work right after sees it and kicks.
 */
static int turn(struct pollfd *relay)
{
    gc_progress(0);
    int busy = gc_progress_pending();
    relay->fd = gc_rc_fd(gc_world.rc);
    relay->events = (short)gc_rc_poll_events(gc_world.rc);
    atomic_store(&progress.sleeping, !busy);
    gc_lock_drop();
    return busy;
}

static void *progress_main(void *unused)
{
    (void)unused;
    const struct timespec busy_period = {0, POLL_BUSY_NS};
    while (!atomic_load(&progress.stop)) {
        struct pollfd fds[2] = {{.fd = -1},
                                {.fd = progress.wake_fd, .events = POLLIN}};
        /* The program is inside MPI, driving progress itself: look again
         * after one period. */
        int busy = 1;
        if (gc_lock_try())
            busy = turn(&fds[0]);
        int n = ppoll(fds, 2, busy ? &busy_period : NULL, NULL);
        atomic_store(&progress.sleeping, 0);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "gridcoll: progress thread: poll: %s\n",
                    strerror(errno));
            break;
        }
        uint64_t kicks;
        if (n > 0 && (fds[1].revents & POLLIN) &&
            read(progress.wake_fd, &kicks, sizeof kicks) < 0 && errno != EAGAIN)
            break;
    }
    return NULL;
}

int gc_thread_start(void)
{
    int status = -1;
    sigset_t all, saved;
    progress.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (progress.wake_fd < 0) {
        fprintf(stderr, "gridcoll: progress thread: eventfd: %s\n",
                strerror(errno));
        goto cleanup;
    }
    gc_lock_enable();
    gc_lock_set_waker(&progress.sleeping, kick);
    /* Signals stay the program's: the thread is created with all blocked
     * and inherits the mask. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    int rc = pthread_create(&progress.id, NULL, progress_main, NULL);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        fprintf(stderr, "gridcoll: progress thread: %s\n", strerror(rc));
        goto cleanup;
    }
    progress.running = 1;
    status = 0;
cleanup:
    if (status != 0 && progress.wake_fd >= 0) {
        close(progress.wake_fd);
        progress.wake_fd = -1;
    }
    return status;
}

void gc_thread_stop(void)
{
    if (!progress.running)
        return;
    atomic_store(&progress.stop, 1);
    kick();
    pthread_join(progress.id, NULL);
    progress.running = 0;
    close(progress.wake_fd);
    progress.wake_fd = -1;
}
