/*
 * topo_check: process topologies (MPI-4.0 chapter 8) on MPI_COMM_WORLD,
 * self-checking, for tests/integration/test_mpi_topo.py.
 *
 *   gridrun --site-sizes 2,2 -- topo_check [CASE...]
 *
 * Two kinds of output:
 *  - "ANS <case> <rank>: ..." lines, reorder = 0 answers of every call
 *    (coordinates, shifts, Cart_sub members, graph neighbours, weights,
 *    error classes), printed by rank 0 in rank order.  They must be the
 *    same byte for byte in a single-site run, where every call is plain
 *    MPICH's, and in a multi-site run, where they are GridColl's; each is
 *    also checked here against the MPI definitions (row-major
 *    coordinates, shift rules, ...).
 *  - reorder = 1 cases, whose answers depend on the site layout: checked
 *    for self-consistency (coordinates <-> ranks bijective, each site's
 *    members in their old relative order, the cut equal to what
 *    topo_reorder.c computes for this layout and not above the identity's),
 *    data exchanged along the neighbours byte for byte (point to point,
 *    and across sites MPI_Neighbor_alltoall(v) under every algorithm of
 *    the neighbor table); they print
 *    "CUT <case> identity I reorder R" lines.
 * Conventions of check_util.h: MPI_ERRORS_RETURN, "OK <case>" after each
 * case, "FAIL <case>: rank R: ..." and MPI_Abort on the first mismatch.
 *
 * Cases: world, cart, cart_small, cart_sub, graph, dist_adjacent,
 * dist_create, dup, errors, reorder_cart, reorder_dist.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "comm/topo/topo_reorder.h"
#include "gridcoll.h"
#include "neighbor_util.h"

#define LINE 512

static int world_rank, world_size, multi_site;

/* Every rank's line, printed by rank 0 in rank order as ANS lines. */
__attribute__((format(printf, 2, 3))) static void
answer(const char *name, const char *format, ...)
{
    char line[LINE] = {0};
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    char *all = world_rank == 0 ? xmalloc((size_t)world_size * LINE) : NULL;
    MPI_CHECK(MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0,
                         MPI_COMM_WORLD));
    for (int r = 0; world_rank == 0 && r < world_size; r++)
        printf("ANS %s %d: %s\n", name, r, all + (size_t)r * LINE);
    fflush(stdout);
    free(all);
}

/* Append to a line. */
__attribute__((format(printf, 2, 3))) static void add(char *line,
                                                      const char *format, ...)
{
    size_t used = strlen(line);
    va_list args;
    va_start(args, format);
    vsnprintf(line + used, LINE - used, format, args);
    va_end(args);
}

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* Expect `rc` to be an error of class `cls`. */
static void expect_class(int rc, int cls, const char *what)
{
    if (error_class(rc) != cls)
        fail("%s: error class %d, expected %d", what, error_class(rc), cls);
}

static int topo_kind(MPI_Comm comm)
{
    int kind;
    MPI_CHECK(MPI_Topo_test(comm, &kind));
    return kind;
}

/* Row-major coordinates of rank r (MPI-4.0 §8.5.1). */
static void coords_of(int r, int ndims, const int *dims, int *coords)
{
    for (int d = ndims - 1; d >= 0; d--) {
        coords[d] = r % dims[d];
        r /= dims[d];
    }
}

/* The shift of MPI-4.0 §8.5.6 from the definition. */
static int shifted(int r, int ndims, const int *dims, const int *periods,
                   int dir, int disp)
{
    int c[8], x;
    coords_of(r, ndims, dims, c);
    x = c[dir] + disp;
    if (x < 0 || x >= dims[dir]) {
        if (!periods[dir])
            return MPI_PROC_NULL;
        x = ((x % dims[dir]) + dims[dir]) % dims[dir];
    }
    c[dir] = x;
    int rank = 0;
    for (int d = 0; d < ndims; d++)
        rank = rank * dims[d] + c[d];
    return rank;
}

/* Every query of a Cartesian communicator, checked and answered. */
static void cart_queries(MPI_Comm cart, const char *name, int ndims,
                         const int *dims, const int *periods)
{
    char line[LINE] = "";
    int rank, size, nd, gd[8], gp[8], gc[8], c[8], back;
    MPI_CHECK(MPI_Comm_rank(cart, &rank));
    MPI_CHECK(MPI_Comm_size(cart, &size));
    MPI_CHECK(MPI_Cartdim_get(cart, &nd));
    MPI_CHECK(MPI_Cart_get(cart, ndims, gd, gp, gc));
    if (topo_kind(cart) != MPI_CART || nd != ndims)
        fail("%s: Topo_test/Cartdim_get", name);
    add(line, "rank %d size %d ndims %d coords", rank, size, nd);
    coords_of(rank, ndims, dims, c);
    for (int d = 0; d < ndims; d++) {
        if (gd[d] != dims[d] || !!gp[d] != !!periods[d] || gc[d] != c[d])
            fail("%s: Cart_get dimension %d", name, d);
        add(line, " %d", gc[d]);
    }
    for (int r = 0; r < size; r++) {
        MPI_CHECK(MPI_Cart_coords(cart, r, ndims, c));
        MPI_CHECK(MPI_Cart_rank(cart, c, &back));
        if (back != r)
            fail("%s: Cart_rank(Cart_coords(%d)) = %d", name, r, back);
    }
    add(line, " shifts");
    for (int d = 0; d < ndims; d++)
        for (int disp = -2; disp <= 2; disp++) {
            int src, dst;
            MPI_CHECK(MPI_Cart_shift(cart, d, disp, &src, &dst));
            if (dst != shifted(rank, ndims, dims, periods, d, disp) ||
                src != shifted(rank, ndims, dims, periods, d, -disp))
                fail("%s: Cart_shift(%d, %d) = %d %d", name, d, disp, src, dst);
            add(line, " %d/%d", src, dst);
        }
    /* Periodic coordinates out of range are shifted into it. */
    for (int d = 0; d < ndims; d++)
        c[d] = periods[d] ? gc[d] + 3 * dims[d] : gc[d];
    MPI_CHECK(MPI_Cart_rank(cart, c, &back));
    if (back != rank)
        fail("%s: Cart_rank of periodic coordinates", name);
    answer(name, "%s", line);
}

/* Topo_test on the world: no topology. */
static void case_world(void)
{
    if (!begin("world"))
        return;
    if (topo_kind(MPI_COMM_WORLD) != MPI_UNDEFINED)
        fail("Topo_test(MPI_COMM_WORLD) is not MPI_UNDEFINED");
    answer("world", "topo %d", topo_kind(MPI_COMM_WORLD) == MPI_UNDEFINED);
    passed();
}

static void case_cart(void)
{
    if (!begin("cart"))
        return;
    for (int nd = 1; nd <= 3; nd++) {
        int dims[3] = {0, 0, 0}, periods[3] = {1, 0, 1};
        MPI_Comm cart;
        char name[32];
        MPI_CHECK(MPI_Dims_create(world_size, nd, dims));
        MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &cart));
        snprintf(name, sizeof name, "cart%dd", nd);
        cart_queries(cart, name, nd, dims, periods);
        int newrank;
        MPI_CHECK(MPI_Cart_map(MPI_COMM_WORLD, nd, dims, periods, &newrank));
        answer(name, "map %s", newrank == MPI_UNDEFINED ? "undefined" : "set");
        MPI_CHECK(MPI_Comm_free(&cart));
    }
    passed();
}

/* A grid smaller than the communicator: the others get MPI_COMM_NULL;
 * a zero-dimensional grid has one process. */
static void case_cart_small(void)
{
    if (!begin("cart_small"))
        return;
    int dims[2] = {world_size > 1 ? world_size - 1 : 1, 1}, periods[2] = {0, 1};
    MPI_Comm cart;
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    if ((cart == MPI_COMM_NULL) != (world_rank >= dims[0]))
        fail("MPI_COMM_NULL for rank %d of a grid of %d", world_rank, dims[0]);
    answer("cart_small", "null %d", cart == MPI_COMM_NULL);
    if (cart != MPI_COMM_NULL) {
        cart_queries(cart, "cart_small_q", 2, dims, periods);
        MPI_CHECK(MPI_Comm_free(&cart));
    } else {
        /* cart_queries gathers on the world: take part. */
        answer("cart_small_q", "%s", "-");
    }
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 0, dims, periods, 0, &cart));
    int nd = -1, size = 0;
    if (cart != MPI_COMM_NULL) {
        MPI_CHECK(MPI_Cartdim_get(cart, &nd));
        MPI_CHECK(MPI_Comm_size(cart, &size));
        MPI_CHECK(MPI_Comm_free(&cart));
    }
    if ((world_rank == 0) != (nd == 0 && size == 1))
        fail("zero-dimensional grid: ndims %d size %d", nd, size);
    answer("cart_zero", "ndims %d size %d", nd, size);
    passed();
}

/* Cart_sub: each subgrid's members, their ranks and collectives on it. */
static void case_cart_sub(void)
{
    if (!begin("cart_sub"))
        return;
    int dims[3] = {0, 0, 0}, periods[3] = {0, 1, 0};
    MPI_Comm cart;
    MPI_CHECK(MPI_Dims_create(world_size, 3, dims));
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    for (int mask = 0; mask < 8; mask++) {
        int remain[3] = {mask & 1, (mask >> 1) & 1, (mask >> 2) & 1};
        int c[3], sd[3], sp[3], sdims[3], speriods[3], n = 0;
        MPI_Comm sub;
        MPI_CHECK(MPI_Cart_sub(cart, remain, &sub));
        coords_of(world_rank, 3, dims, c);
        int key = 0, color = 0, expect_size = 1;
        for (int d = 0; d < 3; d++) {
            if (remain[d]) {
                key = key * dims[d] + c[d];
                sdims[n] = dims[d];
                speriods[n++] = periods[d];
                expect_size *= dims[d];
            } else {
                color = color * dims[d] + c[d];
            }
        }
        char name[32], line[LINE] = "";
        snprintf(name, sizeof name, "cart_sub%d%d%d", remain[0], remain[1],
                 remain[2]);
        if (n == 0) {
            /* As MPICH (its test cartsuball): Cart_create(comm, 0, ...),
             * rank 0 alone gets a zero-dimensional grid. */
            int nd = -1, size = 0;
            if (sub != MPI_COMM_NULL) {
                MPI_CHECK(MPI_Cartdim_get(sub, &nd));
                MPI_CHECK(MPI_Comm_size(sub, &size));
                MPI_CHECK(MPI_Comm_free(&sub));
            }
            if ((world_rank == 0) != (nd == 0 && size == 1))
                fail("Cart_sub to no dimension: ndims %d size %d", nd, size);
            answer(name, "ndims %d size %d", nd, size);
            continue;
        }
        int rank, size, nd;
        MPI_CHECK(MPI_Comm_rank(sub, &rank));
        MPI_CHECK(MPI_Comm_size(sub, &size));
        MPI_CHECK(MPI_Cartdim_get(sub, &nd));
        if (rank != key || size != expect_size || nd != n ||
            topo_kind(sub) != MPI_CART)
            fail("Cart_sub %d%d%d: rank %d size %d ndims %d", remain[0],
                 remain[1], remain[2], rank, size, nd);
        if (n > 0) {
            MPI_CHECK(MPI_Cart_get(sub, n, sd, sp, c));
            for (int d = 0; d < n; d++)
                if (sd[d] != sdims[d] || !!sp[d] != !!speriods[d])
                    fail("Cart_sub: dimension %d", d);
        }
        /* Collectives over the subgrid: the world ranks of its members. */
        long sum = 0, expect = 0, root_world = -1;
        long mine = world_rank;
        MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, sub));
        for (int r = 0; r < world_size; r++) {
            int rc[3], rcolor = 0;
            coords_of(r, 3, dims, rc);
            for (int d = 0; d < 3; d++)
                if (!remain[d])
                    rcolor = rcolor * dims[d] + rc[d];
            if (rcolor == color) {
                expect += r;
                if (root_world < 0)
                    root_world = r;
            }
        }
        long root = rank == 0 ? world_rank : -1;
        MPI_CHECK(MPI_Bcast(&root, 1, MPI_LONG, 0, sub));
        if (sum != expect || root != root_world)
            fail("Cart_sub collectives: sum %ld (%ld), root %ld (%ld)", sum,
                 expect, root, root_world);
        add(line, "rank %d size %d ndims %d sum %ld", rank, size, nd, sum);
        if (n > 0) {
            int src, dst;
            MPI_CHECK(MPI_Cart_shift(sub, 0, 1, &src, &dst));
            add(line, " shift %d/%d", src, dst);
        }
        answer(name, "%s", line);
        MPI_CHECK(MPI_Comm_free(&sub));
    }
    MPI_CHECK(MPI_Comm_free(&cart));
    passed();
}

/* A ring with a chord to node 0 and a self-loop on node 1. */
static void ring_graph(int nnodes, int *index, int *edges)
{
    int e = 0;
    for (int i = 0; i < nnodes; i++) {
        edges[e++] = (i + 1) % nnodes;
        edges[e++] = (i + nnodes - 1) % nnodes;
        if (i != 0)
            edges[e++] = 0;
        if (i == 1)
            edges[e++] = 1;
        index[i] = e;
    }
}

static void graph_queries(MPI_Comm g, const char *name, int nnodes,
                          const int *index, const int *edges)
{
    char line[LINE] = "";
    int n, m, gi[64], ge[256], rank;
    MPI_CHECK(MPI_Comm_rank(g, &rank));
    MPI_CHECK(MPI_Graphdims_get(g, &n, &m));
    MPI_CHECK(MPI_Graph_get(g, 64, 256, gi, ge));
    if (topo_kind(g) != MPI_GRAPH || n != nnodes || m != index[nnodes - 1] ||
        memcmp(gi, index, (size_t)n * sizeof *gi) ||
        memcmp(ge, edges, (size_t)m * sizeof *ge))
        fail("%s: Graphdims_get/Graph_get", name);
    add(line, "rank %d nodes %d edges %d", rank, n, m);
    for (int r = 0; r < n; r++) {
        int count, nb[64], first = r > 0 ? index[r - 1] : 0;
        MPI_CHECK(MPI_Graph_neighbors_count(g, r, &count));
        MPI_CHECK(MPI_Graph_neighbors(g, r, 64, nb));
        if (count != index[r] - first ||
            memcmp(nb, edges + first, (size_t)count * sizeof *nb))
            fail("%s: neighbours of %d", name, r);
        if (r == rank) {
            add(line, " neighbours");
            for (int i = 0; i < count; i++)
                add(line, " %d", nb[i]);
        }
    }
    answer(name, "%s", line);
}

static void case_graph(void)
{
    if (!begin("graph"))
        return;
    int index[64], edges[256];
    for (int nnodes = world_size; nnodes >= world_size - 1 && nnodes > 0;
         nnodes--) {
        MPI_Comm g;
        char name[32];
        snprintf(name, sizeof name, "graph%d", nnodes);
        ring_graph(nnodes, index, edges);
        MPI_CHECK(
            MPI_Graph_create(MPI_COMM_WORLD, nnodes, index, edges, 0, &g));
        if ((g == MPI_COMM_NULL) != (world_rank >= nnodes))
            fail("%s: MPI_COMM_NULL for rank %d", name, world_rank);
        if (g != MPI_COMM_NULL) {
            graph_queries(g, name, nnodes, index, edges);
            MPI_CHECK(MPI_Comm_free(&g));
        } else {
            answer(name, "null");
        }
        int newrank;
        MPI_CHECK(
            MPI_Graph_map(MPI_COMM_WORLD, nnodes, index, edges, &newrank));
        if ((newrank == MPI_UNDEFINED) != (world_rank >= nnodes))
            fail("Graph_map: %d", newrank);
    }
    passed();
}

/* Sorted copy of a list (Dist_graph_create's order is open in MPI and
 * MPICH's depends on message arrival): "v:w" pairs. */
static void add_sorted(char *line, int n, const int *ranks, const int *w)
{
    int pairs[2][64];
    for (int i = 0; i < n; i++) {
        pairs[0][i] = ranks[i];
        pairs[1][i] = w ? w[i] : -1;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (pairs[0][j] < pairs[0][j - 1] ||
                                  (pairs[0][j] == pairs[0][j - 1] &&
                                   pairs[1][j] < pairs[1][j - 1]));
             j--)
            for (int k = 0; k < 2; k++) {
                int t = pairs[k][j];
                pairs[k][j] = pairs[k][j - 1];
                pairs[k][j - 1] = t;
            }
    for (int i = 0; i < n; i++)
        add(line, " %d:%d", pairs[0][i], pairs[1][i]);
}

static void dist_queries(MPI_Comm g, const char *name, int sorted)
{
    char line[LINE] = "";
    int in, out, weighted, src[64], sw[64], dst[64], dw[64];
    MPI_CHECK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
    if (topo_kind(g) != MPI_DIST_GRAPH || in > 64 || out > 64)
        fail("%s: Topo_test/degrees", name);
    for (int i = 0; i < 64; i++)
        sw[i] = dw[i] = -7;
    MPI_CHECK(MPI_Dist_graph_neighbors(g, in, src,
                                       weighted ? sw : MPI_UNWEIGHTED, out, dst,
                                       weighted ? dw : MPI_UNWEIGHTED));
    add(line, "in %d out %d weighted %d sources", in, out, weighted);
    if (sorted) {
        add_sorted(line, in, src, weighted ? sw : NULL);
        add(line, " destinations");
        add_sorted(line, out, dst, weighted ? dw : NULL);
    } else {
        for (int i = 0; i < in; i++)
            add(line, " %d:%d", src[i], weighted ? sw[i] : -1);
        add(line, " destinations");
        for (int i = 0; i < out; i++)
            add(line, " %d:%d", dst[i], weighted ? dw[i] : -1);
    }
    answer(name, "%s", line);
}

/* Rank r's in- and out-neighbours of the test graph: from r-1 and r+2,
 * to r+1 and r-2 (mod size), weights from the edge's ends. */
static int edge_weight(int from, int to)
{
    return 1 + from * 10 + to;
}

static void case_dist_adjacent(void)
{
    if (!begin("dist_adjacent"))
        return;
    int n = world_size, r = world_rank;
    int src[2] = {(r + n - 1) % n, (r + 2) % n};
    int dst[2] = {(r + 1) % n, (r + n - 2) % n};
    int sw[2] = {edge_weight(src[0], r), edge_weight(src[1], r)};
    int dw[2] = {edge_weight(r, dst[0]), edge_weight(r, dst[1])};
    MPI_Comm g;
    MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst,
                                             dw, MPI_INFO_NULL, 0, &g));
    int rank;
    MPI_CHECK(MPI_Comm_rank(g, &rank));
    if (rank != world_rank)
        fail("reorder = 0 changed rank %d to %d", world_rank, rank);
    dist_queries(g, "dist_adjacent_weighted", 0);
    MPI_CHECK(MPI_Comm_free(&g));
    MPI_CHECK(MPI_Dist_graph_create_adjacent(
        MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED,
        MPI_INFO_NULL, 0, &g));
    dist_queries(g, "dist_adjacent_unweighted", 0);
    MPI_CHECK(MPI_Comm_free(&g));
    /* No edges, weighted: MPI_WEIGHTS_EMPTY. */
    int none[1] = {0};
    MPI_CHECK(MPI_Dist_graph_create_adjacent(
        MPI_COMM_WORLD, 0, none, MPI_WEIGHTS_EMPTY, 0, none, MPI_WEIGHTS_EMPTY,
        MPI_INFO_NULL, 0, &g));
    dist_queries(g, "dist_adjacent_empty", 0);
    MPI_CHECK(MPI_Comm_free(&g));
    passed();
}

/* MPI_Dist_graph_create: rank 0 gives the ring edges, every rank gives
 * its own edge to rank (r + 3) % n. */
static void case_dist_create(void)
{
    if (!begin("dist_create"))
        return;
    int n = world_size, r = world_rank;
    int *sources = xmalloc((size_t)n * sizeof(int) + sizeof(int));
    int *degrees = xmalloc((size_t)n * sizeof(int) + sizeof(int));
    int *dst = xmalloc((size_t)n * sizeof(int) + sizeof(int));
    int *w = xmalloc((size_t)n * sizeof(int) + sizeof(int));
    int count = 0;
    if (r == 0)
        for (int i = 0; i < n; i++) {
            sources[count] = i;
            degrees[count] = 1;
            dst[count] = (i + 1) % n;
            w[count++] = edge_weight(i, (i + 1) % n);
        }
    sources[count] = r;
    degrees[count] = 1;
    dst[count] = (r + 3) % n;
    w[count++] = edge_weight(r, (r + 3) % n);
    for (int weighted = 0; weighted < 2; weighted++) {
        MPI_Comm g;
        MPI_CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, count, sources, degrees,
                                        dst, weighted ? w : MPI_UNWEIGHTED,
                                        MPI_INFO_NULL, 0, &g));
        int in, out, wt;
        MPI_CHECK(MPI_Dist_graph_neighbors_count(g, &in, &out, &wt));
        if (in != 2 || out != 2 || wt != weighted)
            fail("Dist_graph_create: in %d out %d weighted %d", in, out, wt);
        dist_queries(
            g, weighted ? "dist_create_weighted" : "dist_create_unweighted", 1);
        MPI_CHECK(MPI_Comm_free(&g));
    }
    free(sources);
    free(degrees);
    free(dst);
    free(w);
    passed();
}

/* MPI_Comm_dup, MPI_Comm_dup_with_info and MPI_Comm_idup keep the
 * topology. */
static void case_dup(void)
{
    if (!begin("dup"))
        return;
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Comm cart, dup;
    MPI_CHECK(MPI_Dims_create(world_size, 2, dims));
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    MPI_CHECK(MPI_Comm_dup(cart, &dup));
    MPI_CHECK(MPI_Comm_free(&cart)); /* the copy stands alone */
    cart_queries(dup, "dup_cart", 2, dims, periods);
    MPI_CHECK(MPI_Comm_free(&dup));
    int index[64], edges[256];
    ring_graph(world_size, index, edges);
    MPI_Comm g;
    MPI_CHECK(
        MPI_Graph_create(MPI_COMM_WORLD, world_size, index, edges, 0, &g));
    MPI_CHECK(MPI_Comm_dup_with_info(g, MPI_INFO_NULL, &dup));
    graph_queries(dup, "dup_graph", world_size, index, edges);
    MPI_CHECK(MPI_Comm_free(&dup));
    MPI_CHECK(MPI_Comm_free(&g));
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    MPI_Request req;
    MPI_CHECK(MPI_Comm_idup(cart, &dup, &req));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Comm_free(&cart));
    cart_queries(dup, "idup_cart", 2, dims, periods);
    MPI_CHECK(MPI_Comm_free(&dup));
    passed();
}

/* Error classes under MPI_ERRORS_RETURN. */
static void case_errors(void)
{
    if (!begin("errors"))
        return;
    int dims[2] = {0, 0}, periods[2] = {0, 1}, c[2], r, s, d;
    MPI_Comm cart, none = MPI_COMM_NULL;
    MPI_CHECK(MPI_Dims_create(world_size, 2, dims));
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    MPI_CHECK(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN));
    char line[LINE] = "";
    c[0] = dims[0];
    c[1] = 0;
    int rc = MPI_Cart_rank(cart, c, &r);
    expect_class(rc, MPI_ERR_ARG, "Cart_rank off a non-periodic border");
    add(line, "cart_rank %d", error_class(rc));
    rc = MPI_Cart_coords(cart, world_size, 2, c);
    expect_class(rc, MPI_ERR_RANK, "Cart_coords of a rank out of range");
    add(line, " cart_coords %d", error_class(rc));
    rc = MPI_Cart_shift(cart, 2, 1, &s, &d);
    expect_class(rc, MPI_ERR_ARG, "Cart_shift along no dimension");
    add(line, " cart_shift %d", error_class(rc));
    rc = MPI_Cartdim_get(MPI_COMM_WORLD, &d);
    expect_class(rc, MPI_ERR_TOPOLOGY, "Cartdim_get on the world");
    add(line, " cartdim_world %d", error_class(rc));
    rc = MPI_Graph_neighbors_count(cart, 0, &d);
    expect_class(rc, MPI_ERR_TOPOLOGY, "Graph_neighbors_count on a grid");
    add(line, " graph_on_cart %d", error_class(rc));
    int big[2] = {world_size, 2};
    rc = MPI_Cart_create(MPI_COMM_WORLD, 2, big, periods, 0, &none);
    expect_class(rc, MPI_ERR_ARG, "Cart_create with too many positions");
    add(line, " cart_too_big %d", error_class(rc));
    rc = MPI_Cart_create(MPI_COMM_WORLD, -1, big, periods, 0, &none);
    expect_class(rc, MPI_ERR_ARG, "Cart_create with negative ndims");
    add(line, " cart_neg_ndims %d", error_class(rc));
    int index[2] = {1, 2}, bad[2] = {1, 7};
    rc = MPI_Graph_create(MPI_COMM_WORLD, 2, index, bad, 0, &none);
    expect_class(rc, MPI_ERR_ARG, "Graph_create with an edge to no node");
    add(line, " graph_bad_edge %d", error_class(rc));
    rc = MPI_Graph_create(MPI_COMM_WORLD, world_size + 1, index, bad, 0, &none);
    expect_class(rc, MPI_ERR_ARG, "Graph_create with too many nodes");
    add(line, " graph_too_big %d", error_class(rc));
    if (none != MPI_COMM_NULL)
        fail("a failed constructor returned a communicator");
    if (multi_site) {
        /* MPICH 4.0.2 accepts these (and then misbehaves); GridColl
         * reports them, so they are checked across sites only. */
        int neg[2] = {2, -1};
        expect_class(MPI_Cart_create(MPI_COMM_WORLD, 2, neg, periods, 0, &none),
                     MPI_ERR_DIMS, "Cart_create with a negative dimension");
        int zero[1] = {0}, self[1] = {world_size};
        expect_class(MPI_Dist_graph_create_adjacent(
                         MPI_COMM_WORLD, 1, self, MPI_UNWEIGHTED, 0, zero,
                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &none),
                     MPI_ERR_ARG, "Dist_graph_create_adjacent, bad source");
        int one[1] = {1}, negw[1] = {-1};
        expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, zero, one, zero,
                                           negw, MPI_INFO_NULL, 0, &none),
                     MPI_ERR_ARG, "Dist_graph_create, negative weight");
        expect_class(MPI_Graph_create(MPI_COMM_WORLD, -1, index, bad, 0, &none),
                     MPI_ERR_ARG, "Graph_create with negative nnodes");
    }
    answer("errors", "%s", line);
    MPI_CHECK(MPI_Comm_free(&cart));
    passed();
}

/* ---- reorder = 1 ----------------------------------------------------------
 */

/* Compact site index of every rank of comm (sites in order). */
static void sites_of(MPI_Comm comm, int size, int *site, int *k, int *site_size)
{
    int map[64];
    for (int s = 0; s < 64; s++)
        map[s] = -1;
    *k = 0;
    for (int r = 0; r < size; r++) {
        int s;
        MPI_CHECK(GridColl_Comm_site_of(comm, r, &s));
        if (map[s] < 0) {
            map[s] = 0;
        }
        site[r] = s;
    }
    for (int s = 0; s < 64; s++)
        if (map[s] == 0) {
            site_size[*k] = 0;
            map[s] = (*k)++;
        }
    for (int r = 0; r < size; r++) {
        site[r] = map[site[r]];
        site_size[site[r]]++;
    }
}

/*
 * The members of `comm` (new ranks) on their sites: each site's members
 * keep their world order, and `part` (site of each new rank) is returned.
 */
static void check_order(MPI_Comm comm, int *part, const char *name)
{
    int size, rank;
    MPI_CHECK(MPI_Comm_size(comm, &size));
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int *world_of = xmalloc((size_t)size * sizeof *world_of);
    MPI_CHECK(
        MPI_Allgather(&world_rank, 1, MPI_INT, world_of, 1, MPI_INT, comm));
    int k, site_size[64];
    sites_of(comm, size, part, &k, site_size);
    for (int a = 0; a < size; a++)
        for (int b = a + 1; b < size; b++)
            if (part[a] == part[b] && world_of[a] > world_of[b])
                fail("%s: ranks %d and %d of one site swapped their order",
                     name, a, b);
    free(world_of);
}

/* Send along every Cartesian shift, check what arrives (byte exact). */
static void shift_exchange(MPI_Comm cart, int ndims)
{
    int rank;
    MPI_CHECK(MPI_Comm_rank(cart, &rank));
    for (int d = 0; d < ndims; d++)
        for (int disp = -1; disp <= 1; disp += 2) {
            int src, dst;
            unsigned char out[300], in[300];
            MPI_CHECK(MPI_Cart_shift(cart, d, disp, &src, &dst));
            for (int i = 0; i < 300; i++)
                out[i] = (unsigned char)(rank * 31 + d * 7 + disp + i);
            memset(in, 0xee, sizeof in);
            MPI_Status status;
            MPI_CHECK(MPI_Sendrecv(out, 300, MPI_BYTE, dst, d, in, 300,
                                   MPI_BYTE, src, d, cart, &status));
            for (int i = 0; src != MPI_PROC_NULL && i < 300; i++)
                if (in[i] != (unsigned char)(src * 31 + d * 7 + disp + i))
                    fail("shift %d/%d: byte %d from %d", d, disp, i, src);
            if (src == MPI_PROC_NULL && in[0] != 0xee)
                fail("shift %d/%d: data from MPI_PROC_NULL", d, disp);
        }
}

/*
 * MPI_Neighbor_alltoall and _alltoallv along the topology under every
 * algorithm of the neighbor table (GridColl_Set_algorithm), byte for
 * byte: block k of rank p (its k-th destination) carries p and k, in the
 * v-form 1 to 4 ints of it.  On a Cartesian grid the block from slot j's
 * neighbour is the one it sent to slot j ^ 1 (MPI-4.0 section 8.6), else
 * blocks from one peer arrive in order.  bundled must refuse (MPI_ERR_ARG)
 * a communicator where no site sends another two blocks.  Multi-site runs
 * only: MPICH pairs duplicate neighbours its own way (nbc_check).
 */
static void neighbor_exchange(MPI_Comm comm, const char *name, int indeg,
                              const int *srcs, int outdeg, const int *dests,
                              int cart)
{
    enum { W = 4 };
    if (!multi_site)
        return;
    int me, sent_as[NB_MAX], reversed[NB_MAX];
    MPI_CHECK(MPI_Comm_rank(comm, &me));
    nb_expect(comm, indeg, srcs, outdeg, dests, sent_as, reversed);
    for (int j = 0; cart && j < indeg; j++)
        sent_as[j] = j ^ 1;
    int bundles = nb_bundles(comm, outdeg, dests);
    int send[NB_MAX * W], recv[NB_MAX * W], scounts[NB_MAX], sdispls[NB_MAX];
    int rcounts[NB_MAX], rdispls[NB_MAX];
    for (int k = 0; k < outdeg; k++) {
        scounts[k] = 1 + (me + k) % W;
        sdispls[k] = k * W;
        for (int e = 0; e < W; e++)
            send[k * W + e] = me * 1000 + k * 10 + e;
    }
    for (int j = 0; j < indeg; j++) {
        rcounts[j] =
            srcs[j] == MPI_PROC_NULL ? 0 : 1 + (srcs[j] + sent_as[j]) % W;
        rdispls[j] = j * W;
    }
    for (int i = 0;; i++) {
        const char *algo = GridColl_Algorithm_name("neighbor", i);
        if (algo == NULL)
            break;
        MPI_CHECK(GridColl_Set_algorithm("neighbor", algo));
        for (int v = 0; v < 2; v++) {
            for (int x = 0; x < NB_MAX * W; x++)
                recv[x] = -1;
            int rc = v ? MPI_Neighbor_alltoallv(send, scounts, sdispls, MPI_INT,
                                                recv, rcounts, rdispls, MPI_INT,
                                                comm)
                       : MPI_Neighbor_alltoall(send, W, MPI_INT, recv, W,
                                               MPI_INT, comm);
            if (strcmp(algo, "bundled") == 0 && !bundles) {
                expect_class(rc, MPI_ERR_ARG, "bundled without two blocks");
                continue;
            }
            mpi_check(rc, name);
            for (int j = 0; j < indeg; j++)
                for (int e = 0; e < W; e++) {
                    int n = srcs[j] == MPI_PROC_NULL ? 0 : v ? rcounts[j] : W;
                    int want =
                        e < n ? srcs[j] * 1000 + sent_as[j] * 10 + e : -1;
                    if (recv[j * W + e] != want)
                        fail("%s: %s %s: slot %d element %d is %d, expected "
                             "%d",
                             name, algo, v ? "alltoallv" : "alltoall", j, e,
                             recv[j * W + e], want);
                }
        }
    }
    MPI_CHECK(GridColl_Set_algorithm("neighbor", NULL));
}

static void reorder_cart_one(int ndims, const int *dims, const int *periods)
{
    char name[64];
    snprintf(name, sizeof name, "reorder_cart%dd", ndims);
    int n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    MPI_Comm cart;
    int newrank;
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 1, &cart));
    MPI_CHECK(MPI_Cart_map(MPI_COMM_WORLD, ndims, dims, periods, &newrank));
    int rank = MPI_UNDEFINED;
    if (cart != MPI_COMM_NULL)
        MPI_CHECK(MPI_Comm_rank(cart, &rank));
    if (rank != newrank)
        fail("%s: Cart_map says %d, Cart_create gave %d", name, newrank, rank);
    /* The cut this layout gets, from topo_reorder.c directly. */
    int *world_site = xmalloc((size_t)world_size * sizeof(int));
    int *part = xmalloc((size_t)n * sizeof(int));
    int *expect = xmalloc((size_t)n * sizeof(int));
    int k, site_size[64];
    sites_of(MPI_COMM_WORLD, n, world_site, &k, site_size);
    struct gc_topo_graph g;
    int64_t want = 0, identity = 0;
    if (gc_topo_cart_graph(ndims, dims, periods, &g) != 0)
        fail("gc_topo_cart_graph");
    identity = gc_topo_cut(&g, world_site);
    if (gc_topo_cart_partition(ndims, dims, periods, k, site_size, world_site,
                               expect, &want) != 0)
        fail("gc_topo_cart_partition");
    if (cart != MPI_COMM_NULL) {
        check_order(cart, part, name);
        int64_t got = gc_topo_cut(&g, part);
        if (got != want || got > identity ||
            memcmp(part, expect, (size_t)n * sizeof *part))
            fail("%s: cut %lld, topo_reorder says %lld (identity %lld)", name,
                 (long long)got, (long long)want, (long long)identity);
        /* coordinates <-> ranks bijective */
        int *seen = calloc((size_t)n, sizeof *seen);
        for (int r = 0; r < n; r++) {
            int c[8], back;
            MPI_CHECK(MPI_Cart_coords(cart, r, ndims, c));
            MPI_CHECK(MPI_Cart_rank(cart, c, &back));
            if (back != r || seen[back]++)
                fail("%s: coordinates of %d map back to %d", name, r, back);
        }
        free(seen);
        shift_exchange(cart, ndims);
        int nbr[2 * 8];
        for (int d = 0; d < ndims; d++)
            MPI_CHECK(MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]));
        neighbor_exchange(cart, name, 2 * ndims, nbr, 2 * ndims, nbr, 1);
        /* rows: collectives on a Cart_sub of the reordered grid */
        int remain[8] = {0};
        remain[ndims - 1] = 1;
        MPI_Comm sub;
        MPI_CHECK(MPI_Cart_sub(cart, remain, &sub));
        long mine = rank, sum = 0, expect_sum = 0;
        int c[8];
        MPI_CHECK(MPI_Cart_coords(cart, rank, ndims, c));
        for (int i = 0; i < dims[ndims - 1]; i++) {
            c[ndims - 1] = i;
            int r;
            MPI_CHECK(MPI_Cart_rank(cart, c, &r));
            expect_sum += r;
        }
        MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, sub));
        long first = mine;
        MPI_CHECK(MPI_Bcast(&first, 1, MPI_LONG, 0, sub));
        c[ndims - 1] = 0;
        int r0;
        MPI_CHECK(MPI_Cart_rank(cart, c, &r0));
        if (sum != expect_sum || first != r0)
            fail("%s: row sum %ld (%ld), bcast %ld (%d)", name, sum, expect_sum,
                 first, r0);
        MPI_CHECK(MPI_Comm_free(&sub));
        /* dup keeps the reordered topology */
        MPI_Comm dup;
        int dr, dc[8];
        MPI_CHECK(MPI_Comm_dup(cart, &dup));
        MPI_CHECK(MPI_Comm_rank(dup, &dr));
        MPI_CHECK(MPI_Cart_coords(dup, dr, ndims, dc));
        MPI_CHECK(MPI_Cart_coords(cart, rank, ndims, c));
        if (dr != rank || topo_kind(dup) != MPI_CART ||
            memcmp(dc, c, (size_t)ndims * sizeof *c))
            fail("%s: dup lost the topology", name);
        MPI_CHECK(MPI_Comm_free(&dup));
        MPI_CHECK(MPI_Comm_free(&cart));
    }
    if (world_rank == 0) {
        printf("CUT %s", name);
        for (int d = 0; d < ndims; d++)
            printf("%s%d%s", d ? "x" : " ", dims[d], periods[d] ? "p" : "");
        printf(" identity %lld reorder %lld\n", (long long)identity,
               (long long)want);
        fflush(stdout);
    }
    gc_topo_graph_free(&g);
    free(world_site);
    free(part);
    free(expect);
}

static void case_reorder_cart(void)
{
    if (!begin("reorder_cart"))
        return;
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
    MPI_CHECK(MPI_Dims_create(world_size, 2, dims));
    reorder_cart_one(2, dims, periods);
    int p[3] = {1, 0, 1}, d3[3] = {0, 0, 0};
    MPI_CHECK(MPI_Dims_create(world_size, 3, d3));
    reorder_cart_one(3, d3, p);
    int line[1] = {world_size};
    reorder_cart_one(1, line, periods);
    passed();
}

/*
 * A distributed graph whose identity order is bad across sites: vertex v
 * talks to the vertices at +-step (mod n), step = n / 2 (rounded), so
 * with sites as rank ranges most edges cross; reordering should bring
 * the pairs together.  Data is exchanged along every edge.
 */
static void case_reorder_dist(void)
{
    if (!begin("reorder_dist"))
        return;
    int n = world_size, r = world_rank, step = n / 2 > 0 ? n / 2 : 1;
    int nb[2] = {(r + step) % n, (r + n - step) % n};
    int w[2] = {3, 3};
    int deg = n > 1 ? 2 : 0;
    MPI_Comm g;
    MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, nb, w, deg,
                                             nb, w, MPI_INFO_NULL, 1, &g));
    int rank, in, out, weighted, src[2], sw[2], dst[2], dw[2];
    MPI_CHECK(MPI_Comm_rank(g, &rank));
    MPI_CHECK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
    MPI_CHECK(MPI_Dist_graph_neighbors(g, 2, src, sw, 2, dst, dw));
    /* New rank v has old rank v's lists (MPI-4.0 §8.5.4). */
    int enb[2] = {(rank + step) % n, (rank + n - step) % n};
    if (in != deg || out != deg || !weighted ||
        (deg && (memcmp(src, enb, sizeof enb) || memcmp(dst, enb, sizeof enb) ||
                 sw[0] != 3 || dw[1] != 3)))
        fail("reorder_dist: rank %d has the wrong lists", rank);
    int *part = xmalloc((size_t)n * sizeof *part);
    check_order(g, part, "reorder_dist");
    int *world_site = xmalloc((size_t)n * sizeof *world_site);
    int k, site_size[64];
    sites_of(MPI_COMM_WORLD, n, world_site, &k, site_size);
    int *es = xmalloc((size_t)(2 * n) * sizeof *es);
    int *ed = xmalloc((size_t)(2 * n) * sizeof *ed);
    int *ew = xmalloc((size_t)(2 * n) * sizeof *ew);
    for (int v = 0; v < n; v++)
        for (int i = 0; i < 2; i++) {
            es[2 * v + i] = v;
            ed[2 * v + i] = i ? (v + n - step) % n : (v + step) % n;
            ew[2 * v + i] = 3;
        }
    struct gc_topo_graph tg;
    int64_t want, got, identity;
    int *expect = xmalloc((size_t)n * sizeof *expect);
    if (gc_topo_graph_from_edges(n, deg ? 2 * n : 0, es, ed, ew, &tg) != 0 ||
        gc_topo_graph_partition(&tg, k, site_size, world_site, expect, &want) !=
            0)
        fail("topo_reorder");
    got = gc_topo_cut(&tg, part);
    identity = gc_topo_cut(&tg, world_site);
    if (got != want || got > identity ||
        memcmp(part, expect, (size_t)n * sizeof *part))
        fail("reorder_dist: cut %lld, topo_reorder says %lld (identity %lld)",
             (long long)got, (long long)want, (long long)identity);
    /* Exchange along the edges: each sends its rank to its destinations. */
    MPI_Request req[4];
    int got_from[2] = {-1, -1};
    for (int i = 0; i < in; i++)
        MPI_CHECK(MPI_Irecv(&got_from[i], 1, MPI_INT, src[i], 5, g, &req[i]));
    for (int i = 0; i < out; i++)
        MPI_CHECK(MPI_Isend(&rank, 1, MPI_INT, dst[i], 5, g, &req[in + i]));
    MPI_Status statuses[4];
    MPI_CHECK(MPI_Waitall(in + out, req, statuses));
    for (int i = 0; i < in; i++)
        if (got_from[i] != src[i])
            fail("reorder_dist: got %d from %d", got_from[i], src[i]);
    neighbor_exchange(g, "reorder_dist", in, src, out, dst, 0);
    if (world_rank == 0) {
        printf("CUT reorder_dist n=%d step %d identity %lld reorder %lld\n", n,
               step, (long long)identity, (long long)want);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Comm_free(&g));
    gc_topo_graph_free(&tg);
    free(part);
    free(world_site);
    free(es);
    free(ed);
    free(ew);
    free(expect);
    passed();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int sites = 1;
    MPI_CHECK(GridColl_Comm_site_count(MPI_COMM_WORLD, &sites));
    multi_site = sites > 1;
    check_setup(world_rank, argc - 1, argv + 1);
    if (world_size > 64)
        fail("at most 64 ranks");
    case_world();
    case_cart();
    case_cart_small();
    case_cart_sub();
    case_graph();
    case_dist_adjacent();
    case_dist_create();
    case_dup();
    case_errors();
    case_reorder_cart();
    case_reorder_dist();
    MPI_Finalize();
    return 0;
}
