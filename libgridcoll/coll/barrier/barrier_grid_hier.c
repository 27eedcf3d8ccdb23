/*
 * Barrier across sites: MagPIe's flat tree between sites (Kielmann et
 * al., "MagPIe: MPI's collective communication operations for clustered
 * wide area systems", PPoPP 1999, section 3: one coordinator per site,
 * one WAN latency for latency-bound operations).
 *
 * Phases:
 *  1. Local barrier among each site's members.
 *  2. Every site leader (local rank 0) sends an empty message to every
 *     other leader and receives one from each: once a leader has them
 *     all, every member of every site has entered the barrier.
 *  3. Local barrier, which releases the members once their leader has.
 *
 * Cost, S sites: T = 2 B_local + L (one WAN latency; the S-1 messages of
 * a leader leave at once).  WAN: S(S-1) empty messages.
 *
 * The layer's own barrier (gc_coll_barrier: MPI_Finalize, communicator
 * creation) moves the same messages without a schedule.
 */
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

int barrier_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const struct sched_local barrier = {.op = LOCAL_BARRIER};
    int entered = coll_sched_local(s, &barrier, -1);
    int exchanged = entered;
    if (c->local_rank == 0 && c->site_count > 1) {
        int steps[2 * GC_MAX_SITES], n = 0;
        for (int t = 0; t < GC_MAX_SITES; t++) {
            if (c->leader[t] < 0 || t == c->site[c->rank])
                continue;
            steps[n++] = coll_sched_send(s, c->leader[t], TAG_BARRIER, NULL, 0,
                                         MPI_BYTE, entered);
            steps[n++] = coll_sched_recv(s, c->leader[t], TAG_BARRIER, NULL, 0,
                                         MPI_BYTE, -1);
        }
        exchanged = coll_sched_join(s, steps, n);
    }
    if (c->site_count > 1)
        coll_sched_local(s, &barrier, exchanged);
    return MPI_SUCCESS;
}
