/*
 * The coupling layer of the coupled example (coupler.h, docs/coupling.md).
 *
 * The pattern is the usual one for MPMD coupling (MPI 4.1 section
 * 11.10.3 for MPI_APPNUM, section 7.6.2 for MPI_Intercomm_create):
 *   1. MPI_APPNUM of MPI_COMM_WORLD tells each rank which program it runs;
 *   2. MPI_Comm_split(MPI_COMM_WORLD, appnum, ...) gives each program a
 *      communicator of its own;
 *   3. MPI_Intercomm_create with MPI_COMM_WORLD as the peer communicator
 *      joins the two, each side naming the other's lowest world rank as
 *      the remote leader;
 *   4. every step, point-to-point on the intercommunicator (ranks there
 *      are the other program's) moves the boundary fields.
 */
#include "coupler.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_CREATE 1
#define TAG_PARAMS 2
/* Step tags cycle below the smallest MPI_TAG_UB MPI allows (32767). */
#define STEP_TAGS 32000

static const char *const model_names[MODEL_COUNT] = {"atm", "ocn"};

/* Rank `rank`'s block of a line of `points` over `size` ranks, as even
 * as it gets. */
static void block_of(long points, int size, int rank, long *first, long *count)
{
    long lo = (long)((int64_t)points * rank / size);
    long hi = (long)((int64_t)points * (rank + 1) / size);
    *first = lo;
    *count = hi - lo;
}

double coupler_field(enum model model, long step, long g)
{
    int64_t k = ((int64_t)(model + 1) << 32) + (int64_t)step * 1000003 + g;
    return (double)k / 4;
}

/* MPI_APPNUM of every world rank; the lowest world rank of the other
 * program.  0, or -1 after a message. */
static int find_other(struct coupler *c, int wrank, int wsize,
                      int *remote_leader)
{
    int *appnums = malloc((size_t)wsize * sizeof *appnums);
    if (appnums == NULL) {
        fprintf(stderr, "%s: out of memory\n", model_names[c->model]);
        return -1;
    }
    MPI_Allgather(&c->appnum, 1, MPI_INT, appnums, 1, MPI_INT, MPI_COMM_WORLD);
    int status = 0, other = -1;
    *remote_leader = -1;
    for (int r = 0; r < wsize && status == 0; r++) {
        if (appnums[r] == c->appnum)
            continue;
        if (other < 0) {
            other = appnums[r];
            *remote_leader = r;
        } else if (appnums[r] != other) {
            status = -1; /* a third program */
        }
    }
    if ((status != 0 || other < 0) && wrank == 0)
        fprintf(stderr,
                "%s: the job runs %s programs; the coupled example needs "
                "exactly two, one atm and one ocn (mpiexec -n A ./atm : -n "
                "B ./ocn)\n",
                model_names[c->model], other < 0 ? "one" : "more than two");
    free(appnums);
    return other < 0 ? -1 : status;
}

/* The leaders compare what both programs were started with; every rank
 * learns the verdict.  0, or -1 after a message. */
static int check_params(struct coupler *c, long steps)
{
    long mine[3] = {(long)c->model, c->points, steps}, theirs[3] = {0};
    if (c->rank == 0)
        MPI_Sendrecv(mine, 3, MPI_LONG, 0, TAG_PARAMS, theirs, 3, MPI_LONG, 0,
                     TAG_PARAMS, c->inter, MPI_STATUS_IGNORE);
    MPI_Bcast(theirs, 3, MPI_LONG, 0, c->local);
    const char *name = model_names[c->model];
    if (theirs[0] == mine[0]) {
        if (c->rank == 0)
            fprintf(stderr,
                    "%s: the other program is %s as well: couple one "
                    "atm with one ocn\n",
                    name, name);
        return -1;
    }
    if (theirs[1] != mine[1] || theirs[2] != mine[2]) {
        if (c->rank == 0)
            fprintf(stderr,
                    "%s: started with --points %ld --steps %ld but %s with "
                    "--points %ld --steps %ld: give both the same\n",
                    name, mine[1], mine[2], model_names[1 - c->model],
                    theirs[1], theirs[2]);
        return -1;
    }
    return 0;
}

int coupler_init(struct coupler *c, enum model model, long points, long steps)
{
    int wrank, wsize, flag, *appnum, remote_leader;
    memset(c, 0, sizeof *c);
    c->model = model;
    c->points = points;
    c->local = c->inter = MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (!flag) {
        fprintf(stderr,
                "%s: MPI_APPNUM is not set: start atm and ocn as "
                "one job\n",
                model_names[model]);
        return -1;
    }
    c->appnum = *appnum;
    if (find_other(c, wrank, wsize, &remote_leader) != 0)
        return -1;
    MPI_Comm_split(MPI_COMM_WORLD, c->appnum, wrank, &c->local);
    MPI_Comm_rank(c->local, &c->rank);
    MPI_Comm_size(c->local, &c->size);
    MPI_Intercomm_create(c->local, 0, MPI_COMM_WORLD, remote_leader, TAG_CREATE,
                         &c->inter);
    MPI_Comm_remote_size(c->inter, &c->remote_size);
    block_of(points, c->size, c->rank, &c->first, &c->count);
    c->req = malloc(2 * (size_t)c->remote_size * sizeof *c->req);
    c->statuses = malloc(2 * (size_t)c->remote_size * sizeof *c->statuses);
    if (c->req == NULL || c->statuses == NULL) {
        fprintf(stderr, "%s: out of memory\n", model_names[model]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return check_params(c, steps);
}

int coupler_exchange(struct coupler *c, long step, const double *send,
                     double *recv)
{
    MPI_Request *req = c->req;
    int n = 0, tag = (int)(step % STEP_TAGS);
    for (int r = 0; r < c->remote_size; r++) {
        long rfirst, rcount;
        block_of(c->points, c->remote_size, r, &rfirst, &rcount);
        long lo = rfirst > c->first ? rfirst : c->first;
        long hi = rfirst + rcount < c->first + c->count ? rfirst + rcount
                                                        : c->first + c->count;
        if (lo >= hi)
            continue;
        MPI_Irecv(recv + (lo - c->first), (int)(hi - lo), MPI_DOUBLE, r, tag,
                  c->inter, &req[n++]);
        MPI_Isend(send + (lo - c->first), (int)(hi - lo), MPI_DOUBLE, r, tag,
                  c->inter, &req[n++]);
    }
    return MPI_Waitall(n, req, c->statuses);
}

void coupler_finalize(struct coupler *c)
{
    free(c->req);
    free(c->statuses);
    if (c->inter != MPI_COMM_NULL)
        MPI_Comm_free(&c->inter);
    if (c->local != MPI_COMM_NULL)
        MPI_Comm_free(&c->local);
}

static int parse_long(const char *s, long max, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, long *steps, long *points)
{
    for (int i = 1; i < argc; i++) {
        int last = i + 1 == argc;
        if (strcmp(argv[i], "--steps") == 0 && !last) {
            if (parse_long(argv[++i], 1000000, steps) != 0)
                return -1;
        } else if (strcmp(argv[i], "--points") == 0 && !last) {
            if (parse_long(argv[++i], 1L << 30, points) != 0)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Received values that are not, bit for bit, what the other model sent;
 * the first is reported. */
static long check_field(const struct coupler *c, long step, const double *recv,
                        uint64_t *checksum)
{
    long bad = 0;
    for (long i = 0; i < c->count; i++) {
        long g = c->first + i;
        double want = coupler_field((enum model)(1 - c->model), step, g);
        if (memcmp(&recv[i], &want, sizeof want) != 0 && bad++ == 0)
            fprintf(stderr,
                    "%s rank %d: step %ld point %ld: received %.17g, "
                    "%s sent %.17g\n",
                    model_names[c->model], c->rank, step, g, recv[i],
                    model_names[1 - c->model], want);
        *checksum += (uint64_t)(recv[i] * 4);
    }
    return bad;
}

int coupler_main(int argc, char **argv, enum model model, model_update *update,
                 double initial)
{
    long steps = 10, points = 1000;
    const char *name = model_names[model];
    MPI_Init(&argc, &argv);
    int exit_status = 1;
    double *field = NULL;
    struct coupler c;
    if (parse_args(argc, argv, &steps, &points) != 0) {
        fprintf(stderr, "usage: %s [--steps N] [--points P]\n", name);
        MPI_Finalize();
        return 2;
    }
    if (coupler_init(&c, model, points, steps) != 0)
        goto cleanup;
    /* send, received and state: one block each. */
    field = malloc(3 * (size_t)(c.count > 0 ? c.count : 1) * sizeof *field);
    if (field == NULL) {
        fprintf(stderr, "%s: out of memory\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *send = field, *recv = field + c.count, *state = recv + c.count;
    for (long i = 0; i < c.count; i++)
        state[i] = initial;
    long bad = 0;
    uint64_t checksum = 0;
    for (long step = 0; step < steps; step++) {
        for (long i = 0; i < c.count; i++)
            send[i] = coupler_field(model, step, c.first + i);
        if (coupler_exchange(&c, step, send, recv) != MPI_SUCCESS) {
            fprintf(stderr, "%s: exchange failed\n", name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        bad += check_field(&c, step, recv, &checksum);
        update(state, recv, c.count);
    }
    double state_sum = 0;
    for (long i = 0; i < c.count; i++)
        state_sum += state[i];
    long total_bad;
    uint64_t total_checksum;
    double total_state;
    MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, c.local);
    MPI_Reduce(&checksum, &total_checksum, 1, MPI_UINT64_T, MPI_SUM, 0,
               c.local);
    MPI_Reduce(&state_sum, &total_state, 1, MPI_DOUBLE, MPI_SUM, 0, c.local);
    if (c.rank == 0)
        printf("%s: appnum %d, %d ranks, coupled to %s (%d ranks): %ld steps "
               "x %ld points received, %ld wrong, checksum %" PRIu64
               ", mean state %.6f\n",
               name, c.appnum, c.size, model_names[1 - model], c.remote_size,
               steps, points, total_bad, total_checksum,
               total_state / (double)points);
    exit_status = total_bad == 0 ? 0 : 1;

cleanup:
    free(field);
    coupler_finalize(&c);
    MPI_Finalize();
    return exit_status;
}
