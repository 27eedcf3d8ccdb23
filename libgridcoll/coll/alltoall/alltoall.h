/*
 * What the all-to-all algorithms share (coll/alltoall/alltoall.c):
 *   - the grid algorithms (alltoall_grid_direct, _lg, _hier): the call as
 *     packed block sizes per peer, packing and unpacking one block,
 *     buffers sized at run time;
 *   - their local phase: an exchange among the members of one site, run by
 *     one of the intra-site schedules (alltoall_site_*.c), the site level
 *     of the all-to-alls' table (gc_coll_select.c: GRIDCOLL_ALLTOALL_LOCAL,
 *     default by size).
 * docs/algorithms/alltoall.md documents them all.
 */
#ifndef GC_COLL_ALLTOALL_H
#define GC_COLL_ALLTOALL_H

#include <stddef.h>
#include <stdint.h>

#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"

/* ---- the call, as the grid algorithms see it ----------------------------- */

struct alltoall_call {
    struct gc_comm *c;
    const char *src;             /* outgoing data: sbuf, or rbuf in place */
    const struct coll_side *out; /* its layout: snd, or rcv in place */
    char *rbuf;
    const struct coll_side *rcv;
    size_t *slen; /* [size] packed bytes this rank sends to each rank */
    size_t *rlen; /* [size] packed bytes this rank receives from each */
    size_t block; /* every block's size when all agree (Alltoall), else 0 */
    int my_site;  /* c->site[c->rank] */
    struct site_map map;
};

/* The call as the algorithms see it, in schedule memory. */
struct coll_sched;
int alltoall_call_sched(struct coll_sched *s, const struct coll_args *a,
                        struct alltoall_call *k);
/*
 * *kept = *a with both sides (counts, displacements, datatypes) copied
 * into s: a nonblocking call's entry point frees its own once it returns.
 */
int alltoall_keep_sides(struct coll_sched *s, const struct coll_args *a,
                        struct coll_args *kept);

/* Comm rank of member `index` (site rank) of site `s`. */
static inline int alltoall_member(const struct alltoall_call *k, int s,
                                  int index)
{
    return k->map.member[k->map.first[s] + index];
}

/* Pack this rank's block for comm rank r at `at` (slen[r] bytes). */
int alltoall_pack(const struct alltoall_call *k, int r, unsigned char *at);
/* Unpack the block from comm rank r (rlen[r] bytes) into rbuf. */
int alltoall_unpack(const struct alltoall_call *k, int r,
                    const unsigned char *at);

/*
 * *buf with room for `bytes`: the schedule's memory, allocated again when
 * *cap is too little (a later run of a persistent alltoallv may need
 * more); 0, or -1 when out of memory.
 */
int alltoall_room(struct coll_sched *s, unsigned char **buf, size_t *cap,
                  size_t bytes);

/* ---- the local phase -------------------------------------------------------
 *
 * One exchange among the members of this site, indexed by local rank, as
 * PMPI_Alltoallw_c takes it: counts of datatypes at byte displacements.
 * sbuf may be MPI_IN_PLACE (then the data is in rbuf, laid out by the
 * receive side).  Both ends of a pair know the size of what moves.
 */
struct alltoall_exchange {
    const void *sbuf;
    const MPI_Count *scounts;
    const MPI_Aint *sdispls;
    const MPI_Datatype *stypes;
    void *rbuf;
    const MPI_Count *rcounts;
    const MPI_Aint *rdispls;
    const MPI_Datatype *rtypes;
};

/* Run one local exchange of a blocking call with the schedule `algo` of
 * the site level.  Errors go through the communicator's handler. */
int alltoall_local_run(struct gc_comm *c, const char *fn,
                       const struct coll_algo *algo,
                       const struct alltoall_exchange *x);

/*
 * The bundles lg and hier exchange inside a site: by local rank, blocks
 * of bytes.  Blocking calls run the exchange with the site level's
 * schedule (blocking code, a CALL step); the nonblocking forms as MPICH's
 * Ialltoallw (a LOCAL step).  Steps before it may (re)allocate the
 * buffers: alltoall_bundles_buffers then points the exchange at them.
 */
struct alltoall_bundles {
    struct gc_comm *c;
    const char *fn;
    const struct coll_algo *site; /* the site level's choice, at build */
    MPI_Count *scount, *rcount;
    MPI_Aint *sdispl, *rdispl;
    MPI_Datatype *types; /* MPI_BYTE for every member */
    unsigned char *sbuf, *rbuf;
    int blocking; /* a blocking call */
    int step;     /* the LOCAL step, -1 for a CALL */
};

/* The arrays for the site's members, and the site level's choice for
 * `pair_bytes` (what an average pair of members exchanges, the same on
 * every member; 0 when unknown). */
int alltoall_bundles_init(struct coll_sched *s, const struct coll_args *a,
                          size_t pair_bytes, struct alltoall_bundles *b);
/* The exchange's step, after `after`. */
int alltoall_bundles_exchange(struct coll_sched *s, struct alltoall_bundles *b,
                              int after);
void alltoall_bundles_buffers(struct coll_sched *s, struct alltoall_bundles *b,
                              unsigned char *sbuf, unsigned char *rbuf);

/*
 * A pairwise schedule among n ranks: in phase p (0 <= p < phases) rank r
 * sends its block for dst(p, r) and receives the block of src(p, r); -1
 * means nothing in that phase, r itself the rank's own block.  Every
 * ordered pair of ranks must meet in exactly one phase.  `state` is what
 * `prepare` made for n (freed with free()), NULL when prepare is NULL.
 * A pattern from a schedule library (fat-tree OPT) plugs in as one more
 * struct and one entry of the table's site level.
 */
struct alltoall_pattern {
    int (*prepare)(int n, void **state); /* 0, or -1: no memory */
    int (*phases)(const void *state, int n);
    int (*dst)(const void *state, int n, int phase, int rank);
    int (*src)(const void *state, int n, int phase, int rank);
};

/*
 * A local schedule: runs x over `comm` (c->local for "mpich", else the
 * site's private point-to-point communicator, never with MPI_IN_PLACE);
 * `pattern` is the table entry's (NULL but for pairwise schedules).
 * Returns MPI error codes without calling handlers.
 */
typedef int alltoall_site_fn(MPI_Comm comm, const struct alltoall_exchange *x,
                             const struct alltoall_pattern *pattern);

alltoall_site_fn alltoall_site_pairwise; /* alltoall_site_pairwise.c */
alltoall_site_fn alltoall_site_bruck;    /* alltoall_site_bruck.c */
alltoall_site_fn alltoall_site_mpich;    /* alltoall.c */
extern const struct alltoall_pattern alltoall_site_lin; /* _site_lin.c */
extern const struct alltoall_pattern alltoall_site_xor; /* _site_xor.c */
extern const struct alltoall_pattern alltoall_site_opt; /* _site_opt.c */

/* Bytes `count` elements of `type` occupy packed; -1 on overflow. */
int alltoall_type_bytes(MPI_Count count, MPI_Datatype type, MPI_Count *bytes);

#endif
