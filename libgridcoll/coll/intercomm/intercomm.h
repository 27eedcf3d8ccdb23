/*
 * The MPI-2 intercommunicator collectives across sites (MPI 4.1 §6.2.2:
 * data moves from one group to the other; a rooted call's root passes
 * MPI_ROOT, the rest of its group MPI_PROC_NULL, the other group the
 * root's rank).  One algorithm per file, each a composition of the
 * communicator's two parts (gc_intercomm.h): a schedule on the union
 * (engine/coll_sched.h) for the steps between the groups, and the local
 * group's own collectives on group_comm, which are the grid algorithms of
 * the tables when a group spans sites.  Those that are a union schedule
 * alone (barrier, bcast, alltoall(v/w), gatherv, scatterv) also serve the
 * nonblocking and persistent forms; the others' fail through
 * gc_unsupported.
 *
 * Every member of both groups runs exactly one union schedule per call
 * (an empty one when it has no step between the groups), so the members
 * number the union's schedules alike.  A group collective across sites
 * waits in the layer's progress loop; one on a single site is MPICH's,
 * whose members wait only for each other, all past the steps between
 * the groups they depend on.
 */
#ifndef COLL_INTERCOMM_H
#define COLL_INTERCOMM_H

#include <limits.h>

#include "engine/coll_sched.h"
#include "gc_coll.h"
#include "gc_intercomm.h"

/* ---- what the algorithms share (ic_common.c) --------------------------- */

/* MPI_SUCCESS for a blocking call; the others fail naming `fn`. */
int ic_blocking_only(struct gc_comm *c, const char *fn,
                     const struct coll_form *form);

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
/* The same for the algorithms that are one schedule and nothing else:
 * run, or handed out behind the request of a nonblocking or persistent
 * form (engine/coll_request.h). */
int ic_sched_finish(struct coll_sched *s, const struct coll_form *form);

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
 * (_c) call whose counts do not fit, or that passes MPI_Count arrays,
 * fails through gc_unsupported naming the call.
 */
static inline int ic_fits(MPI_Count n)
{
    return n >= INT_MIN && n <= INT_MAX;
}
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
