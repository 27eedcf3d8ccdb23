/*
 * Shared by the hier Gatherv and Scatterv (coll/gather/gather_grid_hier.c,
 * coll/scatter/scatter_grid_hier.c) and the collectives built on them: the
 * root's layout of every site's part, and the steps of a member of a
 * site without the root, whose bytes pass through its leader in one WAN
 * message.
 */
#ifndef ROOTED_COMMON_H
#define ROOTED_COMMON_H

#include "coll/engine/coll_sched.h"
#include "core/gc_world.h"
#include <stddef.h>

/*
 * The root's side, in schedule memory: counts[] and displs[] (by comm
 * rank, copied) of `type`, the same re-indexed by site rank for its own
 * site's local phase, and for every other site with members a buffer
 * for that site's packed parts (bytes[t]), members in site-rank order.
 */
struct rooted_layout {
    const MPI_Count *counts;
    const MPI_Aint *displs;
    MPI_Count *lcounts;
    MPI_Aint *ldispls;
    int *member;             /* comm ranks grouped by site */
    int first[GC_MAX_SITES]; /* into member */
    int nmembers[GC_MAX_SITES];
    unsigned char *block[GC_MAX_SITES];
    size_t bytes[GC_MAX_SITES];
    MPI_Datatype type;
    MPI_Aint extent;
};
int rooted_layout_make(struct coll_sched *s, const MPI_Count *counts,
                       const MPI_Aint *displs, MPI_Datatype type,
                       struct rooted_layout **out);
/*
 * A step packing (or unpacking) site t's parts between buf + displs[r]
 * extents and block[t], after step `after`; its index.
 */
int rooted_copy_step(struct coll_sched *s, struct rooted_layout *x, int t,
                     void *buf, int unpack, int after);
/*
 * A member of a site without the root: its part of Gatherv (`gather`:
 * count x type from buf to the root) or Scatterv (into buf), through the
 * site's leader, after step `after`.  `uniform`: every member moves the
 * same number of bytes, so the leader need not gather the sizes.
 * *done: a step after all of it.
 */
int rooted_remote(struct coll_sched *s, void *buf, MPI_Count count,
                  MPI_Datatype type, int root, int uniform, int gather,
                  int after, int *done);

#endif
