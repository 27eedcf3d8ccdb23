/*
 * gridcoll-mpibench: MPI micro-benchmarks for the MPI layer (issue 3), an
 * ordinary MPI program.
 *
 *   gridcoll-mpibench allreduce|alltoall|barrier|pingpong|stream
 *                     [--bytes LIST]
 *                     [--iters LIST] [--warmup LIST] [--peer R]
 *                     [--seconds S] [--omit S] [--window W] [--nap US]
 *                     [--start barrier|window] [--csv]
 *
 * Built twice from this source: gridcoll-mpibench is linked with
 * libgridcoll (run it with gridrun, or with plain mpiexec, where the
 * library passes every call through), gridcoll-mpibench-plain only with
 * MPICH (the baseline without any interposition).  bench/mpi_layer.py runs
 * both side by side; docs/performance/README.md has the figures.
 *
 * Tests, all on MPI_COMM_WORLD:
 *   allreduce  MPI_Allreduce (MPI_SUM) of BYTES / 8 int64 values;
 *   alltoall   MPI_Alltoall of BYTES per pair (BYTES / 4 uint32 values);
 *   barrier    MPI_Barrier back to back (--bytes is ignored; the rows say
 *              0 bytes): unlike a barrier timed alone after another one,
 *              no skew between the ranks' exits is inside the time;
 *   pingpong   rank 0 sends BYTES to rank R (--peer, default 1), which
 *              sends them back; the other ranks wait for rank 0's "done"
 *              in MPI_Test with a 1 ms sleep between calls, so they do not
 *              take CPU time from the pair (MPICH busy-polls inside
 *              blocking calls).
 *   stream     rank 0 streams messages of BYTES to rank R (--peer) for S
 *              seconds (--seconds, default 5), keeping W (--window,
 *              default 8) MPI_Isend in flight, which R receives into W
 *              posted MPI_Irecv: application-level throughput of one
 *              pair, as a file transfer sees it.  The end: after S seconds
 *              (plus --omit) rank 0 sends W empty messages, one for each
 *              receive R has still posted.  R times from the pair's
 *              barrier (an empty round trip) until every message is in;
 *              with --omit O, as iperf3 -O, it counts the data messages
 *              completed in the S seconds from the first one it completes
 *              O seconds after the barrier: the ramp-up is left out,
 *              and in a steady stream the relays' and sockets' buffers
 *              hold about as much at the end of the S seconds as at
 *              their start.  It checks every byte it receives.  Both
 *              wait in MPI_Waitany, or with --nap US in MPI_Testany with
 *              US-microsecond sleeps between calls (the CPU the
 *              library's progress loop spins away is then left to the
 *              relays).  --iters is ignored; the warm-up is --warmup
 *              (default 1) verified round trips of BYTES.  The other
 *              ranks idle as in pingpong.
 *
 * --bytes, --iters and --warmup take a comma-separated list (sizes may end
 * in K, M or G: binary multiples); each size is one measurement, with the
 * iteration and warm-up counts at the same position (a single value applies
 * to every size).  Defaults: --bytes 8, --iters 1000, --warmup 10% of the
 * iterations (at least 1).
 *
 * Each measurement: the warm-up iterations, each with fresh data and every
 * byte verified; an MPI_Barrier (pingpong: an empty round trip between the
 * pair); the timed loop of --iters operations
 * (MPI_Wtime around the loop, buffers untouched inside it); then the
 * timed loop's final data is verified too.
 *
 * allreduce and alltoall start their timed loop as --start says
 * (bench_mpi.h).  barrier (the default): each rank times from its own exit
 * of the MPI_Barrier, so the loop holds the sites' exit skew once (up to
 * one one-way delay across a WAN, spread over --iters calls).  window:
 * after the barrier, rank 0 broadcasts a start time t0 a window ahead on
 * CLOCK_MONOTONIC (3 times the broadcast's time, measured once at the
 * start, 5 rounds), every rank sleeps until t0, and times the loop from
 * t0 on that clock; a loop that a rank started after t0 is repeated with
 * the window doubled (after 8 doublings in a row: status 2).  It needs
 * one clock for all ranks: one host, or synchronised clocks.  The barrier
 * test always runs back to back (its point), pingpong and stream time
 * one pair from its own round trip.  Wrong data anywhere: a message
 * on stderr, and every rank exits with status 1.  MPI errors: message and
 * MPI_Abort (status 2).  Usage errors: status 2.
 *
 * Rank 0 prints one line per measurement, with --csv a header and CSV rows:
 *
 *   test,lib,bytes,ranks,sites,peer,pair,iters,usec_per_op,usec_median,MBps
 *
 *   lib          gridcoll (linked with libgridcoll) or plain;
 *   sites        sites of MPI_COMM_WORLD (GridColl_Comm_site_count; 1 for
 *                the plain build);
 *   peer, pair   pingpong only: --peer and whether it is on rank 0's site
 *                ("same" or "cross"); "-" otherwise;
 *   usec_per_op  collectives: the timed loop's duration / iters on the
 *                slowest rank (--start window: from t0); pingpong: half the
 * mean round trip (one-way latency, as osu_latency reports it); stream: the
 * receiver's time / data messages (iters: how many); usec_median  the median of
 * rank 0's per-iteration times (pingpong: half the median round trip), each
 * taken over a block of ceil(iters / 10000) consecutive iterations (one
 * iteration when iters <= 10000); MBps         10^6 bytes per second: allreduce
 * BYTES / usec_per_op, alltoall BYTES * (ranks - 1) / usec_per_op (what each
 *                rank sends to the others), pingpong and stream
 *                BYTES / usec_per_op.
 */
#ifdef GRIDCOLL_MPIBENCH_PLAIN
#include <mpi.h>
#else
#include <gridcoll.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_mpi.h"

#define PROG     "gridcoll-mpibench"
#define MAX_LIST 32
/* Per-iteration times are taken over blocks of consecutive iterations, at
 * most this many blocks (MPI_Wtime's resolution, preemption outliers). */
#define MAX_SAMPLES 10000
#define TAG_PING    1
#define TAG_PONG    2
#define TAG_DONE    3
#define TAG_DATA    4
#define TAG_STATS   5
#define MAX_WINDOW  1024

#ifdef GRIDCOLL_MPIBENCH_PLAIN
#define LIB_NAME "plain"
#else
#define LIB_NAME "gridcoll"
#endif

enum test { T_ALLREDUCE, T_ALLTOALL, T_BARRIER, T_PINGPONG, T_STREAM };

static int rank, size;
/* stream --nap: microseconds to sleep between MPI_Testany calls instead of
 * waiting in MPI_Waitany (0). */
static long nap_us;
/* --start window: the calibrated window, and the one of the measurement
 * running (from the calibration, doubled by every window missed). */
static int start_window;
static struct bench_window calibrated_window, loop_window;

struct options {
    enum test test;
    const char *test_name;
    size_t nbytes;
    uint64_t bytes[MAX_LIST];
    size_t niters;
    long iters[MAX_LIST];
    size_t nwarmup;
    long warmup[MAX_LIST];
    int peer;
    double seconds;
    double omit;
    int window;
    int csv;
    enum bench_start start;
};

struct result {
    long ops; /* stream: data messages received; else 0 (--iters) */
    double usec_per_op;
    double usec_median;
    long bad; /* words that differ from what was expected, this rank */
};

/* ---- options ---------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG
            " allreduce|alltoall|barrier|pingpong|stream [--bytes LIST]\n"
            "       [--iters LIST] [--warmup LIST] [--peer R] [--seconds S]\n"
            "       [--omit S] [--window W] [--nap US]\n"
            "       [--start barrier|window] [--csv]\n"
            "  --bytes LIST   message sizes, e.g. 8,4M,64M (K, M, G: binary;\n"
            "                 allreduce: multiple of 8, alltoall: of 4;\n"
            "                 alltoall: bytes per pair) [8]\n"
            "  --iters LIST   timed iterations per size [1000]\n"
            "  --warmup LIST  verified warm-up iterations per size\n"
            "                 [iters / 10, at least 1]\n"
            "  --peer R       pingpong and stream partner of rank 0 [1]\n"
            "  --seconds S    stream: seconds per size [5]\n"
            "  --omit S       stream: seconds streamed before the timing\n"
            "                 starts, left out of the result [0]\n"
            "  --window W     stream: messages in flight, 1..1024 [8]\n"
            "  --nap US       stream: wait in MPI_Testany with US microsecond\n"
            "                 sleeps instead of MPI_Waitany [0: Waitany]\n"
            "  --start M      allreduce, alltoall: how the ranks start the\n"
            "                 timed loop [barrier]: barrier: each rank times\n"
            "                 from its own exit of an MPI_Barrier (across a\n"
            "                 WAN the sites' exit skew is in the loop);\n"
            "                 window: from a start time t0 that rank 0\n"
            "                 broadcasts a window ahead, every rank sleeping\n"
            "                 until t0 (a loop a rank started late is\n"
            "                 repeated, the window doubled); needs one clock\n"
            "                 for all ranks (CLOCK_MONOTONIC): one host, or\n"
            "                 synchronised clocks (PTP)\n"
            "  --csv          print a CSV header and one row per size\n");
}

static int parse_counts(const char *text, long *out, size_t *n)
{
    uint64_t v[MAX_LIST];
    if (bench_parse_list(text, 0, v, MAX_LIST, n) != 0)
        return -1;
    for (size_t i = 0; i < *n; i++) {
        if (v[i] > INT32_MAX)
            return -1;
        out[i] = (long)v[i];
    }
    return 0;
}

/* A number of seconds from 0 to 3600 (--seconds, --omit). */
static int parse_seconds(const char *text, double *out)
{
    char *end;
    *out = strtod(text, &end);
    return end != text && *end == '\0' && *out >= 0 && *out <= 3600 ? 0 : -1;
}

/* 0: run; 1: --help; 2: usage error (message printed by rank 0). */
static int parse_options(int argc, char **argv, struct options *o)
{
    const char *err = NULL;
    memset(o, 0, sizeof *o);
    o->peer = 1;
    o->seconds = 5;
    o->window = 8;
    o->nbytes = 1;
    o->bytes[0] = 8;
    o->niters = 1;
    o->iters[0] = 1000;
    if (argc >= 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        if (rank == 0)
            usage(stdout);
        return 1;
    }
    if (argc < 2) {
        err = "no test given";
        goto bad;
    }
    o->test_name = argv[1];
    if (strcmp(argv[1], "allreduce") == 0)
        o->test = T_ALLREDUCE;
    else if (strcmp(argv[1], "alltoall") == 0)
        o->test = T_ALLTOALL;
    else if (strcmp(argv[1], "barrier") == 0)
        o->test = T_BARRIER;
    else if (strcmp(argv[1], "pingpong") == 0)
        o->test = T_PINGPONG;
    else if (strcmp(argv[1], "stream") == 0)
        o->test = T_STREAM;
    else {
        err = "unknown test";
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
        } else if (strcmp(a, "--bytes") == 0 && has_value) {
            if (bench_parse_list(argv[++i], 1, o->bytes, MAX_LIST,
                                 &o->nbytes) != 0) {
                err = "bad --bytes";
                goto bad;
            }
        } else if (strcmp(a, "--iters") == 0 && has_value) {
            if (parse_counts(argv[++i], o->iters, &o->niters) != 0) {
                err = "bad --iters";
                goto bad;
            }
        } else if (strcmp(a, "--warmup") == 0 && has_value) {
            if (parse_counts(argv[++i], o->warmup, &o->nwarmup) != 0) {
                err = "bad --warmup";
                goto bad;
            }
        } else if (strcmp(a, "--peer") == 0 && has_value) {
            uint64_t v;
            if (bench_parse_u64(argv[++i], 0, &v) != 0 || v == 0 ||
                v >= (uint64_t)size) {
                err = "--peer must be a rank other than 0";
                goto bad;
            }
            o->peer = (int)v;
        } else if (strcmp(a, "--seconds") == 0 && has_value) {
            if (parse_seconds(argv[++i], &o->seconds) != 0 || o->seconds == 0) {
                err = "--seconds: more than 0, at most 3600";
                goto bad;
            }
        } else if (strcmp(a, "--omit") == 0 && has_value) {
            if (parse_seconds(argv[++i], &o->omit) != 0) {
                err = "--omit: 0 to 3600 seconds";
                goto bad;
            }
        } else if (strcmp(a, "--nap") == 0 && has_value) {
            uint64_t v;
            if (bench_parse_u64(argv[++i], 0, &v) != 0 || v > 999999) {
                err = "--nap: 0..999999 microseconds";
                goto bad;
            }
            nap_us = (long)v;
        } else if (strcmp(a, "--window") == 0 && has_value) {
            uint64_t v;
            if (bench_parse_u64(argv[++i], 0, &v) != 0 || v < 1 ||
                v > MAX_WINDOW) {
                err = "--window: 1..1024";
                goto bad;
            }
            o->window = (int)v;
        } else if (strcmp(a, "--start") == 0 && has_value) {
            if (bench_parse_start(argv[++i], &o->start) != 0) {
                err = "--start: barrier or window";
                goto bad;
            }
        } else {
            err = "unknown option or missing value";
            goto bad;
        }
    }
    if ((o->niters != 1 && o->niters != o->nbytes) ||
        (o->nwarmup > 1 && o->nwarmup != o->nbytes)) {
        err = "--iters and --warmup need one value or one per --bytes size";
        goto bad;
    }
    for (size_t i = 0; i < o->nbytes; i++) {
        uint64_t b = o->bytes[i];
        uint64_t unit = o->test == T_ALLREDUCE ? 8 : 4;
        uint64_t total = o->test == T_ALLTOALL ? b * (uint64_t)size : b;
        if (b == 0 || b % unit != 0 || b / unit > INT32_MAX ||
            total > ((uint64_t)1 << 34)) {
            err = o->test == T_ALLREDUCE
                      ? "allreduce --bytes: a positive multiple of 8"
                      : "--bytes: a positive multiple of 4 (at most 2^31 "
                        "values, 16 GiB of buffer)";
            goto bad;
        }
    }
    for (size_t i = 0; i < o->niters; i++) {
        if (o->iters[i] < 1) {
            err = "--iters must be at least 1";
            goto bad;
        }
    }
    if (o->start == BENCH_START_WINDOW && o->test != T_ALLREDUCE &&
        o->test != T_ALLTOALL) {
        err = "--start window: allreduce and alltoall only";
        goto bad;
    }
    if ((o->test == T_PINGPONG || o->test == T_STREAM) && size < 2) {
        err = "pingpong and stream need at least 2 ranks";
        goto bad;
    }
    return 0;
bad:
    if (rank == 0) {
        fprintf(stderr, PROG ": %s\n", err);
        usage(stderr);
    }
    return 2;
}

/* ---- data ------------------------------------------------------------- */

/* The timed loop's clock: the start window's is the one all ranks share. */
static double loop_clock(void)
{
    return start_window ? bench_clock() : MPI_Wtime();
}

/*
 * The timed loop of a collective test: an MPI_Barrier (and with --start
 * window the wait for t0), then `iters` calls of op(arg) back to back.
 * usec_per_op: the loop's duration / iters on the slowest rank;
 * usec_median: rank 0's per-call median over blocks.
 */
static void timed_loop(void (*op)(void *), void *arg, long iters,
                       struct result *res)
{
    double *t = bench_malloc(MAX_SAMPLES * sizeof *t);
    long block = (iters + MAX_SAMPLES - 1) / MAX_SAMPLES, nt;
    double start, prev;
    loop_window = calibrated_window;
    do {
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        if (start_window)
            bench_window_start(&loop_window);
        start = start_window ? loop_window.t0 : MPI_Wtime();
        prev = start;
        nt = 0;
        for (long i = 0; i < iters; i++) {
            op(arg);
            if ((i + 1) % block == 0 || i + 1 == iters) {
                double now = loop_clock();
                t[nt++] = (now - prev) / (double)(i % block + 1);
                prev = now;
            }
        }
    } while (start_window && bench_window_missed(&loop_window));
    res->usec_per_op = bench_max_at_root(prev - start) / (double)iters * 1e6;
    res->usec_median = bench_quantile(t, nt, 0.5) * 1e6;
    free(t);
}

/* ---- allreduce -------------------------------------------------------- */

/* Iteration `round` (-1: the timed loop) of rank r contributes, at i:
 * r * 1000003 + i + round * 7919; the sum over the ranks is known. */
static void allreduce_fill(int64_t *in, long count, long round)
{
    for (long i = 0; i < count; i++)
        in[i] = (int64_t)rank * 1000003 + i + (int64_t)round * 7919;
}

static long allreduce_check(const int64_t *out, long count, long round)
{
    int64_t ranks = (int64_t)size * (size - 1) / 2;
    long bad = 0;
    for (long i = 0; i < count; i++)
        bad += out[i] !=
               ranks * 1000003 + (int64_t)size * (i + (int64_t)round * 7919);
    return bad;
}

struct allreduce_call {
    const int64_t *in;
    int64_t *out;
    long count;
};

static void allreduce_op(void *arg)
{
    const struct allreduce_call *c = arg;
    bench_mpi_check(MPI_Allreduce(c->in, c->out, (int)c->count, MPI_INT64_T,
                                  MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Allreduce");
}

static struct result run_allreduce(uint64_t bytes, long iters, long warmup)
{
    struct result res = {0};
    long count = (long)(bytes / 8);
    int64_t *in = bench_malloc(bytes), *out = bench_malloc(bytes);
    struct allreduce_call call = {in, out, count};
    for (long w = 0; w < warmup; w++) {
        allreduce_fill(in, count, w);
        memset(out, 0, bytes);
        allreduce_op(&call);
        res.bad += allreduce_check(out, count, w);
    }
    allreduce_fill(in, count, -1);
    memset(out, 0, bytes);
    timed_loop(allreduce_op, &call, iters, &res);
    res.bad += allreduce_check(out, count, -1);
    free(in);
    free(out);
    return res;
}

/* ---- alltoall --------------------------------------------------------- */

/* Block for rank d in iteration `round` (-1: the timed loop). */
static void alltoall_fill(uint32_t *send, size_t words, long round)
{
    for (int d = 0; d < size; d++)
        bench_fill(send + (size_t)d * words, words,
                   (uint32_t)(rank + (round + 1) * size), (uint32_t)d);
}

static long alltoall_check(const uint32_t *recv, size_t words, long round)
{
    long bad = 0;
    for (int s = 0; s < size; s++)
        bad +=
            bench_count_bad(recv + (size_t)s * words, words,
                            (uint32_t)(s + (round + 1) * size), (uint32_t)rank);
    return bad;
}

struct alltoall_call {
    const uint32_t *send;
    uint32_t *recv;
    size_t words;
};

static void alltoall_op(void *arg)
{
    const struct alltoall_call *c = arg;
    bench_mpi_check(MPI_Alltoall(c->send, (int)c->words, MPI_UINT32_T, c->recv,
                                 (int)c->words, MPI_UINT32_T, MPI_COMM_WORLD),
                    "MPI_Alltoall");
}

static struct result run_alltoall(uint64_t bytes, long iters, long warmup)
{
    struct result res = {0};
    size_t words = (size_t)(bytes / 4), total = (size_t)bytes * (size_t)size;
    uint32_t *send = bench_malloc(total), *recv = bench_malloc(total);
    struct alltoall_call call = {send, recv, words};
    for (long w = 0; w < warmup; w++) {
        alltoall_fill(send, words, w);
        memset(recv, 0, total);
        alltoall_op(&call);
        res.bad += alltoall_check(recv, words, w);
    }
    alltoall_fill(send, words, -1);
    memset(recv, 0, total);
    timed_loop(alltoall_op, &call, iters, &res);
    res.bad += alltoall_check(recv, words, -1);
    free(send);
    free(recv);
    return res;
}

/* ---- barrier ---------------------------------------------------------- */

static void barrier_op(void *arg)
{
    (void)arg;
    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

/* Back to back, so every call but the first starts when the previous one
 * has released its rank: no skew between the sites inside the time. */
static struct result run_barrier(long iters, long warmup)
{
    struct result res = {0};
    for (long w = 0; w < warmup; w++)
        barrier_op(NULL);
    timed_loop(barrier_op, NULL, iters, &res);
    return res;
}

/* ---- pingpong --------------------------------------------------------- */

/* Ranks outside the pair: wait for rank 0's "done" without spinning. */
static void idle_until_done(void)
{
    int done = 0, dummy = 0;
    MPI_Request req;
    bench_mpi_check(
        MPI_Irecv(&dummy, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD, &req),
        "MPI_Irecv");
    while (!done) {
        bench_mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (!done) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
}

static void release_idle(int peer)
{
    int dummy = 0;
    for (int r = 1; r < size; r++)
        if (r != peer)
            bench_mpi_check(
                MPI_Send(&dummy, 1, MPI_INT, r, TAG_DONE, MPI_COMM_WORLD),
                "MPI_Send");
}

/* One round trip: rank 0 sends `send` and receives into `recv`; the peer
 * receives into `recv` and sends it back. */
static void round_trip(void *send, void *recv, int count, int peer)
{
    if (rank == 0) {
        bench_mpi_check(
            MPI_Send(send, count, MPI_UINT32_T, peer, TAG_PING, MPI_COMM_WORLD),
            "MPI_Send");
        bench_mpi_check(MPI_Recv(recv, count, MPI_UINT32_T, peer, TAG_PONG,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        "MPI_Recv");
    } else {
        bench_mpi_check(MPI_Recv(recv, count, MPI_UINT32_T, 0, TAG_PING,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        "MPI_Recv");
        bench_mpi_check(
            MPI_Send(recv, count, MPI_UINT32_T, 0, TAG_PONG, MPI_COMM_WORLD),
            "MPI_Send");
    }
}

static struct result run_pingpong(uint64_t bytes, long iters, long warmup,
                                  int peer)
{
    struct result res = {0};
    size_t words = (size_t)(bytes / 4);
    int in_pair = rank == 0 || rank == peer;
    if (!in_pair) {
        idle_until_done();
        return res;
    }
    /* Warm-up round w carries pattern(0xb0, w); the timed loop 0xb1. */
    uint32_t *send = rank == 0 ? bench_malloc(bytes) : NULL;
    uint32_t *recv = bench_malloc(bytes);
    double *t = bench_malloc(MAX_SAMPLES * sizeof *t);
    for (long w = 0; w < warmup; w++) {
        if (send != NULL)
            bench_fill(send, words, 0xb0, (uint32_t)w);
        memset(recv, 0, bytes);
        round_trip(send, recv, (int)words, peer);
        res.bad += bench_count_bad(recv, words, 0xb0, (uint32_t)w);
    }
    if (send != NULL)
        bench_fill(send, words, 0xb1, 0);
    memset(recv, 0, bytes);
    /* The pair's barrier: an empty round trip. */
    round_trip(NULL, NULL, 0, peer);
    long block = (iters + MAX_SAMPLES - 1) / MAX_SAMPLES, nt = 0;
    double start = MPI_Wtime(), prev = start;
    for (long i = 0; i < iters; i++) {
        round_trip(send, recv, (int)words, peer);
        if ((i + 1) % block == 0 || i + 1 == iters) {
            double now = MPI_Wtime();
            t[nt++] = (now - prev) / (double)(i % block + 1);
            prev = now;
        }
    }
    double elapsed = prev - start;
    res.bad += bench_count_bad(recv, words, 0xb1, 0);
    if (rank == 0) {
        release_idle(peer);
        res.usec_per_op = elapsed / (double)iters / 2 * 1e6;
        res.usec_median = bench_quantile(t, nt, 0.5) / 2 * 1e6;
    }
    free(send);
    free(recv);
    free(t);
    return res;
}

/* ---- stream ----------------------------------------------------------- */

/* MPI_Waitany, or with --nap a loop of MPI_Testany and sleeps, which
 * leaves the CPU to the relays and gridwan instead of spinning in the
 * library's progress loop. */
static void wait_any(int count, MPI_Request *req, int *done, MPI_Status *st)
{
    if (nap_us == 0) {
        bench_mpi_check(MPI_Waitany(count, req, done, st), "MPI_Waitany");
        return;
    }
    for (;;) {
        int flag = 0;
        bench_mpi_check(MPI_Testany(count, req, done, &flag, st),
                        "MPI_Testany");
        if (flag)
            return;
        struct timespec nap = {0, nap_us * 1000};
        nanosleep(&nap, NULL);
    }
}

/* Rank 0: keep `window` sends of `bytes` in flight for `seconds`, then
 * one empty message for each receive the peer still has posted. */
static void stream_send(const uint32_t *data, int words, int window,
                        double seconds, int peer)
{
    MPI_Request req[MAX_WINDOW];
    for (int i = 0; i < window; i++)
        bench_mpi_check(MPI_Isend(data, words, MPI_UINT32_T, peer, TAG_DATA,
                                  MPI_COMM_WORLD, &req[i]),
                        "MPI_Isend");
    double end = MPI_Wtime() + seconds;
    while (MPI_Wtime() < end) {
        int done;
        wait_any(window, req, &done, MPI_STATUS_IGNORE);
        bench_mpi_check(MPI_Isend(data, words, MPI_UINT32_T, peer, TAG_DATA,
                                  MPI_COMM_WORLD, &req[done]),
                        "MPI_Isend");
    }
    for (int i = 0; i < window; i++)
        bench_mpi_check(MPI_Wait(&req[i], MPI_STATUS_IGNORE), "MPI_Wait");
    for (int i = 0; i < window; i++)
        bench_mpi_check(
            MPI_Send(NULL, 0, MPI_UINT32_T, peer, TAG_DATA, MPI_COMM_WORLD),
            "MPI_Send");
}

/* The peer: receive into `window` buffers, checking and re-posting each
 * filled one.  Receives match messages in the order posted, but may
 * complete in another: re-posting after every data message keeps as many
 * receives posted as rank 0 sends messages, so when none is pending every
 * data message and the `window` empty ones are in.  Without `omit` the
 * time runs from the call until every message is in, and every data
 * message counts.  With it, as iperf3 -O: the time is the `seconds` from
 * the first message completed `omit` seconds into the call, and the data
 * messages completed within them count; the time until the last message
 * would count the drain of whatever the relays and sockets had buffered
 * when it started.  Returns the messages counted and their time in
 * *timed; wrong messages are counted into *bad. */
static long stream_receive(uint32_t *buf, int words, int window, double omit,
                           double seconds, double *timed, long *bad)
{
    MPI_Request req[MAX_WINDOW];
    size_t stride = (size_t)words;
    double start = MPI_Wtime();
    double from = omit > 0 ? -1 : start;
    for (int i = 0; i < window; i++)
        bench_mpi_check(MPI_Irecv(buf + (size_t)i * stride, words, MPI_UINT32_T,
                                  0, TAG_DATA, MPI_COMM_WORLD, &req[i]),
                        "MPI_Irecv");
    long messages = 0;
    for (int pending = window; pending > 0;) {
        int done, count;
        MPI_Status st;
        wait_any(window, req, &done, &st);
        pending--;
        bench_mpi_check(MPI_Get_count(&st, MPI_UINT32_T, &count),
                        "MPI_Get_count");
        if (count == 0)
            continue;
        double now = MPI_Wtime();
        if (from < 0 && now >= start + omit)
            from = now;
        messages += from >= 0 && (omit == 0 || now < from + seconds);
        uint32_t *slot = buf + (size_t)done * stride;
        *bad += count != words || bench_count_bad(slot, stride, 0xb1, 0) != 0;
        memset(slot, 0, (size_t)words * sizeof *slot);
        bench_mpi_check(MPI_Irecv(slot, words, MPI_UINT32_T, 0, TAG_DATA,
                                  MPI_COMM_WORLD, &req[done]),
                        "MPI_Irecv");
        pending++;
    }
    *timed = omit > 0 ? seconds : MPI_Wtime() - start;
    return messages;
}

static struct result run_stream(uint64_t bytes, long warmup, int window,
                                double seconds, double omit, int peer)
{
    struct result res = {0};
    size_t words = (size_t)(bytes / 4);
    if (rank != 0 && rank != peer) {
        idle_until_done();
        return res;
    }
    uint32_t *send = bench_malloc(bytes);
    uint32_t *recv = bench_malloc(rank == 0 ? bytes : bytes * (size_t)window);
    for (long w = 0; w < warmup; w++) {
        if (rank == 0)
            bench_fill(send, words, 0xb0, (uint32_t)w);
        memset(recv, 0, bytes);
        round_trip(send, recv, (int)words, peer);
        res.bad += bench_count_bad(recv, words, 0xb0, (uint32_t)w);
    }
    bench_fill(send, words, 0xb1, 0);
    round_trip(NULL, NULL, 0, peer);
    double stats[2] = {0, 0}; /* messages, seconds: the receiver's */
    if (rank == 0) {
        stream_send(send, (int)words, window, omit + seconds, peer);
        bench_mpi_check(MPI_Recv(stats, 2, MPI_DOUBLE, peer, TAG_STATS,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        "MPI_Recv");
        release_idle(peer);
    } else {
        long messages = stream_receive(recv, (int)words, window, omit, seconds,
                                       &stats[1], &res.bad);
        stats[0] = (double)messages;
        bench_mpi_check(
            MPI_Send(stats, 2, MPI_DOUBLE, 0, TAG_STATS, MPI_COMM_WORLD),
            "MPI_Send");
    }
    res.ops = (long)stats[0];
    if (res.ops > 0)
        res.usec_per_op = res.usec_median = stats[1] / stats[0] * 1e6;
    free(send);
    free(recv);
    return res;
}

/* ---- main ------------------------------------------------------------- */

static int world_sites(void)
{
#ifdef GRIDCOLL_MPIBENCH_PLAIN
    return 1;
#else
    int n = 1;
    bench_mpi_check(GridColl_Comm_site_count(MPI_COMM_WORLD, &n),
                    "GridColl_Comm_site_count");
    return n;
#endif
}

static const char *pair_kind(int peer)
{
#ifdef GRIDCOLL_MPIBENCH_PLAIN
    (void)peer;
    return "same";
#else
    int a = 0, b = 0;
    bench_mpi_check(GridColl_Comm_site_of(MPI_COMM_WORLD, 0, &a),
                    "GridColl_Comm_site_of");
    bench_mpi_check(GridColl_Comm_site_of(MPI_COMM_WORLD, peer, &b),
                    "GridColl_Comm_site_of");
    return a == b ? "same" : "cross";
#endif
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
        bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
        return parsed == 1 ? 0 : 2;
    }
    start_window = o.start == BENCH_START_WINDOW;
    if (start_window)
        bench_window_calibrate(&calibrated_window);
    int sites = world_sites();
    char peer[16] = "-";
    const char *pair = "-";
    if (o.test == T_PINGPONG || o.test == T_STREAM) {
        snprintf(peer, sizeof peer, "%d", o.peer);
        pair = pair_kind(o.peer);
    }
    if (rank == 0 && o.csv) {
        printf("test,lib,bytes,ranks,sites,peer,pair,iters,usec_per_op,"
               "usec_median,MBps\n");
        fflush(stdout);
    }

    int failed = 0;
    for (size_t m = 0; m < o.nbytes && !failed; m++) {
        uint64_t bytes = o.bytes[m];
        long iters = o.iters[o.niters == 1 ? 0 : m];
        long warmup =
            o.nwarmup == 0
                ? (o.test == T_STREAM || iters / 10 < 1 ? 1 : iters / 10)
            : o.nwarmup == 1 ? o.warmup[0]
                             : o.warmup[m];
        struct result r;
        switch (o.test) {
        case T_ALLREDUCE: r = run_allreduce(bytes, iters, warmup); break;
        case T_ALLTOALL: r = run_alltoall(bytes, iters, warmup); break;
        case T_BARRIER: r = run_barrier(iters, warmup); break;
        case T_STREAM:
            r = run_stream(bytes, warmup, o.window, o.seconds, o.omit, o.peer);
            iters = r.ops;
            break;
        default: r = run_pingpong(bytes, iters, warmup, o.peer); break;
        }
        if (r.bad != 0)
            fprintf(stderr,
                    PROG ": rank %d: %s, %llu bytes: %ld words differ from "
                         "what was sent\n",
                    rank, o.test_name, (unsigned long long)bytes, r.bad);
        int mine = r.bad != 0;
        bench_mpi_check(
            MPI_Allreduce(&mine, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
        if (rank != 0)
            continue;
        if (failed) {
            fprintf(stderr,
                    PROG ": %s, %llu bytes: VERIFICATION FAILED on %d "
                         "rank(s)\n",
                    o.test_name, (unsigned long long)bytes, failed);
            break;
        }
        if (o.test == T_BARRIER)
            bytes = 0;
        double moved = (double)bytes;
        if (o.test == T_ALLTOALL)
            moved *= size - 1;
        double mbps = r.usec_per_op > 0 ? moved / r.usec_per_op : 0;
        if (o.csv)
            printf("%s,%s,%llu,%d,%d,%s,%s,%ld,%.3f,%.3f,%.1f\n", o.test_name,
                   LIB_NAME, (unsigned long long)bytes, size, sites, peer, pair,
                   iters, r.usec_per_op, r.usec_median, mbps);
        else
            printf(PROG ": test=%s lib=%s bytes=%llu ranks=%d sites=%d "
                        "peer=%s pair=%s iters=%ld usec_per_op=%.3f "
                        "usec_median=%.3f MBps=%.1f\n",
                   o.test_name, LIB_NAME, (unsigned long long)bytes, size,
                   sites, peer, pair, iters, r.usec_per_op, r.usec_median,
                   mbps);
        fflush(stdout);
    }
    bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
    return failed ? 1 : 0;
}
