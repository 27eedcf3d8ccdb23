/*
 * gridcoll-demo: an ordinary MPI program that shows one job spanning sites.
 *
 *   gridrun --sites 2 --site-sizes 2,2 -- build/bin/gridcoll-demo
 *
 * Besides standard MPI it only calls GridColl_Comm_site_of and
 * GridColl_Site_name (gridcoll.h) to say where each rank runs.  Every rank
 * prints one line (rank, size, host, site); then the ranks run, on
 * MPI_COMM_WORLD:
 *
 *   ring       MPI_Sendrecv of 1 MiB to the next rank, SIZE steps, so every
 *              rank's block travels the whole ring (and crosses every site
 *              boundary) and comes home; each step is verified;
 *   allreduce  MPI_Allreduce (MPI_SUM) of 256 Ki int64 values, verified;
 *   alltoall   MPI_Alltoall of 64 KiB blocks, verified, timed;
 *   bcast      MPI_Bcast of 16 MiB from rank 0, verified, throughput;
 *   barrier    average MPI_Barrier latency.
 *
 * Rank 0 prints a summary table.  Times are the slowest rank's.  MPI errors
 * are returned (MPI_ERRORS_RETURN), printed with the call's name, and end
 * the job with MPI_Abort(2).  Exit status: 0 when every verification
 * passed, 1 otherwise (on every rank).
 */
#include <gridcoll.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"

#define RING_BYTES      (1u << 20)
#define ALLREDUCE_COUNT (256 * 1024)
#define ALLTOALL_BLOCK  (64u << 10)
#define ALLTOALL_ITERS  10
#define BCAST_BYTES     (16u << 20)
#define BCAST_ITERS     4
#define BARRIER_WARMUP  10
#define BARRIER_ITERS   100

static int rank, size;

/* Ranks that found errors, known to every rank. */
static int ranks_with_errors(long bad)
{
    int mine = bad != 0, total = 0;
    bench_mpi_check(
        MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
    return total;
}

struct result {
    const char *name;
    char what[40];
    int failed_ranks; /* -1: nothing verified */
    double seconds;   /* per operation */
    double mib;       /* MiB moved per operation, for the rate; 0: none */
};

static void print_where(void)
{
    char host[MPI_MAX_PROCESSOR_NAME];
    char site_name[GRIDCOLL_MAX_SITE_NAME + 1];
    int host_len = 0, site = -1, name_len = 0;
    bench_mpi_check(MPI_Get_processor_name(host, &host_len),
                    "MPI_Get_processor_name");
    bench_mpi_check(GridColl_Comm_site_of(MPI_COMM_WORLD, rank, &site),
                    "GridColl_Comm_site_of");
    bench_mpi_check(GridColl_Site_name(site, site_name, &name_len),
                    "GridColl_Site_name");
    printf("rank %d of %d on host %s, site %d (%s)\n", rank, size, host, site,
           site_name);
    fflush(stdout);
}

static void print_run(int site, int first, int last)
{
    char name[GRIDCOLL_MAX_SITE_NAME + 1];
    int len = 0;
    bench_mpi_check(GridColl_Site_name(site, name, &len), "GridColl_Site_name");
    printf("  site %d (%s): ranks %d..%d\n", site, name, first, last);
}

/* Rank 0: which ranks each site holds, from the extension API alone. */
static int print_sites(void)
{
    int sites = 0, run_site = -1, run_first = 0;
    for (int r = 0; r < size; r++) {
        int site = -1;
        bench_mpi_check(GridColl_Comm_site_of(MPI_COMM_WORLD, r, &site),
                        "GridColl_Comm_site_of");
        if (site != run_site) {
            if (run_site >= 0)
                print_run(run_site, run_first, r - 1);
            run_site = site;
            run_first = r;
        }
        if (site + 1 > sites)
            sites = site + 1;
    }
    print_run(run_site, run_first, size - 1);
    return sites;
}

static struct result ring(void)
{
    struct result res = {.name = "ring"};
    size_t words = RING_BYTES / sizeof(uint32_t);
    uint32_t *send = bench_malloc(RING_BYTES), *recv = bench_malloc(RING_BYTES);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long bad = 0;
    bench_fill(send, words, (uint32_t)rank, 0);
    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double start = MPI_Wtime();
    for (int step = 0; step < size; step++) {
        bench_mpi_check(MPI_Sendrecv(send, (int)words, MPI_UINT32_T, next, step,
                                     recv, (int)words, MPI_UINT32_T, prev, step,
                                     MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        "MPI_Sendrecv");
        /* After step s we hold the block that started at rank - s - 1. */
        int origin = ((rank - step - 1) % size + size) % size;
        bad += bench_count_bad(recv, words, (uint32_t)origin, 0);
        uint32_t *t = send;
        send = recv;
        recv = t;
    }
    double elapsed = MPI_Wtime() - start;
    /* Home again: our own block, after a full lap. */
    bad += bench_count_bad(send, words, (uint32_t)rank, 0);
    if (bad)
        fprintf(stderr, "gridcoll-demo: rank %d: ring: %ld bad words\n", rank,
                bad);
    free(send);
    free(recv);
    snprintf(res.what, sizeof res.what, "1 MiB x %d steps", size);
    res.failed_ranks = ranks_with_errors(bad);
    res.seconds = bench_max_at_root(elapsed) / size;
    res.mib = (double)RING_BYTES / (1 << 20);
    return res;
}

static struct result allreduce(void)
{
    struct result res = {.name = "allreduce"};
    int64_t *in = bench_malloc(ALLREDUCE_COUNT * sizeof *in);
    int64_t *out = bench_malloc(ALLREDUCE_COUNT * sizeof *out);
    for (int64_t i = 0; i < ALLREDUCE_COUNT; i++)
        in[i] = (int64_t)rank * 1000003 + i;
    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double start = MPI_Wtime();
    bench_mpi_check(MPI_Allreduce(in, out, ALLREDUCE_COUNT, MPI_INT64_T,
                                  MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Allreduce");
    double elapsed = MPI_Wtime() - start;
    long bad = 0;
    int64_t ranks = (int64_t)size * (size - 1) / 2;
    for (int64_t i = 0; i < ALLREDUCE_COUNT; i++)
        bad += out[i] != ranks * 1000003 + (int64_t)size * i;
    if (bad)
        fprintf(stderr, "gridcoll-demo: rank %d: allreduce: %ld bad sums\n",
                rank, bad);
    free(in);
    free(out);
    snprintf(res.what, sizeof res.what, "%d Ki int64, sum",
             ALLREDUCE_COUNT / 1024);
    res.failed_ranks = ranks_with_errors(bad);
    res.seconds = bench_max_at_root(elapsed);
    res.mib = (double)ALLREDUCE_COUNT * sizeof(int64_t) / (1 << 20);
    return res;
}

static struct result alltoall(void)
{
    struct result res = {.name = "alltoall"};
    size_t words = ALLTOALL_BLOCK / sizeof(uint32_t);
    size_t total = (size_t)size * words;
    uint32_t *send = bench_malloc(total * sizeof *send);
    uint32_t *recv = bench_malloc(total * sizeof *recv);
    long bad = 0;
    double elapsed = 0;
    for (int it = 0; it < ALLTOALL_ITERS; it++) {
        /* Block for rank d, iteration it: bench_pattern(me, d, ...) varies per
         * iteration so a stale buffer cannot pass. */
        for (int d = 0; d < size; d++)
            bench_fill(send + (size_t)d * words, words,
                       (uint32_t)(rank + it * size), (uint32_t)d);
        memset(recv, 0, total * sizeof *recv);
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        double start = MPI_Wtime();
        bench_mpi_check(MPI_Alltoall(send, (int)words, MPI_UINT32_T, recv,
                                     (int)words, MPI_UINT32_T, MPI_COMM_WORLD),
                        "MPI_Alltoall");
        elapsed += MPI_Wtime() - start;
        for (int s = 0; s < size; s++)
            bad += bench_count_bad(recv + (size_t)s * words, words,
                                   (uint32_t)(s + it * size), (uint32_t)rank);
    }
    if (bad)
        fprintf(stderr, "gridcoll-demo: rank %d: alltoall: %ld bad words\n",
                rank, bad);
    free(send);
    free(recv);
    snprintf(res.what, sizeof res.what, "64 KiB blocks x %d", ALLTOALL_ITERS);
    res.failed_ranks = ranks_with_errors(bad);
    res.seconds = bench_max_at_root(elapsed) / ALLTOALL_ITERS;
    /* What each rank sends to the others per call. */
    res.mib = (double)(size - 1) * ALLTOALL_BLOCK / (1 << 20);
    return res;
}

static struct result bcast(void)
{
    struct result res = {.name = "bcast"};
    size_t words = BCAST_BYTES / sizeof(uint32_t);
    uint32_t *buf = bench_malloc(BCAST_BYTES);
    long bad = 0;
    double elapsed = 0;
    for (int it = 0; it < BCAST_ITERS; it++) {
        if (rank == 0)
            bench_fill(buf, words, 0xbc, (uint32_t)it);
        else
            memset(buf, 0, BCAST_BYTES);
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        double start = MPI_Wtime();
        bench_mpi_check(
            MPI_Bcast(buf, (int)words, MPI_UINT32_T, 0, MPI_COMM_WORLD),
            "MPI_Bcast");
        elapsed += MPI_Wtime() - start;
        bad += bench_count_bad(buf, words, 0xbc, (uint32_t)it);
    }
    if (bad)
        fprintf(stderr, "gridcoll-demo: rank %d: bcast: %ld bad words\n", rank,
                bad);
    free(buf);
    snprintf(res.what, sizeof res.what, "16 MiB from rank 0 x %d", BCAST_ITERS);
    res.failed_ranks = ranks_with_errors(bad);
    res.seconds = bench_max_at_root(elapsed) / BCAST_ITERS;
    res.mib = (double)BCAST_BYTES / (1 << 20);
    return res;
}

static struct result barrier(void)
{
    struct result res = {.name = "barrier", .failed_ranks = -1};
    for (int i = 0; i < BARRIER_WARMUP; i++)
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double start = MPI_Wtime();
    for (int i = 0; i < BARRIER_ITERS; i++)
        bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double elapsed = MPI_Wtime() - start;
    snprintf(res.what, sizeof res.what, "average of %d", BARRIER_ITERS);
    res.seconds = bench_max_at_root(elapsed) / BARRIER_ITERS;
    return res;
}

static void print_row(const struct result *r)
{
    char check[32], rate[32] = "";
    if (r->failed_ranks < 0)
        snprintf(check, sizeof check, "-");
    else if (r->failed_ranks == 0)
        snprintf(check, sizeof check, "ok");
    else
        snprintf(check, sizeof check, "FAIL (%d)", r->failed_ranks);
    if (r->mib > 0 && r->seconds > 0)
        snprintf(rate, sizeof rate, "  %10.1f MiB/s", r->mib / r->seconds);
    double ms = r->seconds * 1e3;
    printf("  %-10s %-24s %-9s %10.3f ms%s\n", r->name, r->what, check, ms,
           rate);
}

int main(int argc, char **argv)
{
    bench_set_program("gridcoll-demo");
    bench_mpi_check(MPI_Init(&argc, &argv), "MPI_Init");
    bench_mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler");
    bench_mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    bench_mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");

    print_where();
    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    int sites = 1;
    if (rank == 0) {
        printf("gridcoll-demo (GridColl %s): %d ranks\n", GRIDCOLL_VERSION,
               size);
        sites = print_sites();
        fflush(stdout);
    }

    /* One at a time, in the same order on every rank (the evaluation order
     * of an initializer list is unspecified). */
    struct result results[5];
    size_t n = 0;
    results[n++] = ring();
    results[n++] = allreduce();
    results[n++] = alltoall();
    results[n++] = bcast();
    results[n++] = barrier();

    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed |= results[i].failed_ranks > 0;
    if (rank == 0) {
        printf("\nsummary: %d ranks on %d site%s; times of the slowest rank, "
               "per operation\n",
               size, sites, sites == 1 ? "" : "s");
        printf("  %-10s %-24s %-9s %13s  %s\n", "test", "size", "check", "time",
               "rate");
        for (size_t i = 0; i < n; i++)
            print_row(&results[i]);
        printf("%s\n", failed ? "gridcoll-demo: VERIFICATION FAILED"
                              : "gridcoll-demo: all checks passed");
        fflush(stdout);
    }
    bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
    return failed ? 1 : 0;
}
