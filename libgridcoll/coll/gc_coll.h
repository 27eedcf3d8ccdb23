/*
 * Internals shared by the collective files: the MPI entry points
 * (gc_coll.c, gc_coll_reduce.c, gc_coll_alltoall.c, gc_coll_neighbor.c),
 * the helpers they and the algorithms share (coll/coll_common.c,
 * coll/reduce/reduce_common.c, coll/rooted_common.c, coll/local_phase.c)
 * and the algorithms, coll/<collective>/, one per file; the schedule
 * engine is in engine/.  Layer-wide collectives are in internal_coll.h.
 */
#ifndef GC_COLL_H
#define GC_COLL_H

#include "core/gc_comm.h"
#include "core/gc_lock.h"
#include "core/gc_world.h"
#include "p2p/gc_xfer.h"
#include <stddef.h>

struct coll_sched;

/*
 * Tags on a communicator's collective context, one per kind of exchange.
 * Collectives run in the same order on every member and the engine keeps
 * per-pair order, so a tag need only tell apart the exchanges that may be
 * in flight between one pair at the same time.
 */
enum coll_tag {
    TAG_BARRIER = 1,
    TAG_ALLGATHER_BYTES,
    TAG_BCAST,           /* root -> leaders: the packed buffer */
    TAG_REDUCE,          /* leaders -> root: a site's partial result */
    TAG_GATHER,          /* leaders -> root: a site's packed contributions */
    TAG_SCATTER,         /* root -> leaders: a site's packed parts */
    TAG_ALLTOALL,        /* rank -> rank on another site */
    TAG_ALLGATHER,       /* leader -> leaders: a site's packed blocks */
    TAG_ALLREDUCE,       /* leader -> leaders: a site's partial result */
    TAG_ALLREDUCE_SLICE, /* rank -> its counterparts: part of a slice */
    TAG_BCAST_LANE,      /* the second stream of a two-lane bcast */
    TAG_REDUCE_SCATTER,  /* rank -> owner: part of a site's partial result */
    TAG_SCAN,            /* last member -> leaders: a site's total */
    TAG_NODE_BCAST,      /* site source -> node leaders (local_p2p) */
    TAG_NEIGHBOR,        /* rank -> its neighbours in a topology */
    TAG_NEIGHBOR_SIZES,  /* member -> coordinator: its bundled blocks' sizes */
    TAG_NEIGHBOR_GATHER, /* member -> coordinator: its blocks for a site */
    TAG_NEIGHBOR_BUNDLE, /* coordinator -> coordinator: a site's blocks */
    TAG_NEIGHBOR_SPLIT,  /* coordinator -> member: its blocks from a site */
};

/* Comm ranks grouped by site, each site's members in site-rank order. */
struct site_map {
    int count[GC_MAX_SITES]; /* members per site */
    int first[GC_MAX_SITES]; /* index of the site's first entry in member */
    int *member;             /* [c->size] */
};
/* Free with site_map_free, also after a failure. */
int site_map_build(const struct gc_comm *c, struct site_map *m);
void site_map_free(struct site_map *m);

/*
 * A temporary holding `blocks` typed buffers of `count` elements of a
 * datatype each, laid out as the datatype says (what Reduce_local needs):
 * block i starts at base + i * stride.
 */
struct coll_temp {
    void *mem;
    char *base;
    MPI_Aint stride;
};
int coll_temp_alloc(const struct gc_comm *c, MPI_Count count, MPI_Datatype type,
                    int blocks, struct coll_temp *t);

/* malloc that never returns NULL for 0 bytes; NULL means out of memory. */
void *coll_alloc(size_t bytes);
/* Out of memory, through the communicator's error handler. */
int coll_no_mem(const struct gc_comm *c);

/* c->local_p2p (made with the communicator); its errors return. */
int coll_local_p2p(struct gc_comm *c, MPI_Comm *comm);

/*
 * Which form of a collective an entry point serves: blocking (request
 * NULL), nonblocking (MPI_Ibcast: the request to hand out) or persistent
 * (MPI_Bcast_init); see struct coll_args.
 */
struct coll_form {
    MPI_Request *request;
    int persistent;
};
#define COLL_BLOCKING         (&(const struct coll_form){NULL, 0})
#define COLL_NONBLOCKING(req) (&(const struct coll_form){(req), 0})
#define COLL_PERSISTENT(req)  (&(const struct coll_form){(req), 1})

/*
 * The six MPI entry points of a collective: blocking, nonblocking (INAME,
 * MPI_Ibcast) and persistent (NAME_init), each with int counts and in its
 * large-count form (suffix _c, MPI 4.1 section 6.1: MPI_Count counts,
 * MPI_Aint displacements).  PARAMS(COUNT, DISP) is the parameter list
 * before the communicator with those types, ARGS() its names, IMPL(c, fn,
 * form) the call of the one implementation all six share, which takes the
 * large-count types (v-forms: a struct coll_vec).  A communicator that is
 * not a grid one goes to MPICH's function of the same form.
 */
#define GC_COLL_FORMS(NAME, INAME, PARAMS, ARGS, IMPL)                         \
    GC_COLL_FORMS_OF(NAME, INAME, , PARAMS(int, int), ARGS, IMPL)              \
    GC_COLL_FORMS_OF(NAME, INAME, _c, PARAMS(MPI_Count, MPI_Aint), ARGS, IMPL)
#define GC_COLL_FORMS_OF(NAME, INAME, SFX, PARAMS, ARGS, IMPL)                 \
    int MPI_##NAME##SFX(PARAMS, MPI_Comm comm)                                 \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_##NAME##SFX(ARGS(), comm);                             \
        return IMPL(c, "MPI_" #NAME #SFX, COLL_BLOCKING);                      \
    }                                                                          \
    int MPI_##INAME##SFX(PARAMS, MPI_Comm comm, MPI_Request *request)          \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_##INAME##SFX(ARGS(), comm, request);                   \
        return IMPL(c, "MPI_" #INAME #SFX, COLL_NONBLOCKING(request));         \
    }                                                                          \
    int MPI_##NAME##_init##SFX(PARAMS, MPI_Comm comm, MPI_Info info,           \
                               MPI_Request *request)                           \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_##NAME##_init##SFX(ARGS(), comm, info, request);       \
        return IMPL(c, "MPI_" #NAME "_init" #SFX, COLL_PERSISTENT(request));   \
    }

/*
 * A v-form's counts and displacements as the call gave them: int arrays
 * (MPI_Gatherv) or large-count ones (MPI_Gatherv_c), told apart by
 * COLL_VEC from their types.  coll_vec_wide gives the algorithms' form of
 * the first n entries, the int arrays widened into memory that
 * coll_wide_free releases (also after a failure).
 */
struct coll_vec {
    const int *icounts, *idispls;
    const MPI_Count *counts;
    const MPI_Aint *displs;
};
#define COLL_VEC_INT(p)                                                        \
    _Generic((p), const int *: (const int *)(p), int *: (const int *)(p),      \
             default: (const int *)NULL)
#define COLL_VEC_WIDE(T, p)                                                    \
    _Generic((p), const int *: (const T *)NULL, int *: (const T *)NULL,        \
             default: (const T *)(p))
#define COLL_VEC(counts, displs)                                               \
    ((struct coll_vec){COLL_VEC_INT(counts), COLL_VEC_INT(displs),             \
                       COLL_VEC_WIDE(MPI_Count, counts),                       \
                       COLL_VEC_WIDE(MPI_Aint, displs)})
struct coll_wide {
    const MPI_Count *counts;
    const MPI_Aint *displs;
    MPI_Count *own_counts;
    MPI_Aint *own_displs;
};
int coll_vec_wide(const struct gc_comm *c, int n, struct coll_vec v,
                  struct coll_wide *w);
void coll_wide_free(struct coll_wide *w);

/* Argument checks; MPI_SUCCESS or the error the handler returned. */
int coll_check_root(const struct gc_comm *c, const char *fn, int root);
int coll_check_count(const struct gc_comm *c, const char *fn, MPI_Count count);
int coll_check_counts(const struct gc_comm *c, const char *fn, int n,
                      const MPI_Count *counts);
int coll_check_type(const struct gc_comm *c, const char *fn, MPI_Datatype type);
/* op on type: MPI_OP_NULL, or a predefined op the type does not take. */
int coll_check_op(const struct gc_comm *c, const char *fn, MPI_Op op,
                  MPI_Datatype type);
/* A null buffer for count > 0 elements of a predefined type. */
int coll_check_userbuf(const struct gc_comm *c, const char *fn, const void *buf,
                       MPI_Count count, MPI_Datatype type);
/* sendbuf == recvbuf without MPI_IN_PLACE (count > 0). */
int coll_check_alias(const struct gc_comm *c, const char *fn,
                     const void *sendbuf, const void *recvbuf, MPI_Count count);
/* count elements of type: a valid send or receive description. */
int coll_check_buf(const struct gc_comm *c, const char *fn, MPI_Count count,
                   MPI_Datatype type);

/* gc_packed_size, an oversized message through the handler. */
int coll_packed_size(const struct gc_comm *c, MPI_Count count,
                     MPI_Datatype type, size_t *len);
/* Exactly `len` packed bytes (gc_packed_size) to or from a typed buffer. */
int coll_pack(const struct gc_comm *c, const void *buf, MPI_Count count,
              MPI_Datatype type, void *out, size_t len);
int coll_unpack(const struct gc_comm *c, const void *in, size_t len, void *buf,
                MPI_Count count, MPI_Datatype type);

/*
 * One block of count x type per member, so a collective's uniform form
 * can run as its v-form: every member moves `count` (1, or 0 for an empty
 * block) of `type`; with `layout`, counts[] and displs[] (0..size-1) for
 * the root.  MPICH's local Gatherv/Scatterv skip a member by its count,
 * not its bytes, so a root must not expect one empty block from a member
 * that sends a count of 0: hence 0, not 1, for empty blocks.
 */
struct coll_blocks {
    MPI_Datatype type;
    MPI_Count count;
    MPI_Count *counts;
    MPI_Aint *displs;
};
#define COLL_BLOCKS_INIT                                                       \
    {                                                                          \
        .type = MPI_DATATYPE_NULL                                              \
    }
/* Free with coll_blocks_free, also after a failure. */
int coll_blocks_make(const struct gc_comm *c, MPI_Count count,
                     MPI_Datatype type, int layout, struct coll_blocks *b);
void coll_blocks_free(struct coll_blocks *b);

/*
 * Wait for `n` transfers; `status` is the result of posting them.  A
 * failure goes through the communicator's error handler.
 */
int coll_wait(struct gc_comm *c, int n, struct gc_xfer **reqs, int status);
/*
 * Wait for a PMPI request of a local phase, sleeping between polls
 * (gc_idle) instead of busy-polling inside MPICH.
 */
int coll_local_wait(MPI_Request *req);
/*
 * Local phases (coll/local_phase.c): the PMPI collective of the same name
 * and arguments; below 256 KiB per rank as its nonblocking form completed
 * by coll_local_wait, so waiting ranks sleep instead of spinning in MPICH.
 */
int coll_local_barrier(MPI_Comm comm);
int coll_local_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root,
                     MPI_Comm comm);
int coll_local_reduce(const void *sbuf, void *rbuf, MPI_Count count,
                      MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
/* PMPI_Waitall, statuses ignored, sleeping between polls; every request
 * completes, the first error is returned. */
int coll_local_waitall(int count, MPI_Request reqs[]);
/* Post into reqs[*n], counting only what was posted. */
int coll_isend(struct gc_comm *c, int dst, int tag, const void *buf, size_t len,
               struct gc_xfer **reqs, int *n);
int coll_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
               struct gc_xfer **reqs, int *n);

/*
 * Phases that schedules are built of (engine/coll_sched.h), arguments
 * already checked: this member's steps of the hier Bcast
 * (coll/bcast/bcast_grid_hier.c, with the default segment size), Reduce
 * (coll/reduce/reduce_grid_hier.c, `segsize` bytes per segment), Gatherv and
 * Scatterv (coll/gather/gather_grid_hier.c, coll/scatter/scatter_grid_hier.c),
 * the first of them after step `after` (-1: none).  *done is a step that
 * finishes after all of them.  Types and the counts/displs arrays are
 * copied or held by the schedule.
 */
int phase_bcast(struct coll_sched *s, void *buf, MPI_Count count,
                MPI_Datatype type, int root, int after, int *done);
int phase_reduce(struct coll_sched *s, const void *sbuf, void *rbuf,
                 MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                 size_t segsize, int after, int *done);
/*
 * rcounts, rdispls, rtype (scounts, sdispls, stype) matter at the root
 * only.  `uniform`: every member sends (receives) the same number of
 * bytes, so site leaders need not collect their members' sizes.
 */
int phase_gatherv(struct coll_sched *s, const void *sbuf, MPI_Count scount,
                  MPI_Datatype stype, void *rbuf, const MPI_Count *rcounts,
                  const MPI_Aint *rdispls, MPI_Datatype rtype, int root,
                  int uniform, int after, int *done);
int phase_scatterv(struct coll_sched *s, const void *sbuf,
                   const MPI_Count *scounts, const MPI_Aint *sdispls,
                   MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                   MPI_Datatype rtype, int root, int uniform, int after,
                   int *done);
/*
 * Room in s for `count` elements of `type` laid out as the datatype says
 * (what PMPI_Reduce_local needs): *base is where element 0 goes.
 */
int coll_sched_temp(struct coll_sched *s, MPI_Count count, MPI_Datatype type,
                    void **base);

/* 1 when every site's members are one contiguous range of comm ranks. */
int coll_sites_contiguous(const struct gc_comm *c);
/*
 * *in_order = 1 when combining every site's partial result in the order
 * of the sites' first members gives MPI's rank-order result for `op`: a
 * commutative op, or every site's members one contiguous range of ranks.
 */
int coll_site_partials_ok(const struct gc_comm *c, MPI_Op op, int *in_order);
/*
 * x holds n packed contributions of `len` bytes, contribution i at
 * x + i * stride, in rank order; leave x[0] op x[1] op ... op x[n-1]
 * (count elements of type) in rbuf.
 */
int coll_combine(const struct gc_comm *c, const unsigned char *x, int n,
                 size_t stride, size_t len, void *rbuf, MPI_Count count,
                 MPI_Datatype type, MPI_Op op);
/* coll_combine as a schedule's CALL step (arg: struct coll_fold). */
struct coll_fold {
    const unsigned char *partials;
    int sources;
    size_t stride, len;
    void *rbuf;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
};
int coll_fold_step(struct coll_sched *s, void *arg);

#endif
