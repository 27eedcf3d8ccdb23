/*
 * gridcoll-bench: times every algorithm of one collective on
 * MPI_COMM_WORLD in turn, and the automatic choice, per message size
 * (issue 4; the nonblocking forms and --overlap: issue 13;
 * docs/performance/).  An ordinary MPI program linked with
 * libgridcoll, run with gridrun:
 *
 *   gridrun --site-sizes 2,2 -- gridcoll-bench bcast --sizes 8,1k,1m --csv
 *
 * usage() lists the options and what "bytes" means per collective.  The
 * algorithms come from libgridcoll's tables (GridColl_Algorithm_name), so
 * the bench needs no change when an algorithm is added.  Built a second
 * time as gridcoll-bench-plain, with MPICH alone, for the native baseline
 * (gridrun --wan --native; bench/run-wan.sh): one algorithm, "native",
 * no "auto", sites 1.
 *
 * Per size, the algorithms take turns call by call: round i runs the
 * i-th call of every algorithm, so what changes during a measurement (the
 * machine's load, the state of the WAN's TCP streams) falls on all of
 * them alike, and `auto` meets the conditions of the algorithm it picks.
 * The turn order rotates by one from size to size.  Per algorithm and
 * size:
 *   - before its first call, send buffers get a pattern that depends on
 *     sender, receiver and offset, receive buffers a sentinel;
 *   - warm-up and timed calls, each timed alone on every rank, starting
 *     as --start says (below);
 *   - the result of the first call is checked byte for byte on every
 *     rank; after the first round every rank knows whether any saw a
 *     wrong result (one MPI_Allreduce);
 *   - one MPI_Allreduce (MPI_MAX) gives, per timed call, the slowest
 *     rank's time; rank 0 prints the median, 10th and 90th percentiles
 *     over the timed calls.
 *
 * How a call is timed (--start; bench_mpi.h):
 *   barrier (the default): each call follows an MPI_Barrier, and each
 *     rank times from its own exit of the barrier to the call's return
 *     (MPI_Wtime).  A barrier across a WAN releases the sites up to one
 *     one-way delay L apart (the last site to enter leaves at once, the
 *     others L later), so the time holds that skew: rooted one-way
 *     collectives such as bcast read about 2 L, and an all-to-all pattern
 *     may read less than L.
 *   window: the ranks start together at a time t0 on a clock they share
 *     (SKaMPI's and ReproMPI's window scheme).  Before the first
 *     measurement bench_window_calibrate times how long after rank 0 read
 *     its clock the last rank gets rank 0's broadcast (5 rounds); every
 *     size starts from a window of 3 times the median round's.  Per
 *     call: rank 0 picks t0 = its CLOCK_MONOTONIC + the window and
 *     broadcasts it, every rank sleeps until t0 (clock_nanosleep),
 *     calls, and takes end - t0 on the same clock; the call's time is
 *     the slowest rank's end - t0.  After the
 *     call an MPI_Allreduce tells every rank whether any rank got t0 too
 *     late; that call does not count, the window doubles for the rest of
 *     the size's calls and the call is repeated; after 8 doublings in a
 *     row the program stops (status 2).  The MPI_Allreduce is also what
 *     synchronises the ranks before the next t0 is picked (one
 *     MPI_Barrier after an algorithm's buffers are filled).  The
 *     time thus holds the call and the delay of the wake-up from the
 *     sleep, not the sites' skew.  It needs one clock for all ranks: one
 *     host (gridrun --wan: the namespaces share CLOCK_MONOTONIC) or
 *     synchronised clocks (PTP); with clocks apart, the times are off by
 *     the offset, or every window is missed.
 * Nonblocking forms (issue 13): "ialltoall", ..., "ibarrier" time the
 * MPI_I* call and its MPI_Wait under the same table.  --overlap, as OSU's
 * osu_iallreduce and its kind: per algorithm and size the warm-up calls
 * and 5 calls (post + wait) give a target, every rank calibrates a busy
 * loop (no MPI inside) to last that long, and each round times, back to
 * back, the pure call, the loop alone, and post + loop + wait (with
 * --test-every N also a loop that calls MPI_Test every N units); a
 * round's overlap is 100 (1 - (total - compute) / pure) %, clamped to
 * [0, 100], and rank 0 prints the medians and the overlaps' spread.  The
 * rounds pair their times because the machine's load changes between
 * rounds far more than within one.
 *
 * The algorithm is forced (GridColl_Set_algorithm) around the measured
 * call only: the barrier, the start window's MPI_Bcast and MPI_Allreduce
 * and the bench's own MPI_Allreduce run under the automatic choice, which
 * matters when the collective measured is a barrier, a bcast or an
 * allreduce.
 *
 * A forced algorithm that cannot run the call (its restrictions) either
 * fails before any communication with MPI_ERR_ARG, or the library runs
 * another algorithm (GridColl_Algorithm_used tells), on every rank alike
 * (selection only looks at what all members agree on); its row shows n/a
 * rather than another algorithm's time.  A wrong result: a FAIL line on
 * stdout per algorithm that gave one (no rows for that size), the first
 * wrong byte per rank on stderr, exit status 1 (the remaining calls and
 * sizes are skipped: a broken algorithm may leave messages behind).
 * Usage errors, a start window missed too often: status 2.  MPI errors:
 * message and MPI_Abort (status 2).
 */
#ifdef GRIDCOLL_BENCH_PLAIN
#include <mpi.h>
#else
#include <gridcoll.h>
#endif
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"

#ifdef GRIDCOLL_BENCH_PLAIN
/* gridcoll-bench-plain, the baseline: the same measurements linked with
 * MPICH alone, whose one "algorithm" is MPICH's own choice. */
#define NATIVE "native"
static const char *algorithm_name(const char *coll, int index)
{
    (void)coll;
    return index == 0 ? NATIVE : NULL;
}
static int set_algorithm(const char *coll, const char *algo)
{
    (void)coll;
    (void)algo;
    return MPI_SUCCESS;
}
static const char *algorithm_used(const char *coll)
{
    (void)coll;
    return NATIVE;
}
static int comm_site_count(MPI_Comm comm, int *sites)
{
    (void)comm;
    *sites = 1;
    return MPI_SUCCESS;
}
#else
#define algorithm_name  GridColl_Algorithm_name
#define set_algorithm   GridColl_Set_algorithm
#define algorithm_used  GridColl_Algorithm_used
#define comm_site_count GridColl_Comm_site_count
#endif

#define PROG      "gridcoll-bench"
#define ROOT      0
#define MAX_SIZES 32
#define AUTO      "auto"
#define SENTINEL  0xee
#define MAX_ITERS 1000000

enum coll {
    ALLTOALL,
    ALLTOALLV,
    BCAST,
    ALLGATHER,
    ALLREDUCE,
    REDUCE,
    BARRIER,
    GATHER,
    SCATTER,
    COLL_COUNT
};

/* As libgridcoll's tables name them (GridColl_Set_algorithm). */
static const char *const coll_names[COLL_COUNT] = {
    "alltoall", "alltoallv", "bcast",  "allgather", "allreduce",
    "reduce",   "barrier",   "gather", "scatter",
};

static const char *const call_names[COLL_COUNT] = {
    "MPI_Alltoall",  "MPI_Alltoallv", "MPI_Bcast",
    "MPI_Allgather", "MPI_Allreduce", "MPI_Reduce",
    "MPI_Barrier",   "MPI_Gather",    "MPI_Scatter",
};

/* The nonblocking forms: the same tables and buffers, "i" in front. */
static const char *const icoll_names[COLL_COUNT] = {
    "ialltoall", "ialltoallv", "ibcast",  "iallgather", "iallreduce",
    "ireduce",   "ibarrier",   "igather", "iscatter",
};

static const char *const icall_names[COLL_COUNT] = {
    "MPI_Ialltoall",  "MPI_Ialltoallv", "MPI_Ibcast",
    "MPI_Iallgather", "MPI_Iallreduce", "MPI_Ireduce",
    "MPI_Ibarrier",   "MPI_Igather",    "MPI_Iscatter",
};

/* --overlap: one unit of the compute loop is this many dependent
 * floating-point multiply-adds (a few hundred nanoseconds), so that
 * --test-every counts in units of a size a loop body could have. */
#define UNIT_STEPS 256
/* --overlap: timed calls whose median is the computation's target. */
#define CALIBRATION_CALLS 5

static int rank, size;

/* The collective as the rows and messages name it. */
static const char *coll_label(enum coll c, int nb)
{
    return nb ? icoll_names[c] : coll_names[c];
}

/* --start window: calls repeated because a rank missed the window. */
static long calls_repeated;

struct options {
    enum coll coll;
    int nb; /* the MPI_I* form */
    int overlap;
    long test_every; /* --overlap: units between MPI_Test calls; 0: none */
    uint64_t sizes[MAX_SIZES];
    size_t nsizes;
    long iters;
    long warmup;
    /* Library algorithm names (GridColl_Algorithm_name's strings) or AUTO. */
    const char **algos;
    int nalgos;
    int csv;
    enum bench_start start;
};

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: " PROG " COLL [--sizes LIST] [--iters N] [--warmup N]\n"
        "       [--algos LIST] [--start barrier|window] [--csv]\n"
        "       [--overlap [--test-every N]]\n"
        "Times every algorithm of collective COLL on MPI_COMM_WORLD, forced\n"
        "in turn, and the automatic choice (\"auto\"), for every size.\n"
        "  COLL          alltoall alltoallv bcast allgather allreduce reduce\n"
        "                barrier gather scatter, or the nonblocking form of\n"
        "                one with an i in front (ialltoall, ibcast, ...,\n"
        "                ibarrier): MPI_Ialltoall, ... then MPI_Wait, the\n"
        "                same algorithm tables\n"
        "  --sizes LIST  message sizes in bytes, comma-separated, with an\n"
        "                optional K, M or G (binary) [8,1k,64k,1m]; bytes is\n"
        "                  alltoall, alltoallv: the block of one pair of\n"
        "                    ranks (every rank sends ranks x bytes);\n"
        "                  allgather, gather, scatter: the block of one\n"
        "                    rank;\n"
        "                  bcast, allreduce, reduce: the whole buffer\n"
        "                    (reductions: MPI_SUM of MPI_DOUBLE, so a\n"
        "                    multiple of 8);\n"
        "                  barrier: ignored, one row with bytes 0\n"
        "  --iters N     timed calls per algorithm and size [20]\n"
        "  --warmup N    untimed calls before them [2]\n"
        "  --algos LIST  only these algorithms, comma-separated; \"auto\" is\n"
        "                the choice without GridColl_Set_algorithm:\n"
        "                GRIDCOLL_<COLL> if set, else the default rules\n"
        "                [every algorithm, then auto]\n"
        "  --start barrier|window\n"
        "                how the ranks start a call [barrier]:\n"
        "                  barrier: after an MPI_Barrier, each rank times\n"
        "                    from its own exit of it (across a WAN that\n"
        "                    holds the sites' exit skew, up to one one-way\n"
        "                    delay);\n"
        "                  window: rank 0 broadcasts a start time t0, a\n"
        "                    window ahead (3 times the broadcast's time as\n"
        "                    measured at start), every rank sleeps until\n"
        "                    t0, and times from t0; a call that a rank\n"
        "                    reached after t0 is repeated with the window\n"
        "                    doubled (after 8 doublings in a row: status 2).\n"
        "                    Needs one clock for all ranks\n"
        "                    (CLOCK_MONOTONIC): one host, as gridrun --wan,\n"
        "                    or synchronised clocks (PTP)\n"
        "  --csv         CSV instead of an aligned table\n"
        "  --overlap     (nonblocking COLL only) overlap of the collective\n"
        "                with computation, as OSU's nonblocking benchmarks\n"
        "                measure it.  Per algorithm and size: the warm-up\n"
        "                calls, then 5 calls (post + MPI_Wait) whose median\n"
        "                is the target; every rank calibrates a busy loop\n"
        "                (no MPI calls in it) to take that long.  Then "
        "--iters\n"
        "                rounds of, each started as --start says:\n"
        "                  pure: post, MPI_Wait;\n"
        "                  compute: the loop alone;\n"
        "                  total: post, the loop, MPI_Wait;\n"
        "                  with --test-every: post, the loop calling\n"
        "                    MPI_Test every N units until the request is\n"
        "                    complete, MPI_Wait (a row of its own)\n"
        "                A round's overlap is 100 (1 - (total - compute) /\n"
        "                pure) %%, clamped to [0, 100]; times are the\n"
        "                slowest rank's.  The first overlapped call of\n"
        "                every kind is checked, as the first pure call\n"
        "  --test-every N  with --overlap: also the variant that calls\n"
        "                MPI_Test every N units of the loop (a unit is\n"
        "                256 dependent multiply-adds, a few hundred ns)\n"
        "  --help        this text\n"
        "Root 0 for bcast, reduce, gather and scatter.  A call's time is the\n"
        "slowest rank's, from its start (above) to the call's return;\n"
        "median_us, p10_us and p90_us are over the timed calls, in\n"
        "microseconds.  The first call of every algorithm and size is\n"
        "checked byte for byte: a wrong result prints a FAIL line and\n"
        "exits with status 1.  n/a: the algorithm cannot run this call\n"
        "(see its restrictions in gridcoll-info --algorithms).  On a single\n"
        "site every call passes through to MPICH whatever the algorithm.\n"
        "Columns: coll,algo,sites,ranks,bytes,median_us,p10_us,p90_us\n"
        "With --overlap: coll,algo,sites,ranks,bytes,test_every,tests,\n"
        "pure_us,compute_us,total_us,overlap_pct,overlap_p10,overlap_p90:\n"
        "test_every 0 is the loop without MPI_Test; tests the MPI_Test\n"
        "calls per overlapped call (median over the rounds of the most any\n"
        "rank made); the times are medians over the rounds, overlap_pct\n"
        "the median of the rounds' overlaps, overlap_p10 and overlap_p90\n"
        "their 10th and 90th percentiles.\n"
        "Exit status: 0; 1 wrong result; 2 usage or MPI error, or the start\n"
        "window missed 8 times in a row.\n");
}

static int algo_count(enum coll c)
{
    int n = 0;
    while (algorithm_name(coll_names[c], n) != NULL)
        n++;
    return n;
}

/* The library's spelling of `name` for collective c, AUTO, or NULL. */
static const char *algo_named(enum coll c, const char *name)
{
    if (strcmp(name, AUTO) == 0)
        return AUTO;
    for (int i = 0; algorithm_name(coll_names[c], i) != NULL; i++)
        if (strcmp(algorithm_name(coll_names[c], i), name) == 0)
            return algorithm_name(coll_names[c], i);
    return NULL;
}

static void print_valid_algos(FILE *out, enum coll c)
{
    for (int i = 0; i < algo_count(c); i++)
        fprintf(out, "%s, ", algorithm_name(coll_names[c], i));
    fputs(AUTO, out);
}

/* --algos; on errors, rank 0 says why. */
static int parse_algos(const char *text, struct options *o)
{
    char copy[1024];
    if (snprintf(copy, sizeof copy, "%s", text) >= (int)sizeof copy) {
        if (rank == 0)
            fprintf(stderr, PROG ": --algos: list too long\n");
        return -1;
    }
    int max = 1;
    for (const char *p = text; *p != '\0'; p++)
        max += *p == ',';
    free(o->algos);
    o->algos = bench_malloc((size_t)max * sizeof *o->algos);
    o->nalgos = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        const char *name = algo_named(o->coll, item);
        if (name == NULL) {
            if (rank == 0) {
                fprintf(stderr, PROG ": %s has no algorithm '%s' (valid: ",
                        coll_names[o->coll], item);
                print_valid_algos(stderr, o->coll);
                fprintf(stderr, ")\n");
            }
            return -1;
        }
        o->algos[o->nalgos++] = name;
    }
    if (o->nalgos == 0 && rank == 0)
        fprintf(stderr, PROG ": --algos: no algorithm named\n");
    return o->nalgos > 0 ? 0 : -1;
}

static void default_algos(struct options *o)
{
    int n = algo_count(o->coll);
    o->algos = bench_malloc((size_t)(n + 1) * sizeof *o->algos);
    for (int i = 0; i < n; i++)
        o->algos[i] = algorithm_name(coll_names[o->coll], i);
#ifdef GRIDCOLL_BENCH_PLAIN
    o->nalgos = n; /* "auto" would time MPICH's choice twice */
#else
    o->algos[n] = AUTO;
    o->nalgos = n + 1;
#endif
}

static int parse_count(const char *text, long min, long *out)
{
    uint64_t v;
    if (bench_parse_u64(text, 0, &v) != 0 || v < (uint64_t)min || v > MAX_ITERS)
        return -1;
    *out = (long)v;
    return 0;
}

/* Bytes of the largest buffer one rank needs for a size. */
static uint64_t buffer_bytes(enum coll c, uint64_t bytes)
{
    switch (c) {
    case ALLTOALL:
    case ALLTOALLV:
    case ALLGATHER:
    case GATHER:
    case SCATTER: return bytes * (uint64_t)size;
    default: return bytes;
    }
}

static int check_sizes(const struct options *o)
{
    for (size_t i = 0; i < o->nsizes; i++) {
        uint64_t b = o->sizes[i];
        if ((o->coll == ALLREDUCE || o->coll == REDUCE) && b % 8 != 0) {
            if (rank == 0)
                fprintf(stderr,
                        PROG ": --sizes: %s sums doubles: %llu is not a "
                             "multiple of 8\n",
                        coll_names[o->coll], (unsigned long long)b);
            return -1;
        }
        /* Counts, and libgridcoll's displacements, are ints. */
        if (b > INT_MAX || buffer_bytes(o->coll, b) > INT_MAX) {
            if (rank == 0)
                fprintf(stderr,
                        PROG ": --sizes: %llu bytes of %s need buffers of "
                             "2 GiB or more per rank\n",
                        (unsigned long long)b, coll_names[o->coll]);
            return -1;
        }
    }
    return 0;
}

/* 0: run; 1: --help; 2: usage error (rank 0 printed why). */
static int parse_options(int argc, char **argv, struct options *o)
{
    const char *err = NULL;
    memset(o, 0, sizeof *o);
    o->iters = 20;
    o->warmup = 2;
    if (argc >= 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        if (rank == 0)
            usage(stdout);
        return 1;
    }
    if (argc < 2) {
        err = "no collective given";
        goto bad;
    }
    o->coll = COLL_COUNT;
    for (int c = 0; c < COLL_COUNT; c++) {
        if (strcmp(argv[1], coll_names[c]) == 0)
            o->coll = (enum coll)c;
        if (strcmp(argv[1], icoll_names[c]) == 0) {
            o->coll = (enum coll)c;
            o->nb = 1;
        }
    }
    if (o->coll == COLL_COUNT) {
        err = "unknown collective";
        goto bad;
    }
    if (bench_parse_list("8,1k,64k,1m", 1, o->sizes, MAX_SIZES, &o->nsizes) !=
        0) {
        err = "bad default sizes";
        goto bad;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (rank == 0)
                usage(stdout);
            return 1;
        } else if (strcmp(a, "--sizes") == 0 && has_value) {
            if (bench_parse_list(argv[++i], 1, o->sizes, MAX_SIZES,
                                 &o->nsizes) != 0) {
                err = "bad --sizes";
                goto bad;
            }
        } else if (strcmp(a, "--iters") == 0 && has_value) {
            if (parse_count(argv[++i], 1, &o->iters) != 0) {
                err = "--iters: a number from 1 to 1000000";
                goto bad;
            }
        } else if (strcmp(a, "--warmup") == 0 && has_value) {
            if (parse_count(argv[++i], 0, &o->warmup) != 0) {
                err = "--warmup: a number from 0 to 1000000";
                goto bad;
            }
        } else if (strcmp(a, "--algos") == 0 && has_value) {
            if (parse_algos(argv[++i], o) != 0)
                return 2;
        } else if (strcmp(a, "--start") == 0 && has_value) {
            if (bench_parse_start(argv[++i], &o->start) != 0) {
                err = "--start: barrier or window";
                goto bad;
            }
        } else if (strcmp(a, "--overlap") == 0) {
            o->overlap = 1;
        } else if (strcmp(a, "--test-every") == 0 && has_value) {
            if (parse_count(argv[++i], 1, &o->test_every) != 0) {
                err = "--test-every: a number from 1 to 1000000";
                goto bad;
            }
        } else {
            err = "unknown option or missing value";
            goto bad;
        }
    }
    if (o->overlap && !o->nb) {
        err = "--overlap: needs a nonblocking collective (ialltoall, ...)";
        goto bad;
    }
    if (o->test_every > 0 && !o->overlap) {
        err = "--test-every: only with --overlap";
        goto bad;
    }
    if (o->coll == BARRIER) {
        o->sizes[0] = 0;
        o->nsizes = 1;
    }
    if (check_sizes(o) != 0)
        return 2;
    if (o->algos == NULL)
        default_algos(o);
    return 0;
bad:
    if (rank == 0) {
        fprintf(stderr, PROG ": %s\n", err);
        usage(stderr);
    }
    return 2;
}

/* ---- data --------------------------------------------------------------- */

/* What one call moves, and where. */
struct run {
    enum coll coll;
    int nb; /* the MPI_I* form: post, compute (--overlap), MPI_Wait */
    const char *algo;
    size_t bytes;
    /* --overlap: units of the compute loop between post and MPI_Wait (0:
     * none), MPI_Test every test_every units (0: never); compute_only: the
     * loop alone, no call.  tests: MPI_Test calls of the last call. */
    long units, test_every;
    int compute_only;
    long tests;
    /* Bcast has one buffer: recv (the root sends from it). */
    unsigned char *send, *recv;
    size_t send_len, recv_len;
    int *counts, *displs; /* alltoallv: one block of `bytes` per rank */
};

static void buffers_make(struct run *r)
{
    size_t all = r->bytes * (size_t)size;
    switch (r->coll) {
    case ALLTOALL:
    case ALLTOALLV: r->send_len = r->recv_len = all; break;
    case ALLGATHER:
        r->send_len = r->bytes;
        r->recv_len = all;
        break;
    case GATHER:
        r->send_len = r->bytes;
        r->recv_len = rank == ROOT ? all : 0;
        break;
    case SCATTER:
        r->send_len = rank == ROOT ? all : 0;
        r->recv_len = r->bytes;
        break;
    case BCAST: r->recv_len = r->bytes; break;
    case ALLREDUCE:
    case REDUCE: r->send_len = r->recv_len = r->bytes; break;
    default: break;
    }
    r->send = bench_malloc(r->send_len);
    r->recv = bench_malloc(r->recv_len);
    if (r->coll == ALLTOALLV) {
        r->counts = bench_malloc((size_t)size * sizeof *r->counts);
        r->displs = bench_malloc((size_t)size * sizeof *r->displs);
        for (int i = 0; i < size; i++) {
            r->counts[i] = (int)r->bytes;
            r->displs[i] = i * (int)r->bytes;
        }
    }
}

static void buffers_free(struct run *r)
{
    free(r->send);
    free(r->recv);
    free(r->counts);
    free(r->displs);
}

/* Byte i of the block rank a makes for rank b. */
static unsigned char pattern_byte(uint32_t a, uint32_t b, size_t i)
{
    return (unsigned char)(bench_pattern(a, b, (uint32_t)(i / 4)) >>
                           (i % 4 * 8));
}

static void fill_block(unsigned char *p, size_t n, uint32_t a, uint32_t b)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern_byte(a, b, i);
}

/* Rank r's element i of a reduction: small integers, so every order of
 * summation gives the same, exact double. */
static double contribution(int r, size_t i)
{
    return (double)((r + 1) * 1024 + (int)(i % 1000));
}

static void prepare(const struct run *r)
{
    size_t n = r->bytes;
    memset(r->recv, SENTINEL, r->recv_len);
    switch (r->coll) {
    case ALLTOALL:
    case ALLTOALLV:
        for (int d = 0; d < size; d++)
            fill_block(r->send + (size_t)d * n, n, (uint32_t)rank, (uint32_t)d);
        break;
    case ALLGATHER:
    case GATHER: fill_block(r->send, n, (uint32_t)rank, 0); break;
    case SCATTER:
        for (int d = 0; d < size && rank == ROOT; d++)
            fill_block(r->send + (size_t)d * n, n, ROOT, (uint32_t)d);
        break;
    case BCAST:
        if (rank == ROOT)
            fill_block(r->recv, n, ROOT, 0);
        break;
    case ALLREDUCE:
    case REDUCE:
        for (size_t i = 0; i < n / 8; i++)
            ((double *)r->send)[i] = contribution(rank, i);
        break;
    default: break;
    }
}

/* 0 when `got` holds block (a, b); else 1 and the first wrong byte. */
static int check_block(const struct run *r, const unsigned char *got,
                       uint32_t a, uint32_t b, int from)
{
    for (size_t i = 0; i < r->bytes; i++) {
        unsigned char want = pattern_byte(a, b, i);
        if (got[i] != want) {
            fprintf(stderr,
                    PROG ": rank %d: %s algo=%s bytes=%zu: byte %zu of the "
                         "block from rank %d is 0x%02x, expected 0x%02x\n",
                    rank, coll_label(r->coll, r->nb), r->algo, r->bytes, i,
                    from, got[i], want);
            return 1;
        }
    }
    return 0;
}

static int check_sum(const struct run *r)
{
    for (size_t i = 0; i < r->bytes / 8; i++) {
        double want = 0, got;
        for (int s = 0; s < size; s++)
            want += contribution(s, i);
        memcpy(&got, r->recv + i * 8, sizeof got);
        if (memcmp(&got, &want, sizeof got) != 0) {
            fprintf(stderr,
                    PROG ": rank %d: %s algo=%s bytes=%zu: element %zu is "
                         "%.17g, expected %.17g\n",
                    rank, coll_label(r->coll, r->nb), r->algo, r->bytes, i, got,
                    want);
            return 1;
        }
    }
    return 0;
}

/* 1 when this rank's result of the first call is wrong (and says where). */
static int result_wrong(const struct run *r)
{
    size_t n = r->bytes;
    switch (r->coll) {
    case ALLTOALL:
    case ALLTOALLV:
        for (int s = 0; s < size; s++)
            if (check_block(r, r->recv + (size_t)s * n, (uint32_t)s,
                            (uint32_t)rank, s))
                return 1;
        return 0;
    case ALLGATHER:
    case GATHER:
        for (int s = 0; s < size && (r->coll == ALLGATHER || rank == ROOT); s++)
            if (check_block(r, r->recv + (size_t)s * n, (uint32_t)s, 0, s))
                return 1;
        return 0;
    case SCATTER: return check_block(r, r->recv, ROOT, (uint32_t)rank, ROOT);
    case BCAST: return check_block(r, r->recv, ROOT, 0, ROOT);
    case ALLREDUCE: return check_sum(r);
    case REDUCE: return rank == ROOT ? check_sum(r) : 0;
    default: return 0;
    }
}

/* ---- measurement -------------------------------------------------------- */

static int blocking_call(const struct run *r)
{
    int n = (int)r->bytes;
    switch (r->coll) {
    case ALLTOALL:
        return MPI_Alltoall(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE,
                            MPI_COMM_WORLD);
    case ALLTOALLV:
        return MPI_Alltoallv(r->send, r->counts, r->displs, MPI_BYTE, r->recv,
                             r->counts, r->displs, MPI_BYTE, MPI_COMM_WORLD);
    case BCAST: return MPI_Bcast(r->recv, n, MPI_BYTE, ROOT, MPI_COMM_WORLD);
    case ALLGATHER:
        return MPI_Allgather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE,
                             MPI_COMM_WORLD);
    case ALLREDUCE:
        return MPI_Allreduce(r->send, r->recv, n / 8, MPI_DOUBLE, MPI_SUM,
                             MPI_COMM_WORLD);
    case REDUCE:
        return MPI_Reduce(r->send, r->recv, n / 8, MPI_DOUBLE, MPI_SUM, ROOT,
                          MPI_COMM_WORLD);
    case GATHER:
        return MPI_Gather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, ROOT,
                          MPI_COMM_WORLD);
    case SCATTER:
        return MPI_Scatter(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, ROOT,
                           MPI_COMM_WORLD);
    default: return MPI_Barrier(MPI_COMM_WORLD);
    }
}

static int post(const struct run *r, MPI_Request *req)
{
    int n = (int)r->bytes;
    switch (r->coll) {
    case ALLTOALL:
        return MPI_Ialltoall(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE,
                             MPI_COMM_WORLD, req);
    case ALLTOALLV:
        return MPI_Ialltoallv(r->send, r->counts, r->displs, MPI_BYTE, r->recv,
                              r->counts, r->displs, MPI_BYTE, MPI_COMM_WORLD,
                              req);
    case BCAST:
        return MPI_Ibcast(r->recv, n, MPI_BYTE, ROOT, MPI_COMM_WORLD, req);
    case ALLGATHER:
        return MPI_Iallgather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE,
                              MPI_COMM_WORLD, req);
    case ALLREDUCE:
        return MPI_Iallreduce(r->send, r->recv, n / 8, MPI_DOUBLE, MPI_SUM,
                              MPI_COMM_WORLD, req);
    case REDUCE:
        return MPI_Ireduce(r->send, r->recv, n / 8, MPI_DOUBLE, MPI_SUM, ROOT,
                           MPI_COMM_WORLD, req);
    case GATHER:
        return MPI_Igather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, ROOT,
                           MPI_COMM_WORLD, req);
    case SCATTER:
        return MPI_Iscatter(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, ROOT,
                            MPI_COMM_WORLD, req);
    default: return MPI_Ibarrier(MPI_COMM_WORLD, req);
    }
}

/* Where the compute loop's result goes: a volatile the compiler must
 * write, so it cannot drop the loop. */
static volatile double work_sink = 1.0;

/* One unit of computation: dependent multiply-adds, no memory traffic,
 * nothing the compiler may vectorise or fold away. */
static double work_unit(double x)
{
    for (int k = 0; k < UNIT_STEPS; k++)
        x = x * 0.9999999 + 1e-7;
    return x;
}

/*
 * `units` units of computation; with req, an MPI_Test of it every
 * test_every units (0: none) until it completes.  *tests: the MPI_Test
 * calls made.
 */
static int compute(long units, long test_every, MPI_Request *req, long *tests)
{
    double x = work_sink;
    int flag = req == NULL || test_every == 0;
    *tests = 0;
    for (long u = 1; u <= units; u++) {
        x = work_unit(x);
        if (!flag && u % test_every == 0) {
            (*tests)++;
            int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    work_sink = x;
    return MPI_SUCCESS;
}

/* Units of the compute loop that take about `seconds` on this rank: a
 * rate from a run of 20 ms, then three runs at that count, scaled by
 * their median (no MPI calls; the other ranks calibrate alike). */
static long calibrate(double seconds)
{
    long units = 1, tests;
    double elapsed = 0;
    while (elapsed < 0.02 && units < LONG_MAX / 2) {
        units *= 2;
        double start = bench_clock();
        compute(units, 0, NULL, &tests);
        elapsed = bench_clock() - start;
    }
    double est = (double)units * seconds / elapsed;
    units = est < 1 ? 1 : (long)est;
    double t[3];
    for (int i = 0; i < 3; i++) {
        double start = bench_clock();
        compute(units, 0, NULL, &tests);
        t[i] = bench_clock() - start;
    }
    est = (double)units * seconds / bench_quantile(t, 3, 0.5);
    return est < 1 ? 1 : (long)est;
}

/* The measured operation: the blocking call, or the nonblocking one with
 * r->units of computation between post and MPI_Wait, or (compute_only)
 * the computation alone. */
static int call(struct run *r)
{
    r->tests = 0;
    if (r->compute_only)
        return compute(r->units, 0, NULL, &r->tests);
    if (!r->nb)
        return blocking_call(r);
    MPI_Request req;
    int rc = post(r, &req);
    if (rc == MPI_SUCCESS && r->units > 0)
        rc = compute(r->units, r->test_every, &req, &r->tests);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

static void force(enum coll c, const char *algo)
{
    bench_mpi_check(set_algorithm(coll_names[c], algo),
                    "GridColl_Set_algorithm");
}

struct outcome {
    int usable;
    const char *ran; /* not usable: the algorithm that ran instead, or NULL */
    int wrong;
    double median, p10, p90; /* microseconds */
};

/* One call of r->algo (AUTO: the automatic choice) started as w says
 * (NULL: after a barrier), repeated until every rank made its start
 * window; its time in seconds, or a negative value when a forced
 * algorithm cannot run the call (out->usable cleared, out->ran set when
 * the library ran another).  first: check the result. */
static double timed_call(struct run *r, struct bench_window *w, int first,
                         struct outcome *out)
{
    const char *forced = strcmp(r->algo, AUTO) == 0 ? NULL : r->algo;
    for (;;) {
        if (w != NULL)
            bench_window_start(w);
        else
            bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        force(r->coll, forced);
        double start = w != NULL ? w->t0 : MPI_Wtime();
        int rc = call(r);
        double elapsed = (w != NULL ? bench_clock() : MPI_Wtime()) - start;
        force(r->coll, NULL);
        int cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (first && forced != NULL && cls == MPI_ERR_ARG) {
            out->usable = 0;
            return -1;
        }
        bench_mpi_check(rc, r->nb ? icall_names[r->coll] : call_names[r->coll]);
        const char *used = algorithm_used(coll_names[r->coll]);
        if (first && forced != NULL && used != NULL &&
            strcmp(used, forced) != 0) {
            out->usable = 0;
            out->ran = used;
            return -1;
        }
        if (first)
            out->wrong = result_wrong(r);
        if (w == NULL || !bench_window_missed(w))
            return elapsed;
        calls_repeated++;
        first = 0;
    }
}

/* After the first round: whether any rank saw a wrong result, every
 * algorithm's verdict made the same on all ranks.  The measurement stops
 * there: a broken algorithm may leave messages behind. */
static int any_wrong(struct outcome *out, int nalgos)
{
    int *wrong = bench_malloc((size_t)nalgos * sizeof *wrong);
    int any = 0;
    for (int k = 0; k < nalgos; k++)
        wrong[k] = out[k].wrong;
    bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, wrong, nalgos, MPI_INT, MPI_MAX,
                                  MPI_COMM_WORLD),
                    "MPI_Allreduce");
    for (int k = 0; k < nalgos; k++) {
        out[k].wrong = wrong[k];
        any |= wrong[k];
    }
    free(wrong);
    return any;
}

/*
 * Every algorithm of `algos` at r's size: warm-up and timed calls, the
 * algorithms taking turns call by call, so what changes during the
 * measurement (the machine's load, the state of the WAN streams) falls
 * on all of them alike.  Each algorithm's first call runs on freshly
 * filled buffers and is checked.  calibrated: the start window's
 * calibration; NULL: --start barrier.
 */
static void measure(struct run *r, const char **algos, int nalgos, long iters,
                    long warmup, const struct bench_window *calibrated,
                    struct outcome *out)
{
    struct bench_window w = {0};
    if (calibrated != NULL)
        w = *calibrated;
    /* Per algorithm: its timed calls' durations, the slowest rank's after
     * an MPI_MAX reduction (usable or not is the same on every rank). */
    double *t = bench_malloc((size_t)nalgos * (size_t)iters * sizeof *t);
    for (int k = 0; k < nalgos; k++)
        out[k] = (struct outcome){1, NULL, 0, 0, 0, 0};
    for (long i = 0; i < warmup + iters; i++) {
        for (int k = 0; k < nalgos; k++) {
            if (!out[k].usable)
                continue;
            r->algo = algos[k];
            if (i == 0) {
                prepare(r);
                /* Filling the buffers takes the ranks different times. */
                if (calibrated != NULL)
                    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            }
            double elapsed =
                timed_call(r, calibrated != NULL ? &w : NULL, i == 0, &out[k]);
            if (i >= warmup && out[k].usable)
                t[(size_t)k * (size_t)iters + (size_t)(i - warmup)] = elapsed;
        }
        if (i == 0 && any_wrong(out, nalgos))
            goto cleanup;
    }
    for (int k = 0; k < nalgos; k++) {
        double *tk = t + (size_t)k * (size_t)iters;
        if (!out[k].usable)
            continue;
        bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, tk, (int)iters, MPI_DOUBLE,
                                      MPI_MAX, MPI_COMM_WORLD),
                        "MPI_Allreduce");
        out[k].median = bench_quantile(tk, iters, 0.5) * 1e6;
        out[k].p10 = bench_quantile(tk, iters, 0.1) * 1e6;
        out[k].p90 = bench_quantile(tk, iters, 0.9) * 1e6;
    }
cleanup:
    free(t);
}

/* ---- overlap ------------------------------------------------------------ */

/* The kinds of timed operation of an --overlap round. */
enum kind { PURE, COMPUTE, TOTAL, TOTAL_TEST, KINDS };

/* One --overlap row: the loop without MPI_Test (TOTAL) or with it. */
struct overlap_row {
    double pure, compute, total; /* medians, microseconds */
    double pct, p10, p90;        /* the rounds' overlaps, percent */
    double tests;                /* MPI_Test calls per call, median */
};

struct overlap {
    struct outcome o; /* usable, ran, wrong */
    struct overlap_row row[2];
};

static double clamp_pct(double v)
{
    return v < 0 ? 0 : v > 100 ? 100 : v;
}

/* The slowest rank's value of each of n, on every rank. */
static void slowest(double *v, long n)
{
    bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_MAX,
                                  MPI_COMM_WORLD),
                    "MPI_Allreduce");
}

/*
 * --overlap for every algorithm of `algos` at r's size (the usage text
 * says what runs).  The kinds of a round run back to back and the
 * algorithms take turns round by round, so a change of the machine's
 * load or of the WAN's streams falls on the pure, compute and total
 * times of a round alike; a round's overlap compares them.
 */
static void measure_overlap(struct run *r, const char **algos, int nalgos,
                            const struct options *o,
                            const struct bench_window *calibrated,
                            struct overlap *out)
{
    struct bench_window w = {0}, *wp = calibrated != NULL ? &w : NULL;
    if (calibrated != NULL)
        w = *calibrated;
    long iters = o->iters;
    int kinds = o->test_every > 0 ? KINDS : TOTAL_TEST;
    size_t per_algo = (size_t)(CALIBRATION_CALLS + KINDS * iters);
    /* Per algorithm: CALIBRATION_CALLS pure calls, then kind by kind
     * the rounds' times, then (TOTAL, TOTAL_TEST) the MPI_Test counts. */
    size_t nt = (size_t)nalgos * (per_algo + 2 * (size_t)iters);
    double *t = bench_malloc(nt * sizeof *t);
    /* Without --test-every its slots stay 0 but are reduced too. */
    memset(t, 0, nt * sizeof *t);
    long *units = bench_malloc((size_t)nalgos * sizeof *units);
    struct outcome *oc = bench_malloc((size_t)nalgos * sizeof *oc);
    for (int k = 0; k < nalgos; k++)
        oc[k] = (struct outcome){1, NULL, 0, 0, 0, 0};
    r->units = r->test_every = 0;
    r->compute_only = 0;
    for (long i = 0; i < o->warmup + CALIBRATION_CALLS; i++) {
        for (int k = 0; k < nalgos; k++) {
            if (!oc[k].usable)
                continue;
            r->algo = algos[k];
            if (i == 0) {
                prepare(r);
                if (wp != NULL)
                    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            }
            double elapsed = timed_call(r, wp, i == 0, &oc[k]);
            double *tk = t + (size_t)k * (per_algo + 2 * (size_t)iters);
            if (i >= o->warmup && oc[k].usable)
                tk[i - o->warmup] = elapsed;
        }
        if (i == 0 && any_wrong(oc, nalgos))
            goto cleanup;
    }
    /* The target is the same on every rank (the slowest rank's median);
     * each rank's loop takes about that long on that rank. */
    for (int k = 0; k < nalgos; k++) {
        double *tk = t + (size_t)k * (per_algo + 2 * (size_t)iters);
        if (!oc[k].usable)
            continue;
        slowest(tk, CALIBRATION_CALLS);
        units[k] = calibrate(bench_quantile(tk, CALIBRATION_CALLS, 0.5));
    }
    for (long i = 0; i < iters; i++) {
        for (int k = 0; k < nalgos; k++) {
            if (!oc[k].usable)
                continue;
            double *tk = t + (size_t)k * (per_algo + 2 * (size_t)iters) +
                         CALIBRATION_CALLS;
            double *tests = tk + KINDS * iters;
            r->algo = algos[k];
            for (int kind = PURE; kind < kinds; kind++) {
                r->compute_only = kind == COMPUTE;
                r->units = kind == PURE ? 0 : units[k];
                r->test_every = kind == TOTAL_TEST ? o->test_every : 0;
                /* The first overlapped call of each kind is checked on
                 * fresh buffers: computing must not disturb the result. */
                int check = i == 0 && kind >= TOTAL;
                if (check) {
                    prepare(r);
                    if (wp != NULL)
                        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD),
                                        "MPI_Barrier");
                }
                tk[kind * iters + i] = timed_call(r, wp, check, &oc[k]);
                if (kind >= TOTAL)
                    tests[(kind - TOTAL) * iters + i] = (double)r->tests;
            }
        }
        if (i == 0 && any_wrong(oc, nalgos))
            goto cleanup;
    }
    for (int k = 0; k < nalgos; k++) {
        out[k].o = oc[k];
        if (!oc[k].usable)
            continue;
        double *tk =
            t + (size_t)k * (per_algo + 2 * (size_t)iters) + CALIBRATION_CALLS;
        slowest(tk, (KINDS + 2) * iters);
        double *pure = tk, *comp = tk + iters, *tests = tk + KINDS * iters;
        double *pct = bench_malloc((size_t)iters * sizeof *pct);
        for (int v = 0; v < kinds - TOTAL; v++) {
            double *total = tk + (TOTAL + v) * iters;
            struct overlap_row *row = &out[k].row[v];
            for (long i = 0; i < iters; i++)
                pct[i] = clamp_pct(100 * (1 - (total[i] - comp[i]) / pure[i]));
            row->pct = bench_quantile(pct, iters, 0.5);
            row->p10 = bench_quantile(pct, iters, 0.1);
            row->p90 = bench_quantile(pct, iters, 0.9);
            row->total = bench_quantile(total, iters, 0.5) * 1e6;
            row->tests = bench_quantile(tests + v * iters, iters, 0.5);
        }
        /* Sorting in bench_quantile: the rounds' pairing is used above. */
        double pure_med = bench_quantile(pure, iters, 0.5) * 1e6;
        double comp_med = bench_quantile(comp, iters, 0.5) * 1e6;
        for (int v = 0; v < 2; v++) {
            out[k].row[v].pure = pure_med;
            out[k].row[v].compute = comp_med;
        }
        free(pct);
    }
cleanup:
    for (int k = 0; k < nalgos; k++)
        out[k].o = oc[k];
    r->units = r->test_every = 0;
    r->compute_only = 0;
    free(oc);
    free(units);
    free(t);
}

/* ---- output ------------------------------------------------------------- */

struct table {
    int csv, nb, overlap;
    int coll_width, algo_width;
};

#define OVERLAP_HEADER                                                         \
    "coll,algo,sites,ranks,bytes,test_every,tests,pure_us,compute_us,"         \
    "total_us,overlap_pct,overlap_p10,overlap_p90"

static void print_header(const struct table *tb)
{
    if (tb->overlap && tb->csv)
        printf(OVERLAP_HEADER "\n");
    else if (tb->overlap)
        printf("%-*s  %-*s  %5s  %5s  %10s  %10s  %8s  %11s  %11s  %11s  "
               "%11s  %11s  %11s\n",
               tb->coll_width, "coll", tb->algo_width, "algo", "sites", "ranks",
               "bytes", "test_every", "tests", "pure_us", "compute_us",
               "total_us", "overlap_pct", "overlap_p10", "overlap_p90");
    else if (tb->csv)
        printf("coll,algo,sites,ranks,bytes,median_us,p10_us,p90_us\n");
    else
        printf("%-*s  %-*s  %5s  %5s  %10s  %11s  %11s  %11s\n", tb->coll_width,
               "coll", tb->algo_width, "algo", "sites", "ranks", "bytes",
               "median_us", "p10_us", "p90_us");
    fflush(stdout);
}

static void print_row(const struct table *tb, const struct run *r, int sites,
                      const struct outcome *m)
{
    char v[3][32];
    if (m->usable) {
        snprintf(v[0], sizeof v[0], "%.2f", m->median);
        snprintf(v[1], sizeof v[1], "%.2f", m->p10);
        snprintf(v[2], sizeof v[2], "%.2f", m->p90);
    } else {
        for (int i = 0; i < 3; i++)
            snprintf(v[i], sizeof v[i], "n/a");
    }
    const char *coll = coll_label(r->coll, tb->nb);
    if (tb->csv)
        printf("%s,%s,%d,%d,%zu,%s,%s,%s\n", coll, r->algo, sites, size,
               r->bytes, v[0], v[1], v[2]);
    else
        printf("%-*s  %-*s  %5d  %5d  %10zu  %11s  %11s  %11s\n",
               tb->coll_width, coll, tb->algo_width, r->algo, sites, size,
               r->bytes, v[0], v[1], v[2]);
    fflush(stdout);
}

/* The rows of one algorithm and size: without MPI_Test, then with it. */
static void print_overlap_rows(const struct table *tb, const struct run *r,
                               int sites, long test_every,
                               const struct overlap *m)
{
    for (int v = 0; v < (test_every > 0 ? 2 : 1); v++) {
        const struct overlap_row *row = &m->row[v];
        char f[7][32];
        if (m->o.usable) {
            snprintf(f[0], sizeof f[0], "%.0f", row->tests);
            snprintf(f[1], sizeof f[1], "%.2f", row->pure);
            snprintf(f[2], sizeof f[2], "%.2f", row->compute);
            snprintf(f[3], sizeof f[3], "%.2f", row->total);
            snprintf(f[4], sizeof f[4], "%.1f", row->pct);
            snprintf(f[5], sizeof f[5], "%.1f", row->p10);
            snprintf(f[6], sizeof f[6], "%.1f", row->p90);
        } else {
            for (int i = 0; i < 7; i++)
                snprintf(f[i], sizeof f[i], "n/a");
        }
        long every = v == 0 ? 0 : test_every;
        const char *coll = coll_label(r->coll, tb->nb);
        if (tb->csv)
            printf("%s,%s,%d,%d,%zu,%ld,%s,%s,%s,%s,%s,%s,%s\n", coll, r->algo,
                   sites, size, r->bytes, every, f[0], f[1], f[2], f[3], f[4],
                   f[5], f[6]);
        else
            printf("%-*s  %-*s  %5d  %5d  %10zu  %10ld  %8s  %11s  %11s  "
                   "%11s  %11s  %11s  %11s\n",
                   tb->coll_width, coll, tb->algo_width, r->algo, sites, size,
                   r->bytes, every, f[0], f[1], f[2], f[3], f[4], f[5], f[6]);
    }
    fflush(stdout);
}

static struct table table_for(const struct options *o)
{
    struct table tb = {o->csv, o->nb, o->overlap, (int)strlen("coll"),
                       (int)strlen("algo")};
    const char *coll = coll_label(o->coll, o->nb);
    if ((int)strlen(coll) > tb.coll_width)
        tb.coll_width = (int)strlen(coll);
    for (int a = 0; a < o->nalgos; a++)
        if ((int)strlen(o->algos[a]) > tb.algo_width)
            tb.algo_width = (int)strlen(o->algos[a]);
    return tb;
}

int main(int argc, char **argv)
{
    bench_set_program(PROG);
    bench_mpi_check(MPI_Init(&argc, &argv), "MPI_Init");
    bench_mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler");
    bench_mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    bench_mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");

    struct options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed != 0) {
        free(o.algos);
        bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
        return parsed == 1 ? 0 : 2;
    }
    int sites = 1;
    bench_mpi_check(comm_site_count(MPI_COMM_WORLD, &sites),
                    "GridColl_Comm_site_count");
    struct bench_window calibrated;
    if (o.start == BENCH_START_WINDOW)
        bench_window_calibrate(&calibrated);
    struct table tb = table_for(&o);
    if (rank == 0)
        print_header(&tb);

    int failed = 0;
    const char **order = bench_malloc((size_t)o.nalgos * sizeof *order);
    struct overlap *m = bench_malloc((size_t)o.nalgos * sizeof *m);
    for (size_t s = 0; s < o.nsizes && !failed; s++) {
        struct run r = {
            .coll = o.coll, .nb = o.nb, .bytes = (size_t)o.sizes[s]};
        for (int k = 0; k < o.nalgos; k++)
            order[k] = o.algos[(k + s) % (size_t)o.nalgos];
        buffers_make(&r);
        const struct bench_window *w =
            o.start == BENCH_START_WINDOW ? &calibrated : NULL;
        if (o.overlap) {
            measure_overlap(&r, order, o.nalgos, &o, w, m);
        } else {
            struct outcome *plain =
                bench_malloc((size_t)o.nalgos * sizeof *plain);
            measure(&r, order, o.nalgos, o.iters, o.warmup, w, plain);
            for (int k = 0; k < o.nalgos; k++)
                m[k].o = plain[k];
            free(plain);
        }
        buffers_free(&r);
        for (int k = 0; k < o.nalgos; k++)
            failed |= m[k].o.wrong;
        for (int k = 0; k < o.nalgos && rank == 0; k++) {
            r.algo = order[k];
            if (failed) {
                if (m[k].o.wrong)
                    printf("FAIL coll=%s algo=%s bytes=%zu: wrong result "
                           "(the ranks that saw it say where on stderr)\n",
                           coll_label(r.coll, r.nb), r.algo, r.bytes);
                continue;
            }
            if (!m[k].o.usable)
                fprintf(stderr,
                        PROG ": %s algorithm %s cannot run this call (%zu "
                             "bytes, %d ranks on %d sites%s%s); see %s\n",
                        coll_label(r.coll, r.nb), r.algo, r.bytes, size, sites,
                        m[k].o.ran != NULL ? "; the library ran " : "",
                        m[k].o.ran != NULL ? m[k].o.ran : "",
                        r.nb
                            ? "gridcoll-info --algorithms: the nonblocking "
                              "forms run the algorithms written as schedules"
                            : "its restrictions in gridcoll-info --algorithms");
            if (o.overlap)
                print_overlap_rows(&tb, &r, sites, o.test_every, &m[k]);
            else
                print_row(&tb, &r, sites, &m[k].o);
        }
        fflush(stdout);
    }
    free(order);
    free(m);
    if (o.start == BENCH_START_WINDOW && rank == 0)
        fprintf(stderr,
                PROG ": --start window: %.3f ms ahead after calibration; "
                     "%ld calls repeated after a missed window\n",
                calibrated.seconds * 1e3, calls_repeated);
    free(o.algos);
    bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
    return failed ? 1 : 0;
}
