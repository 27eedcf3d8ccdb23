/*
 * Collective schedules: every grid collective algorithm is written once,
 * as the steps one member takes and the order they depend on; an engine
 * posts each step when what it waits for has finished, and never blocks.
 * The blocking MPI_Bcast is a schedule posted and waited for, MPI_Ibcast
 * the same schedule behind a request, MPI_Bcast_init one built once and
 * re-run by every MPI_Start (coll_request.c).
 *
 * After MPICH's transport schedules (src/mpi/coll/transports/gentran:
 * vertices with incoming edges, posted when those complete) and UCC's
 * tasks (post, progress, never block); the bcast plans of issue 7 were
 * its first form.
 *
 * Steps:
 *   SEND, RECV   count x type with one member: over PMPI on the
 *                communicator's private site communicator (local_p2p)
 *                when both are on one site, else over the relays (bytes
 *                only, counted as the collective's WAN traffic);
 *   LOCAL        a nonblocking MPICH collective among this site's
 *                members (PMPI_Ibcast, PMPI_Ireduce, ... on c->local);
 *   POLL         a client's own work, started and tested by the engine
 *                (the node layer's shared-memory bcast, node_shm.h);
 *   NESTED       a collective on another communicator (an
 *                intercommunicator's local group, gc_intercomm.h), built
 *                before the run: a grid communicator's schedule, which the
 *                engine starts, or an MPICH persistent collective
 *                (PMPI_Bcast_init, ...), which it starts and polls; or an
 *                MPICH request posted at the call, which it polls;
 *   CALL         local work (reduction, copy, pack, unpack) run inline
 *                when its turn comes; it must not block;
 *   JOIN         nothing: finishes when all the steps it lists have.
 *
 * Order.  A step starts once its `after` step (-1: none) has finished; a
 * JOIN gathers several.  Beyond that:
 *   - sends (and receives) with the same peer and tag are posted in the
 *     order they were added, at most a window of them at once, so both
 *     ends match them in the same order;
 *   - LOCAL steps are posted in the order they were added, and those of
 *     a schedule only after every schedule started earlier on the same
 *     communicator has posted all of its own: MPI requires every member
 *     to start the collectives of one communicator in the same order, and
 *     with several schedules outstanding their local collectives could
 *     otherwise reach MPICH in a different order on different members;
 *   - NESTED steps are posted in the order they were added, and need no
 *     more: they are persistent collectives, numbered (grid) or given
 *     their tags (MPICH) when they were built, in the order of the calls
 *     that built them, so members may start them in any order;
 *   - tags carry the schedule's sequence number on its communicator
 *     (every member starts the communicator's collectives in the same
 *     order, so every member numbers them alike), so the messages of two
 *     outstanding collectives never match each other's receives.
 *
 * A schedule is built for one communicator and one call's buffers and can
 * run any number of times, one run at a time: steps keep no state between
 * runs, buffers the schedule allocated are reused.
 *
 * Errors.  A step that fails stops the run from posting more; what is in
 * flight still finishes (it uses buffers the caller owns), then the run
 * ends with the first error.  A relay message of another length than the
 * receive expected (members that disagree on sizes: an erroneous program)
 * lets the run go on with the bytes that came and ends it with
 * MPI_ERR_TRUNCATE, so no member waits forever.
 */
#ifndef COLL_SCHED_H
#define COLL_SCHED_H

#include "core/gc_comm.h"
#include "core/gc_progress.h"
#include "p2p/gc_wan_stats.h"
#include <stddef.h>

struct coll_sched;

/* A nonblocking MPICH collective on the site's members (c->local). */
enum sched_local_op {
    LOCAL_BARRIER,
    LOCAL_BCAST,          /* buf: rbuf, count x type from root */
    LOCAL_REDUCE,         /* sbuf -> rbuf at root */
    LOCAL_ALLREDUCE,      /* sbuf -> rbuf */
    LOCAL_SCAN,           /* sbuf -> rbuf, inclusive */
    LOCAL_EXSCAN,         /* sbuf -> rbuf, exclusive */
    LOCAL_REDUCE_SCATTER, /* sbuf -> rbuf, counts[] per member */
    LOCAL_GATHERV,        /* sbuf count x type -> rbuf counts/displs x rtype */
    LOCAL_SCATTERV,       /* sbuf counts/displs x type -> rbuf rcount x rtype */
    LOCAL_ALLGATHERV,     /* sbuf count x type -> rbuf counts/displs x rtype */
    LOCAL_ALLTOALLW,      /* w: every member's counts, byte displs and types */
    LOCAL_START,          /* start(l, &request): a nonblocking MPICH call
                             of the client's (a communicator duplication) */
};

/*
 * Arguments of a LOCAL step, copied into the schedule; ranks are site
 * ranks (c->local), arrays have c->local_size entries and must live as
 * long as the schedule (coll_sched_alloc).  Datatypes the program may free
 * before the schedule ends must come from coll_sched_type.
 */
struct sched_local {
    enum sched_local_op op;
    const void *sbuf; /* may be MPI_IN_PLACE where MPICH's call allows it */
    void *rbuf;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op mop;
    int root;
    const MPI_Count *counts; /* gatherv, scatterv, allgatherv: the v side */
    const MPI_Aint *displs;
    MPI_Datatype rtype;
    MPI_Count rcount; /* scatterv: the receive side */
    /* alltoallw (PMPI_Ialltoallw_c: displacements in bytes) */
    const MPI_Count *scounts, *rcounts;
    const MPI_Aint *sdispls, *rdispls;
    const MPI_Datatype *stypes, *rtypes;
    /* LOCAL_START: posts the call on a communicator of this site's
     * members of the schedule's communicator; arg lives as long as the
     * schedule */
    int (*start)(const struct sched_local *l, MPI_Request *request);
    void *arg;
};

/* Local work of a CALL step; MPI_SUCCESS or an MPI error. */
typedef int sched_call_fn(struct coll_sched *s, void *arg);

/* ---- building -------------------------------------------------------- */

/*
 * A new empty schedule for collective `fn` ("MPI_Ibcast", for messages)
 * on c, which it holds a reference to; NULL when out of memory.
 * `wan` is where its WAN traffic is counted (gc_wan_stats.h), NULL for
 * the layer's own.
 */
struct coll_sched *coll_sched_new(struct gc_comm *c, const char *fn,
                                  struct gc_wan_count *wan);
/* Free a schedule that is not running (or has finished). */
void coll_sched_free(struct coll_sched *s);
struct gc_comm *coll_sched_comm(const struct coll_sched *s);

/*
 * Memory that lives as long as the schedule; NULL when out of memory
 * (the schedule then fails when started, and `bytes` 0 still gives a
 * non-NULL pointer).  Zeroed.
 */
void *coll_sched_alloc(struct coll_sched *s, size_t bytes);
/*
 * `type`, kept alive for the schedule's lifetime: MPI lets the program
 * free a datatype while a nonblocking collective still uses it.  A
 * failure is recorded (the schedule fails when started).
 */
MPI_Datatype coll_sched_type(struct coll_sched *s, MPI_Datatype type);

/*
 * Add steps; each returns its index, the `after` of later steps, or -1
 * when out of memory (recorded: the schedule fails when started).  Tags
 * are small (enum coll_tag); the engine adds the schedule's number.
 */
int coll_sched_send(struct coll_sched *s, int peer, int tag, const void *buf,
                    MPI_Count count, MPI_Datatype type, int after);
int coll_sched_recv(struct coll_sched *s, int peer, int tag, void *buf,
                    MPI_Count count, MPI_Datatype type, int after);
int coll_sched_local(struct coll_sched *s, const struct sched_local *l,
                     int after);
/*
 * A step of a client's own work, neither MPICH's nor the relays' (the
 * node layer's shared-memory bcast): once `after` finished the engine
 * calls ops->start(state, arg), then ops->test(state, &done) in each pass
 * until done is set or it fails.  `state` is the step's, ops->state_size
 * bytes (one run at a time); arg lives as long as the schedule.  Poll
 * steps start in the order they were added.
 */
struct sched_poll_ops {
    size_t state_size;
    int (*start)(void *state, void *arg);
    int (*test)(void *state, int *done);
};
int coll_sched_poll(struct coll_sched *s, const struct sched_poll_ops *ops,
                    void *arg, int after);
/* fn(s, arg) once `after` finished; arg lives as long as the schedule. */
int coll_sched_call(struct coll_sched *s, sched_call_fn *fn, void *arg,
                    int after);
/*
 * A CALL that may wait for other members (a node-layer phase written as
 * blocking code): allowed in blocking runs only, which then first wait
 * for the communicator's earlier schedules (coll_sched_drain), so no
 * member blocks in it while its peers still owe another collective a
 * step.  A schedule with one cannot be started behind a request.
 */
int coll_sched_call_blocking(struct coll_sched *s, sched_call_fn *fn, void *arg,
                             int after);
/*
 * A NESTED step: `child`, a schedule on another grid communicator made
 * persistent (coll_sched_persist) before s runs, which s starts at its
 * turn and owns from this call on, also when it fails; or `request`, an
 * inactive MPICH persistent collective request that s starts at its turn
 * and frees with itself.
 */
int coll_sched_nested(struct coll_sched *s, struct coll_sched *child,
                      int after);
int coll_sched_nested_mpich(struct coll_sched *s, MPI_Request request,
                            int after);
/*
 * A NESTED step that finishes when *request completes: an MPICH request
 * the builder posts after adding the step and before it starts s (in s's
 * memory), for the MPICH calls every member must make in the order of
 * the program's calls, as MPI_Comm_idup's copies of the communicators
 * that persistent collectives copy at their own call
 * (coll_sched_persist).  Only in a schedule that runs once; freeing s
 * unrun waits for the request (gc_ctxid_wait).
 */
int coll_sched_wait_mpich(struct coll_sched *s, MPI_Request *request,
                          int after);
/* A step that finishes when every listed step has (-1 entries skipped). */
int coll_sched_join(struct coll_sched *s, const int *steps, int n);
/* A JOIN of every step added so far: "after all of the above". */
int coll_sched_fence(struct coll_sched *s);

/*
 * Sizes some members learn only while the schedule runs (Gatherv's
 * members tell their leader their lengths): a CALL step that runs first
 * may point a later SEND or RECV at another buffer and count (a count
 * below 0: the step moves nothing this run), or change a later LOCAL
 * step's arguments.  Steps are named by index.
 */
void coll_sched_retarget(struct coll_sched *s, int step, void *buf,
                         MPI_Count count);
struct sched_local *coll_sched_local_args(struct coll_sched *s, int step);

/* Common CALL steps; buffers live as long as the schedule. */
int coll_sched_copy(struct coll_sched *s, void *dst, const void *src,
                    size_t len, int after);
/* Pack count x type at buf into exactly len bytes at out (and back). */
int coll_sched_pack(struct coll_sched *s, const void *buf, MPI_Count count,
                    MPI_Datatype type, void *out, size_t len, int after);
int coll_sched_unpack(struct coll_sched *s, const void *in, size_t len,
                      void *buf, MPI_Count count, MPI_Datatype type, int after);
/* inout = in op inout (PMPI_Reduce_local), count x type. */
int coll_sched_reduce(struct coll_sched *s, const void *in, void *inout,
                      MPI_Count count, MPI_Datatype type, MPI_Op op, int after);

/* ---- running ---------------------------------------------------------- */

/*
 * Start a run: number it on its communicator, post what is ready.  The
 * schedule is linked into the engine, which every gc_progress drives, until
 * the run ends; then `done(s, status, arg)` is called (from inside the
 * engine: it must not start or free schedules; NULL: none).  An error
 * before anything is posted is returned and `done` not called.
 */
typedef void sched_done_fn(struct coll_sched *s, int status, void *arg);
int coll_sched_start(struct coll_sched *s, sched_done_fn *done, void *arg);
/*
 * Make s persistent (MPI_*_init): it keeps the number it gets now for
 * every run, and its local collectives get a communicator of their own,
 * so members may start their persistent collectives in different orders
 * (MPI 4.0 requires the same order only of the *_init calls).
 */
int coll_sched_persist(struct coll_sched *s);
/*
 * Hold user op `op` until s is freed: MPI_Op_free (interposed here)
 * waits for the last schedule that uses it.
 */
int coll_sched_hold_op(struct coll_sched *s, MPI_Op op);
/* MPI_Op_free: an op a schedule holds is freed when the last such
 * schedule is. */
int coll_sched_op_free(MPI_Op *op);
/* 1 while a run is in progress. */
int coll_sched_active(const struct coll_sched *s);
/*
 * Start and wait for the end of the run (the blocking collectives).  Its
 * error went through the communicator's handler, naming `fn`.
 */
int coll_sched_run(struct coll_sched *s);
/* Drives every running schedule a step further in each progress pass;
 * outstanding while a schedule runs (the runtime registers it). */
extern const struct gc_progress_hook coll_sched_progress_hook;
/*
 * Wait until no schedule of c runs: the collectives not yet written as
 * schedules call this before they start, so that their local phases
 * reach MPICH after those of the collectives started before them.
 */
void coll_sched_drain(struct gc_comm *c);

/* Raise a run's error through the handler of s's communicator. */
int coll_sched_error(struct coll_sched *s, int status);

#endif
