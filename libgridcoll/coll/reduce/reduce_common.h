/*
 * Shared by the reductions whose partial results cross the WAN in pieces
 * (coll/reduce/reduce_grid_hier.c,
 * coll/reduce_scatter/reduce_scatter_grid_hier.c,
 * coll/allreduce/allreduce_grid_multileader.c): the pieces, cut into segments,
 * and the fold that combines the partial results of several sources in a fixed
 * order as their pieces arrive, so the fold overlaps the transfer of later
 * pieces.
 */
#ifndef REDUCE_COMMON_H
#define REDUCE_COMMON_H

#include <mpi.h>
#include <stddef.h>

/*
 * One WAN message of a partial result: elements [lo, hi) of the partial
 * result of fold position `source`, to or from comm rank `peer`.
 */
struct reduce_piece {
    int source;
    int peer;
    MPI_Count lo, hi;
};

/* A list of pieces that grows; free with reduce_pieces_free. */
struct reduce_pieces {
    struct reduce_piece *at;
    int count;
    int cap;
    int no_mem; /* an append failed: the list is incomplete */
};
void reduce_pieces_free(struct reduce_pieces *p);
/* [lo, hi) in pieces of at most `seg` elements (none when empty). */
void reduce_pieces_add(struct reduce_pieces *p, int source, int peer,
                       MPI_Count lo, MPI_Count hi, MPI_Count seg);

/*
 * Elements per segment: GRIDCOLL_<COLL>_SEGSIZE bytes (`segsize`) of
 * elements of `esize` packed bytes, at least one, and at most what one
 * relay message may carry.
 */
MPI_Count reduce_segment(size_t segsize, size_t esize);

/*
 * Partial results of elements [lo, hi) of `sources` sources, in fold
 * order, packed: element e of source u at
 * partials + u * stride + (e - lo) * esize.
 */
struct reduce_fold {
    const unsigned char *partials;
    size_t stride;
    size_t esize;
    int sources;
    MPI_Count lo, hi;
    void *rbuf; /* typed result: element e at rbuf + (e - lo) * extent */
    MPI_Aint extent;
    MPI_Datatype type;
    MPI_Op op;
};

/*
 * Fold the sources into rbuf as schedule steps (engine/coll_sched.h),
 * stretch by stretch, each once the receive steps of the pieces that
 * bring it (steps[k] brings pieces[k]; the pieces of one source
 * contiguous in the array, in element order, covering [lo, hi)) and
 * step `own` (the source already in `partials`) have finished.  The fold
 * order is the same on every member that folds the same elements, so all
 * get the same bits.  f's buffers live as long as the schedule.  Returns
 * a step after every fold.
 */
struct coll_sched;
int reduce_fold_steps(struct coll_sched *s, const struct reduce_fold *f,
                      const struct reduce_piece *pieces, const int *steps,
                      int npieces, int own);

#endif
