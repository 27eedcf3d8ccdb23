/*
 * Algorithm selection (libgridcoll/coll/select/gc_coll_select.c): what
 * every table's rules pick, at both levels, for given site counts,
 * members, message sizes, ops and layouts; forced names
 * (GridColl_Set_algorithm, GRIDCOLL_<COLL>, GRIDCOLL_<COLL>_LOCAL)
 * overriding the rules, the call's before the environment's; unknown
 * names, site names at the grid level and forced algorithms whose
 * restrictions exclude the call rejected with MPI_ERR_ARG.  The tables
 * themselves: every rule names an algorithm of its level, every level
 * ends with an unbounded rule.
 *
 * The grid level goes through coll_build (pick, account, build the
 * schedule, which is freed unrun) and reads the choice back with
 * GridColl_Algorithm_used; the site level through coll_site_select, with
 * a node layer given by hand (how many nodes the site spans).  An MPICH
 * singleton whose grid is faked (fake_grid.h).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/engine/coll_sched.h"
#include "coll/node_shm.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_settings.h"
#include "fake_grid.h"
#include "gridcoll.h"
#include "unit_check.h"

/* The largest call's buffers: 4 MiB + 1 vectors, 3 x 512 KiB blocks. */
#define ARENA (9u << 20)
static char *send_arena, *recv_arena;

static MPI_Count counts[8];
static MPI_Aint displs[8];
static MPI_Datatype types[8];
static struct coll_side side = {counts, displs, types};

/* A call of `kind` on c moving `bytes` (as struct coll_args counts them)
 * of MPI_BYTE, reductions with `op`. */
static struct coll_args call_of(enum gc_coll_kind kind, struct gc_comm *c,
                                size_t bytes, MPI_Op op)
{
    struct coll_args a = {.comm = c, .fn = "test", .bytes = bytes};
    MPI_Count n = (MPI_Count)bytes;
    for (int r = 0; r < c->size; r++) {
        counts[r] = n;
        displs[r] = (MPI_Aint)((size_t)r * bytes);
        types[r] = MPI_BYTE;
    }
    switch (kind) {
    case GC_COLL_BCAST:
        a.u.bcast = (struct coll_bcast_args){recv_arena, n, MPI_BYTE, 0};
        break;
    case GC_COLL_REDUCE:
    case GC_COLL_ALLREDUCE:
    case GC_COLL_SCAN:
        a.u.reduce = (struct coll_reduce_args){
            send_arena, recv_arena, n, MPI_BYTE, op, 0, 0};
        break;
    case GC_COLL_REDUCE_SCATTER:
        a.u.reduce_scatter = (struct coll_reduce_scatter_args){
            send_arena, recv_arena, counts, MPI_BYTE, op};
        break;
    case GC_COLL_GATHER:
    case GC_COLL_GATHERV:
    case GC_COLL_SCATTER:
    case GC_COLL_SCATTERV:
    case GC_COLL_ALLGATHER:
    case GC_COLL_ALLGATHERV:
        a.u.rooted = (struct coll_rooted_args){send_arena, recv_arena, n,
                                               MPI_BYTE,   counts,     displs,
                                               MPI_BYTE,   0,          1};
        break;
    case GC_COLL_ALLTOALL:
    case GC_COLL_ALLTOALLV:
    case GC_COLL_ALLTOALLW:
        a.u.alltoall =
            (struct coll_alltoall_args){send_arena, &side, recv_arena, &side};
        break;
    default: /* barrier; neighbor: no neighbours */ break;
    }
    return a;
}

/*
 * The grid algorithm coll_build picks for the call, "" when it refuses
 * it; *status (when not NULL) its code.
 */
static const char *grid_pick(enum gc_coll_kind kind, struct gc_comm *c,
                             size_t bytes, MPI_Op op, int *status)
{
    struct coll_args a = call_of(kind, c, bytes, op);
    struct coll_sched *s = NULL;
    int rc = coll_build(kind, &a, &s);
    coll_sched_free(s);
    if (status != NULL)
        *status = rc;
    if (rc != MPI_SUCCESS)
        return "";
    const char *used = GridColl_Algorithm_used(gc_coll_kind_name(kind));
    return used != NULL ? used : "(none)";
}

#define GRID_IS(kind, c, bytes, op, want)                                      \
    do {                                                                       \
        const char *got_ = grid_pick((kind), (c), (bytes), (op), NULL);        \
        CHECKF(strcmp(got_, (want)) == 0, "%s, %zu bytes: %s, expected %s",    \
               gc_coll_kind_name(kind), (size_t)(bytes), got_, (want));        \
    } while (0)

#define GRID_REFUSED(kind, c, bytes, op)                                       \
    do {                                                                       \
        int rc_ = MPI_SUCCESS;                                                 \
        const char *got_ = grid_pick((kind), (c), (bytes), (op), &rc_);        \
        CHECKF(rc_ == MPI_ERR_ARG,                                             \
               "%s, %zu bytes: %s (code %d), expected "                        \
               "MPI_ERR_ARG",                                                  \
               gc_coll_kind_name(kind), (size_t)(bytes), got_, rc_);           \
    } while (0)

/* The site algorithm coll_site_select picks, "" when it refuses. */
static const char *site_pick(enum gc_coll_kind kind, struct gc_comm *c,
                             int blocking, size_t bytes, int *status)
{
    const struct coll_algo *algo = NULL;
    int rc = coll_site_select(kind, c, "test", blocking, bytes, &algo);
    if (status != NULL)
        *status = rc;
    return rc == MPI_SUCCESS ? algo->name : "";
}

#define SITE_IS(kind, c, blocking, bytes, want)                                \
    do {                                                                       \
        const char *got_ = site_pick((kind), (c), (blocking), (bytes), NULL);  \
        CHECKF(strcmp(got_, (want)) == 0,                                      \
               "site %s, %d members, %s, %zu bytes: %s, expected %s",          \
               gc_coll_kind_name(kind), (c)->local_size,                       \
               (blocking) ? "blocking" : "nonblocking", (size_t)(bytes), got_, \
               (want));                                                        \
    } while (0)

/* Set (NULL: unset) a forcing variable, as MPI_Init would read it. */
static void force_env(const char *var, const char *value)
{
    if (value != NULL)
        setenv(var, value, 1);
    else
        unsetenv(var);
    CHECKF(gc_settings_load() == 0, "gc_settings_load with %s=%s", var,
           value != NULL ? value : "(unset)");
}

/* A grid communicator of every grid rank, in the order given. */
static struct gc_comm *grid_comm(int sites, const int *sizes,
                                 const int *members)
{
    static uint32_t context = 10 * GC_CTX_STRIDE;
    fake_grid_sites(sites, sizes);
    context += GC_CTX_STRIDE;
    return fake_grid_comm(members, gc_world.size, context);
}

static const int in_order[] = {0, 1, 2};
/* Site 1's members at comm ranks 0 and 2, site 0 (this process) between. */
static const int interleaved[] = {1, 0, 2};

/* Never called: the schedules are built, not run. */
static void noncommutative(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)t;
}

static void test_tables(void)
{
    for (int k = 0; k < GC_COLL_KINDS; k++) {
        const struct coll_table *t = coll_table_of((enum gc_coll_kind)k);
        for (enum coll_level level = COLL_GRID; level <= COLL_SITE; level++) {
            int algos = 0, last = -1;
            for (int i = 0; i < t->algo_count; i++)
                algos += t->algos[i].level == level;
            for (int r = 0; r < t->rule_count; r++) {
                int found = -1;
                for (int i = 0; i < t->algo_count; i++)
                    if (strcmp(t->algos[i].name, t->rules[r].algo) == 0)
                        found = i;
                CHECKF(found >= 0, "%s: rule %d names no algorithm (%s)",
                       coll_table_name(t), r, t->rules[r].algo);
                if (found >= 0 && t->algos[found].level == level)
                    last = r;
            }
            if (algos == 0)
                continue;
            CHECKF(last >= 0, "%s: a level without rules", coll_table_name(t));
            if (last < 0)
                continue;
            const struct coll_rule *rule = &t->rules[last];
            CHECKF(rule->min_size == 0 && rule->min_bytes == 0 &&
                       rule->max_bytes == 0 && rule->when == NULL,
                   "%s: the last rule of level %d (%s) is bounded",
                   coll_table_name(t), level, rule->algo);
        }
    }
    CHECK(coll_table_of(GC_COLL_KINDS) == NULL, "a table past the kinds");
    static const char *const bcast[] = {"hier", "multilane", "binomial",
                                        "scatter_allgather", "chain"};
    for (int i = 0; i < 5; i++) {
        const char *name = GridColl_Algorithm_name("bcast", i);
        CHECKF(name != NULL && strcmp(name, bcast[i]) == 0,
               "bcast algorithm %d: %s", i, name != NULL ? name : "NULL");
    }
    CHECK(GridColl_Algorithm_name("bcast", 5) == NULL,
          "a site algorithm listed as a grid one");
}

static void test_grid_rules(void)
{
    static const int two[] = {1, 2}, three[] = {1, 1, 1};
    struct gc_comm *c2 = grid_comm(2, two, in_order);
    GRID_IS(GC_COLL_BARRIER, c2, 0, MPI_OP_NULL, "hier");
    /* bcast: hier up to 64 KiB; from 3 sites multilane beyond it, with
     * two hier up to 256 KiB. */
    GRID_IS(GC_COLL_BCAST, c2, 64 << 10, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_BCAST, c2, (64 << 10) + 1, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_BCAST, c2, 256 << 10, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_BCAST, c2, (256 << 10) + 1, MPI_OP_NULL, "multilane");
    GRID_IS(GC_COLL_REDUCE, c2, 1 << 20, MPI_SUM, "hier");
    /* allreduce: hier up to 4 MiB, multileader beyond. */
    GRID_IS(GC_COLL_ALLREDUCE, c2, 4 << 20, MPI_SUM, "hier");
    GRID_IS(GC_COLL_ALLREDUCE, c2, (4 << 20) + 1, MPI_SUM, "multileader");
    GRID_IS(GC_COLL_REDUCE_SCATTER, c2, 64, MPI_SUM, "hier");
    GRID_IS(GC_COLL_SCAN, c2, 64, MPI_SUM, "hier");
    GRID_IS(GC_COLL_GATHER, c2, 64, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_GATHERV, c2, 0, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_SCATTER, c2, 64, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_SCATTERV, c2, 0, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_ALLGATHER, c2, 64, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_ALLGATHERV, c2, 0, MPI_OP_NULL, "hier");
    /* alltoall: lg below 512 KiB a pair, direct from it; v- and w-forms
     * (bytes 0) lg. */
    GRID_IS(GC_COLL_ALLTOALL, c2, (512 << 10) - 1, MPI_OP_NULL, "lg");
    GRID_IS(GC_COLL_ALLTOALL, c2, 512 << 10, MPI_OP_NULL, "direct");
    GRID_IS(GC_COLL_ALLTOALLV, c2, 0, MPI_OP_NULL, "lg");
    GRID_IS(GC_COLL_ALLTOALLW, c2, 0, MPI_OP_NULL, "lg");
    /* neighbor: bundled only with a topology whose plan saves messages. */
    GRID_IS(GC_COLL_NEIGHBOR, c2, 64, MPI_OP_NULL, "direct");
    fake_grid_comm_free(c2);

    struct gc_comm *c3 = grid_comm(3, three, in_order);
    GRID_IS(GC_COLL_BCAST, c3, 64 << 10, MPI_OP_NULL, "hier");
    GRID_IS(GC_COLL_BCAST, c3, (64 << 10) + 1, MPI_OP_NULL, "multilane");
    fake_grid_comm_free(c3);

    /* Sites that interleave: a non-commutative op cannot fold partial
     * results in site order, and the site-order scan cannot run at all. */
    MPI_Op op;
    MPI_Op_create(noncommutative, 0, &op);
    struct gc_comm *ci = grid_comm(2, two, interleaved);
    GRID_IS(GC_COLL_ALLREDUCE, ci, 64, MPI_SUM, "hier");
    GRID_IS(GC_COLL_ALLREDUCE, ci, 64, op, "reduce_bcast");
    GRID_IS(GC_COLL_REDUCE_SCATTER, ci, 64, MPI_SUM, "hier");
    GRID_IS(GC_COLL_REDUCE_SCATTER, ci, 64, op, "reduce_scatterv");
    GRID_IS(GC_COLL_SCAN, ci, 64, MPI_SUM, "gather_scatter");
    fake_grid_comm_free(ci);
    /* Contiguous sites: the same op folds in site order. */
    c2 = grid_comm(2, two, in_order);
    GRID_IS(GC_COLL_ALLREDUCE, c2, 64, op, "hier");
    fake_grid_comm_free(c2);
    MPI_Op_free(&op);
}

static void test_grid_forced(void)
{
    static const int two[] = {1, 2};
    struct gc_comm *c = grid_comm(2, two, in_order);
    MPI_Op op;
    MPI_Op_create(noncommutative, 0, &op);

    CHECK(GridColl_Set_algorithm("bcast", "binomial") == MPI_SUCCESS,
          "GridColl_Set_algorithm(bcast, binomial)");
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "binomial");
    GRID_IS(GC_COLL_BCAST, c, 1 << 20, MPI_OP_NULL, "binomial");
    /* Other collectives keep their rules. */
    GRID_IS(GC_COLL_ALLREDUCE, c, 64, MPI_SUM, "hier");
    CHECK(GridColl_Set_algorithm("bcast", NULL) == MPI_SUCCESS,
          "GridColl_Set_algorithm(bcast, NULL)");
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "hier");

    /* The environment forces; the call takes precedence over it. */
    force_env("GRIDCOLL_BCAST", "chain");
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "chain");
    GridColl_Set_algorithm("bcast", "scatter_allgather");
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "scatter_allgather");
    GridColl_Set_algorithm("bcast", NULL);
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "chain");
    force_env("GRIDCOLL_BCAST", NULL);
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "hier");
    force_env("GRIDCOLL_ALLTOALL", "hier");
    GRID_IS(GC_COLL_ALLTOALL, c, 1 << 20, MPI_OP_NULL, "hier");
    force_env("GRIDCOLL_ALLTOALL", NULL);
    /* Past the rule's bound: allreduce hier at 8 MiB. */
    force_env("GRIDCOLL_ALLREDUCE", "hier");
    GRID_IS(GC_COLL_ALLREDUCE, c, 8 << 20, MPI_SUM, "hier");
    force_env("GRIDCOLL_ALLREDUCE", NULL);

    /* Unknown names, and the site level's names, are refused. */
    force_env("GRIDCOLL_ALLTOALL", "nosuch");
    GRID_REFUSED(GC_COLL_ALLTOALL, c, 64, MPI_OP_NULL);
    force_env("GRIDCOLL_ALLTOALL", NULL);
    force_env("GRIDCOLL_BCAST", "shm");
    GRID_REFUSED(GC_COLL_BCAST, c, 64, MPI_OP_NULL);
    force_env("GRIDCOLL_BCAST", NULL);
    CHECK(GridColl_Set_algorithm("bcast", "nosuch") == MPI_ERR_ARG,
          "an unknown algorithm accepted");
    CHECK(GridColl_Set_algorithm("bcast", "mpich") == MPI_ERR_ARG,
          "a site algorithm accepted at the grid level");
    CHECK(GridColl_Set_algorithm("nosuch", "hier") == MPI_ERR_ARG,
          "an unknown collective accepted");
    GRID_IS(GC_COLL_BCAST, c, 64, MPI_OP_NULL, "hier");
    fake_grid_comm_free(c);

    /* A forced algorithm whose restrictions exclude the call. */
    c = grid_comm(2, two, interleaved);
    GridColl_Set_algorithm("allreduce", "hier");
    GRID_REFUSED(GC_COLL_ALLREDUCE, c, 64, op);
    GRID_IS(GC_COLL_ALLREDUCE, c, 64, MPI_SUM, "hier");
    GridColl_Set_algorithm("allreduce", NULL);
    GridColl_Set_algorithm("scan", "hier");
    GRID_REFUSED(GC_COLL_SCAN, c, 64, MPI_SUM);
    GridColl_Set_algorithm("scan", NULL);
    GridColl_Set_algorithm("neighbor", "bundled");
    GRID_REFUSED(GC_COLL_NEIGHBOR, c, 64, MPI_OP_NULL);
    GridColl_Set_algorithm("neighbor", NULL);
    fake_grid_comm_free(c);
    MPI_Op_free(&op);
}

/*
 * A grid communicator whose site 0 has `members` (< 16) members, this
 * process the first, on `nodes` nodes, and one member on site 1.
 */
static struct gc_comm *site_comm(int members, int nodes)
{
    static uint32_t context = 100 * GC_CTX_STRIDE;
    int sizes[] = {members, 1}, ranks[16];
    for (int r = 0; r <= members; r++)
        ranks[r] = r;
    fake_grid_sites(2, sizes);
    context += GC_CTX_STRIDE;
    struct gc_comm *c = fake_grid_comm(ranks, members + 1, context);
    /* What coll_node_get would have found out from MPICH. */
    struct coll_node *n = calloc(1, sizeof *n);
    n->comm = n->leaders = MPI_COMM_NULL;
    n->win = MPI_WIN_NULL;
    n->nodes = nodes;
    c->node = n;
    return c;
}

static void test_site_rules(void)
{
    struct gc_comm *one = site_comm(4, 1), *two = site_comm(8, 2),
                   *six = site_comm(6, 2), *twelve = site_comm(12, 2),
                   *seven = site_comm(7, 2), *alone = site_comm(1, 1);
    struct gc_comm *eight = site_comm(8, 1);

    /* bcast: shm from 256 KiB on one node, blocking calls only. */
    SITE_IS(GC_COLL_BCAST, one, 1, 256 << 10, "shm");
    SITE_IS(GC_COLL_BCAST, one, 1, (256 << 10) - 1, "mpich");
    SITE_IS(GC_COLL_BCAST, one, 0, 1 << 20, "mpich");
    SITE_IS(GC_COLL_BCAST, two, 1, 1 << 20, "mpich");
    SITE_IS(GC_COLL_BCAST, alone, 1, 1 << 20, "mpich");
    /* allreduce: shm on one node at every size. */
    SITE_IS(GC_COLL_ALLREDUCE, one, 1, 1, "shm");
    SITE_IS(GC_COLL_ALLREDUCE, one, 0, 1, "mpich");
    SITE_IS(GC_COLL_ALLREDUCE, two, 1, 1 << 20, "mpich");
    /* allgather: Kumar & Kale. */
    SITE_IS(GC_COLL_ALLGATHER, eight, 1, 64, "shm");
    SITE_IS(GC_COLL_ALLGATHER, two, 1, 8192, "hypercube");
    SITE_IS(GC_COLL_ALLGATHER, two, 1, 8193, "kshift");
    SITE_IS(GC_COLL_ALLGATHER, six, 1, 8192, "mesh");
    SITE_IS(GC_COLL_ALLGATHER, six, 1, 8193, "kshift");
    SITE_IS(GC_COLL_ALLGATHER, twelve, 1, 8193, "ring");
    SITE_IS(GC_COLL_ALLGATHER, two, 0, 64, "mpich");
    SITE_IS(GC_COLL_ALLGATHERV, two, 1, 8192, "hypercube");
    force_env("GRIDCOLL_ALLGATHER_K", "3");
    SITE_IS(GC_COLL_ALLGATHER, twelve, 1, 8193, "kshift");
    force_env("GRIDCOLL_ALLGATHER_K", NULL);
    /* alltoall: Bruck from 8 members up to 256 bytes a pair. */
    SITE_IS(GC_COLL_ALLTOALL, two, 1, 256, "bruck");
    SITE_IS(GC_COLL_ALLTOALL, two, 1, 1, "bruck");
    SITE_IS(GC_COLL_ALLTOALL, two, 1, 0, "mpich");
    SITE_IS(GC_COLL_ALLTOALL, two, 1, 257, "mpich");
    SITE_IS(GC_COLL_ALLTOALL, seven, 1, 256, "mpich");
    SITE_IS(GC_COLL_ALLTOALL, two, 0, 256, "mpich");
    SITE_IS(GC_COLL_ALLTOALLV, two, 1, 256, "bruck");

    /* Forced site algorithms; a blocking-only one leaves nonblocking
     * calls to the rules. */
    force_env("GRIDCOLL_ALLGATHER_LOCAL", "ring");
    SITE_IS(GC_COLL_ALLGATHER, two, 1, 8192, "ring");
    SITE_IS(GC_COLL_ALLGATHERV, eight, 1, 64, "ring");
    SITE_IS(GC_COLL_ALLGATHER, two, 0, 8192, "mpich");
    force_env("GRIDCOLL_ALLGATHER_LOCAL", NULL);
    force_env("GRIDCOLL_ALLTOALL_LOCAL", "xor");
    SITE_IS(GC_COLL_ALLTOALL, two, 1, 256, "xor");
    force_env("GRIDCOLL_ALLTOALL_LOCAL", NULL);
    force_env("GRIDCOLL_BCAST_LOCAL", "mpich");
    SITE_IS(GC_COLL_BCAST, one, 1, 1 << 20, "mpich");
    force_env("GRIDCOLL_BCAST_LOCAL", "shm");
    SITE_IS(GC_COLL_BCAST, two, 1, 1, "shm");
    force_env("GRIDCOLL_BCAST_LOCAL", NULL);
    static const char *const refused[] = {"nosuch", "hier"};
    for (int i = 0; i < 2; i++) {
        int rc = MPI_SUCCESS;
        force_env("GRIDCOLL_ALLGATHER_LOCAL", refused[i]);
        const char *got = site_pick(GC_COLL_ALLGATHER, two, 1, 64, &rc);
        CHECKF(rc == MPI_ERR_ARG, "GRIDCOLL_ALLGATHER_LOCAL=%s: %s (code %d)",
               refused[i], got, rc);
    }
    force_env("GRIDCOLL_ALLGATHER_LOCAL", NULL);

    struct gc_comm *all[] = {one, two, six, twelve, seven, alone, eight};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        /* Not attached (gc_comm_attach): made here, freed here. */
        free(all[i]->node);
        all[i]->node = NULL;
        fake_grid_comm_free(all[i]);
    }
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    send_arena = calloc(1, ARENA);
    recv_arena = calloc(1, ARENA);
    if (send_arena == NULL || recv_arena == NULL)
        return 1;
    test_tables();
    test_grid_rules();
    test_grid_forced();
    test_site_rules();
    free(send_arena);
    free(recv_arena);
    MPI_Finalize();
    return unit_check_report("coll_select: ");
}
