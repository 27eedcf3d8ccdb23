/*
 * The site-pair plan of a process topology (neighbor_plan.c): which blocks of
 * a neighbourhood collective cross between each pair of sites, and who
 * bundles them (coll/neighbor/neighbor_grid_bundled.c).  Pure functions, no
 * MPI, so that the topology constructors (gc_topo.c) and the unit test
 * (tests/unit/test_neighbor_plan.c) share one copy.
 *
 * Every member computes the plan from the whole graph (Cartesian and
 * graph topologies: their arguments; distributed graphs: the lists the
 * constructor gathered), so all compute the same pairs, counts and
 * coordinators, and each keeps only its own part.
 */
#ifndef GC_TOPO_PLAN_H
#define GC_TOPO_PLAN_H

/*
 * The whole graph: vertex v (a rank) sends its blocks to out_adj[o] for
 * o in out_index[v] .. out_index[v + 1] - 1, in its send order, and
 * receives from in_adj[i] for i in in_index[v] .. in_index[v + 1] - 1
 * in the order its receives are posted (MPI's matching: the k-th send
 * from u to v meets the k-th receive v posts from u).  Negative entries
 * (MPI_PROC_NULL) are no edge.  site[v] is in 0 .. GC_PLAN_SITES - 1.
 */
struct gc_plan_graph {
    int n;
    const int *site;
    const int *out_index, *out_adj;
    const int *in_index, *in_adj;
};

#define GC_PLAN_SITES 64

/*
 * This member's view of the traffic between its site (s) and site t.  A
 * direction is bundled when two or more of its edges cross (one edge
 * gains nothing from a detour through coordinators): the blocks of s's
 * members for t's then travel in one message from coord_here to
 * coord_there, in bundle order (sending member by rank, each member's
 * blocks in its send order).
 */
struct gc_plan_pair {
    int out_edges;   /* blocks from s's members to t's */
    int in_edges;    /* blocks from t's members to s's */
    int coord_here;  /* the member of s that bundles for t; -1: none */
    int coord_there; /* the member of t that bundles for s */
    /*
     * Set when this member is coord_here: the members of s with blocks
     * in a bundled direction, by rank, with the blocks each sends to t
     * (n_out) and receives from t (n_in, 0 unless that direction is
     * bundled); for block b of t's bundle, its receiver (index into
     * member) and its place among that receiver's blocks from t in the
     * receiver's posting order (in_member[b], in_slot[b]).
     */
    int members;
    int *member, *n_out, *n_in;
    int *in_member, *in_slot;
};

struct gc_plan {
    int matched; /* every cross-site send has its receive (else: NULL plan) */
    int saves;   /* some direction between two sites is bundled */
    struct gc_plan_pair pair[GC_PLAN_SITES]; /* by site t; own site unused */
};

/*
 * The plan of member `me` of graph g into *plan (its arrays allocated;
 * gc_plan_free them).  0, or -1 when memory ran out.
 */
int gc_plan_build(const struct gc_plan_graph *g, int me, struct gc_plan *plan);

/* A copy of plan into *out; 0 or -1 (out then freed). */
int gc_plan_copy(const struct gc_plan *plan, struct gc_plan *out);

void gc_plan_free(struct gc_plan *plan);

/*
 * A process topology as the neighbourhood collectives see it (MPI-4.0
 * section 8.6): made by the topology constructors (comm/topo/gc_topo.c)
 * and reached from the communicator (gc_comm.neighborhood).  The lists are
 * in the order MPI defines: Cartesian, per dimension the -1 then the +1
 * shift neighbour (MPI_PROC_NULL at a non-periodic border), the same list
 * for both; graph, the neighbours listed for this rank, both lists the
 * same; distributed graph, the sources and destinations as
 * MPI_Dist_graph_neighbors returns them.
 */
struct coll_neighborhood {
    int cart; /* a Cartesian topology: a dimension's receives swap */
    int in, out;
    int *sources, *destinations;
    /* This member's part of the site-pair plan, made with the
     * communicator: for MPI_DIST_GRAPH only the constructor sees the
     * whole graph. */
    struct gc_plan plan;
};

/* 1 when direction s -> t of a pair with `edges` blocks is bundled. */
static inline int gc_plan_bundled(int edges)
{
    return edges >= 2;
}

#endif
