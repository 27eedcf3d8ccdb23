/*
 * The MPI-2 intercommunicator collectives across sites (MPI 4.1 §6.2.2:
 * data moves from one group to the other; a rooted call's root passes
 * MPI_ROOT, the rest of its group MPI_PROC_NULL, the other group the
 * root's rank).  One algorithm per file, each a composition of the
 * communicator's two parts (gc_intercomm.h): a schedule on the union
 * (engine/coll_sched.h) for the steps between the groups, and the local
 * group's own collectives on group_comm, which are the grid algorithms of
 * the tables when a group spans sites.  Every algorithm is one builder
 * of one union schedule that serves the blocking, nonblocking and
 * persistent forms: a group collective is a NESTED step of it, built with
 * it (ic_group).
 *
 * Every member of both groups runs exactly one union schedule per call
 * (an empty one when it has no step between the groups), so the members
 * number the union's schedules alike.  The group collectives are
 * persistent whatever the call's form: a grid communicator's schedule
 * numbered on group_comm when the call builds it, or MPICH's persistent
 * collective, whose tag MPICH takes at its *_init; the members build them
 * in the order of their calls, so they may start them in any order (the
 * union schedules of outstanding calls move on at different paces on
 * different members, and persistent calls start in any order, MPI 4.1
 * §6.13).  The price: a grid group's collective makes a copy of its site
 * communicator per call (coll_sched_persist).
 */
#ifndef COLL_INTERCOMM_H
#define COLL_INTERCOMM_H

#include <limits.h>

#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

/* ---- what the algorithms share (ic_common.c) --------------------------- */

/* A rooted call's part for this member (MPI 4.1 §6.2.2). */
enum ic_role {
    IC_IDLE, /* MPI_PROC_NULL: the root's group, not the root */
    IC_ROOT, /* MPI_ROOT */
    IC_LEAF, /* the other group: *root_member is the root's union rank */
};
int ic_role_of(struct gc_comm *c, const char *fn, int root, enum ic_role *role,
               int *root_member);

/* The union schedule of one call, and running it to its end (then it is
 * freed; errors went through the communicator's handler). */
struct coll_sched *ic_sched_new(struct gc_comm *c, const char *fn);
int ic_sched_run(struct coll_sched *s);
/* The call's schedule, built with `status`: run, or handed out behind
 * the request of a nonblocking or persistent form
 * (engine/coll_request.h); freed after a failure. */
int ic_sched_finish(struct coll_sched *s, int status,
                    const struct coll_form *form);

/*
 * The local group's collective `kind` (GC_COLL_REDUCE, _BCAST, _GATHER,
 * _SCATTER or _SCATTERV, group ranks) with the arguments in a->u as a
 * NESTED step of s after `after` (*step): the grid algorithm's schedule
 * when the group spans sites, MPICH's persistent collective on
 * group_comm when it does not.  Errors went through the handler.
 */
int ic_group(struct coll_sched *s, enum gc_coll_kind kind, struct coll_args *a,
             int after, int *step);

/*
 * The reductions' first phase: the group's reduction of count x type at
 * sbuf by op to its rank 0, into schedule memory there (*result, NULL on
 * the others), as ic_group; s holds op (the program may free it while
 * the call runs).
 */
int ic_group_reduce(struct coll_sched *s, const char *fn, const void *sbuf,
                    int count, MPI_Datatype type, MPI_Op op, void **result,
                    int *step);

/*
 * Blocks of one group packed to bytes, all of them at its rank 0 (what
 * Gather, Scatter and Allgather move inside a group): this member's
 * block, and at the leader the bundle of all of them in group-rank order
 * with its layout, in schedule memory.  Gather and Scatter also say this
 * member's role; their leaves are the group of the blocks.
 */
struct ic_bundle {
    enum ic_role role;
    int root_member;
    int leader;   /* holds `all` */
    size_t block; /* bytes of one member's block */
    void *mine, *all;
    MPI_Count *counts;
    MPI_Aint *displs;
};
int ic_bundle_alloc(struct coll_sched *s, const char *fn, int leader,
                    size_t block, struct ic_bundle *b);
/* Gather's and Scatter's: the role, the arguments of each side checked,
 * the leaves' bundle of leaf_count x leaf_type blocks. */
int ic_bundle_make(struct coll_sched *s, const char *fn, int root,
                   int leaf_count, MPI_Datatype leaf_type, int root_count,
                   MPI_Datatype root_type, struct ic_bundle *b);
/* ic_group of the GC_COLL_GATHER (mine -> all) or GC_COLL_SCATTER (all ->
 * mine) of b at the group's rank 0. */
int ic_group_blocks(struct coll_sched *s, const char *fn,
                    enum gc_coll_kind kind, const struct ic_bundle *b,
                    int after, int *step);

/*
 * SEND and RECV steps of count x type with union member `peer`, packed
 * into bytes when the peer is on another site (only bytes cross sites),
 * after step `after`; step indices as coll_sched_send's.
 */
int ic_send(struct coll_sched *s, int peer, int tag, const void *buf, int count,
            MPI_Datatype type, int after);
int ic_recv(struct coll_sched *s, int peer, int tag, void *buf, int count,
            MPI_Datatype type, int after);

/* Union ranks of the remote group's rank j and of the local group's. */
static inline int ic_remote(const struct gc_comm *c, int j)
{
    return c->inter->remote_offset + j;
}
static inline int ic_local(const struct gc_comm *c, int i)
{
    return c->inter->local_offset + i;
}

/* ---- the algorithms -------------------------------------------------- */

/*
 * The collectives below take int counts and displacements: a large-count
 * (_c) call whose counts or displacements do not fit fails through
 * gc_unsupported naming the call.
 */
static inline int ic_fits(MPI_Count n)
{
    return n >= INT_MIN && n <= INT_MAX;
}
/*
 * The first n entries of a v-form's arrays as the collectives below take
 * them: the call's int arrays, or its large-count ones narrowed into
 * memory that ic_vec_free releases (also after a failure).
 */
struct ic_vec {
    const int *counts, *displs;
    int *own;
};
int ic_vec_narrow(struct gc_comm *c, const char *fn, int n, struct coll_vec v,
                  struct ic_vec *x);
void ic_vec_free(struct ic_vec *x);
/* coll_check_counts for int counts. */
int ic_check_counts(const struct gc_comm *c, const char *fn, int n,
                    const int *counts);

int ic_barrier(struct gc_comm *c, const char *fn, const struct coll_form *form);
int ic_bcast(struct gc_comm *c, const char *fn, void *buf, int count,
             MPI_Datatype type, int root, const struct coll_form *form);
int ic_reduce(struct gc_comm *c, const char *fn, const void *sbuf, void *rbuf,
              int count, MPI_Datatype type, MPI_Op op, int root,
              const struct coll_form *form);
int ic_allreduce(struct gc_comm *c, const char *fn, const void *sbuf,
                 void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                 const struct coll_form *form);
/* rcounts NULL: Reduce_scatter_block with rcount per member. */
int ic_reduce_scatter(struct gc_comm *c, const char *fn, const void *sbuf,
                      void *rbuf, const int *rcounts, int rcount,
                      MPI_Datatype type, MPI_Op op,
                      const struct coll_form *form);
int ic_gather(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
              MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
              int root, const struct coll_form *form);
int ic_gatherv(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
               MPI_Datatype stype, void *rbuf, const int *rcounts,
               const int *displs, MPI_Datatype rtype, int root,
               const struct coll_form *form);
int ic_scatter(struct gc_comm *c, const char *fn, const void *sbuf, int scount,
               MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
               int root, const struct coll_form *form);
int ic_scatterv(struct gc_comm *c, const char *fn, const void *sbuf,
                const int *scounts, const int *displs, MPI_Datatype stype,
                void *rbuf, int rcount, MPI_Datatype rtype, int root,
                const struct coll_form *form);
int ic_allgather(struct gc_comm *c, const char *fn, const void *sbuf,
                 int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, const struct coll_form *form);
int ic_allgatherv(struct gc_comm *c, const char *fn, const void *sbuf,
                  int scount, MPI_Datatype stype, void *rbuf,
                  const int *rcounts, const int *displs, MPI_Datatype rtype,
                  const struct coll_form *form);
/*
 * Alltoall, Alltoallv and Alltoallw: one block to and from every remote
 * member; displacements in elements of the one type (`stypes` NULL) or
 * in bytes (Alltoallw); `scounts` NULL: scount for every block.
 */
struct ic_blocks {
    const void *buf;
    int count;
    const int *counts;
    const int *displs;
    MPI_Datatype type;
    const MPI_Datatype *types;
};
int ic_alltoall(struct gc_comm *c, const char *fn, const struct ic_blocks *send,
                const struct ic_blocks *recv, const struct coll_form *form);

#endif
