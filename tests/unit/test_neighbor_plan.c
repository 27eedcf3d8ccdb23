/*
 * The site-pair plan of neighbourhood collectives
 * (libgridcoll/coll/neighbor/neighbor_plan.c): for Cartesian grids with
 * periodic dimensions of size 2 (duplicate neighbours), a ring and random
 * multigraphs whose receives are posted in shuffled orders, every member's
 * plan is built and the bundles followed block by block: each block sent
 * u -> v across a bundled direction must reach the receive of v that
 * MPI's matching gives it (the k-th send from u to v meets v's k-th
 * receive from u), every member must agree on the counts and
 * coordinators, and a site's coordinator roles spread over its members.  Graphs
 * whose sends and receives do not match get no plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/neighbor/neighbor_plan.h"
#include "unit_check.h"

struct graph {
    int n;
    int site[64];
    int out_index[65], in_index[65];
    int out_adj[1024], in_adj[1024];
};

static struct gc_plan_graph view(const struct graph *g)
{
    return (struct gc_plan_graph){g->n,       g->site,     g->out_index,
                                  g->out_adj, g->in_index, g->in_adj};
}

/* The receive of v that MPI matches with u's block at out position o:
 * its place among v's receives from u's site, in posting order. */
static int mpi_slot(const struct graph *g, int u, int o)
{
    int v = g->out_adj[o], k = 0, slot = 0;
    for (int i = g->out_index[u]; i < o; i++)
        k += g->out_adj[i] == v;
    for (int i = g->in_index[v]; i < g->in_index[v + 1]; i++) {
        int w = g->in_adj[i];
        if (w < 0 || g->site[w] != g->site[u])
            continue;
        if (w == u && k-- == 0)
            return slot;
        slot++;
    }
    return -1;
}

/* Every member's plan, the bundles followed; returns 1 when it saves. */
static int check_graph(const struct graph *g, const char *name)
{
    struct gc_plan *plans = calloc((size_t)g->n, sizeof *plans);
    for (int me = 0; me < g->n; me++) {
        struct gc_plan_graph v = view(g);
        CHECKF(gc_plan_build(&v, me, &plans[me]) == 0, "%s: build %d", name,
               me);
    }
    for (int u = 0; u < g->n; u++)
        for (int t = 0; t < GC_PLAN_SITES; t++) {
            const struct gc_plan_pair *p = &plans[u].pair[t];
            const struct gc_plan_pair *q = &plans[0].pair[t];
            if (t == g->site[u] || g->site[0] != g->site[u])
                continue;
            CHECKF(p->out_edges == q->out_edges &&
                       p->coord_here == q->coord_here &&
                       p->coord_there == q->coord_there,
                   "%s: members %d and 0 disagree on site %d", name, u, t);
        }
    for (int s = 0; s < GC_PLAN_SITES; s++)
        for (int t = 0; t < GC_PLAN_SITES; t++) {
            if (s == t)
                continue;
            int a = -1, b = -1; /* coordinators of s and t for the pair */
            for (int v = 0; v < g->n && (a < 0 || b < 0); v++) {
                if (g->site[v] == s)
                    a = plans[v].pair[t].coord_here;
                if (g->site[v] == t)
                    b = plans[v].pair[s].coord_here;
            }
            if (a < 0)
                continue;
            CHECKF(g->site[a] == s && b >= 0 && g->site[b] == t,
                   "%s: sites %d, %d: coordinators %d, %d", name, s, t, a, b);
            const struct gc_plan_pair *send = &plans[a].pair[t];
            const struct gc_plan_pair *recv = &plans[b].pair[s];
            CHECKF(plans[a].pair[t].coord_there == b, "%s: %d -> %d", name, s,
                   t);
            if (!gc_plan_bundled(send->out_edges))
                continue;
            /* The bundle: sending members in the coordinator's order. */
            int block = 0;
            for (int m = 0; m < send->members; m++) {
                int u = send->member[m], sent = 0;
                for (int o = g->out_index[u]; o < g->out_index[u + 1]; o++) {
                    int v = g->out_adj[o];
                    if (v < 0 || g->site[v] != t)
                        continue;
                    sent++;
                    int got = recv->member[recv->in_member[block]];
                    int slot = recv->in_slot[block++];
                    CHECKF(got == v && slot == mpi_slot(g, u, o),
                           "%s: block %d -> %d (out %d) lands at %d slot %d, "
                           "MPI: slot %d",
                           name, u, v, o, got, slot, mpi_slot(g, u, o));
                }
                CHECKF(sent == send->n_out[m], "%s: %d sends %d, plan %d", name,
                       u, sent, send->n_out[m]);
            }
            CHECKF(block == send->out_edges && block == recv->in_edges,
                   "%s: %d -> %d: %d blocks, plan %d/%d", name, s, t, block,
                   send->out_edges, recv->in_edges);
        }
    int saves = plans[0].saves;
    for (int me = 0; me < g->n; me++)
        gc_plan_free(&plans[me]);
    free(plans);
    return saves;
}

/* A Cartesian grid as gc_topo.c describes it (receives +1 first). */
static void cart(struct graph *g, int ndims, const int *dims,
                 const int *periods)
{
    g->n = 1;
    for (int d = 0; d < ndims; d++)
        g->n *= dims[d];
    for (int r = 0; r <= g->n; r++)
        g->out_index[r] = g->in_index[r] = 2 * ndims * r;
    for (int r = 0; r < g->n; r++) {
        int stride = g->n;
        for (int d = 0; d < ndims; d++) {
            stride /= dims[d];
            int c = r / stride % dims[d];
            for (int side = 0; side < 2; side++) {
                int m = c + (side ? 1 : -1), peer = -1;
                if (m >= 0 && m < dims[d])
                    peer = r + (m - c) * stride;
                else if (periods[d])
                    peer = r + ((m + dims[d]) % dims[d] - c) * stride;
                g->out_adj[2 * ndims * r + 2 * d + side] = peer;
                g->in_adj[2 * ndims * r + 2 * d + 1 - side] = peer;
            }
        }
    }
}

static void test_grids(void)
{
    struct graph g;
    /* The halo of test_coll_select: 4 x 2 periodic on 4 + 4. */
    cart(&g, 2, (int[]){4, 2}, (int[]){1, 1});
    for (int r = 0; r < g.n; r++)
        g.site[r] = r / 4;
    CHECK(check_graph(&g, "4x2p on 4+4"), "bundles");
    struct gc_plan plan;
    struct gc_plan_graph v = view(&g);
    CHECK(gc_plan_build(&v, 2, &plan) == 0, "build");
    CHECK(plan.pair[1].out_edges == 4 && plan.pair[1].in_edges == 4,
          "4 blocks each way, got %d, %d", plan.pair[1].out_edges,
          plan.pair[1].in_edges);
    gc_plan_free(&plan);
    /* Periodic dimensions of size 2: one neighbour twice. */
    cart(&g, 3, (int[]){2, 1, 2}, (int[]){1, 1, 0});
    for (int r = 0; r < g.n; r++)
        g.site[r] = r % 2;
    CHECK(check_graph(&g, "2px1px2 on 2+2"), "bundles");
    cart(&g, 2, (int[]){2, 2}, (int[]){1, 1});
    for (int r = 0; r < g.n; r++)
        g.site[r] = r == 0 ? 0 : 1;
    CHECK(check_graph(&g, "2px2p on 1+3"), "bundles");
    /* A ring over three sites: one block per direction, nothing saved. */
    cart(&g, 1, (int[]){5}, (int[]){1});
    int ring[5] = {0, 0, 1, 2, 2};
    memcpy(g.site, ring, sizeof ring);
    CHECK(!check_graph(&g, "5p on 2+1+2"), "one block per direction");
}

static unsigned rnd(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 16;
}

/* Random multigraphs, receives posted in a shuffled order. */
static void test_random(void)
{
    unsigned state = 7;
    for (int trial = 0; trial < 200; trial++) {
        struct graph g;
        g.n = 2 + (int)(rnd(&state) % 12);
        int sites = 1 + (int)(rnd(&state) % 4), edges = 0;
        int src[1024], dst[1024];
        for (int v = 0; v < g.n; v++)
            g.site[v] = (int)(rnd(&state) % (unsigned)sites) * 3;
        int count = (int)(rnd(&state) % (unsigned)(4 * g.n));
        for (int e = 0; e < count; e++) {
            src[edges] = (int)(rnd(&state) % (unsigned)g.n);
            dst[edges++] = (int)(rnd(&state) % (unsigned)g.n);
        }
        memset(g.out_index, 0, sizeof g.out_index);
        memset(g.in_index, 0, sizeof g.in_index);
        for (int e = 0; e < edges; e++) {
            g.out_index[src[e] + 1]++;
            g.in_index[dst[e] + 1]++;
        }
        for (int v = 0; v < g.n; v++) {
            g.out_index[v + 1] += g.out_index[v];
            g.in_index[v + 1] += g.in_index[v];
        }
        int out_at[65], in_at[65];
        memcpy(out_at, g.out_index, sizeof out_at);
        memcpy(in_at, g.in_index, sizeof in_at);
        for (int e = 0; e < edges; e++) {
            g.out_adj[out_at[src[e]]++] = dst[e];
            g.in_adj[in_at[dst[e]]++] = src[e];
        }
        for (int v = 0; v < g.n; v++) /* any posting order */
            for (int i = g.in_index[v + 1] - 1; i > g.in_index[v]; i--) {
                int j = g.in_index[v] +
                        (int)(rnd(&state) % (unsigned)(i - g.in_index[v] + 1));
                int x = g.in_adj[i];
                g.in_adj[i] = g.in_adj[j];
                g.in_adj[j] = x;
            }
        char name[32];
        snprintf(name, sizeof name, "random %d", trial);
        check_graph(&g, name);
    }
}

/* A send without its receive: no plan to bundle by. */
static void test_unmatched(void)
{
    struct graph g = {.n = 2, .site = {0, 1}};
    int out_index[3] = {0, 2, 2}, in_index[3] = {0, 0, 1};
    memcpy(g.out_index, out_index, sizeof out_index);
    memcpy(g.in_index, in_index, sizeof in_index);
    g.out_adj[0] = g.out_adj[1] = 1;
    g.in_adj[0] = 0;
    struct gc_plan plan;
    struct gc_plan_graph v = view(&g);
    CHECK(gc_plan_build(&v, 0, &plan) == 0, "build");
    CHECK(!plan.matched && !plan.saves && plan.pair[1].coord_here < 0,
          "unmatched graph planned: matched %d saves %d", plan.matched,
          plan.saves);
    gc_plan_free(&plan);
}

/* A site whose members each talk to another site: one role each. */
static void test_spread(void)
{
    /* Site 0: ranks 0-2; sites 1, 2, 3: ranks 3, 4, 5.  Rank i of site 0
     * and rank 3 + i swap two blocks each way. */
    struct graph g = {.n = 6, .site = {0, 0, 0, 1, 2, 3}};
    for (int r = 0; r <= 6; r++)
        g.out_index[r] = g.in_index[r] = 2 * r;
    for (int r = 0; r < 6; r++)
        g.out_adj[2 * r] = g.out_adj[2 * r + 1] = g.in_adj[2 * r] =
            g.in_adj[2 * r + 1] = r < 3 ? r + 3 : r - 3;
    CHECK(check_graph(&g, "spread"), "bundles");
    struct gc_plan plan;
    struct gc_plan_graph v = view(&g);
    CHECK(gc_plan_build(&v, 1, &plan) == 0, "build");
    CHECK(plan.pair[1].coord_here == 0 && plan.pair[2].coord_here == 1 &&
              plan.pair[3].coord_here == 2,
          "coordinators %d %d %d", plan.pair[1].coord_here,
          plan.pair[2].coord_here, plan.pair[3].coord_here);
    CHECK(plan.pair[2].members == 1 && plan.pair[2].member[0] == 1 &&
              plan.pair[2].n_out[0] == 2 && plan.pair[2].n_in[0] == 2,
          "rank 1's blocks with site 2");
    struct gc_plan copy;
    CHECK(gc_plan_copy(&plan, &copy) == 0 && copy.pair[2].member != NULL &&
              copy.pair[2].member != plan.pair[2].member &&
              copy.pair[2].in_slot[1] == plan.pair[2].in_slot[1],
          "copy");
    gc_plan_free(&copy);
    gc_plan_free(&plan);
}

int main(void)
{
    test_grids();
    test_random();
    test_unmatched();
    test_spread();
    return unit_check_report("test_neighbor_plan: ");
}
