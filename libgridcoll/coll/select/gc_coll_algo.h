/*
 * Algorithm tables and selection for the collectives on grid
 * communicators (after UCC's cl/hier tables and MPICH's per-collective
 * algorithm CVARs).
 *
 * Every collective has one table of algorithms at two levels: the grid
 * level, the algorithm of the whole call (GRIDCOLL_<COLL>), and the site
 * level, the phase inside each site that the grid algorithms run
 * (GRIDCOLL_<COLL>_LOCAL: bcast's and allreduce's shm or mpich,
 * allgather's strategies, alltoall's schedules).  An entry has a name,
 * description, restrictions and what runs it.  An entry point checks its
 * arguments, fills a `struct coll_args` and calls coll_run(), which
 *   1. picks the grid algorithm: the one named by
 *      GRIDCOLL_<COLL> (or by GridColl_Set_algorithm), with a model at the
 *      segment size its cost function predicts best; else, with a
 *      performance model (GRIDCOLL_MODEL, docs/model.md) and a call whose
 *      `bytes` is known, the usable algorithm with a cost function whose
 *      predicted cost is least, with the segment size that minimizes it
 *      (unless GRIDCOLL_<COLL>_SEGSIZE fixes it); else the first rule of
 *      the collective's rule table that matches the call (sites, ranks,
 *      bytes) and whose algorithm is usable for it.  A forced name that is
 *      unknown, or whose restrictions exclude the call, is an error listing
 *      the valid names: a user who forces an algorithm wants to know it did
 *      not run (MPICH's MPIR_CVAR_COLLECTIVE_FALLBACK=error);
 *   2. accounts the call and every byte it sends across the WAN to that
 *      algorithm (GRIDCOLL_STATS=1 prints the totals per site at
 *      MPI_Finalize);
 *   3. runs it.
 * The grid algorithm picks its site phase with coll_site_select, by the
 * same code: forced name, restrictions, then the site rules, which look at
 * the site's members and at the phase's size; no model.  Selection only
 * looks at values every member agrees on (the communicator, the root,
 * `bytes` which the entry point sets only when MPI guarantees it is the
 * same everywhere), so every member picks the same grid algorithm; the
 * site level's inputs are the same on every member of a site, so a site's
 * members agree (sites may differ).
 */
#ifndef GC_COLL_ALGO_H
#define GC_COLL_ALGO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coll/model_cost.h"
#include "core/gc_coll_kind.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

/* One side of an all-to-all per comm rank; displacements in bytes. */
struct coll_side {
    MPI_Count *counts;
    MPI_Aint *displs;
    MPI_Datatype *types;
};

struct coll_bcast_args {
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int root;
};

/* Reduce (at `root`), Allreduce, Scan and Exscan (`exclusive`). */
struct coll_reduce_args {
    const void *sbuf; /* as the user passed it: may be MPI_IN_PLACE */
    void *rbuf;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Op op;
    int root;
    int exclusive;
};

struct coll_reduce_scatter_args {
    const void *sbuf; /* may be MPI_IN_PLACE */
    void *rbuf;
    const MPI_Count *rcounts;
    MPI_Datatype type;
    MPI_Op op;
};

/*
 * Gather(v), Scatter(v), Allgather(v).  The "many" side is counts[] and
 * displs[] of `many_type` (the root's; everyone's for allgather), the
 * "block" side one member's own block.  Gather and allgather send the
 * block and receive the many; scatter sends the many and receives the
 * block.
 */
struct coll_rooted_args {
    const void *sbuf;
    void *rbuf;
    MPI_Count block_count;
    MPI_Datatype block_type;
    const MPI_Count *counts;
    const MPI_Aint *displs;
    MPI_Datatype many_type;
    int root;
    int uniform; /* every member's block has the same size */
};

struct coll_alltoall_args {
    const void *sbuf; /* MPI_IN_PLACE: the data is in rbuf */
    const struct coll_side *snd;
    void *rbuf;
    const struct coll_side *rcv;
};

/*
 * A neighbourhood collective (MPI-4.0 section 8.6) in its most general
 * form, Neighbor_alltoallw's: block i of sbuf (scounts[i] x stypes[i]
 * at sdispls[i] bytes) to destinations[i], block j of rbuf from
 * sources[j]; MPI_PROC_NULL neighbours move nothing.
 */
struct coll_neighbor_args {
    const void *sbuf;
    void *rbuf;
    int indegree, outdegree;
    const int *sources, *destinations;
    const MPI_Count *scounts, *rcounts;
    const MPI_Aint *sdispls, *rdispls;
    const MPI_Datatype *stypes, *rtypes;
    /* A Cartesian topology: sources[2d] and [2d + 1] are the -1 and +1
     * neighbours of dimension d. */
    int cart;
};

/*
 * A collective call as the algorithms see it, arguments already checked.
 * Only the member of `u` that belongs to the call's kind is set.
 */
struct coll_args {
    struct gc_comm *comm;
    const char *fn; /* "MPI_Bcast", for error messages */
    /*
     * The size selection looks at, when every member knows the same
     * value: the whole buffer (bcast, reductions), one member's block
     * (gather, scatter, allgather), one pair's block (alltoall).  0 for
     * the v-forms, where members disagree.
     */
    size_t bytes;
    size_t segsize; /* pipeline segment: GRIDCOLL_<COLL>_SEGSIZE or default */
    /*
     * NULL: a blocking call.  Else a nonblocking call (MPI_Ibcast) or,
     * with `persistent`, MPI_Bcast_init: the request to hand out.  Only
     * algorithms written as schedules run these; they must not use the
     * node layer (it serves one collective at a time) and must copy what
     * they keep of the arguments into the schedule.
     */
    MPI_Request *request;
    int persistent;
    union {
        struct coll_bcast_args bcast;
        struct coll_reduce_args reduce;
        struct coll_reduce_scatter_args reduce_scatter;
        struct coll_rooted_args rooted;
        struct coll_alltoall_args alltoall;
        struct coll_neighbor_args neighbor;
    } u;
};

/*
 * Whether the call may run blocking steps (coll_sched_call_blocking, the
 * node layer, the site algorithms marked blocking): a blocking call,
 * unless the program runs at MPI_THREAD_MULTIPLE.  There such a step,
 * which waits inside a progress pass under the library lock, could wait
 * for a process that waits for another thread of this one (gc_lock.h).
 */
static inline int coll_may_block(const struct coll_args *a)
{
    return a->request == NULL && gc_world.thread_level != MPI_THREAD_MULTIPLE;
}

struct coll_sched;
/* Add this member's steps for the call to s (engine/coll_sched.h). */
typedef int coll_build_fn(struct coll_sched *s, const struct coll_args *a);

enum coll_level {
    COLL_GRID, /* the whole call: GRIDCOLL_<COLL> */
    COLL_SITE, /* a phase inside each site: GRIDCOLL_<COLL>_LOCAL */
};

struct site_blocks;
struct alltoall_exchange;
struct alltoall_pattern;

/* The code of a site algorithm, by collective (allgather_site.h,
 * alltoall.h); bcast's and allreduce's choose by `node` alone. */
union coll_site_run {
    int (*allgather)(const struct site_blocks *b);
    struct {
        int (*run)(MPI_Comm comm, const struct alltoall_exchange *x,
                   const struct alltoall_pattern *pattern);
        const struct alltoall_pattern *pattern;
    } alltoall;
};

struct coll_algo {
    const char *name;
    const char *description;
    const char *restrictions; /* NULL or "" when it runs everywhere */
    /* NULL: usable for every call; else 1 when usable for this one. */
    int (*usable)(const struct coll_args *a);
    /* Predicted time in seconds; NULL: not a candidate in model mode. */
    coll_cost_fn *cost;
    int segmented; /* its cost depends on the segment size */
    /* Grid level: builds the schedule of every form of the collective. */
    coll_build_fn *build;
    /* A site algorithm has a name, description, restrictions and maybe
     * `usable`; the four fields before this comment are the grid's. */
    enum coll_level level;
    /* Site level: blocking code, or through the node layer, which serves
     * one collective at a time: blocking calls only (their nonblocking
     * forms take the default, MPICH's nonblocking collective). */
    int blocking;
    int node; /* site level: through the node layer (node_shm.h) */
    union coll_site_run site;
};

/*
 * A condition of a default rule beyond its bounds: *holds set to 1 when
 * it holds for the call.  Finding out may make the node layer's
 * communicators: errors through the communicator's handler.
 */
struct coll_when {
    const char *text; /* "the site has several members, all on one node" */
    int (*test)(const struct coll_args *a, int *holds);
};

/*
 * A default of the level of its algorithm: the first rule of that level
 * whose bounds hold (inclusive; 0 as a maximum means no bound), whose
 * algorithm is usable and whose condition (if any) holds wins.  The last
 * rule of every level has neither bounds nor condition.
 */
struct coll_rule {
    int min_size; /* grid: sites of the communicator; site: its members */
    size_t min_bytes;
    size_t max_bytes;
    const char *algo;
    const struct coll_when *when; /* NULL: none */
};

struct coll_table {
    /* Named by its kind (gc_coll_kind_name): "alltoall", GRIDCOLL_ALLTOALL. */
    const struct coll_algo *algos;
    int algo_count;
    const struct coll_rule *rules;
    int rule_count;
    size_t default_segsize;
    /* The site level's forcing variable, GRIDCOLL_<COLL>_LOCAL (shared by
     * the tables sharing the algorithms: allgatherv's is allgather's);
     * NULL: the table has no site level. */
    const char *site_var;
    /* The site phase and what its rules' bytes are, for the listing. */
    const char *site_doc;
};

/* Every collective's table (coll_tables.c). */
extern const struct coll_table coll_tables[GC_COLL_KINDS];
/* The table's collective: "bcast", ... (gc_coll_kind_name). */
const char *coll_table_name(const struct coll_table *t);

/* Pick, account and run the algorithm for a call of kind `kind`. */
int coll_run(enum gc_coll_kind kind, struct coll_args *a);
/*
 * Pick and account the algorithm as coll_run does, and build its
 * schedule for the form a->request and a->persistent say, without
 * starting it: *s, NULL after an error (reported).
 */
int coll_build(enum gc_coll_kind kind, struct coll_args *a,
               struct coll_sched **s);

/*
 * The site level: this site's algorithm for the phase inside it of a
 * call `fn` of `kind` on c, blocking or not (GRIDCOLL_<COLL>_LOCAL, else
 * the site rules), the phase moving `bytes` (what the site rules compare,
 * as the table's site_doc says: the same on every member of the site).
 * Errors through c's handler.
 */
int coll_site_select(enum gc_coll_kind kind, struct gc_comm *c, const char *fn,
                     int blocking, size_t bytes, const struct coll_algo **algo);

/* The table of a kind, or NULL (kind out of range). */
const struct coll_table *coll_table_of(enum gc_coll_kind kind);

/* What model mode predicts for one algorithm of a table. */
struct coll_prediction {
    int candidate;  /* has a cost function and is usable */
    size_t segsize; /* the best for it; 0 when not segmented */
    double cost;    /* seconds */
};

/*
 * Model mode: predict every algorithm of `t` for the call `c` (its
 * segsize ignored), trying segment sizes for the segmented ones unless
 * `fixed_segsize` is non-zero, into out[t->algo_count].  `a` decides
 * usability (NULL: every algorithm is usable).  Returns the index of the
 * cheapest candidate (the first of equals), -1 when there is none.
 */
int coll_model_choose(const struct coll_table *t,
                      const struct coll_cost_args *c, size_t fixed_segsize,
                      const struct coll_args *a, struct coll_prediction *out);

/* Print every table, both levels (gridcoll-info --algorithms). */
void coll_print_algorithms(FILE *out);

/* The same as CSV, one row per table and algorithm: coll, level (grid or
 * site), algo, description, restrictions, blocking (1: blocking calls
 * only) (gridcoll-info --algorithms --csv). */
void coll_print_algorithms_csv(FILE *out);

/* ---- the algorithms, by collective (one file each) ---------------------- */

coll_build_fn barrier_grid_hier;
coll_build_fn bcast_grid_hier;
coll_build_fn bcast_grid_multilane;
coll_build_fn bcast_grid_binomial;
coll_build_fn bcast_grid_scatter_allgather;
int bcast_grid_scatter_allgather_usable(const struct coll_args *a);
coll_build_fn bcast_grid_chain;
coll_build_fn reduce_grid_hier;
coll_build_fn allreduce_grid_reduce_bcast;
coll_build_fn allreduce_grid_hier;
coll_build_fn allreduce_grid_multileader;
coll_build_fn reduce_scatter_grid_reduce_scatterv;
coll_build_fn reduce_scatter_grid_hier;
coll_build_fn scan_grid_gather_scatter;
coll_build_fn scan_grid_hier;
coll_build_fn gather_grid_hier;
coll_build_fn scatter_grid_hier;
coll_build_fn allgatherv_grid_gather_bcast;
coll_build_fn allgather_grid_hier;
coll_build_fn alltoall_grid_direct;
coll_build_fn neighbor_grid_direct;
coll_build_fn neighbor_grid_bundled;
int neighbor_grid_bundled_usable(const struct coll_args *a);
coll_build_fn alltoall_grid_lg;
coll_build_fn alltoall_grid_hier;

/* Their cost functions (model mode), next to each algorithm. */
coll_cost_fn bcast_grid_hier_cost;
coll_cost_fn bcast_grid_multilane_cost;
coll_cost_fn bcast_grid_binomial_cost;
coll_cost_fn bcast_grid_scatter_allgather_cost;
coll_cost_fn bcast_grid_chain_cost;
coll_cost_fn reduce_grid_hier_cost;
coll_cost_fn allreduce_grid_reduce_bcast_cost;
coll_cost_fn allreduce_grid_hier_cost;
coll_cost_fn allreduce_grid_multileader_cost;
coll_cost_fn alltoall_grid_direct_cost;
coll_cost_fn alltoall_grid_lg_cost;
coll_cost_fn alltoall_grid_hier_cost;

/* gc_settings_note_fn for the settings listing (gridcoll-info). */
int coll_setting_note(const char *variable, int kind, int algorithm, char *out,
                      size_t size);
/* GRIDCOLL_STATS=1: each site prints its totals (collective, every rank). */
void gc_coll_print_stats(void);

#endif
