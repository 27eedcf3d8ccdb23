/*
 * gridcoll-halo: the halo exchange of a 2-D stencil,
 * MPI_Neighbor_alltoall on a Cartesian communicator made from
 * MPI_COMM_WORLD with reorder = 0 or 1 (issue 13; docs/performance/README.md).
 * With reorder = 1 libgridcoll renumbers the ranks so that each site holds
 * a compact block of the grid (docs/algorithms/topology.md): fewer
 * neighbour pairs split between sites, fewer WAN
 * messages per exchange.
 *
 *   gridrun --site-sizes 4,4 -- gridcoll-halo --dims 2x4 --reorder 1 --csv
 *
 * Every rank sends each of its up to 4 neighbours one block of --bytes
 * and receives one from each (MPI_PROC_NULL at the edges of a
 * non-periodic grid).  Per exchange: started as --start says
 * (bench_mpi.h), timed on every rank, the slowest rank's time; rank 0
 * prints the median, 10th and 90th percentiles over the timed exchanges,
 * and cut_pairs, the neighbour pairs whose two ranks are on different
 * sites (each a WAN message each way per exchange under the direct
 * algorithm; GRIDCOLL_STATS=1 prints the WAN messages the library sent),
 * and the algorithm of the library's neighbor table that ran (--algo
 * forces one, GridColl_Set_algorithm).  The first exchange is
 * checked byte for byte: a block carries its sender's world rank and
 * direction.  Exit status: 0; 1 wrong result; 2 usage or MPI error, or
 * the start window missed 8 times in a row.
 */
#include <gridcoll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"

#define PROG      "gridcoll-halo"
#define MAX_ITERS 1000000
#define SENTINEL  0xee

struct options {
    int dims[2];
    int periodic;
    int reorder;
    uint64_t bytes;
    long iters, warmup;
    enum bench_start start;
    const char *algo; /* NULL: the library's default */
    int csv;
};

static int rank, size;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " --dims AxB [--periodic] [--reorder 0|1]\n"
            "       [--bytes N] [--iters N] [--warmup N]\n"
            "       [--start barrier|window] [--algo NAME] [--csv]\n"
            "Times MPI_Neighbor_alltoall on an A x B Cartesian communicator\n"
            "of MPI_COMM_WORLD (A x B = its size), one block of N bytes per\n"
            "neighbour, the halo exchange of a 2-D stencil.\n"
            "  --dims AxB     the grid, A x B equal to the number of ranks\n"
            "  --periodic     both dimensions wrap around\n"
            "  --reorder 0|1  MPI_Cart_create's reorder [0]\n"
            "  --bytes N      block per neighbour, optional K, M, G [64k]\n"
            "  --iters N      timed exchanges [20]\n"
            "  --warmup N     untimed exchanges before them [2]\n"
            "  --start barrier|window\n"
            "                 how the ranks start an exchange, as\n"
            "                 gridcoll-bench --start [barrier]\n"
            "  --algo NAME    force this algorithm of the neighbor table\n"
            "                 (gridcoll-info --algorithms) [the default]\n"
            "  --csv          CSV instead of an aligned table\n"
            "  --help         this text\n"
            "cut_pairs: neighbour pairs split between sites, each a WAN\n"
            "message each way per exchange under direct.  median_us, p10_us,\n"
            "p90_us: the slowest rank's time per exchange, over the timed\n"
            "ones.  algo: the algorithm that ran (-: MPICH's, one site).\n"
            "Columns: dims,periodic,reorder,sites,ranks,bytes,cut_pairs,"
            "median_us,p10_us,p90_us,algo\n");
}

static int parse_count(const char *text, long min, long *out)
{
    uint64_t v;
    if (bench_parse_u64(text, 0, &v) != 0 || v < (uint64_t)min || v > MAX_ITERS)
        return -1;
    *out = (long)v;
    return 0;
}

/* 0: run; 1: --help; 2: usage error (rank 0 printed why). */
static int parse_options(int argc, char **argv, struct options *o)
{
    const char *err = NULL;
    *o = (struct options){.bytes = 64 << 10, .iters = 20, .warmup = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (rank == 0)
                usage(stdout);
            return 1;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--periodic") == 0) {
            o->periodic = 1;
        } else if (strcmp(a, "--dims") == 0 && has_value) {
            char tail;
            if (sscanf(argv[++i], "%dx%d%c", &o->dims[0], &o->dims[1], &tail) !=
                    2 ||
                o->dims[0] < 1 || o->dims[1] < 1) {
                err = "--dims: AxB, two positive numbers";
                goto bad;
            }
        } else if (strcmp(a, "--reorder") == 0 && has_value) {
            i++;
            if (strcmp(argv[i], "0") != 0 && strcmp(argv[i], "1") != 0) {
                err = "--reorder: 0 or 1";
                goto bad;
            }
            o->reorder = argv[i][0] == '1';
        } else if (strcmp(a, "--bytes") == 0 && has_value) {
            if (bench_parse_u64(argv[++i], 1, &o->bytes) != 0 ||
                o->bytes > (1u << 30)) {
                err = "--bytes: 0 to 1G";
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
        } else if (strcmp(a, "--algo") == 0 && has_value) {
            o->algo = argv[++i];
            if (GridColl_Set_algorithm("neighbor", o->algo) != MPI_SUCCESS) {
                err = "--algo: not an algorithm of the neighbor table";
                goto bad;
            }
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
    if (o->dims[0] * o->dims[1] != size) {
        err = "--dims: A x B must be the number of ranks";
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

/* Byte i of the block world rank `from` sends in direction slot `dir`. */
static unsigned char pattern_byte(int from, int dir, size_t i)
{
    return (unsigned char)(bench_pattern((uint32_t)from, (uint32_t)dir,
                                         (uint32_t)(i / 4)) >>
                           (i % 4 * 8));
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

    MPI_Comm cart;
    int periods[2] = {o.periodic, o.periodic};
    bench_mpi_check(
        MPI_Cart_create(MPI_COMM_WORLD, 2, o.dims, periods, o.reorder, &cart),
        "MPI_Cart_create");
    bench_mpi_check(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler");
    int me, sites = 1, my_site;
    bench_mpi_check(MPI_Comm_rank(cart, &me), "MPI_Comm_rank");
    bench_mpi_check(GridColl_Comm_site_count(cart, &sites),
                    "GridColl_Comm_site_count");
    bench_mpi_check(GridColl_Comm_site_of(cart, me, &my_site),
                    "GridColl_Comm_site_of");

    /* MPI's neighbour order for a Cartesian communicator: per dimension,
     * the source of a shift by +1 (the lower neighbour), then the
     * destination.  A block sent to slot j arrives in the neighbour's
     * slot j ^ 1. */
    int nbr[4], nbr_world[4], cut = 0;
    MPI_Group world_group, cart_group;
    bench_mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world_group),
                    "MPI_Comm_group");
    bench_mpi_check(MPI_Comm_group(cart, &cart_group), "MPI_Comm_group");
    for (int d = 0; d < 2; d++)
        bench_mpi_check(
            MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]),
            "MPI_Cart_shift");
    for (int j = 0; j < 4; j++) {
        nbr_world[j] = MPI_PROC_NULL;
        if (nbr[j] == MPI_PROC_NULL)
            continue;
        bench_mpi_check(MPI_Group_translate_ranks(cart_group, 1, &nbr[j],
                                                  world_group, &nbr_world[j]),
                        "MPI_Group_translate_ranks");
        int site;
        bench_mpi_check(GridColl_Comm_site_of(cart, nbr[j], &site),
                        "GridColl_Comm_site_of");
        /* A size-2 periodic dimension has one pair, seen in both slots;
         * count a pair once from its lower-ranked end. */
        int dup = j % 2 == 1 && nbr[j] == nbr[j - 1];
        cut += site != my_site && me < nbr[j] && !dup;
    }
    MPI_Group_free(&world_group);
    MPI_Group_free(&cart_group);
    bench_mpi_check(
        MPI_Allreduce(MPI_IN_PLACE, &cut, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");

    size_t n = (size_t)o.bytes;
    unsigned char *send = bench_malloc(4 * n), *recv = bench_malloc(4 * n);
    for (int j = 0; j < 4; j++)
        for (size_t i = 0; i < n; i++)
            send[(size_t)j * n + i] = pattern_byte(rank, j, i);
    memset(recv, SENTINEL, 4 * n);

    struct bench_window w;
    if (o.start == BENCH_START_WINDOW)
        bench_window_calibrate(&w);
    double *t = bench_malloc((size_t)o.iters * sizeof *t);
    int wrong = 0;
    long repeated = 0;
    for (long i = 0; i < o.warmup + o.iters; i++) {
        double elapsed;
        for (;;) {
            if (o.start == BENCH_START_WINDOW)
                bench_window_start(&w);
            else
                bench_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            double start = o.start == BENCH_START_WINDOW ? w.t0 : MPI_Wtime();
            bench_mpi_check(MPI_Neighbor_alltoall(send, (int)n, MPI_BYTE, recv,
                                                  (int)n, MPI_BYTE, cart),
                            "MPI_Neighbor_alltoall");
            elapsed =
                (o.start == BENCH_START_WINDOW ? bench_clock() : MPI_Wtime()) -
                start;
            if (o.start != BENCH_START_WINDOW || !bench_window_missed(&w))
                break;
            repeated++;
        }
        if (i >= o.warmup)
            t[i - o.warmup] = elapsed;
        if (i > 0)
            continue;
        /* The first exchange: the block from slot j's neighbour is the one
         * it sent to its slot j ^ 1; nothing arrives from MPI_PROC_NULL. */
        for (int j = 0; j < 4 && !wrong; j++)
            for (size_t b = 0; b < n && !wrong; b++) {
                unsigned char got = recv[(size_t)j * n + b],
                              want = nbr_world[j] == MPI_PROC_NULL
                                         ? SENTINEL
                                         : pattern_byte(nbr_world[j], j ^ 1, b);
                if (got != want) {
                    fprintf(stderr,
                            PROG ": rank %d: byte %zu of neighbour slot %d "
                                 "(world rank %d) is 0x%02x, expected "
                                 "0x%02x\n",
                            rank, b, j, nbr_world[j], got, want);
                    wrong = 1;
                }
            }
        bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX,
                                      MPI_COMM_WORLD),
                        "MPI_Allreduce");
        if (wrong)
            break;
    }
    if (!wrong) {
        bench_mpi_check(MPI_Allreduce(MPI_IN_PLACE, t, (int)o.iters, MPI_DOUBLE,
                                      MPI_MAX, MPI_COMM_WORLD),
                        "MPI_Allreduce");
        double med = bench_quantile(t, o.iters, 0.5) * 1e6,
               p10 = bench_quantile(t, o.iters, 0.1) * 1e6,
               p90 = bench_quantile(t, o.iters, 0.9) * 1e6;
        char dims[32];
        snprintf(dims, sizeof dims, "%dx%d", o.dims[0], o.dims[1]);
        const char *used = GridColl_Algorithm_used("neighbor");
        if (used == NULL)
            used = "-";
        if (rank == 0 && o.csv)
            printf("dims,periodic,reorder,sites,ranks,bytes,cut_pairs,"
                   "median_us,p10_us,p90_us,algo\n%s,%d,%d,%d,%d,%zu,%d,%.2f,"
                   "%.2f,%.2f,%s\n",
                   dims, o.periodic, o.reorder, sites, size, n, cut, med, p10,
                   p90, used);
        else if (rank == 0)
            printf("%-6s  %8s  %7s  %5s  %5s  %10s  %9s  %11s  %11s  %11s  "
                   "%s\n"
                   "%-6s  %8d  %7d  %5d  %5d  %10zu  %9d  %11.2f  %11.2f  "
                   "%11.2f  %s\n",
                   "dims", "periodic", "reorder", "sites", "ranks", "bytes",
                   "cut_pairs", "median_us", "p10_us", "p90_us", "algo", dims,
                   o.periodic, o.reorder, sites, size, n, cut, med, p10, p90,
                   used);
    } else if (rank == 0) {
        printf("FAIL dims=%dx%d reorder=%d bytes=%zu: wrong result (the "
               "ranks that saw it say where on stderr)\n",
               o.dims[0], o.dims[1], o.reorder, n);
    }
    if (o.start == BENCH_START_WINDOW && rank == 0)
        fprintf(stderr,
                PROG ": --start window: %.3f ms ahead after calibration; "
                     "%ld exchanges repeated after a missed window\n",
                w.seconds * 1e3, repeated);
    fflush(stdout);
    free(t);
    free(send);
    free(recv);
    MPI_Comm_free(&cart);
    bench_mpi_check(MPI_Finalize(), "MPI_Finalize");
    return wrong ? 1 : 0;
}
