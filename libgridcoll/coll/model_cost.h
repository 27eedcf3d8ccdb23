/*
 * Predicted cost of collective algorithms from the performance model
 * (gc_model.h, docs/model.md): the input every algorithm's cost function
 * gets, and the costs of the local phases and WAN steps they are made of.
 * Each algorithm's cost function lives in its own file next to the cost
 * model of its header comment.
 */
#ifndef COLL_MODEL_COST_H
#define COLL_MODEL_COST_H

#include <stddef.h>

#include "core/gc_model.h"

/*
 * One call as the model sees it: only values every member agrees on (the
 * layout of the communicator, the root's site, the call's bytes), so every
 * member predicts the same costs.  Sites are the communicator's sites
 * with members, in site order.
 */
struct coll_cost_args {
    int site_count;
    int size;             /* members */
    const int *site_size; /* [site_count] members per site */
    const struct gc_model *model;
    const int *model_site; /* [site_count] site index in model */
    int root_site;         /* rooted collectives; else 0 */
    size_t bytes;          /* as struct coll_args's bytes */
    size_t segsize;        /* pipeline segment */
};

typedef double coll_cost_fn(const struct coll_cost_args *c);

/* The parameters of site s. */
static inline const struct gc_model_site *
cost_site(const struct coll_cost_args *c, int s)
{
    return &c->model->sites[c->model_site[s]];
}

/* The link from site a to site b (a != b). */
static inline const struct gc_model_link *
cost_link(const struct coll_cost_args *c, int a, int b)
{
    return gc_model_link(c->model, c->model_site[a], c->model_site[b]);
}

/* One message of m bytes inside site s: α + mβ. */
double cost_local_msg(const struct coll_cost_args *c, int s, double m);

/* One message of m bytes alone from site a to b: α_w + mβ_w, or the
 * link's measured one-way samples interpolated (gc_model_one_way). */
double cost_wan_msg(const struct coll_cost_args *c, int a, int b, double m);

/*
 * Sites a and b sending each other m bytes in all at once, as the WAN
 * phase of an all-to-all does: the link's measured exchange times
 * interpolated (gc_model_exchange), or 0 for a model without them.  The
 * relay stripes every message between two sites over the same streams, so
 * the phase's messages share one transfer: a lower bound of the phase.
 */
double cost_wan_exchange(const struct coll_cost_args *c, int a, int b,
                         double m);

/*
 * Steffenel eq. 5: an all-to-all among the n members of site s with
 * blocks of m bytes, (n-1)(α + mβγ), plus (n-1)δ from m ≥ M.
 */
double cost_local_alltoall(const struct coll_cost_args *c, int s, int n,
                           double m);

/*
 * MPICH's bcast of m bytes among n members of site s: binomial tree,
 * ⌈log2 n⌉(α + mβ), up to 12 KiB, van de Geijn's scatter + allgather,
 * (⌈log2 n⌉ + n - 1)α + 2(n-1)/n mβ, above (MPIR_CVAR_BCAST_SHORT_MSG_SIZE).
 * Reduce costs the same in this model (no computation rate is measured).
 */
double cost_local_bcast(const struct coll_cost_args *c, int s, int n, double m);

/* Ring reduce-scatter or allgather of m bytes in all: (n-1)(α + mβ/n). */
double cost_local_ring(const struct coll_cost_args *c, int s, int n, double m);

/*
 * A pipeline of k segments through stages whose first-segment latencies
 * add up to `fill` and whose slowest stage takes `step` per segment:
 * fill + (k - 1) step.
 */
double cost_pipeline(double fill, double step, size_t k);

/* Segments of the call: ⌈bytes / segsize⌉, at least 1. */
size_t cost_segments(const struct coll_cost_args *c, size_t bytes);

#endif
