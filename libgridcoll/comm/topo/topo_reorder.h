/*
 * WAN-aware rank reordering for process topologies (topo_reorder.c): pure
 * functions, no MPI, so that the MPI layer (gc_topo.c) and the unit test
 * (tests/unit/test_topo_reorder.c) share one copy.
 *
 * The problem: n vertices (the ranks of the new communicator: grid
 * positions of a Cartesian topology, vertices of a graph), k sites with
 * fixed sizes (site_size[0..k-1], summing to n).  Assign each vertex a
 * site, part[v], so that the total weight of edges whose ends are on
 * different sites (the cut) is minimal.  All functions are deterministic:
 * every member of a communicator computes the same answer from the same
 * input.  docs/algorithms/topology.md gives the method, its cost and
 * measured cuts.
 */
#ifndef GC_TOPO_REORDER_H
#define GC_TOPO_REORDER_H

#include <stdint.h>

/* Results: 0, or -1 when memory ran out (outputs then unspecified). */

/* An undirected weighted graph without self-loops, as adjacency lists
 * (compressed rows: the neighbours of v are adj[xadj[v] .. xadj[v+1]-1]). */
struct gc_topo_graph {
    int n;
    int *xadj;  /* [n + 1] */
    int *adj;   /* [xadj[n]] */
    int64_t *w; /* [xadj[n]] edge weights, > 0 */
};

/*
 * The graph of `nedges` directed edges src[i] -> dst[i] of weight
 * weight[i] (weight NULL: 1 each) over vertices 0..n-1, made undirected:
 * u -> v and v -> u are one pair whose weight is their sum, multiple
 * edges add up, self-loops and zero weights are dropped (neither can be
 * cut).  Every src/dst must be in 0..n-1.
 */
int gc_topo_graph_from_edges(int n, int64_t nedges, const int *src,
                             const int *dst, const int *weight,
                             struct gc_topo_graph *g);

/*
 * The graph of a Cartesian grid (row-major numbering, MPI-4.0 §8.5.1):
 * one edge of weight 1 per pair of grid neighbours, periodic wrap edges
 * included, counted once per pair (a periodic dimension of size 2 has no
 * second edge, one of size 1 none at all).
 */
int gc_topo_cart_graph(int ndims, const int *dims, const int *periods,
                       struct gc_topo_graph *g);

void gc_topo_graph_free(struct gc_topo_graph *g);

/* Total weight of the edges whose ends have different part[]. */
int64_t gc_topo_cut(const struct gc_topo_graph *g, const int *part);

/*
 * A partition of a Cartesian grid's positions among k sites of the given
 * sizes with a small cut: the best of the identity assignment
 * (`identity[v]`, the site of the member that has rank v without
 * reordering), row-major numberings under every order of the dimensions
 * cut into consecutive ranges per site (every order of the sites), and
 * recursive bisection of the grid by sets of sites; then improved by
 * pairwise swaps.  The identity is kept unless something cuts strictly
 * less.  *cut receives the result's cut.
 */
int gc_topo_cart_partition(int ndims, const int *dims, const int *periods,
                           int k, const int *site_size, const int *identity,
                           int *part, int64_t *cut);

/*
 * A partition of a graph among k sites of the given sizes: the best of the
 * identity assignment and greedy growth of one site after another (two
 * site orders), improved by pairwise swaps; the identity is kept unless
 * something cuts strictly less.
 */
int gc_topo_graph_partition(const struct gc_topo_graph *g, int k,
                            const int *site_size, const int *identity,
                            int *part, int64_t *cut);

/*
 * Improve `part` in place by exchanging pairs of vertices between two
 * sites while an exchange lowers the cut (the improving step of
 * Kernighan-Lin; sizes stay fixed).  Returns the new cut in *cut.
 */
int gc_topo_refine(const struct gc_topo_graph *g, int k, int *part,
                   int64_t *cut);

/*
 * Which vertex each member gets: members 0..n-1 in their old order, on
 * sites member_site[]; the vertices of each site (part[v] == site) go to
 * that site's members in ascending order, so within a site the members
 * keep their relative order.  Fails (-1) when a site's vertex and member
 * counts differ.
 */
int gc_topo_assign(int n, int k, const int *part, const int *member_site,
                   int *vertex_of_member);

#endif
