/*
 * Process topologies on grid communicators (MPI-4.0 chapter 8): Cartesian
 * (§8.5.1), graph (§8.5.3) and distributed graph (§8.5.4) constructors,
 * their queries (§8.5.5), MPI_Cart_shift (§8.5.6), MPI_Cart_sub (§8.5.7)
 * and the low-level MPI_Cart_map/MPI_Graph_map (§8.5.8).  On a
 * communicator that is not a grid communicator every call is MPICH's.
 *
 * A grid communicator's topology lives in its struct gc_comm (topo): MPICH
 * only sees this site's part of it, so its own topology calls would answer
 * for the wrong communicator.  A constructor is a split of the parent
 * (gc_comm_split_grid: one exchange of colors, keys, errors and a context
 * between the sites) whose keys are the new ranks; a new communicator all
 * of whose members are on this site is MPICH's, and gets MPICH's own
 * topology (reorder = 0 over a split already in the new order), so that
 * every later call on it passes through.
 *
 * Reordering (reorder = 1; docs/algorithms/topology.md, "Method"): the
 * vertices (new ranks) are partitioned among the sites with
 * the site sizes fixed, few edges crossing (topo_reorder.c); within a site
 * the members take the site's vertices in their old order.  The Cartesian
 * and graph cases need only the arguments, which MPI makes equal on every
 * member, and the site map, so MPI_Cart_map and MPI_Graph_map compute the
 * same mapping locally, as MPI-4.0 §8.5.8 requires of them (Cart_create
 * with reorder = true is Cart_map plus a split).  A distributed graph is
 * gathered first (every member's edges to every member).
 *
 * Error classes follow MPICH 4.0.2 where it checks (MPI_ERR_ARG for bad
 * counts, ranks in edge lists and a grid larger than the communicator in
 * MPI_Cart_create, MPI_ERR_DIMS for one in MPI_Cart_map, MPI_ERR_RANK for
 * a rank argument out of range, MPI_ERR_TOPOLOGY for a query of the wrong
 * kind); where it does not (negative dims: MPI_ERR_DIMS; negative nnodes,
 * degrees or weights, out-of-range neighbours in distributed graphs:
 * MPI_ERR_ARG) the error is still reported, through the communicator's
 * error handler.  An argument error on one member fails the constructor
 * on all members (gc_comm_split_grid), instead of leaving them waiting.
 */
#include "comm/topo/gc_topo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/internal_coll.h"
#include "comm/gc_comm_create.h"
#include "comm/gc_group.h"
#include "comm/topo/topo_reorder.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"

/* ---- topology objects ---------------------------------------------------- */

/* A copy of n ints (n may be 0), or NULL when out of memory. */
static int *copy_ints(const int *src, int n)
{
    int *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    if (out != NULL && n > 0)
        memcpy(out, src, (size_t)n * sizeof *out);
    return out;
}

void gc_topo_free(struct gc_topo *t)
{
    if (t == NULL)
        return;
    free(t->dims);
    free(t->periods);
    free(t->index);
    free(t->edges);
    free(t->sources);
    free(t->sourceweights);
    free(t->destinations);
    free(t->destweights);
    free(t->nbr.sources);
    free(t->nbr.destinations);
    gc_plan_free(&t->nbr.plan);
    free(t);
}

/* A topology goes with the last reference to its communicator, after the
 * operations still pending on it. */
static void topo_destroy(struct gc_comm *c)
{
    gc_topo_free(c->topo);
    c->topo = NULL;
    c->neighborhood = NULL;
}

static int topo_dup(const struct gc_comm *from, struct gc_comm *to);

static const struct gc_comm_part topo_part = {
    .name = "topology", .destroy = topo_destroy, .dup = topo_dup};

/* Give grid communicator c the topology t. */
static void topo_attach(struct gc_comm *c, struct gc_topo *t)
{
    c->topo = t;
    c->neighborhood = &t->nbr;
    gc_comm_attach(c, &topo_part);
}

static void cart_coords(const struct gc_topo *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* The rank `disp` steps from `rank` along `dir`, MPI_PROC_NULL off a
 * non-periodic border (MPI-4.0 §8.5.6). */
static int cart_step(const struct gc_topo *t, int rank, int dir, int disp)
{
    int64_t stride = 1;
    for (int d = t->ndims - 1; d > dir; d--)
        stride *= t->dims[d];
    int64_t coord = (rank / stride) % t->dims[dir];
    int64_t moved = coord + disp;
    if (moved < 0 || moved >= t->dims[dir]) {
        if (!t->periods[dir])
            return MPI_PROC_NULL;
        moved %= t->dims[dir];
        if (moved < 0)
            moved += t->dims[dir];
    }
    return (int)(rank + (moved - coord) * stride);
}

/* The neighbour lists of member `rank`, as the neighbourhood
 * collectives take them (coll_neighborhood). */
static int neighbors_init(struct gc_topo *t, int rank)
{
    int n = 0;
    t->nbr.cart = t->kind == MPI_CART;
    switch (t->kind) {
    case MPI_CART:
        /* MPI-4.0 §8.6: per dimension the source then the destination of
         * MPI_Cart_shift(dim, 1). */
        t->nbr.in = t->nbr.out = 2 * t->ndims;
        t->nbr.sources = malloc((size_t)(2 * t->ndims + 1) * sizeof(int));
        if (t->nbr.sources == NULL)
            return -1;
        for (int d = 0; d < t->ndims; d++) {
            t->nbr.sources[2 * d] = cart_step(t, rank, d, -1);
            t->nbr.sources[2 * d + 1] = cart_step(t, rank, d, 1);
        }
        t->nbr.destinations = copy_ints(t->nbr.sources, t->nbr.in);
        break;
    case MPI_GRAPH: {
        int first = rank > 0 ? t->index[rank - 1] : 0;
        n = t->index[rank] - first;
        t->nbr.in = t->nbr.out = n;
        t->nbr.sources = copy_ints(t->edges + first, n);
        t->nbr.destinations = copy_ints(t->edges + first, n);
        break;
    }
    default:
        t->nbr.in = t->indegree;
        t->nbr.out = t->outdegree;
        t->nbr.sources = copy_ints(t->sources, t->indegree);
        t->nbr.destinations = copy_ints(t->destinations, t->outdegree);
        break;
    }
    return t->nbr.sources != NULL && t->nbr.destinations != NULL ? 0 : -1;
}

/*
 * The site-pair plan of member `me` of grid communicator g: from the
 * whole graph `whole` (a distributed graph's, gathered by its
 * constructor; its site left to fill), or from t's description.  The
 * Cartesian receives are posted +1 neighbour first in each dimension, as
 * coll/neighbor/neighbor_grid_direct.c posts them.
 */
static int plan_init(struct gc_topo *t, const struct gc_comm *g,
                     const struct gc_plan_graph *whole)
{
    struct gc_plan_graph graph = {.n = g->size, .site = g->site};
    int *index = NULL, *out = NULL, *in = NULL, status = -1;
    if (whole != NULL) {
        graph = *whole;
        graph.site = g->site;
        return gc_plan_build(&graph, g->rank, &t->nbr.plan);
    }
    if (t->kind == MPI_GRAPH) {
        index = malloc((size_t)(g->size + 1) * sizeof *index);
        if (index == NULL)
            return -1;
        index[0] = 0;
        memcpy(index + 1, t->index, (size_t)g->size * sizeof *index);
        graph.out_index = graph.in_index = index;
        graph.out_adj = graph.in_adj = t->edges;
        status = gc_plan_build(&graph, g->rank, &t->nbr.plan);
        free(index);
        return status;
    }
    int degree = 2 * t->ndims;
    size_t entries = (size_t)g->size * (size_t)degree + 1;
    index = malloc((size_t)(g->size + 1) * sizeof *index);
    out = malloc(entries * sizeof *out);
    in = malloc(entries * sizeof *in);
    if (index != NULL && out != NULL && in != NULL) {
        for (int r = 0; r <= g->size; r++)
            index[r] = r * degree;
        for (int r = 0; r < g->size; r++)
            for (int d = 0; d < t->ndims; d++) {
                int *o = out + (size_t)r * (size_t)degree + 2 * d;
                int *i = in + (size_t)r * (size_t)degree + 2 * d;
                o[0] = i[1] = cart_step(t, r, d, -1);
                o[1] = i[0] = cart_step(t, r, d, 1);
            }
        graph.out_index = graph.in_index = index;
        graph.out_adj = out;
        graph.in_adj = in;
        status = gc_plan_build(&graph, g->rank, &t->nbr.plan);
    }
    free(index);
    free(out);
    free(in);
    return status;
}

static struct gc_topo *topo_copy(const struct gc_topo *s)
{
    struct gc_topo *t = malloc(sizeof *t);
    if (t == NULL)
        return NULL;
    *t = *s;
    int edges =
        s->kind == MPI_GRAPH && s->nnodes > 0 ? s->index[s->nnodes - 1] : 0;
    t->dims = s->dims ? copy_ints(s->dims, s->ndims) : NULL;
    t->periods = s->periods ? copy_ints(s->periods, s->ndims) : NULL;
    t->index = s->index ? copy_ints(s->index, s->nnodes) : NULL;
    t->edges = s->edges ? copy_ints(s->edges, edges) : NULL;
    t->sources = s->sources ? copy_ints(s->sources, s->indegree) : NULL;
    t->sourceweights =
        s->sourceweights ? copy_ints(s->sourceweights, s->indegree) : NULL;
    t->destinations =
        s->destinations ? copy_ints(s->destinations, s->outdegree) : NULL;
    t->destweights =
        s->destweights ? copy_ints(s->destweights, s->outdegree) : NULL;
    t->nbr.sources = copy_ints(s->nbr.sources, s->nbr.in);
    t->nbr.destinations = copy_ints(s->nbr.destinations, s->nbr.out);
    int plan_failed = gc_plan_copy(&s->nbr.plan, &t->nbr.plan) != 0;
    if (plan_failed || (s->dims && !t->dims) || (s->periods && !t->periods) ||
        (s->index && !t->index) || (s->edges && !t->edges) ||
        (s->sources && !t->sources) ||
        (s->sourceweights && !t->sourceweights) ||
        (s->destinations && !t->destinations) ||
        (s->destweights && !t->destweights) || !t->nbr.sources ||
        !t->nbr.destinations) {
        gc_topo_free(t);
        return NULL;
    }
    return t;
}

static int topo_dup(const struct gc_comm *from, struct gc_comm *to)
{
    struct gc_topo *copy = topo_copy(from->topo);
    if (copy == NULL)
        return MPI_ERR_NO_MEM;
    topo_attach(to, copy);
    return MPI_SUCCESS;
}

/* ---- shared steps ----------------------------------------------------------
 */

/* The topology of grid communicator `comm` if it has one of `kind`
 * (0: any), else the error reported. */
static int topo_of(struct gc_comm *c, int kind, const char *function,
                   struct gc_topo **t)
{
    *t = c->topo;
    if (*t != NULL && (kind == 0 || (*t)->kind == kind))
        return MPI_SUCCESS;
    return gc_error(c->handle, MPI_ERR_TOPOLOGY, function,
                    *t == NULL ? "the communicator has no topology"
                               : "the communicator has another topology");
}

static struct gc_topo *topo_new(int kind)
{
    struct gc_topo *t = calloc(1, sizeof *t);
    if (t != NULL)
        t->kind = kind;
    return t;
}

/*
 * Compact site numbers of members 0..n-1 of c (the sites that have one
 * of them, in site order) and those sites' sizes; *k the site count.
 */
static void member_sites(const struct gc_comm *c, int n, int *member_site,
                         int *site_size, int *k)
{
    int compact[GC_MAX_SITES];
    for (int s = 0; s < GC_MAX_SITES; s++)
        compact[s] = -1;
    for (int r = 0; r < n; r++)
        compact[c->site[r]] = 0;
    *k = 0;
    for (int s = 0; s < GC_MAX_SITES; s++)
        if (compact[s] == 0) {
            site_size[*k] = 0;
            compact[s] = (*k)++;
        }
    for (int r = 0; r < n; r++) {
        member_site[r] = compact[c->site[r]];
        site_size[member_site[r]]++;
    }
}

/*
 * New ranks from a partition of the first n members' vertices:
 * new_rank[r] for every member r of c (MPI_UNDEFINED from n on).
 * `partition` is NULL for the identity.
 */
typedef int partition_fn(const void *arg, int k, const int *site_size,
                         const int *identity, int *part);

static int layout(const struct gc_comm *c, int n, partition_fn *partition,
                  const void *arg, int *new_rank)
{
    int status = -1, k = 0, site_size[GC_MAX_SITES];
    int *member_site = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    int *part = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    for (int r = 0; r < c->size; r++)
        new_rank[r] = r < n ? r : MPI_UNDEFINED;
    if (member_site == NULL || part == NULL)
        goto cleanup;
    status = 0;
    if (partition == NULL || n <= 1)
        goto cleanup;
    member_sites(c, n, member_site, site_size, &k);
    if (k <= 1)
        goto cleanup; /* one site: nothing is cut */
    status = -1;
    if (partition(arg, k, site_size, member_site, part) == 0 &&
        gc_topo_assign(n, k, part, member_site, new_rank) == 0)
        status = 0;
cleanup:
    free(member_site);
    free(part);
    return status;
}

/*
 * The end of every constructor: `*newcomm` is what gc_comm_split_grid
 * made.  A grid communicator gets `t` (which this function owns from now
 * on) and its site-pair plan (from `whole`, a distributed graph's
 * vertices' lists, else from t); one all of whose members are on this
 * site gets MPICH's topology of the same description, `make` called on a
 * communicator already in the new rank order, which replaces it.
 */
typedef int make_fn(MPI_Comm local, const struct gc_topo *t, MPI_Comm *out);

static int finish(struct gc_comm *parent, struct gc_topo *t, make_fn *make,
                  const struct gc_plan_graph *whole, MPI_Comm *newcomm,
                  const char *function)
{
    int status = MPI_SUCCESS;
    struct gc_comm *g = gc_comm_find(*newcomm);
    if (*newcomm == MPI_COMM_NULL)
        goto cleanup;
    if (g != NULL) {
        if (neighbors_init(t, g->rank) != 0 || plan_init(t, g, whole) != 0) {
            PMPI_Comm_free(newcomm);
            gc_comm_release(g);
            status = gc_error(parent->handle, MPI_ERR_NO_MEM, function,
                              "out of memory");
            goto cleanup;
        }
        topo_attach(g, t);
        return MPI_SUCCESS;
    }
    MPI_Comm local = *newcomm;
    unsigned held = gc_block_begin();
    status = make(local, t, newcomm);
    gc_block_end(held);
    PMPI_Comm_free(&local);
    if (status != MPI_SUCCESS)
        *newcomm = MPI_COMM_NULL;
cleanup:
    gc_topo_free(t);
    return status;
}

/*
 * A constructor's split and finish: this member becomes rank `key` of the
 * communicator of `color` (MPI_UNDEFINED: none) with topology `t` (owned
 * from now on; NULL when `error`), *newcomm set once the split worked.
 */
static int split_finish(struct gc_comm *c, int color, int key, int error,
                        struct gc_topo *t, make_fn *make,
                        const struct gc_plan_graph *whole, MPI_Comm *newcomm,
                        const char *function)
{
    MPI_Comm made = MPI_COMM_NULL;
    int status = gc_comm_split_grid(c, color, key, error, &made, function);
    if (status != MPI_SUCCESS) {
        gc_topo_free(t);
        return status;
    }
    status = finish(c, t, make, whole, &made, function);
    *newcomm = made;
    return status;
}

/* ---- Cartesian (MPI-4.0 §8.5.1, §8.5.5-8.5.8) ------------------------------
 */

/* Arguments of MPI_Cart_create/MPI_Cart_map; *nnodes the grid's size.
 * A grid larger than the communicator is `too_big` (MPICH: MPI_ERR_ARG
 * in Cart_create, MPI_ERR_DIMS in Cart_map). */
static int cart_check(struct gc_comm *c, int ndims, const int *dims,
                      const int *periods, int too_big, const char *function,
                      int *nnodes)
{
    int64_t size = 1;
    *nnodes = 0;
    if (ndims < 0)
        return gc_error(c->handle, MPI_ERR_ARG, function, "ndims is negative");
    if (ndims > 0 && (dims == NULL || periods == NULL))
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "dims or periods is NULL");
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 0)
            return gc_error(c->handle, MPI_ERR_DIMS, function,
                            "a dimension is negative");
        size *= dims[d];
        if (size > c->size)
            return gc_error(c->handle, too_big, function,
                            "the grid has more positions than the "
                            "communicator has processes");
    }
    *nnodes = (int)size;
    return MPI_SUCCESS;
}

struct cart_args {
    int ndims;
    const int *dims, *periods;
};

static int cart_partition(const void *arg, int k, const int *site_size,
                          const int *identity, int *part)
{
    const struct cart_args *a = arg;
    int64_t cut;
    return gc_topo_cart_partition(a->ndims, a->dims, a->periods, k, site_size,
                                  identity, part, &cut);
}

static struct gc_topo *cart_new(int ndims, const int *dims, const int *periods)
{
    struct gc_topo *t = topo_new(MPI_CART);
    if (t == NULL)
        return NULL;
    t->ndims = ndims;
    t->dims = copy_ints(dims, ndims);
    t->periods = malloc((size_t)(ndims > 0 ? ndims : 1) * sizeof(int));
    if (t->dims == NULL || t->periods == NULL) {
        gc_topo_free(t);
        return NULL;
    }
    for (int d = 0; d < ndims; d++)
        t->periods[d] = periods[d] != 0;
    return t;
}

static int make_cart(MPI_Comm local, const struct gc_topo *t, MPI_Comm *out)
{
    return PMPI_Cart_create(local, t->ndims, t->dims, t->periods, 0, out);
}

/* The new rank of every member of c (MPI_UNDEFINED: not in the grid). */
static int cart_layout(struct gc_comm *c, int ndims, const int *dims,
                       const int *periods, int nnodes, int reorder,
                       const char *function, int **new_rank)
{
    struct cart_args a = {ndims, dims, periods};
    *new_rank = malloc((size_t)c->size * sizeof **new_rank);
    if (*new_rank == NULL ||
        layout(c, nnodes, reorder ? cart_partition : NULL, &a, *new_rank))
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    return MPI_SUCCESS;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[],
                    const int periods[], int reorder, MPI_Comm *comm_cart)
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_create";
    struct gc_comm *c = GC_FIND(comm_old);
    if (c == NULL)
        return PMPI_Cart_create(comm_old, ndims, dims, periods, reorder,
                                comm_cart);
    struct gc_topo *t = NULL;
    int *new_rank = NULL, nnodes = 0, color = MPI_UNDEFINED, key = 0;
    int error = comm_cart == NULL ? gc_error(comm_old, MPI_ERR_ARG, function,
                                             "comm_cart is NULL")
                                  : cart_check(c, ndims, dims, periods,
                                               MPI_ERR_ARG, function, &nnodes);
    if (error == MPI_SUCCESS)
        error = cart_layout(c, ndims, dims, periods, nnodes, reorder, function,
                            &new_rank);
    if (error == MPI_SUCCESS && (t = cart_new(ndims, dims, periods)) == NULL)
        error = gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    if (error == MPI_SUCCESS && new_rank[c->rank] != MPI_UNDEFINED) {
        color = 0;
        key = new_rank[c->rank];
    }
    int status = split_finish(c, color, key, error, t, make_cart, NULL,
                              comm_cart, function);
    free(new_rank);
    return status;
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[],
                 const int periods[], int *newrank)
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_map";
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Cart_map(comm, ndims, dims, periods, newrank);
    int *new_rank = NULL, nnodes;
    int status = newrank == NULL
                     ? gc_error(comm, MPI_ERR_ARG, function, "newrank is NULL")
                     : cart_check(c, ndims, dims, periods, MPI_ERR_DIMS,
                                  function, &nnodes);
    if (status == MPI_SUCCESS)
        status = cart_layout(c, ndims, dims, periods, nnodes, 1, function,
                             &new_rank);
    if (status == MPI_SUCCESS)
        *newrank = new_rank[c->rank];
    free(new_rank);
    return status;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    GC_ENTER();
    static const char function[] = "MPI_Cartdim_get";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Cartdim_get(comm, ndims);
    int status = topo_of(c, MPI_CART, function, &t);
    if (status == MPI_SUCCESS && ndims == NULL)
        status = gc_error(comm, MPI_ERR_ARG, function, "ndims is NULL");
    if (status == MPI_SUCCESS)
        *ndims = t->ndims;
    return status;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[],
                 int coords[])
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_get";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Cart_get(comm, maxdims, dims, periods, coords);
    int status = topo_of(c, MPI_CART, function, &t);
    if (status == MPI_SUCCESS && maxdims < 0)
        status = gc_error(comm, MPI_ERR_ARG, function, "maxdims is negative");
    if (status != MPI_SUCCESS)
        return status;
    /* As MPICH: a short array gets the first maxdims entries. */
    int n = maxdims < t->ndims ? maxdims : t->ndims;
    int *mine = malloc((size_t)(t->ndims > 0 ? t->ndims : 1) * sizeof *mine);
    if (mine == NULL)
        return gc_error(comm, MPI_ERR_NO_MEM, function, "out of memory");
    cart_coords(t, c->rank, mine);
    for (int d = 0; d < n; d++) {
        dims[d] = t->dims[d];
        periods[d] = t->periods[d];
        coords[d] = mine[d];
    }
    free(mine);
    return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_rank";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Cart_rank(comm, coords, rank);
    int status = topo_of(c, MPI_CART, function, &t);
    if (status == MPI_SUCCESS && (rank == NULL || (t->ndims && !coords)))
        status =
            gc_error(comm, MPI_ERR_ARG, function, "coords or rank is NULL");
    if (status != MPI_SUCCESS)
        return status;
    int64_t r = 0;
    for (int d = 0; d < t->ndims; d++) {
        int64_t x = coords[d];
        /* MPI-4.0 §8.5.5: out of range is erroneous unless periodic,
         * where it is shifted back into range. */
        if (x < 0 || x >= t->dims[d]) {
            if (!t->periods[d])
                return gc_error(comm, MPI_ERR_ARG, function,
                                "a coordinate is out of range in a "
                                "non-periodic dimension");
            x %= t->dims[d];
            if (x < 0)
                x += t->dims[d];
        }
        r = r * t->dims[d] + x;
    }
    *rank = (int)r;
    return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_coords";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Cart_coords(comm, rank, maxdims, coords);
    int status = topo_of(c, MPI_CART, function, &t);
    if (status == MPI_SUCCESS && (rank < 0 || rank >= c->size))
        status = gc_error(comm, MPI_ERR_RANK, function, "invalid rank");
    if (status == MPI_SUCCESS && maxdims < t->ndims)
        status = gc_error(comm, MPI_ERR_ARG, function,
                          "maxdims is smaller than the number of "
                          "dimensions");
    if (status == MPI_SUCCESS)
        cart_coords(t, rank, coords);
    return status;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
                   int *rank_dest)
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_shift";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Cart_shift(comm, direction, disp, rank_source, rank_dest);
    int status = topo_of(c, MPI_CART, function, &t);
    if (status != MPI_SUCCESS)
        return status;
    if (t->ndims == 0) /* as MPICH: no dimension to shift along */
        return gc_error(comm, MPI_ERR_TOPOLOGY, function,
                        "the Cartesian topology has no dimension");
    if (direction < 0 || direction >= t->ndims)
        return gc_error(comm, MPI_ERR_ARG, function,
                        "direction is not a dimension");
    if (rank_source == NULL || rank_dest == NULL)
        return gc_error(comm, MPI_ERR_ARG, function,
                        "rank_source or rank_dest is NULL");
    *rank_dest = cart_step(t, c->rank, direction, disp);
    *rank_source = cart_step(t, c->rank, direction, -disp);
    return MPI_SUCCESS;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    GC_ENTER();
    static const char function[] = "MPI_Cart_sub";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t, *sub = NULL;
    if (c == NULL)
        return PMPI_Cart_sub(comm, remain_dims, newcomm);
    int color = 0, key = 0, nsub = 0;
    int *dims = NULL, *periods = NULL, *mine = NULL;
    MPI_Comm made = MPI_COMM_NULL;
    int error = topo_of(c, MPI_CART, function, &t);
    if (error == MPI_SUCCESS &&
        (newcomm == NULL || (t->ndims > 0 && remain_dims == NULL)))
        error = gc_error(comm, MPI_ERR_ARG, function,
                         "remain_dims or newcomm is NULL");
    if (error == MPI_SUCCESS) {
        size_t bytes = (size_t)(t->ndims > 0 ? t->ndims : 1) * sizeof(int);
        dims = malloc(bytes);
        periods = malloc(bytes);
        mine = malloc(bytes);
        if (dims == NULL || periods == NULL || mine == NULL)
            error = gc_error(comm, MPI_ERR_NO_MEM, function, "out of memory");
    }
    if (error == MPI_SUCCESS) {
        /* MPI-4.0 §8.5.7: members agreeing in the dropped coordinates
         * form one subgrid, numbered row-major in the kept ones. */
        cart_coords(t, c->rank, mine);
        for (int d = 0; d < t->ndims; d++) {
            if (remain_dims[d]) {
                key = key * t->dims[d] + mine[d];
                dims[nsub] = t->dims[d];
                periods[nsub++] = t->periods[d];
            } else {
                color = color * t->dims[d] + mine[d];
            }
        }
        /* No dimension left: as MPICH (and MPICH's test cartsuball),
         * MPI_Cart_create(comm, 0, ...): rank 0 alone gets a
         * zero-dimensional grid, the others MPI_COMM_NULL. */
        if (nsub == 0)
            color = c->rank == 0 ? 0 : MPI_UNDEFINED;
        if ((sub = cart_new(nsub, dims, periods)) == NULL)
            error = gc_error(comm, MPI_ERR_NO_MEM, function, "out of memory");
    }
    int status = gc_comm_split_grid(c, color, key, error, &made, function);
    if (status == MPI_SUCCESS) {
        status = finish(c, sub, make_cart, NULL, &made, function);
        sub = NULL;
        *newcomm = made;
    }
    gc_topo_free(sub);
    free(dims);
    free(periods);
    free(mine);
    return status;
}

/* ---- graph (MPI-4.0 §8.5.3) ------------------------------------------------
 */

static int graph_check(struct gc_comm *c, int nnodes, const int *index,
                       const int *edges, const char *function)
{
    if (nnodes < 0)
        return gc_error(c->handle, MPI_ERR_ARG, function, "nnodes is negative");
    if (nnodes > c->size)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "the graph has more nodes than the communicator "
                        "has processes");
    if (nnodes > 0 && index == NULL)
        return gc_error(c->handle, MPI_ERR_ARG, function, "index is NULL");
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i > 0 ? index[i - 1] : 0))
            return gc_error(c->handle, MPI_ERR_ARG, function,
                            "index is not non-decreasing from 0");
    int nedges = nnodes > 0 ? index[nnodes - 1] : 0;
    if (nedges > 0 && edges == NULL)
        return gc_error(c->handle, MPI_ERR_ARG, function, "edges is NULL");
    /* Self-loops and repeated edges are allowed (MPI-4.0 §8.5.3). */
    for (int e = 0; e < nedges; e++)
        if (edges[e] < 0 || edges[e] >= nnodes)
            return gc_error(c->handle, MPI_ERR_ARG, function,
                            "an edge names a node that does not exist");
    return MPI_SUCCESS;
}

struct graph_args {
    int nnodes;
    const int *index, *edges;
};

static int graph_partition(const void *arg, int k, const int *site_size,
                           const int *identity, int *part)
{
    const struct graph_args *a = arg;
    struct gc_topo_graph g;
    int nedges = a->index[a->nnodes - 1], status = -1;
    int *src = malloc((size_t)(nedges > 0 ? nedges : 1) * sizeof *src);
    int64_t cut;
    if (src != NULL) {
        for (int v = 0, e = 0; v < a->nnodes; v++)
            for (; e < a->index[v]; e++)
                src[e] = v;
        if (gc_topo_graph_from_edges(a->nnodes, nedges, src, a->edges, NULL,
                                     &g) == 0) {
            status =
                gc_topo_graph_partition(&g, k, site_size, identity, part, &cut);
            gc_topo_graph_free(&g);
        }
    }
    free(src);
    return status;
}

static int graph_layout(struct gc_comm *c, const struct graph_args *a,
                        int reorder, const char *function, int **new_rank)
{
    *new_rank = malloc((size_t)c->size * sizeof **new_rank);
    if (*new_rank == NULL ||
        layout(c, a->nnodes, reorder ? graph_partition : NULL, a, *new_rank))
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    return MPI_SUCCESS;
}

static int make_graph(MPI_Comm local, const struct gc_topo *t, MPI_Comm *out)
{
    return PMPI_Graph_create(local, t->nnodes, t->index, t->edges, 0, out);
}

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[],
                     const int edges[], int reorder, MPI_Comm *comm_graph)
{
    GC_ENTER();
    static const char function[] = "MPI_Graph_create";
    struct gc_comm *c = GC_FIND(comm_old);
    if (c == NULL)
        return PMPI_Graph_create(comm_old, nnodes, index, edges, reorder,
                                 comm_graph);
    struct graph_args a = {nnodes, index, edges};
    struct gc_topo *t = NULL;
    int *new_rank = NULL, color = MPI_UNDEFINED, key = 0;
    int error =
        comm_graph == NULL
            ? gc_error(comm_old, MPI_ERR_ARG, function, "comm_graph is NULL")
            : graph_check(c, nnodes, index, edges, function);
    if (error == MPI_SUCCESS)
        error = graph_layout(c, &a, reorder, function, &new_rank);
    if (error == MPI_SUCCESS) {
        int nedges = nnodes > 0 ? index[nnodes - 1] : 0;
        t = topo_new(MPI_GRAPH);
        if (t != NULL) {
            t->nnodes = nnodes;
            t->index = copy_ints(index, nnodes);
            t->edges = copy_ints(edges, nedges);
        }
        if (t == NULL || t->index == NULL || t->edges == NULL)
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    if (error == MPI_SUCCESS && new_rank[c->rank] != MPI_UNDEFINED) {
        color = 0;
        key = new_rank[c->rank];
    }
    int status = split_finish(c, color, key, error, t, make_graph, NULL,
                              comm_graph, function);
    free(new_rank);
    return status;
}

int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[],
                  const int edges[], int *newrank)
{
    GC_ENTER();
    static const char function[] = "MPI_Graph_map";
    struct gc_comm *c = gc_comm_find(comm);
    if (c == NULL)
        return PMPI_Graph_map(comm, nnodes, index, edges, newrank);
    struct graph_args a = {nnodes, index, edges};
    int *new_rank = NULL;
    int status = newrank == NULL
                     ? gc_error(comm, MPI_ERR_ARG, function, "newrank is NULL")
                     : graph_check(c, nnodes, index, edges, function);
    if (status == MPI_SUCCESS)
        status = graph_layout(c, &a, 1, function, &new_rank);
    if (status == MPI_SUCCESS)
        *newrank = new_rank[c->rank];
    free(new_rank);
    return status;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    GC_ENTER();
    static const char function[] = "MPI_Graphdims_get";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Graphdims_get(comm, nnodes, nedges);
    int status = topo_of(c, MPI_GRAPH, function, &t);
    if (status == MPI_SUCCESS && (nnodes == NULL || nedges == NULL))
        status =
            gc_error(comm, MPI_ERR_ARG, function, "nnodes or nedges is NULL");
    if (status == MPI_SUCCESS) {
        *nnodes = t->nnodes;
        *nedges = t->nnodes > 0 ? t->index[t->nnodes - 1] : 0;
    }
    return status;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[],
                  int edges[])
{
    GC_ENTER();
    static const char function[] = "MPI_Graph_get";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Graph_get(comm, maxindex, maxedges, index, edges);
    int status = topo_of(c, MPI_GRAPH, function, &t);
    if (status != MPI_SUCCESS)
        return status;
    int nedges = t->nnodes > 0 ? t->index[t->nnodes - 1] : 0;
    if (maxindex < t->nnodes || maxedges < nedges)
        return gc_error(comm, MPI_ERR_ARG, function,
                        "maxindex or maxedges is too small");
    memcpy(index, t->index, (size_t)t->nnodes * sizeof *index);
    memcpy(edges, t->edges, (size_t)nedges * sizeof *edges);
    return MPI_SUCCESS;
}

/* Node `rank`'s slice of the edge list; the error reported. */
static int graph_slice(struct gc_comm *c, int rank, const char *function,
                       const int **list, int *count)
{
    struct gc_topo *t;
    int status = topo_of(c, MPI_GRAPH, function, &t);
    if (status != MPI_SUCCESS)
        return status;
    if (rank < 0 || rank >= t->nnodes)
        return gc_error(c->handle, MPI_ERR_RANK, function, "invalid rank");
    int first = rank > 0 ? t->index[rank - 1] : 0;
    *list = t->edges + first;
    *count = t->index[rank] - first;
    return MPI_SUCCESS;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    GC_ENTER();
    static const char function[] = "MPI_Graph_neighbors_count";
    struct gc_comm *c = gc_comm_find(comm);
    const int *list = NULL;
    int count = 0;
    if (c == NULL)
        return PMPI_Graph_neighbors_count(comm, rank, nneighbors);
    int status = graph_slice(c, rank, function, &list, &count);
    if (status == MPI_SUCCESS)
        *nneighbors = count;
    return status;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors,
                        int neighbors[])
{
    GC_ENTER();
    static const char function[] = "MPI_Graph_neighbors";
    struct gc_comm *c = gc_comm_find(comm);
    const int *list = NULL;
    int count = 0;
    if (c == NULL)
        return PMPI_Graph_neighbors(comm, rank, maxneighbors, neighbors);
    int status = graph_slice(c, rank, function, &list, &count);
    if (status == MPI_SUCCESS && maxneighbors < 0)
        status =
            gc_error(comm, MPI_ERR_ARG, function, "maxneighbors is negative");
    /* As MPICH: a short array gets the first maxneighbors entries. */
    if (status == MPI_SUCCESS)
        memcpy(neighbors, list,
               (size_t)(maxneighbors < count ? maxneighbors : count) *
                   sizeof *neighbors);
    return status;
}

/* ---- distributed graph (MPI-4.0 §8.5.4) ------------------------------------
 */

/* One adjacency list: `n` ranks of c, weights (MPI_UNWEIGHTED, or
 * MPI_WEIGHTS_EMPTY only when n is 0) non-negative. */
static int adjacency_check(struct gc_comm *c, int n, const int *ranks,
                           const int *weights, const char *what,
                           const char *function)
{
    if (n < 0)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "a degree is negative");
    if (n > 0 && ranks == NULL)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "a neighbour list is NULL");
    if (n > 0 && weights == MPI_WEIGHTS_EMPTY)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "MPI_WEIGHTS_EMPTY with a degree above 0");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= c->size)
            return gc_error(c->handle, MPI_ERR_ARG, function, "%s", what);
        if (weights != MPI_UNWEIGHTED && weights != NULL && weights[i] < 0)
            return gc_error(c->handle, MPI_ERR_ARG, function,
                            "a weight is negative");
    }
    if (n > 0 && weights == NULL)
        return gc_error(c->handle, MPI_ERR_ARG, function,
                        "weights is NULL (MPI_UNWEIGHTED?)");
    return MPI_SUCCESS;
}

/* What each member tells the others about its part of a distributed
 * graph, before (and, with reorder = 0 for the adjacent form, instead
 * of) the edges themselves. */
struct dist_header {
    int32_t error;    /* this member found its arguments wrong */
    int32_t reorder;  /* any member asking reorders for all */
    int32_t weighted; /* its weights were not MPI_UNWEIGHTED */
    int32_t count;    /* ints of its edge lists */
};

/* Every member's header to every member (*headers: c->size entries). */
static int dist_headers(struct gc_comm *c, const struct dist_header *mine,
                        struct dist_header **headers, const char *function)
{
    *headers = malloc((size_t)c->size * sizeof **headers);
    if (*headers == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    int status = gc_coll_allgather_bytes(c, mine, sizeof *mine, *headers);
    if (status != MPI_SUCCESS)
        return gc_error(c->handle, status, function,
                        "exchange with the other sites failed");
    return MPI_SUCCESS;
}

/*
 * Every member's edge lists (headers[r].count ints) to every member,
 * padded to the longest (the layer's allgather carries equal lengths):
 * member r's at *all + r * *stride.
 */
static int dist_lists(struct gc_comm *c, const struct dist_header *headers,
                      const int *mine, int **all, int *stride,
                      const char *function)
{
    int status = MPI_SUCCESS;
    *stride = 0;
    for (int r = 0; r < c->size; r++)
        if (headers[r].count > *stride)
            *stride = headers[r].count;
    if ((int64_t)*stride * c->size * (int64_t)sizeof(int) > INT_MAX)
        return gc_error(c->handle, MPI_ERR_COUNT, function,
                        "the graph is too large to gather");
    size_t len = (size_t)(*stride > 0 ? *stride : 1);
    int *padded = calloc(len, sizeof *padded);
    *all = malloc(len * (size_t)c->size * sizeof **all);
    if (padded == NULL || *all == NULL) {
        free(padded);
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    }
    memcpy(padded, mine, (size_t)headers[c->rank].count * sizeof *padded);
    if (*stride > 0)
        status = gc_coll_allgather_bytes(c, padded, len * sizeof *padded, *all);
    free(padded);
    if (status != MPI_SUCCESS)
        return gc_error(c->handle, status, function,
                        "exchange with the other sites failed");
    return MPI_SUCCESS;
}

/* The weights a weighted graph keeps: the given ones, or 1 each where a
 * member gave MPI_UNWEIGHTED for one list only (erroneous in MPI, but
 * not worth a crash). */
static int *weights_copy(int weighted, const int *weights, int n)
{
    if (weighted && weights != MPI_UNWEIGHTED && weights != MPI_WEIGHTS_EMPTY &&
        weights != NULL)
        return copy_ints(weights, n);
    int *ones = malloc((size_t)(n > 0 ? n : 1) * sizeof *ones);
    for (int i = 0; ones != NULL && i < n; i++)
        ones[i] = 1;
    return ones;
}

/* A distributed-graph topology from its lists. */
static struct gc_topo *dist_new(int indegree, const int *sources,
                                const int *sourceweights, int outdegree,
                                const int *destinations, const int *destweights,
                                int weighted)
{
    struct gc_topo *t = topo_new(MPI_DIST_GRAPH);
    if (t == NULL)
        return NULL;
    t->indegree = indegree;
    t->outdegree = outdegree;
    t->weighted = weighted;
    t->sources = copy_ints(sources, indegree);
    t->destinations = copy_ints(destinations, outdegree);
    t->sourceweights = weights_copy(weighted, sourceweights, indegree);
    t->destweights = weights_copy(weighted, destweights, outdegree);
    if (!t->sources || !t->destinations || !t->sourceweights ||
        !t->destweights) {
        gc_topo_free(t);
        return NULL;
    }
    return t;
}

/* Directed edges src -> dst of weight `weight`, in the order the members
 * gave them (by member rank, then argument order). */
struct edge_list {
    int64_t count, cap;
    int *src, *dst, *weight;
};

static int edges_add(struct edge_list *e, int src, int dst, int weight)
{
    if (e->count == e->cap) {
        int64_t grown = e->cap ? 2 * e->cap : 64;
        int *s = realloc(e->src, (size_t)grown * sizeof *s);
        if (s != NULL)
            e->src = s;
        int *d = realloc(e->dst, (size_t)grown * sizeof *d);
        if (d != NULL)
            e->dst = d;
        int *w = realloc(e->weight, (size_t)grown * sizeof *w);
        if (w != NULL)
            e->weight = w;
        if (s == NULL || d == NULL || w == NULL)
            return -1;
        e->cap = grown;
    }
    e->src[e->count] = src;
    e->dst[e->count] = dst;
    e->weight[e->count++] = weight;
    return 0;
}

static void edges_free(struct edge_list *e)
{
    free(e->src);
    free(e->dst);
    free(e->weight);
}

static int edges_partition(const void *arg, int k, const int *site_size,
                           const int *identity, int *part)
{
    const struct edge_list *e = arg;
    struct gc_topo_graph g;
    int64_t cut;
    int n = 0;
    for (int i = 0; i < k; i++)
        n += site_size[i];
    if (gc_topo_graph_from_edges(n, e->count, e->src, e->dst, e->weight, &g) !=
        0)
        return -1;
    int status =
        gc_topo_graph_partition(&g, k, site_size, identity, part, &cut);
    gc_topo_graph_free(&g);
    return status;
}

/* Any member's error or wish to reorder, from the headers. */
static void dist_flags(const struct gc_comm *c,
                       const struct dist_header *headers, int *any_error,
                       int *any_reorder)
{
    *any_error = *any_reorder = 0;
    for (int r = 0; r < c->size; r++) {
        *any_error |= headers[r].error;
        *any_reorder |= headers[r].reorder;
    }
}

/*
 * The new rank of every member (reorder) from the edge list, into
 * *new_rank; the identity without reorder.
 */
static int dist_layout(struct gc_comm *c, const struct edge_list *edges,
                       int reorder, const char *function, int **new_rank)
{
    *new_rank = malloc((size_t)c->size * sizeof **new_rank);
    if (*new_rank == NULL ||
        layout(c, c->size, reorder ? edges_partition : NULL, edges,
               *new_rank) != 0)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, "out of memory");
    return MPI_SUCCESS;
}

/* A distributed graph's whole graph (vertex v's lists), for its plan. */
struct whole {
    struct gc_plan_graph g;
    int *index; /* out_index then in_index, n + 1 each */
    int *adj;   /* out_adj then in_adj */
};

static void whole_free(struct whole *w)
{
    free(w->index);
    free(w->adj);
}

static int whole_alloc(struct whole *w, int n, int64_t entries)
{
    w->index = malloc(2 * ((size_t)n + 1) * sizeof *w->index);
    w->adj = malloc((size_t)(2 * entries + 1) * sizeof *w->adj);
    w->g.n = n;
    w->g.out_index = w->index;
    w->g.in_index = w->index + n + 1;
    return w->index != NULL && w->adj != NULL ? 0 : -1;
}

/* From the gathered adjacent lists: vertex v's at all + v * stride. */
static int whole_from_lists(int n, const int *all, int stride, struct whole *w)
{
    int64_t out = 0, in = 0;
    for (int v = 0; v < n; v++) {
        in += all[(size_t)v * (size_t)stride];
        out += all[(size_t)v * (size_t)stride + 1];
    }
    if (whole_alloc(w, n, out > in ? out : in) != 0)
        return -1;
    int *out_index = w->index, *in_index = w->index + n + 1;
    int *out_adj = w->adj, *in_adj = w->adj + (out > in ? out : in);
    out_index[0] = in_index[0] = 0;
    for (int v = 0; v < n; v++) {
        const int *p = all + (size_t)v * (size_t)stride;
        memcpy(in_adj + in_index[v], p + 2, (size_t)p[0] * sizeof(int));
        memcpy(out_adj + out_index[v], p + 2 + 2 * p[0],
               (size_t)p[1] * sizeof(int));
        in_index[v + 1] = in_index[v] + p[0];
        out_index[v + 1] = out_index[v] + p[1];
    }
    w->g.out_adj = out_adj;
    w->g.in_adj = in_adj;
    return 0;
}

/* From MPI_Dist_graph_create's edges: vertex v's in the order given. */
static int whole_from_edges(int n, const struct edge_list *e, struct whole *w)
{
    if (whole_alloc(w, n, e->count) != 0)
        return -1;
    int *out_index = w->index, *in_index = w->index + n + 1;
    int *out_adj = w->adj, *in_adj = w->adj + e->count;
    memset(w->index, 0, 2 * ((size_t)n + 1) * sizeof *w->index);
    for (int64_t k = 0; k < e->count; k++) {
        out_index[e->src[k] + 1]++;
        in_index[e->dst[k] + 1]++;
    }
    for (int v = 0; v < n; v++) {
        out_index[v + 1] += out_index[v];
        in_index[v + 1] += in_index[v];
    }
    /* Fill with the starts as cursors, then shift them back. */
    for (int64_t k = 0; k < e->count; k++) {
        out_adj[out_index[e->src[k]]++] = e->dst[k];
        in_adj[in_index[e->dst[k]]++] = e->src[k];
    }
    for (int v = n; v > 0; v--) {
        out_index[v] = out_index[v - 1];
        in_index[v] = in_index[v - 1];
    }
    out_index[0] = in_index[0] = 0;
    w->g.out_adj = out_adj;
    w->g.in_adj = in_adj;
    return 0;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree,
                                   const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[],
                                   const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm *comm_dist_graph)
{
    GC_ENTER();
    static const char function[] = "MPI_Dist_graph_create_adjacent";
    struct gc_comm *c = GC_FIND(comm_old);
    if (c == NULL)
        return PMPI_Dist_graph_create_adjacent(
            comm_old, indegree, sources, sourceweights, outdegree, destinations,
            destweights, info, reorder, comm_dist_graph);
    (void)info; /* hints about the graph; none is used */
    struct dist_header header = {0}, *headers = NULL;
    struct edge_list edges = {0};
    struct whole whole = {0};
    struct gc_topo *t = NULL;
    int *mine = NULL, *all = NULL, *new_rank = NULL, stride = 0;
    int key = c->rank, any_error = 0, any_reorder = 0;
    /* As MPICH: weighted unless the sources' weights are MPI_UNWEIGHTED
     * (MPI-4.0 §8.5.4 has every member say the same of both lists). */
    int weighted = sourceweights != MPI_UNWEIGHTED;
    int error =
        comm_dist_graph == NULL
            ? gc_error(comm_old, MPI_ERR_ARG, function,
                       "comm_dist_graph is NULL")
            : adjacency_check(c, indegree, sources, sourceweights,
                              "a source is not a rank of comm_old", function);
    if (error == MPI_SUCCESS)
        error = adjacency_check(c, outdegree, destinations, destweights,
                                "a destination is not a rank of comm_old",
                                function);
    if (error == MPI_SUCCESS) {
        /* [indegree, outdegree, sources, their weights, destinations,
         * their weights]; weights 1 when unweighted. */
        header.count = 2 + 2 * indegree + 2 * outdegree;
        mine = malloc((size_t)header.count * sizeof *mine);
        if (mine == NULL)
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    if (error == MPI_SUCCESS) {
        int *p = mine;
        *p++ = indegree;
        *p++ = outdegree;
        for (int i = 0; i < indegree; i++) {
            p[i] = sources[i];
            p[indegree + i] = weighted ? sourceweights[i] : 1;
        }
        p += 2 * indegree;
        for (int i = 0; i < outdegree; i++) {
            p[i] = destinations[i];
            p[outdegree + i] = destweights != MPI_UNWEIGHTED &&
                                       destweights != MPI_WEIGHTS_EMPTY
                                   ? destweights[i]
                                   : 1;
        }
    }
    header.error = error != MPI_SUCCESS;
    header.reorder = reorder != 0;
    header.weighted = weighted;
    if (error != MPI_SUCCESS)
        header.count = 0;
    /* Errors and reorder flags first, then the lists: every member
     * needs the whole graph, for the site-pair plan and to reorder. */
    int status = dist_headers(c, &header, &headers, function);
    if (status != MPI_SUCCESS && error == MPI_SUCCESS)
        error = status;
    if (error == MPI_SUCCESS)
        dist_flags(c, headers, &any_error, &any_reorder);
    if (error == MPI_SUCCESS && !any_error) {
        error = dist_lists(c, headers, mine, &all, &stride, function);
        if (error == MPI_SUCCESS &&
            whole_from_lists(c->size, all, stride, &whole) != 0)
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    if (error == MPI_SUCCESS && !any_error && any_reorder) {
        for (int r = 0; error == MPI_SUCCESS && r < c->size; r++) {
            const int *p = all + (size_t)r * (size_t)stride;
            const int *dst = p + 2 + 2 * p[0];
            for (int i = 0; i < p[1] && error == MPI_SUCCESS; i++)
                if (edges_add(&edges, r, dst[i], dst[p[1] + i]) != 0)
                    error = gc_error(comm_old, MPI_ERR_NO_MEM, function,
                                     "out of memory");
        }
        if (error == MPI_SUCCESS)
            error = dist_layout(c, &edges, 1, function, &new_rank);
        if (error == MPI_SUCCESS) {
            /* This member becomes vertex v: old rank v's lists. */
            int v = new_rank[c->rank];
            const int *p = all + (size_t)v * (size_t)stride;
            int in = p[0], out = p[1];
            key = v;
            t = dist_new(in, p + 2, p + 2 + in, out, p + 2 + 2 * in,
                         p + 2 + 2 * in + out, headers[v].weighted);
        }
    } else if (error == MPI_SUCCESS && !any_error) {
        t = dist_new(indegree, sources, sourceweights, outdegree, destinations,
                     destweights, weighted);
    }
    if (error == MPI_SUCCESS && !any_error && t == NULL)
        error = gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    /* Another member's error: the split's exchange fails every member
     * with its class. */
    status = split_finish(c, 0, key, error, t, NULL, &whole.g, comm_dist_graph,
                          function);
    whole_free(&whole);
    edges_free(&edges);
    free(headers);
    free(all);
    free(mine);
    free(new_rank);
    return status;
}

int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                          const int degrees[], const int destinations[],
                          const int weights[], MPI_Info info, int reorder,
                          MPI_Comm *comm_dist_graph)
{
    GC_ENTER();
    static const char function[] = "MPI_Dist_graph_create";
    struct gc_comm *c = GC_FIND(comm_old);
    if (c == NULL)
        return PMPI_Dist_graph_create(comm_old, n, sources, degrees,
                                      destinations, weights, info, reorder,
                                      comm_dist_graph);
    (void)info;
    struct dist_header header = {0}, *headers = NULL;
    struct edge_list edges = {0};
    struct whole whole = {0};
    struct gc_topo *t = NULL;
    int *mine = NULL, *all = NULL, *new_rank = NULL, stride = 0;
    int key = c->rank, any_error = 0, any_reorder = 0;
    int weighted = weights != MPI_UNWEIGHTED;
    int64_t total = 0;
    int error = MPI_SUCCESS;
    if (comm_dist_graph == NULL)
        error = gc_error(comm_old, MPI_ERR_ARG, function,
                         "comm_dist_graph is NULL");
    else if (n < 0)
        error = gc_error(comm_old, MPI_ERR_ARG, function, "n is negative");
    else if (n > 0 && (sources == NULL || degrees == NULL))
        error = gc_error(comm_old, MPI_ERR_ARG, function,
                         "sources or degrees is NULL");
    for (int i = 0; i < n && error == MPI_SUCCESS; i++) {
        if (sources[i] < 0 || sources[i] >= c->size)
            error = gc_error(comm_old, MPI_ERR_ARG, function,
                             "a source is not a rank of comm_old");
        else if (degrees[i] < 0)
            error = gc_error(comm_old, MPI_ERR_ARG, function,
                             "a degree is negative");
        total += degrees[i];
    }
    if (error == MPI_SUCCESS && total > (INT_MAX - 16) / 3)
        error = gc_error(comm_old, MPI_ERR_ARG, function, "too many edges");
    if (error == MPI_SUCCESS)
        error = adjacency_check(c, (int)total, destinations, weights,
                                "a destination is not a rank of comm_old",
                                function);
    if (error == MPI_SUCCESS) {
        /* (source, destination, weight) per edge; weight 1 unweighted */
        header.count = (int)(3 * total);
        mine = malloc((size_t)(header.count > 0 ? header.count : 1) *
                      sizeof *mine);
        if (mine == NULL)
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    for (int i = 0, e = 0; error == MPI_SUCCESS && i < n; i++)
        for (int j = 0; j < degrees[i]; j++, e++) {
            mine[3 * e] = sources[i];
            mine[3 * e + 1] = destinations[e];
            mine[3 * e + 2] = weighted ? weights[e] : 1;
        }
    header.error = error != MPI_SUCCESS;
    header.reorder = reorder != 0;
    header.weighted = weighted;
    if (error != MPI_SUCCESS)
        header.count = 0;
    int status = dist_headers(c, &header, &headers, function);
    if (status != MPI_SUCCESS && error == MPI_SUCCESS)
        error = status;
    if (error == MPI_SUCCESS)
        dist_flags(c, headers, &any_error, &any_reorder);
    if (error == MPI_SUCCESS && !any_error) {
        /* Every member learns every edge: each needs those ending and
         * starting at its vertex, whoever gave them. */
        error = dist_lists(c, headers, mine, &all, &stride, function);
        for (int r = 0; error == MPI_SUCCESS && r < c->size; r++) {
            const int *p = all + (size_t)r * (size_t)stride;
            for (int e = 0; e < headers[r].count / 3 && error == MPI_SUCCESS;
                 e++)
                if (edges_add(&edges, p[3 * e], p[3 * e + 1], p[3 * e + 2]) !=
                    0)
                    error = gc_error(comm_old, MPI_ERR_NO_MEM, function,
                                     "out of memory");
        }
        if (error == MPI_SUCCESS)
            error = dist_layout(c, &edges, any_reorder, function, &new_rank);
        if (error == MPI_SUCCESS && whole_from_edges(c->size, &edges, &whole))
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    if (error == MPI_SUCCESS && !any_error) {
        /* Vertex v's edges in the order given: MPI-4.0 §8.5.4 leaves
         * the order open, and a fixed one keeps repeated queries equal. */
        int v = new_rank[c->rank], in = 0, out = 0;
        key = v;
        for (int64_t e = 0; e < edges.count; e++) {
            in += edges.dst[e] == v;
            out += edges.src[e] == v;
        }
        int *lists = malloc((size_t)(2 * (in + out) + 1) * sizeof *lists);
        if (lists != NULL) {
            int *src = lists, *srcw = lists + in, *dst = lists + 2 * in;
            int *dstw = dst + out, i = 0, o = 0;
            for (int64_t e = 0; e < edges.count; e++) {
                if (edges.dst[e] == v) {
                    src[i] = edges.src[e];
                    srcw[i++] = edges.weight[e];
                }
                if (edges.src[e] == v) {
                    dst[o] = edges.dst[e];
                    dstw[o++] = edges.weight[e];
                }
            }
            t = dist_new(in, src, srcw, out, dst, dstw, headers[v].weighted);
            free(lists);
        }
        if (t == NULL)
            error =
                gc_error(comm_old, MPI_ERR_NO_MEM, function, "out of memory");
    }
    status = split_finish(c, 0, key, error, t, NULL, &whole.g, comm_dist_graph,
                          function);
    whole_free(&whole);
    edges_free(&edges);
    free(headers);
    free(all);
    free(mine);
    free(new_rank);
    return status;
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
                                   int *weighted)
{
    GC_ENTER();
    static const char function[] = "MPI_Dist_graph_neighbors_count";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Dist_graph_neighbors_count(comm, indegree, outdegree,
                                               weighted);
    int status = topo_of(c, MPI_DIST_GRAPH, function, &t);
    if (status == MPI_SUCCESS &&
        (indegree == NULL || outdegree == NULL || weighted == NULL))
        status = gc_error(comm, MPI_ERR_ARG, function, "an argument is NULL");
    if (status == MPI_SUCCESS) {
        *indegree = t->indegree;
        *outdegree = t->outdegree;
        *weighted = t->weighted;
    }
    return status;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
                             int sourceweights[], int maxoutdegree,
                             int destinations[], int destweights[])
{
    GC_ENTER();
    static const char function[] = "MPI_Dist_graph_neighbors";
    struct gc_comm *c = gc_comm_find(comm);
    struct gc_topo *t;
    if (c == NULL)
        return PMPI_Dist_graph_neighbors(comm, maxindegree, sources,
                                         sourceweights, maxoutdegree,
                                         destinations, destweights);
    int status = topo_of(c, MPI_DIST_GRAPH, function, &t);
    if (status == MPI_SUCCESS && (maxindegree < 0 || maxoutdegree < 0))
        status = gc_error(comm, MPI_ERR_ARG, function,
                          "maxindegree or maxoutdegree is negative");
    if (status != MPI_SUCCESS)
        return status;
    /* As MPICH: short arrays get the first entries; weights only of a
     * weighted graph, into arrays that are not MPI_UNWEIGHTED. */
    int in = maxindegree < t->indegree ? maxindegree : t->indegree;
    int out = maxoutdegree < t->outdegree ? maxoutdegree : t->outdegree;
    memcpy(sources, t->sources, (size_t)in * sizeof *sources);
    memcpy(destinations, t->destinations, (size_t)out * sizeof *destinations);
    if (t->weighted && sourceweights != MPI_UNWEIGHTED && sourceweights != NULL)
        memcpy(sourceweights, t->sourceweights,
               (size_t)in * sizeof *sourceweights);
    if (t->weighted && destweights != MPI_UNWEIGHTED && destweights != NULL)
        memcpy(destweights, t->destweights, (size_t)out * sizeof *destweights);
    return MPI_SUCCESS;
}

/* ---- MPI_Topo_test (MPI-4.0 §8.5.5) ----------------------------------------
 */

int MPI_Topo_test(MPI_Comm comm, int *status)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Topo_test(comm, status);
    if (status == NULL)
        return gc_error(comm, MPI_ERR_ARG, "MPI_Topo_test", "status is NULL");
    *status = c->topo != NULL ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
