/*
 * Costs of local phases and WAN steps for the algorithms' cost functions
 * (model_cost.h).  Local costs follow Hockney's α + mβ with the formulas of
 * the algorithms MPICH runs on a site; the all-to-all adds Steffenel's
 * contention signature (eq. 4-5).
 */
#include "coll/model_cost.h"

static double log2_ceil(int n)
{
    int steps = 0;
    while ((1 << steps) < n)
        steps++;
    return steps;
}

double cost_local_msg(const struct coll_cost_args *c, int s, double m)
{
    return cost_site(c, s)->alpha + m * cost_site(c, s)->beta;
}

double cost_wan_msg(const struct coll_cost_args *c, int a, int b, double m)
{
    return gc_model_one_way(cost_link(c, a, b), m);
}

double cost_wan_exchange(const struct coll_cost_args *c, int a, int b, double m)
{
    return gc_model_exchange(cost_link(c, a, b), m);
}

double cost_local_alltoall(const struct coll_cost_args *c, int s, int n,
                           double m)
{
    const struct gc_model_site *p = cost_site(c, s);
    if (n <= 1)
        return 0;
    double per_step = p->alpha + m * p->beta * p->gamma;
    if (m >= p->threshold)
        per_step += p->delta;
    return (n - 1) * per_step;
}

double cost_local_bcast(const struct coll_cost_args *c, int s, int n, double m)
{
    const struct gc_model_site *p = cost_site(c, s);
    if (n <= 1)
        return 0;
    double rounds = log2_ceil(n);
    if (m <= 12288)
        return rounds * (p->alpha + m * p->beta);
    return (rounds + n - 1) * p->alpha + 2.0 * (n - 1) / n * m * p->beta;
}

double cost_local_ring(const struct coll_cost_args *c, int s, int n, double m)
{
    if (n <= 1)
        return 0;
    return (n - 1) * cost_local_msg(c, s, m / n);
}

double cost_pipeline(double fill, double step, size_t k)
{
    return fill + (double)(k - 1) * step;
}

size_t cost_segments(const struct coll_cost_args *c, size_t bytes)
{
    if (bytes == 0 || c->segsize == 0)
        return 1;
    return (bytes + c->segsize - 1) / c->segsize;
}
