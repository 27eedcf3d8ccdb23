/*
 * The collectives the layer itself needs (internal_coll.h): the barrier of
 * MPI_Finalize and the allgather of bytes behind communicator creation
 * and the topology constructors.  Blocking, without a schedule: they run
 * inside other calls, after the communicator's running schedules
 * (coll_sched_drain).  MagPIe's scheme (Kielmann et al., "MagPIe: MPI's
 * collective communication operations for clustered wide area systems",
 * PPoPP 1999, section 3): a local phase, one round between site leaders
 * over the relays, a local phase back; S sites with members send S(S-1)
 * WAN messages, one WAN latency.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/internal_coll.h"
#include "core/gc_comm.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"

/* Barrier: local barrier, leaders exchange empty messages, local barrier. */
int gc_coll_barrier(struct gc_comm *c)
{
    /* After the collectives started before it (engine/coll_sched.h). */
    coll_sched_drain(c);
    int status = coll_local_barrier(c->local);
    if (status != MPI_SUCCESS || c->site_count == 1)
        return status;
    if (c->local_rank == 0) {
        struct gc_xfer *reqs[2 * GC_MAX_SITES];
        int n = 0;
        for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
            if (c->leader[s] < 0 || s == gc_world.site_index)
                continue;
            status =
                coll_isend(c, c->leader[s], TAG_BARRIER, NULL, 0, reqs, &n);
            if (status == MPI_SUCCESS)
                status =
                    coll_irecv(c, c->leader[s], TAG_BARRIER, NULL, 0, reqs, &n);
        }
        status = coll_wait(c, n, reqs, status);
    }
    return status == MPI_SUCCESS ? coll_local_barrier(c->local) : status;
}

/*
 * Allgather of bytes: local gather to the leader, every leader sends its
 * site's block to every other leader, local bcast of the whole.
 */
int gc_coll_allgather_bytes(struct gc_comm *c, const void *mine, size_t len,
                            void *all)
{
    int status = MPI_SUCCESS;
    unsigned char *blocks[GC_MAX_SITES] = {NULL};
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    struct site_map map = {0};
    int n = 0;
    coll_sched_drain(c);
    status = site_map_build(c, &map);
    if (status != MPI_SUCCESS)
        return status;
    /* Each site's contributions, in site-rank order, at its leader. */
    for (int s = 0; s < GC_MAX_SITES; s++) {
        if (map.count[s] == 0 || (s != gc_world.site_index && c->local_rank))
            continue;
        blocks[s] = coll_alloc(len * (size_t)map.count[s]);
        if (blocks[s] == NULL) {
            status = coll_no_mem(c);
            goto cleanup;
        }
    }
    unsigned char *own = blocks[gc_world.site_index];
    unsigned held = gc_block_begin();
    status = PMPI_Gather_c(mine, (MPI_Count)len, MPI_BYTE, own, (MPI_Count)len,
                           MPI_BYTE, 0, c->local);
    gc_block_end(held);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c->local_rank == 0) {
        for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
            if (map.count[s] == 0 || s == gc_world.site_index)
                continue;
            status = coll_isend(c, c->leader[s], TAG_ALLGATHER_BYTES, own,
                                len * (size_t)c->local_size, reqs, &n);
            if (status == MPI_SUCCESS)
                status =
                    coll_irecv(c, c->leader[s], TAG_ALLGATHER_BYTES, blocks[s],
                               len * (size_t)map.count[s], reqs, &n);
        }
        status = coll_wait(c, n, reqs, status);
        if (status != MPI_SUCCESS)
            goto cleanup;
        for (int r = 0; r < c->size; r++)
            memcpy((unsigned char *)all + (size_t)r * len,
                   blocks[c->site[r]] + (size_t)c->site_rank[r] * len, len);
    }
    status = coll_local_bcast(all, (MPI_Count)((size_t)c->size * len), MPI_BYTE,
                              0, c->local);
cleanup:
    for (int s = 0; s < GC_MAX_SITES; s++)
        free(blocks[s]);
    site_map_free(&map);
    return status;
}
