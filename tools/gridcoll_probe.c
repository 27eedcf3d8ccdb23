/*
 * gridcoll-probe: measures the performance model libgridcoll selects
 * algorithms with (docs/model.md) and writes it.  An MPI program linked
 * with libgridcoll, run under gridrun on the grid it describes:
 *
 *   gridrun --site-sizes 2,2 --wan delay=20ms,rate=1gbit,loss=0.1% -- \
 *       gridcoll-probe --output model.cfg
 *
 * 1. Per site, local ranks 0 and 1 ping-pong through PMPI on the site's
 *    communicator at several sizes; α and β from a least-squares fit of
 *    the one-way time α + mβ (Hockney).  All sites at once.
 * 2. Per site, every member runs PMPI_Alltoall on the site's communicator
 *    at ≥ 4 block sizes; Steffenel's contention signature (eq. 4-5): γ and
 *    δ fitted by least squares against the eq.-4 lower bound (n-1)(α + mβ)
 *    of Proposition 1, for every candidate threshold M among the sizes,
 *    keeping the M with the least residual (§IV).  All sites at once.
 * 3. Per pair of sites, one pair at a time, the sites' first members
 *    through the relays: a small ping-pong (the one-way time t1 the rest
 *    starts and subtracts with); one message one way at several sizes up
 *    to a few MiB, each round from quiet streams (transfer), timed after a
 *    few untimed rounds of each size (the one_way samples, α_w, β_w); the
 *    same both ways at once (the exchange samples); a burst of small
 *    messages back to back (the gap g per message), and a burst of large
 *    messages in flight at once, which the relay stripes over its streams
 *    (the bulk β of segmented transfers).
 *
 * Fits weigh every point by 1/t², so the residual is relative and small
 * sizes count as much as large ones.  Rank 0 prints every fitted value
 * with its fit's RMS relative residual and writes the model file.
 */
#include <gridcoll.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_mpi.h"
#include "core/gc_model.h"

#define PROG      "gridcoll-probe"
#define MAX_SIZES 32
#define TAG       7
#define TAG_SYNC  8 /* a transfer's go and report, apart from its data */

struct options {
    const char *output;
    const char *layout; /* recorded in the model file; NULL: none */
    uint64_t local_sizes[MAX_SIZES], wan_sizes[MAX_SIZES], a2a_sizes[MAX_SIZES];
    size_t n_local, n_wan, n_a2a;
    uint64_t iters, wan_iters, wan_warmup, burst, bulk_count, bulk_bytes;
    uint64_t local_largest, wan_largest; /* of local_sizes, wan_sizes */
    int verbose;
};

/* What one rank reports to rank 0: its site's parameters when it is the
 * site's first member, the links from its site when it measured them. */
enum { SITE_VALUES = 9, LINK_VALUES = 6 + 2 * MAX_SIZES };
enum {
    S_ALPHA,
    S_BETA,
    S_GAMMA,
    S_DELTA,
    S_THRESHOLD,
    S_RES_PP,
    S_RES_A2A,
    S_VALID,
    S_SIZE
};
enum {
    L_ALPHA,
    L_BETA,
    L_GAP,
    L_BULK,
    L_RES,
    L_VALID,
    L_ONE_WAY,
    L_EXCHANGE = L_ONE_WAY + MAX_SIZES
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " [--output FILE] [--iters N] [--wan-iters N]\n"
            "       [--wan-warmup N] [--local-sizes LIST] [--wan-sizes LIST]\n"
            "       [--alltoall-sizes LIST] [--burst N] [--bulk-count N]\n"
            "       [--bulk-bytes B] [--layout TEXT] [--verbose]\n"
            "Measures the performance model of the grid it runs on and\n"
            "writes it (docs/model.md).  Sizes in bytes, K, M, G suffixes.\n"
            "  --output FILE        model file rank 0 writes\n"
            "                       [gridcoll-model.cfg]\n"
            "  --layout TEXT        what the model describes, recorded in a\n"
            "                       comment line \"layout: TEXT\"\n"
            "  --iters N            local ping-pongs and all-to-alls per "
            "size [20]\n"
            "  --wan-iters N        timed WAN rounds per size (one-way,\n"
            "                       exchange, the small ping-pong) and\n"
            "                       bursts [7]\n"
            "  --wan-warmup N       untimed WAN rounds before them, per\n"
            "                       size, for TCP's pacing to settle [3]\n"
            "  --local-sizes LIST   local ping-pong sizes "
            "[8,1k,16k,64k,256k,1m]\n"
            "  --wan-sizes LIST     WAN ping-pong sizes "
            "[8,64k,256k,1m,4m]\n"
            "  --alltoall-sizes LIST  local all-to-all block sizes, at "
            "least 4\n"
            "                       [256,4k,64k,256k,1m,2m]\n"
            "  --burst N            small WAN messages back to back for "
            "the gap [64]\n"
            "  --bulk-count N       large WAN messages in flight for the "
            "bulk rate [16]\n"
            "  --bulk-bytes B       their size [1m]\n"
            "  --verbose            every measuring rank prints its samples\n");
}

static int parse_options(int argc, char **argv, struct options *o, int rank)
{
    *o = (struct options){.output = "gridcoll-model.cfg",
                          .iters = 20,
                          .wan_iters = 7,
                          .wan_warmup = 3,
                          .burst = 64,
                          .bulk_count = 16,
                          .bulk_bytes = 1 << 20};
    bench_parse_list("8,1k,16k,64k,256k,1m", 1, o->local_sizes, MAX_SIZES,
                     &o->n_local);
    bench_parse_list("8,64k,256k,1m,4m", 1, o->wan_sizes, MAX_SIZES, &o->n_wan);
    bench_parse_list("256,4k,64k,256k,1m,2m", 1, o->a2a_sizes, MAX_SIZES,
                     &o->n_a2a);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (strcmp(a, "--help") == 0) {
            if (rank == 0)
                usage(stdout);
            return 1;
        } else if (strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
            continue;
        } else if (strcmp(a, "--output") == 0 && ok) {
            o->output = v;
        } else if (strcmp(a, "--layout") == 0 && ok) {
            ok = strchr(v, '\n') == NULL;
            o->layout = v;
        } else if (strcmp(a, "--iters") == 0 && ok) {
            ok = bench_parse_u64(v, 0, &o->iters) == 0 && o->iters > 0 &&
                 o->iters <= 100000;
        } else if (strcmp(a, "--wan-iters") == 0 && ok) {
            ok = bench_parse_u64(v, 0, &o->wan_iters) == 0 &&
                 o->wan_iters > 0 && o->wan_iters <= 1000;
        } else if (strcmp(a, "--wan-warmup") == 0 && ok) {
            ok = bench_parse_u64(v, 0, &o->wan_warmup) == 0 &&
                 o->wan_warmup <= 1000;
        } else if (strcmp(a, "--burst") == 0 && ok) {
            ok = bench_parse_u64(v, 0, &o->burst) == 0 && o->burst > 0 &&
                 o->burst <= 100000;
        } else if (strcmp(a, "--bulk-count") == 0 && ok) {
            ok = bench_parse_u64(v, 0, &o->bulk_count) == 0 &&
                 o->bulk_count > 0 && o->bulk_count <= 1024;
        } else if (strcmp(a, "--bulk-bytes") == 0 && ok) {
            ok = bench_parse_u64(v, 1, &o->bulk_bytes) == 0 &&
                 o->bulk_bytes > 0 && o->bulk_bytes <= (1u << 30);
        } else if (strcmp(a, "--local-sizes") == 0 && ok) {
            ok = bench_parse_list(v, 1, o->local_sizes, MAX_SIZES,
                                  &o->n_local) == 0 &&
                 o->n_local >= 2;
        } else if (strcmp(a, "--wan-sizes") == 0 && ok) {
            ok = bench_parse_list(v, 1, o->wan_sizes, MAX_SIZES, &o->n_wan) ==
                     0 &&
                 o->n_wan >= 2;
        } else if (strcmp(a, "--alltoall-sizes") == 0 && ok) {
            ok = bench_parse_list(v, 1, o->a2a_sizes, MAX_SIZES, &o->n_a2a) ==
                     0 &&
                 o->n_a2a >= 4;
        } else {
            ok = 0;
        }
        if (!ok) {
            if (rank == 0) {
                fprintf(stderr, PROG ": bad option or value: %s%s%s\n", a,
                        v != NULL ? " " : "", v != NULL ? v : "");
                usage(stderr);
            }
            return 2;
        }
        i++;
    }
    for (size_t i = 0; i < o->n_wan; i++)
        for (size_t j = 0; j < i; j++)
            if (o->wan_sizes[i] == o->wan_sizes[j]) {
                if (rank == 0)
                    fprintf(stderr, PROG ": --wan-sizes: %llu twice\n",
                            (unsigned long long)o->wan_sizes[i]);
                return 2;
            }
    o->local_largest = 0;
    for (size_t i = 0; i < o->n_local; i++)
        if (o->local_sizes[i] > o->local_largest)
            o->local_largest = o->local_sizes[i];
    o->wan_largest = 0;
    for (size_t i = 0; i < o->n_wan; i++)
        if (o->wan_sizes[i] > o->wan_largest)
            o->wan_largest = o->wan_sizes[i];
    if (o->local_largest > INT32_MAX || o->wan_largest > INT32_MAX ||
        o->bulk_bytes > INT32_MAX) {
        if (rank == 0)
            fprintf(stderr, PROG ": sizes up to 2 GiB - 1\n");
        return 2;
    }
    return 0;
}

/* ---- fits ------------------------------------------------------------- */

/*
 * Weighted least squares of y = a x + b z (w = 1/y², relative errors);
 * b forced to 0 when `with_b` is 0.  Returns the RMS relative residual.
 */
static double fit2(const double *x, const double *z, const double *y, int n,
                   int with_b, double *a, double *b)
{
    double sxx = 0, sxz = 0, szz = 0, sxy = 0, szy = 0;
    for (int i = 0; i < n; i++) {
        double w = 1 / (y[i] * y[i]);
        sxx += w * x[i] * x[i];
        sxz += w * x[i] * z[i];
        szz += w * z[i] * z[i];
        sxy += w * x[i] * y[i];
        szy += w * z[i] * y[i];
    }
    double det = sxx * szz - sxz * sxz;
    if (with_b && fabs(det) > 1e-30 * sxx * szz) {
        *a = (sxy * szz - szy * sxz) / det;
        *b = (sxx * szy - sxz * sxy) / det;
    } else {
        *a = sxx > 0 ? sxy / sxx : 0;
        *b = 0;
    }
    double r = 0;
    for (int i = 0; i < n; i++) {
        double e = (*a * x[i] + *b * z[i] - y[i]) / y[i];
        r += e * e;
    }
    return sqrt(r / n);
}

/* t = α + mβ, both ≥ 0; the RMS relative residual. */
static double fit_hockney(const uint64_t *m, const double *t, int n,
                          double *alpha, double *beta)
{
    double x[MAX_SIZES], one[MAX_SIZES];
    for (int i = 0; i < n; i++) {
        x[i] = (double)m[i];
        one[i] = 1;
    }
    double res = fit2(x, one, t, n, 1, beta, alpha);
    if (*alpha < 0)
        res = fit2(x, one, t, n, 0, beta, alpha);
    if (*beta < 0) {
        *beta = 0;
        res = fit2(one, x, t, n, 0, alpha, beta);
    }
    return res;
}

/*
 * Steffenel eq. 5 over the samples T(m) of an all-to-all among n: for
 * each candidate threshold M (each size, or none), fit
 * T/(n-1) - α = γ mβ + δ [m ≥ M] and keep the best; δ ≥ 0.
 */
static double fit_contention(const uint64_t *m, const double *t, int count,
                             int n, double alpha, double beta, double *gamma,
                             double *delta, double *threshold)
{
    double x[MAX_SIZES], z[MAX_SIZES], y[MAX_SIZES], best = INFINITY;
    for (int i = 0; i < count; i++) {
        x[i] = (double)m[i] * beta;
        y[i] = t[i] / (n - 1) - alpha;
        /* Faster than the bound: clamp, the model cannot go below it. */
        if (y[i] <= 0)
            y[i] = 1e-9;
    }
    for (int c = 0; c <= count; c++) {
        double cut = c < count ? (double)m[c] : INFINITY, g, d;
        for (int i = 0; i < count; i++)
            z[i] = (double)m[i] >= cut;
        double res = fit2(x, z, y, count, c < count, &g, &d);
        if (d < 0)
            res = fit2(x, z, y, count, 0, &g, &d);
        if (res < best && g > 0) {
            best = res;
            *gamma = g;
            *delta = d;
            *threshold = d > 0 ? cut : 0;
        }
    }
    if (!(best < INFINITY)) {
        *gamma = 1;
        *delta = 0;
        *threshold = 0;
    }
    return best;
}

/* ---- measurements ----------------------------------------------------- */

/* --verbose: one line of samples, "what: size=us ...". */
static void print_samples(const struct options *o, const char *what,
                          const uint64_t *sizes, const double *t, size_t n)
{
    if (!o->verbose)
        return;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d %s:", rank, what);
    for (size_t i = 0; i < n; i++)
        printf(" %llu=%.1f", (unsigned long long)sizes[i], t[i] * 1e6);
    printf(" (bytes=us)\n");
    fflush(stdout);
}

static double median(double *v, int n)
{
    return bench_quantile(v, n, 0.5);
}

/* One-way time at each size: half the median round trip between `me` and
 * `peer` on `comm` (PMPI: `local` is the site's communicator, else MPI
 * through the relays), rank `first` of the two starting. */
static void ping_pong(MPI_Comm comm, int local, int peer, int first,
                      const uint64_t *sizes, size_t n, uint64_t warmup,
                      uint64_t iters, char *buf, double *out)
{
    double *round = bench_malloc(iters * sizeof *round);
    for (size_t s = 0; s < n; s++) {
        int len = (int)sizes[s];
        for (uint64_t i = 0; i < warmup + iters; i++) {
            double t0 = MPI_Wtime();
            if (first) {
                bench_mpi_check(
                    local ? PMPI_Send(buf, len, MPI_BYTE, peer, TAG, comm)
                          : MPI_Send(buf, len, MPI_BYTE, peer, TAG, comm),
                    "send");
                bench_mpi_check(local ? PMPI_Recv(buf, len, MPI_BYTE, peer, TAG,
                                                  comm, MPI_STATUS_IGNORE)
                                      : MPI_Recv(buf, len, MPI_BYTE, peer, TAG,
                                                 comm, MPI_STATUS_IGNORE),
                                "recv");
            } else {
                bench_mpi_check(local ? PMPI_Recv(buf, len, MPI_BYTE, peer, TAG,
                                                  comm, MPI_STATUS_IGNORE)
                                      : MPI_Recv(buf, len, MPI_BYTE, peer, TAG,
                                                 comm, MPI_STATUS_IGNORE),
                                "recv");
                bench_mpi_check(
                    local ? PMPI_Send(buf, len, MPI_BYTE, peer, TAG, comm)
                          : MPI_Send(buf, len, MPI_BYTE, peer, TAG, comm),
                    "send");
            }
            if (i >= warmup)
                round[i - warmup] = MPI_Wtime() - t0;
        }
        out[s] = median(round, (long)iters) / 2;
    }
    free(round);
}

/* `count` messages of `len` bytes in flight from the first member to the
 * peer, which answers with one byte once it has them all: the median
 * time of `iters` rounds (after a warm-up). */
static double burst(int first, int peer, uint64_t count, int len,
                    uint64_t iters, char *buf)
{
    MPI_Request *req = bench_malloc(count * sizeof *req);
    double *round = bench_malloc(iters * sizeof *round);
    for (uint64_t i = 0; i <= iters; i++) {
        double t0 = MPI_Wtime();
        for (uint64_t k = 0; k < count; k++) {
            char *at = buf + (size_t)k * (size_t)len;
            bench_mpi_check(first ? MPI_Isend(at, len, MPI_BYTE, peer, TAG,
                                              MPI_COMM_WORLD, &req[k])
                                  : MPI_Irecv(at, len, MPI_BYTE, peer, TAG,
                                              MPI_COMM_WORLD, &req[k]),
                            "burst");
        }
        for (uint64_t k = 0; k < count; k++)
            bench_mpi_check(MPI_Wait(&req[k], MPI_STATUS_IGNORE), "burst wait");
        bench_mpi_check(
            first ? MPI_Recv(buf, 1, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE)
                  : MPI_Send(buf, 1, MPI_BYTE, peer, TAG, MPI_COMM_WORLD),
            "burst ack");
        if (i > 0)
            round[i - 1] = MPI_Wtime() - t0;
    }
    double t = median(round, (long)iters);
    free(req);
    free(round);
    return t;
}

/*
 * m bytes from `first` to the peer, or (both_ways) each to the other at
 * once, for every size: the median over `iters` rounds (after `warmup`)
 * of the later member's time from its start until what it waits for is
 * in.  A 1-byte go from `first` sets the start without a shared clock:
 * the peer starts QUIET_TRIPS one-way times `lead` after the go arrives,
 * `first` that plus one after sending it, so the two start within the
 * jitter of one small message.  The wait lets the go's acknowledgements
 * (TCP's and the relays') come and go, so the data leaves quiet streams
 * as a collective's does after the ranks computed; a ping-pong's answer
 * leaves on streams still busy with the question's acknowledgements,
 * which bbr paces differently.
 */
#define QUIET_TRIPS 3

static void transfer(int first, int peer, int both_ways, const uint64_t *sizes,
                     size_t n, uint64_t warmup, uint64_t iters, double lead,
                     char *sbuf, char *rbuf, double *out)
{
    double *round = bench_malloc(iters * sizeof *round);
    for (size_t s = 0; s < n; s++) {
        int len = (int)sizes[s];
        int sends = first || both_ways, receives = !first || both_ways;
        for (uint64_t i = 0; i < warmup + iters; i++) {
            MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            MPI_Status done[2];
            char go = 0;
            if (receives)
                bench_mpi_check(MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG,
                                          MPI_COMM_WORLD, &req[0]),
                                "transfer");
            double start = MPI_Wtime() + (QUIET_TRIPS + 1) * lead;
            if (first) {
                bench_mpi_check(
                    MPI_Send(&go, 1, MPI_BYTE, peer, TAG_SYNC, MPI_COMM_WORLD),
                    "transfer go");
            } else {
                bench_mpi_check(MPI_Recv(&go, 1, MPI_BYTE, peer, TAG_SYNC,
                                         MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                                "transfer go");
                start = MPI_Wtime() + QUIET_TRIPS * lead;
            }
            double wait = start - MPI_Wtime();
            if (wait > 0)
                nanosleep(&(struct timespec){(time_t)wait,
                                             (long)(fmod(wait, 1) * 1e9)},
                          NULL);
            double t0 = MPI_Wtime();
            if (sends)
                bench_mpi_check(MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG,
                                          MPI_COMM_WORLD, &req[1]),
                                "transfer");
            bench_mpi_check(MPI_Waitall(2, req, done), "transfer wait");
            double mine = MPI_Wtime() - t0, theirs = 0;
            bench_mpi_check(first ? MPI_Recv(&theirs, 1, MPI_DOUBLE, peer,
                                             TAG_SYNC, MPI_COMM_WORLD,
                                             MPI_STATUS_IGNORE)
                                  : MPI_Send(&mine, 1, MPI_DOUBLE, peer,
                                             TAG_SYNC, MPI_COMM_WORLD),
                            "transfer report");
            if (i >= warmup)
                round[i - warmup] = mine > theirs ? mine : theirs;
        }
        out[s] = median(round, (long)iters);
    }
    free(round);
}

/* Median PMPI_Alltoall time (slowest member) per block size on `site`. */
static void alltoall_times(MPI_Comm site, int n, const struct options *o,
                           double *out)
{
    uint64_t largest = 0;
    for (size_t s = 0; s < o->n_a2a; s++)
        largest = o->a2a_sizes[s] > largest ? o->a2a_sizes[s] : largest;
    char *sbuf = bench_malloc((size_t)largest * (size_t)n);
    char *rbuf = bench_malloc((size_t)largest * (size_t)n);
    memset(sbuf, 1, (size_t)largest * (size_t)n);
    double *t = bench_malloc(o->iters * sizeof *t);
    for (size_t s = 0; s < o->n_a2a; s++) {
        int len = (int)o->a2a_sizes[s];
        for (uint64_t i = 0; i <= o->iters; i++) {
            bench_mpi_check(PMPI_Barrier(site), "barrier");
            double t0 = MPI_Wtime();
            bench_mpi_check(
                PMPI_Alltoall(sbuf, len, MPI_BYTE, rbuf, len, MPI_BYTE, site),
                "alltoall");
            double mine = MPI_Wtime() - t0, slowest;
            bench_mpi_check(
                PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, site),
                "allreduce");
            if (i > 0)
                t[i - 1] = slowest;
        }
        out[s] = median(t, (long)o->iters);
    }
    free(t);
    free(sbuf);
    free(rbuf);
}

/* Ranks that sit out a measurement wait here instead of in a blocking
 * MPICH call, whose busy polling would take the cores of an
 * oversubscribed node from the ranks and relays being measured. */
static void wait_politely(MPI_Request *req, const char *what)
{
    const struct timespec pause = {0, 50000};
    for (;;) {
        int done = 0;
        bench_mpi_check(PMPI_Test(req, &done, MPI_STATUS_IGNORE), what);
        if (done)
            return;
        nanosleep(&pause, NULL);
    }
}

/* Local α, β and γ, δ, M of this process's site into v[SITE_VALUES]
 * (meaningful at the site's first member). */
static void probe_site(MPI_Comm site, const struct options *o, char *buf,
                       double *v)
{
    int me, n;
    PMPI_Comm_rank(site, &me);
    PMPI_Comm_size(site, &n);
    v[S_SIZE] = n;
    if (n < 2)
        return; /* no local traffic to model */
    double t[MAX_SIZES];
    if (me < 2) {
        /* One round warms up (connections, buffers). */
        ping_pong(site, 1, 1 - me, me == 0, o->local_sizes, o->n_local, 1,
                  o->iters, buf, t);
        if (me == 0)
            print_samples(o, "local one-way", o->local_sizes, t, o->n_local);
        v[S_RES_PP] = fit_hockney(o->local_sizes, t, (int)o->n_local,
                                  &v[S_ALPHA], &v[S_BETA]);
    }
    MPI_Request req;
    bench_mpi_check(PMPI_Ibcast(v, 2, MPI_DOUBLE, 0, site, &req), "bcast");
    wait_politely(&req, "bcast");
    alltoall_times(site, n, o, t);
    if (me == 0)
        print_samples(o, "local alltoall", o->a2a_sizes, t, o->n_a2a);
    v[S_RES_A2A] =
        fit_contention(o->a2a_sizes, t, (int)o->n_a2a, n, v[S_ALPHA], v[S_BETA],
                       &v[S_GAMMA], &v[S_DELTA], &v[S_THRESHOLD]);
    v[S_VALID] = 1;
}

/* α_w, β_w, gap and bulk β between the first members of sites a < b;
 * the one of site a stores them in v[LINK_VALUES]. */
static void probe_link(int first, int peer, const struct options *o, char *buf,
                       double *v)
{
    /* The smallest size's ping-pong: how long the go of a transfer takes,
     * and the first leg and one-byte answer of the bursts below. */
    size_t smallest = 0;
    for (size_t i = 1; i < o->n_wan; i++)
        if (o->wan_sizes[i] < o->wan_sizes[smallest])
            smallest = i;
    double small_one_way;
    ping_pong(MPI_COMM_WORLD, 0, peer, first, &o->wan_sizes[smallest], 1,
              o->wan_warmup, o->wan_iters, buf, &small_one_way);
    double t[MAX_SIZES], both_ways[MAX_SIZES];
    char *sbuf = buf, *rbuf = buf + o->wan_largest;
    transfer(first, peer, 0, o->wan_sizes, o->n_wan, o->wan_warmup,
             o->wan_iters, small_one_way, sbuf, rbuf, t);
    transfer(first, peer, 1, o->wan_sizes, o->n_wan, o->wan_warmup,
             o->wan_iters, small_one_way, sbuf, rbuf, both_ways);
    double alpha, beta;
    double res = fit_hockney(o->wan_sizes, t, (int)o->n_wan, &alpha, &beta);
    if (first) {
        print_samples(o, "WAN one-way", o->wan_sizes, t, o->n_wan);
        print_samples(o, "WAN exchange", o->wan_sizes, both_ways, o->n_wan);
    }
    double gap_round = burst(first, peer, o->burst, 1, o->wan_iters, buf);
    double bulk_round = burst(first, peer, o->bulk_count, (int)o->bulk_bytes,
                              o->wan_iters, buf);
    if (!first)
        return;
    if (o->verbose)
        printf("WAN bursts: %llu x 1 B in %.1f us, %llu x %llu B in %.1f us\n",
               (unsigned long long)o->burst, gap_round * 1e6,
               (unsigned long long)o->bulk_count,
               (unsigned long long)o->bulk_bytes, bulk_round * 1e6);
    double trip = 2 * small_one_way;
    v[L_ALPHA] = alpha;
    v[L_BETA] = beta;
    v[L_GAP] = gap_round > trip ? (gap_round - trip) / (double)o->burst : 0;
    v[L_BULK] = bulk_round > trip
                    ? (bulk_round - trip) /
                          ((double)o->bulk_count * (double)o->bulk_bytes)
                    : 0;
    v[L_RES] = res;
    v[L_VALID] = 1;
    for (size_t i = 0; i < o->n_wan; i++) {
        v[L_ONE_WAY + i] = t[i];
        v[L_EXCHANGE + i] = both_ways[i];
    }
}

/* Sites with one member have no local traffic: they take the mean of
 * the others (or neutral values), so the file stays within bounds. */
static void fill_single_member_sites(struct gc_model *m, const double *valid)
{
    double alpha = 0, beta = 0;
    int measured = 0;
    for (int s = 0; s < m->site_count; s++)
        if (valid[s]) {
            alpha += m->sites[s].alpha;
            beta += m->sites[s].beta;
            measured++;
        }
    for (int s = 0; s < m->site_count; s++)
        if (!valid[s]) {
            m->sites[s].alpha = measured > 0 ? alpha / measured : 0;
            m->sites[s].beta = measured > 0 ? beta / measured : 0;
            m->sites[s].gamma = 1;
            m->sites[s].delta = 0;
            m->sites[s].threshold = 0;
        }
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The times measured at `sizes` (any order) as a curve of the model,
 * sizes increasing as the file wants them. */
static void set_curve(struct gc_model_curve *c, const uint64_t *sizes, size_t n,
                      const double *times)
{
    c->count = (int)n;
    for (size_t i = 0; i < n; i++) {
        size_t at = i;
        while (at > 0 && c->bytes[at - 1] > (double)sizes[i]) {
            c->bytes[at] = c->bytes[at - 1];
            c->time[at] = c->time[at - 1];
            at--;
        }
        c->bytes[at] = (double)sizes[i];
        c->time[at] = clamp(times[i], 0, 60);
    }
}

int main(int argc, char **argv)
{
    bench_set_program(PROG);
    MPI_Init(&argc, &argv);
    int rank, size, sites;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct options o;
    int status = parse_options(argc, argv, &o, rank);
    if (status != 0) {
        MPI_Finalize();
        return status == 1 ? 0 : 2;
    }
    GridColl_Comm_site_count(MPI_COMM_WORLD, &sites);
    if (sites < 2 || sites > GC_MODEL_MAX_SITES) {
        if (rank == 0)
            fprintf(stderr, PROG ": needs 2..%d sites, the job has %d\n",
                    GC_MODEL_MAX_SITES, sites);
        MPI_Finalize();
        return 2;
    }
    int *site_of = bench_malloc((size_t)size * sizeof *site_of);
    int *leader = bench_malloc((size_t)sites * sizeof *leader);
    for (int s = 0; s < sites; s++)
        leader[s] = -1;
    for (int r = size - 1; r >= 0; r--) {
        GridColl_Comm_site_of(MPI_COMM_WORLD, r, &site_of[r]);
        leader[site_of[r]] = r;
    }
    int my_site = site_of[rank];
    MPI_Comm site;
    bench_mpi_check(MPI_Comm_split(MPI_COMM_WORLD, my_site, rank, &site),
                    "MPI_Comm_split");

    size_t largest = (size_t)o.bulk_count * (size_t)o.bulk_bytes;
    largest = o.local_largest > largest ? o.local_largest : largest;
    /* Transfers send from one half and receive into the other. */
    largest = 2 * o.wan_largest > largest ? 2 * o.wan_largest : largest;
    char *buf = bench_malloc(largest);
    memset(buf, 0, largest);

    size_t stride = SITE_VALUES + (size_t)LINK_VALUES * (size_t)sites;
    double *mine = calloc(stride, sizeof *mine);
    double *all = rank == 0 ? calloc(stride * (size_t)size, sizeof *all) : NULL;
    if (mine == NULL || (rank == 0 && all == NULL))
        bench_mpi_check(MPI_ERR_NO_MEM, "calloc");
    double t0 = MPI_Wtime();
    probe_site(site, &o, buf, mine);
    for (int a = 0; a < sites; a++)
        for (int b = a + 1; b < sites; b++) {
            bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            if (rank == leader[a] || rank == leader[b])
                probe_link(rank == leader[a],
                           rank == leader[a] ? leader[b] : leader[a], &o, buf,
                           mine + SITE_VALUES + (size_t)LINK_VALUES * b);
        }
    /* The others wait for the last pair in this barrier (libgridcoll's
     * waits sleep), not in the gather's local MPICH phase. */
    bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    bench_mpi_check(MPI_Gather(mine, (int)stride, MPI_DOUBLE, all, (int)stride,
                               MPI_DOUBLE, 0, MPI_COMM_WORLD),
                    "MPI_Gather");
    double elapsed = MPI_Wtime() - t0;

    if (rank == 0) {
        static struct gc_model m;
        double valid[GC_MODEL_MAX_SITES];
        m.site_count = sites;
        printf("gridcoll-probe: %d sites, %d ranks, %.1f s\n", sites, size,
               elapsed);
        for (int s = 0; s < sites; s++) {
            const double *v = all + stride * (size_t)leader[s];
            struct gc_model_site *p = &m.sites[s];
            int len;
            GridColl_Site_name(s, p->name, &len);
            p->size = (int)v[S_SIZE];
            p->alpha = clamp(v[S_ALPHA], 0, 1);
            p->beta = clamp(v[S_BETA], 0, 1e-3);
            p->gamma = clamp(v[S_GAMMA], 0.01, 1000);
            p->delta = clamp(v[S_DELTA], 0, 10);
            p->threshold = v[S_THRESHOLD];
            valid[s] = v[S_VALID];
        }
        fill_single_member_sites(&m, valid);
        for (int s = 0; s < sites; s++) {
            const double *v = all + stride * (size_t)leader[s];
            const struct gc_model_site *p = &m.sites[s];
            printf("site %s (%d ranks): alpha=%.3f us beta=%.4f ns/B "
                   "(fit residual %.1f%%) gamma=%.3f delta=%.3f us "
                   "threshold=%.0f B (fit residual %.1f%%)%s\n",
                   p->name, p->size, p->alpha * 1e6, p->beta * 1e9,
                   v[S_RES_PP] * 100, p->gamma, p->delta * 1e6, p->threshold,
                   v[S_RES_A2A] * 100,
                   valid[s] ? "" : " [one rank: not measured]");
        }
        for (int a = 0; a < sites; a++)
            for (int b = a + 1; b < sites; b++) {
                const double *v = all + stride * (size_t)leader[a] +
                                  SITE_VALUES + (size_t)LINK_VALUES * b;
                struct gc_model_link *l = &m.links[a * sites + b];
                l->alpha = clamp(v[L_ALPHA], 0, 60);
                l->beta = clamp(v[L_BETA], 0, 1e-3);
                l->gap = clamp(v[L_GAP], 0, 10);
                l->beta_bulk = clamp(v[L_BULK], 0, 1e-3);
                set_curve(&l->one_way, o.wan_sizes, o.n_wan, v + L_ONE_WAY);
                set_curve(&l->exchange, o.wan_sizes, o.n_wan, v + L_EXCHANGE);
                m.links[b * sites + a] = *l;
                printf("link %s-%s: alpha_w=%.1f us beta_w=%.4f ns/B (fit "
                       "residual %.1f%%) gap=%.2f us beta_bulk=%.4f ns/B "
                       "(%.0f Mbit/s)\n",
                       m.sites[a].name, m.sites[b].name, l->alpha * 1e6,
                       l->beta * 1e9, v[L_RES] * 100, l->gap * 1e6,
                       l->beta_bulk * 1e9,
                       l->beta_bulk > 0 ? 8e-6 / l->beta_bulk : 0.0);
            }
        const char *layout = o.layout != NULL ? o.layout : "";
        size_t len = strlen(layout) + 128;
        char *comment = bench_malloc(len);
        snprintf(comment, len,
                 "measured by gridcoll-probe on %d sites, %d ranks, in %.1f "
                 "s%s%s",
                 sites, size, elapsed, o.layout != NULL ? "\nlayout: " : "",
                 layout);
        int written = gc_model_write(&m, o.output, comment);
        free(comment);
        if (written != 0) {
            fprintf(stderr, PROG ": cannot write %s\n", o.output);
            status = 1;
        } else {
            printf("gridcoll-probe: wrote %s\n", o.output);
        }
    }
    free(mine);
    free(all);
    free(buf);
    free(site_of);
    free(leader);
    MPI_Comm_free(&site);
    MPI_Finalize();
    return status;
}
