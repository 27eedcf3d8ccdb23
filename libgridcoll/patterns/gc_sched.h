/*
 * Intra-site communication schedules: pure functions of (pattern, size,
 * phase, rank), no MPI.  The MPI layer uses them for the phases of its
 * site-local alltoall and allgather; gridcoll-sched (tools/) prints them
 * and evaluates them against the network models of the papers.
 *
 * Ranks are numbered 0..n-1 and placed on the leaves of the network in
 * order (rank r on the r-th leaf, or on the r-th present leaf when some
 * leaves are holes).  A schedule is a sequence of phases; in one phase every
 * rank sends at most one message and receives at most one, so an MPI
 * implementation posts, per phase, one receive from gc_sched_*_src (or the
 * step's recv_from) and one send to gc_sched_*_dst (or send_to).
 *
 * Functions that can fail return 0 or -1; the ones with an `err` buffer put
 * a one-line reason there (err may be NULL).  See
 * docs/algorithms/patterns.md.
 */
#ifndef GC_SCHED_H
#define GC_SCHED_H

#include <stddef.h>

/* Deep enough for any tree of switches with at least two ports per level. */
#define GC_SCHED_MAX_LEVELS 16

/* ---- fat tree FT(L; M1..ML) (Prisacari et al., ICS'13, §3) ------------ */

/*
 * A single-rooted tree of `levels` = L switch levels above the leaves:
 * arity[0] = M1 leaves under each level-1 node, arity[1] = M2 level-1 nodes
 * under each level-2 node, ..., arity[L-1] = ML children of the root.
 * Leaves are numbered consecutively, so a level-l subtree is a block of
 * M1*...*Ml consecutive leaves (level 0: one leaf).
 */
struct gc_sched_fattree {
    int levels;
    int arity[GC_SCHED_MAX_LEVELS];
};

/*
 * Parse "M1,M2,...,ML" (each an integer >= 1, at most GC_SCHED_MAX_LEVELS
 * of them, product at most GC_SCHED_MAX_RANKS).
 */
int gc_sched_fattree_parse(const char *text, struct gc_sched_fattree *tree,
                           char *err, size_t err_len);

/*
 * The inverse of the parser: "M1,M2,...,ML" into `out`, which has room for
 * GC_SCHED_FATTREE_TEXT_MAX bytes (enough for any well-formed tree).
 */
#define GC_SCHED_FATTREE_TEXT_MAX (GC_SCHED_MAX_LEVELS * 11)
void gc_sched_fattree_format(const struct gc_sched_fattree *tree, char *out,
                             size_t out_len);

/* 0 if `tree` is well formed (same limits as the parser), else -1. */
int gc_sched_fattree_check(const struct gc_sched_fattree *tree, char *err,
                           size_t err_len);

/* Leaves under one level-`level` node: M1*...*Ml (1 for level 0). */
long gc_sched_fattree_subtree_leaves(const struct gc_sched_fattree *tree,
                                     int level);

/* All leaves: M1*...*ML. */
long gc_sched_fattree_leaves(const struct gc_sched_fattree *tree);

/*
 * B_min(l) of Prisacari eq. 1: the fewest messages per phase that the
 * up-link of a level-l node (and the down-link into it) must carry for an
 * all-to-all among all leaves to run without contention,
 * Pi_l - floor(Pi_l / (Pi_L / Pi_l)).  level in 0..L.
 */
long gc_sched_fattree_bmin(const struct gc_sched_fattree *tree, int level);

/*
 * The tree an OPT schedule for `ranks` ranks is built on when `tree` does
 * not have exactly `ranks` leaves: the lowest levels M1..Mj are kept for as
 * long as their product divides `ranks` (so those subtrees are exactly the
 * physical ones), and one top level of arity ranks / (M1*...*Mj) is added
 * when that quotient is > 1.  With no usable level the result is
 * FT(1; ranks), on which OPT is the linear shift.  `ranks` >= 1.
 */
void gc_sched_fattree_fit(const struct gc_sched_fattree *tree, int ranks,
                          struct gc_sched_fattree *fitted);

/*
 * Traffic of one phase at one level of `tree`, with rank r on leaf r
 * (ranks <= leaves).  dst_of_rank[r] is r's destination, r itself for a
 * local copy, or -1 for no message.  *crossing = messages whose destination
 * is outside the sender's level-`level` subtree; *max_load = the most of
 * them leaving one such subtree, i.e. the load on its up-link.
 */
void gc_sched_fattree_level_load(const struct gc_sched_fattree *tree, int ranks,
                                 const int *dst_of_rank, int level,
                                 long *crossing, long *max_load);

/* ---- personalized all-to-all exchange patterns (gc_sched_alltoall.c) -- */

enum gc_sched_alltoall_pattern {
    GC_SCHED_A2A_LIN, /* linear shift: r -> (r + p) mod n */
    GC_SCHED_A2A_XOR, /* pairwise exchange: r <-> r XOR p (n a power of 2) */
    GC_SCHED_A2A_OPT, /* Prisacari's bandwidth-optimal permuted variable base */
};

/* Largest communicator the schedules accept; keeps every sum in an int. */
#define GC_SCHED_MAX_RANKS (1 << 28)

/*
 * A schedule of n phases over n ranks.  Every phase is a permutation of the
 * ranks and every ordered pair (src, dst), src == dst included, occurs in
 * exactly one phase.  dst == rank (then also src == rank) means the rank
 * copies its own block locally in that phase and sends nothing.  LIN, and
 * XOR for even n, keep all local copies in phase 0, leaving n-1 message
 * phases; OPT and XOR for odd n spread them, one per rank.
 */
struct gc_sched_alltoall {
    enum gc_sched_alltoall_pattern pattern;
    int ranks;
    /* OPT: the tree the pattern is built on, fitted to `ranks`. */
    struct gc_sched_fattree tree;
    /* the rest is private to gc_sched_alltoall.c */
    /* OPT: digit k of the phase and source in base (ML, ..., M1) */
    int theta_base[GC_SCHED_MAX_LEVELS];
    int theta_weight[GC_SCHED_MAX_LEVELS];
    /* OPT: weight of the destination digit that theta digit k sets */
    int alpha_weight[GC_SCHED_MAX_LEVELS];
};

/*
 * Build a schedule for `ranks` (1..GC_SCHED_MAX_RANKS) ranks.  `tree` is
 * used by OPT only (may be NULL for LIN and XOR; NULL for OPT means
 * FT(1; ranks)); if it does not have `ranks` leaves, OPT is built on
 * gc_sched_fattree_fit(tree, ranks), recorded in s->tree.
 * XOR with n not a power of two is a round-robin pairwise exchange (see
 * gc_sched_alltoall.c).
 */
int gc_sched_alltoall_init(struct gc_sched_alltoall *s,
                           enum gc_sched_alltoall_pattern pattern, int ranks,
                           const struct gc_sched_fattree *tree, char *err,
                           size_t err_len);

/* Number of phases: always s->ranks. */
int gc_sched_alltoall_phases(const struct gc_sched_alltoall *s);

/* Destination of `rank` in `phase`, or -1 if either is out of range. */
int gc_sched_alltoall_dst(const struct gc_sched_alltoall *s, int phase,
                          int rank);

/* The rank that sends to `rank` in `phase` (the inverse of _dst), or -1. */
int gc_sched_alltoall_src(const struct gc_sched_alltoall *s, int phase,
                          int rank);

/* dst_of_rank[r] = gc_sched_alltoall_dst(s, phase, r) for every rank. */
void gc_sched_alltoall_phase(const struct gc_sched_alltoall *s, int phase,
                             int *dst_of_rank);

/* "lin", "xor", "opt"; and back (0, or -1 for an unknown name). */
const char *gc_sched_alltoall_pattern_name(enum gc_sched_alltoall_pattern p);
int gc_sched_alltoall_pattern_parse(const char *name,
                                    enum gc_sched_alltoall_pattern *out);

/* ---- all-to-all multicast (allgather) strategies (gc_sched_allgather.c) */

enum gc_sched_allgather_strategy {
    GC_SCHED_AG_RING,    /* forward to r+1, P-1 times */
    GC_SCHED_AG_PREFIX,  /* prefix-send: exchange with r XOR i */
    GC_SCHED_AG_KSHIFT,  /* K neighbours at shifts, relay along +K */
    GC_SCHED_AG_KPREFIX, /* prefix-send inside blocks of K, relay along +K */
};

enum gc_sched_allgather_op {
    GC_SCHED_OP_SHIFT, /* rank r sends to (r + distance) mod P */
    GC_SCHED_OP_XOR,   /* rank r sends to r XOR distance, if that is < P */
};

/*
 * One phase: every rank r with a partner sends the block (contribution) of
 * rank (r - block_shift) mod P, which it owns or received in an earlier
 * phase.  XOR phases are exchanges; SHIFT phases are cyclic shifts.
 */
struct gc_sched_allgather_phase {
    enum gc_sched_allgather_op op;
    int distance;
    int block_shift;
};

struct gc_sched_allgather {
    enum gc_sched_allgather_strategy strategy;
    int ranks; /* P */
    int k;     /* K of kShift and kPrefix, 1 otherwise */
    int phase_count;
    struct gc_sched_allgather_phase *phases;
};

/* What one rank does in one phase; -1 for "nothing". */
struct gc_sched_allgather_step {
    int send_to;
    int send_block; /* whose contribution is sent */
    int recv_from;
    int recv_block; /* whose contribution arrives */
};

/*
 * Build a schedule for P = `ranks` (1..GC_SCHED_MAX_RANKS).  k is ignored
 * by ring and prefix; kShift needs 1 <= k <= P, kPrefix a power of two k
 * with P a multiple of k (Kumar & Kale §4.4).  Every rank ends with every
 * block exactly once.  Release with gc_sched_allgather_free.
 */
int gc_sched_allgather_init(struct gc_sched_allgather *s,
                            enum gc_sched_allgather_strategy strategy,
                            int ranks, int k, char *err, size_t err_len);
void gc_sched_allgather_free(struct gc_sched_allgather *s);

int gc_sched_allgather_phases(const struct gc_sched_allgather *s);

/* 0, or -1 if phase or rank is out of range. */
int gc_sched_allgather_step(const struct gc_sched_allgather *s, int phase,
                            int rank, struct gc_sched_allgather_step *out);

/* dst_of_rank[r] = the step's send_to for every rank. */
void gc_sched_allgather_phase(const struct gc_sched_allgather *s, int phase,
                              int *dst_of_rank);

/* "ring", "prefix", "kshift", "kprefix"; and back. */
const char *
gc_sched_allgather_strategy_name(enum gc_sched_allgather_strategy st);
int gc_sched_allgather_strategy_parse(const char *name,
                                      enum gc_sched_allgather_strategy *out);

/* ---- k-ary n-tree contention model (gc_sched_karytree.c) -------------- */

/*
 * A k-ary n-tree (Petrini & Vanneschi; Kumar & Kale §4.1): k^n leaves,
 * n levels of k^(n-1) switches.  The processes sit on the leaves that are
 * not holes, in order.  A message climbs to a nearest common ancestor of
 * source and destination and descends on the one path from there.  The
 * up-link at each switch is the one with the same index as the port the
 * message came in on (source-digit, "s-mod-k" routing), so every source
 * has its own up path and contention happens only on down-links.
 */
struct gc_sched_karytree {
    int arity;  /* k */
    int levels; /* n */
    int leaves; /* k^n */
    int ranks;  /* leaves that are not holes */
    int *leaf_of_rank;
    int *link_load; /* scratch: one counter per down-link */
};

/*
 * holes: hole_count distinct leaf positions in 0..k^n-1 (may be NULL when
 * hole_count is 0).  k >= 2, n >= 1, k^n <= GC_SCHED_MAX_KARY_LEAVES, at
 * least one leaf left.  Release with gc_sched_karytree_free.
 */
#define GC_SCHED_MAX_KARY_LEAVES (1 << 16) /* n * k^n link counters */
int gc_sched_karytree_init(struct gc_sched_karytree *t, int arity, int levels,
                           const int *holes, int hole_count, char *err,
                           size_t err_len);
void gc_sched_karytree_free(struct gc_sched_karytree *t);

/*
 * The most messages that share one down-link (switch to switch or switch to
 * leaf) when every rank r with dst_of_rank[r] >= 0 and != r sends one
 * message to dst_of_rank[r] (ranks as in t->ranks).  1 means the phase is
 * congestion free; 0 that it sends nothing.
 */
int gc_sched_karytree_max_downlink_load(struct gc_sched_karytree *t,
                                        const int *dst_of_rank);

/* ---- helpers --------------------------------------------------------- */

/*
 * Parse a comma-separated list of non-negative decimal integers, at most
 * `cap` of them, each <= max_value.  0 or -1 with a reason in `err`.
 */
int gc_sched_parse_int_list(const char *text, int *values, int cap, int *count,
                            int max_value, char *err, size_t err_len);

#endif
