/*
 * gridcoll-threads: ping-pong of several threads per rank at once, each
 * on a communicator of its own, between rank r and rank r + size/2 (on
 * another site with gridrun --site-sizes N,N), for the cost and scaling
 * of MPI_THREAD_MULTIPLE (docs/performance/README.md, "Threads").
 *
 *   gridcoll-threads [--threads T] [--bytes LIST] [--iters N]
 *                    [--level single|multiple] [--csv]
 *
 * Every thread makes --iters round trips of each size (after 2 untimed
 * ones); a message is checked word for word.  Rank 0 prints, per size,
 * the slowest thread's time, the aggregate round trips per second over
 * all pairs and threads, and the median round trip of thread 0.  Plain
 * MPI: run it with gridrun --preload, or with LD_PRELOAD naming the
 * library to measure, or under MPICH alone.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"

#define MAX_THREADS 64
#define MAX_SIZES   16
#define WARMUP      2

static struct {
    int threads;
    uint64_t sizes[MAX_SIZES];
    size_t nsizes;
    long iters;
    int level;
    int csv;
} opt = {.threads = 1,
         .sizes = {8},
         .nsizes = 1,
         .iters = 100,
         .level = MPI_THREAD_MULTIPLE};

static int rank, size, partner;
static MPI_Comm comms[MAX_THREADS];

struct thread_run {
    int t;
    size_t bytes;
    double seconds; /* all timed round trips */
    double median;  /* one round trip */
    long bad;       /* words that differ from the pattern */
};

static void *pingpong(void *arg)
{
    struct thread_run *run = arg;
    size_t words = (run->bytes + 3) / 4;
    uint32_t *out = bench_malloc(words * 4 + 4);
    uint32_t *in = bench_malloc(words * 4 + 4);
    double *rtt = bench_malloc((size_t)opt.iters * sizeof *rtt);
    MPI_Comm comm = comms[run->t];
    int first = rank < partner;
    bench_fill(out, words, (uint32_t)rank, (uint32_t)run->t);
    for (long i = -WARMUP; i < opt.iters; i++) {
        double t0 = MPI_Wtime();
        if (first) {
            bench_mpi_check(
                MPI_Send(out, (int)run->bytes, MPI_BYTE, partner, 0, comm),
                "MPI_Send");
            bench_mpi_check(MPI_Recv(in, (int)run->bytes, MPI_BYTE, partner, 0,
                                     comm, MPI_STATUS_IGNORE),
                            "MPI_Recv");
        } else {
            bench_mpi_check(MPI_Recv(in, (int)run->bytes, MPI_BYTE, partner, 0,
                                     comm, MPI_STATUS_IGNORE),
                            "MPI_Recv");
            bench_mpi_check(
                MPI_Send(out, (int)run->bytes, MPI_BYTE, partner, 0, comm),
                "MPI_Send");
        }
        if (i >= 0)
            rtt[i] = MPI_Wtime() - t0;
        if (i == -1)
            run->seconds = MPI_Wtime();
    }
    run->seconds = MPI_Wtime() - run->seconds;
    run->bad = run->bytes >= 4
                   ? bench_count_bad(in, run->bytes / 4, (uint32_t)partner,
                                     (uint32_t)run->t)
                   : 0;
    run->median = bench_quantile(rtt, opt.iters, 0.5);
    free(out);
    free(in);
    free(rtt);
    return NULL;
}

static int parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (strcmp(a, "--csv") == 0) {
            opt.csv = 1;
            continue;
        }
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--threads") == 0 && bench_parse_u64(v, 0, &n) == 0 &&
            n >= 1 && n <= MAX_THREADS)
            opt.threads = (int)n;
        else if (strcmp(a, "--iters") == 0 && bench_parse_u64(v, 0, &n) == 0 &&
                 n >= 1)
            opt.iters = (long)n;
        else if (strcmp(a, "--bytes") == 0 &&
                 bench_parse_list(v, 1, opt.sizes, MAX_SIZES, &opt.nsizes) == 0)
            ;
        else if (strcmp(a, "--level") == 0 && strcmp(v, "single") == 0)
            opt.level = MPI_THREAD_SINGLE;
        else if (strcmp(a, "--level") == 0 && strcmp(v, "multiple") == 0)
            opt.level = MPI_THREAD_MULTIPLE;
        else
            return -1;
    }
    for (size_t s = 0; s < opt.nsizes; s++)
        if (opt.sizes[s] > INT32_MAX)
            return -1;
    return opt.level == MPI_THREAD_SINGLE && opt.threads > 1 ? -1 : 0;
}

int main(int argc, char **argv)
{
    int provided;
    bench_set_program("gridcoll-threads");
    if (parse(argc, argv) != 0) {
        fprintf(stderr, "usage: gridcoll-threads [--threads T] [--bytes LIST] "
                        "[--iters N] [--level single|multiple] [--csv]\n"
                        "(--level single: one thread)\n");
        return 2;
    }
    bench_mpi_check(MPI_Init_thread(&argc, &argv, opt.level, &provided),
                    "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2 != 0 || provided < opt.level) {
        if (rank == 0)
            fprintf(stderr,
                    "gridcoll-threads: needs an even number of ranks and "
                    "the thread level asked for (got %d)\n",
                    provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    partner = (rank + size / 2) % size;
    for (int t = 0; t < opt.threads; t++)
        bench_mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]),
                        "MPI_Comm_dup");
    if (rank == 0)
        printf(opt.csv ? "level,threads,bytes,iters,seconds,round_trips_per_s,"
                         "median_rtt_us\n"
                       : "%-8s %7s %9s %6s %9s %14s %14s\n",
               "level", "threads", "bytes", "iters", "seconds", "round_trips/s",
               "median_rtt_us");
    struct thread_run runs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    for (size_t s = 0; s < opt.nsizes; s++) {
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        for (int t = 0; t < opt.threads; t++) {
            runs[t] = (struct thread_run){.t = t, .bytes = opt.sizes[s]};
            if (pthread_create(&ids[t], NULL, pingpong, &runs[t]) != 0) {
                fprintf(stderr, "gridcoll-threads: pthread_create failed\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        double slowest = 0;
        long bad = 0;
        for (int t = 0; t < opt.threads; t++) {
            pthread_join(ids[t], NULL);
            if (runs[t].seconds > slowest)
                slowest = runs[t].seconds;
            bad += runs[t].bad;
        }
        long all_bad;
        MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        slowest = bench_max_at_root(slowest);
        if (rank != 0)
            continue;
        if (all_bad != 0) {
            fprintf(stderr, "gridcoll-threads: %ld words wrong\n", all_bad);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        double rate = (double)opt.iters * opt.threads * (size / 2) / slowest;
        const char *level =
            opt.level == MPI_THREAD_MULTIPLE ? "multiple" : "single";
        printf(opt.csv ? "%s,%d,%llu,%ld,%.6f,%.1f,%.1f\n"
                       : "%-8s %7d %9llu %6ld %9.4f %14.1f %14.1f\n",
               level, opt.threads, (unsigned long long)opt.sizes[s], opt.iters,
               slowest, rate, runs[0].median * 1e6);
        fflush(stdout);
    }
    for (int t = 0; t < opt.threads; t++)
        MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return 0;
}
