/*
 * Intra-site allgather strategies: the local phase of the grid allgather
 * (allgather_grid_hier.c), one strategy per file allgather_site_<name>.c,
 * after Kumar & Kalé, "Scaling All-to-All Multicast on Fat-tree
 * Networks" (ICPADS 2004): combining strategies for short messages
 * (section 3: 2-D mesh, hypercube) and direct strategies for long ones
 * (section 4: ring, kPrefix, kShift), plus recursive doubling (Thakur,
 * Rabenseifner and Gropp, "Optimization of Collective Communication
 * Operations in MPICH", IJHPCA 2005, section 4.1) and MPICH's own
 * Allgatherv.  docs/algorithms/allgather.md compares them.
 *
 * A strategy moves packed bytes between the members of one site with
 * PMPI point-to-point on a private communicator (coll_local_p2p), so
 * its messages can never match the application's receives; `shm`
 * (Mamidala, allgather_site_shm.c) goes through each node's shared memory
 * and private communicators of the node layer (node_shm.h).  The
 * strategies are the site level of allgather's table (gc_coll_select.c:
 * GRIDCOLL_ALLGATHER_LOCAL=<name>, else by block size and layout); the
 * choice is per site: every member of a site sees the same environment
 * and the same block sizes, so they agree, and other sites may choose
 * differently.
 */
#ifndef ALLGATHER_SITE_H
#define ALLGATHER_SITE_H

#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include <mpi.h>
#include <stdio.h>

/*
 * One site's packed blocks as a strategy sees them: block k (local rank
 * k's) is bytes off[k] .. off[k + 1] of buf, so blocks lo..hi-1 are one
 * contiguous byte range.  On entry only the caller's own block is filled
 * in; on return every block is.
 */
struct site_blocks {
    struct gc_comm *grid; /* for the node layer (allgather_site_shm.c) */
    MPI_Comm comm;        /* the site's members, private to the collectives */
    int size;
    int rank;
    unsigned char *buf;
    const MPI_Aint *off; /* [size + 1] */
    int k;               /* GRIDCOLL_ALLGATHER_K, for kshift and kprefix */
};

typedef int site_allgather_fn(const struct site_blocks *b);

site_allgather_fn allgather_site_ring;
site_allgather_fn allgather_site_recursive_doubling;
site_allgather_fn allgather_site_kshift;
site_allgather_fn allgather_site_kprefix;
site_allgather_fn allgather_site_mesh;
site_allgather_fn allgather_site_hypercube;
site_allgather_fn allgather_site_mpich;
site_allgather_fn allgather_site_shm;

/*
 * One round of a strategy: its receives and sends are posted, then
 * waited for together.  A message is a list of block ranges; empty ones
 * are skipped on both sides (every member knows every block's size).
 */
struct site_round {
    MPI_Request *reqs;
    int n;
    int cap;
};
#define SITE_ROUND_INIT                                                        \
    {                                                                          \
        .reqs = NULL                                                           \
    }
/* ranges[2 i] .. ranges[2 i + 1] - 1 for i < nranges, in that order. */
int site_round_send(struct site_round *r, const struct site_blocks *b, int peer,
                    const int *ranges, int nranges);
int site_round_recv(struct site_round *r, const struct site_blocks *b, int peer,
                    const int *ranges, int nranges);
/* Wait for everything posted; `status` is the result of posting it. */
int site_round_wait(struct site_round *r, int status);
void site_round_free(struct site_round *r);

/*
 * This site's strategy for blocks laid out as `off` says (as in struct
 * site_blocks, local ranks): coll_site_select for a call `fn`, blocking
 * or not.  Errors through c's handler.
 */
int allgather_site_select(struct gc_comm *c, const char *fn, int blocking,
                          const MPI_Aint *off, const struct coll_algo **algo);

/*
 * Run strategy `algo` (a blocking one) on c's members: `off` as above,
 * `buf` with the caller's block filled in.  Errors through c's handler;
 * `fn` names the call.
 */
int allgather_site_run(struct gc_comm *c, const char *fn,
                       const struct coll_algo *algo, unsigned char *buf,
                       const MPI_Aint *off);

/*
 * Hier's local bcast of `len` bytes at buf (the other sites' blocks)
 * from local rank 0 after strategy `algo`: through the node layer
 * (bcast_site_shm) when it is shm, else PMPI_Bcast_c.
 */
int allgather_site_bcast(struct gc_comm *c, const struct coll_algo *algo,
                         unsigned char *buf, MPI_Aint len);

#endif
