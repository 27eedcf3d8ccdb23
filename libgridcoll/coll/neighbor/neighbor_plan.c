/*
 * The site-pair plan of a process topology (neighbor_plan.h).
 *
 * Coordinators.  For each site s and each other site t with a bundled
 * direction between them, one member of s bundles s's blocks for t and
 * splits t's bundle for s.  It is the member of s with the most blocks
 * to and from t (its own blocks skip a local hop), among those with the
 * fewest roles so far (partners taken in site order), so that a site
 * with many partners spreads the work over its members; ties go to the
 * lowest rank.  Members without blocks for t come last.
 */
#include "coll/neighbor/neighbor_plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S GC_PLAN_SITES

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * Every cross-site send u -> v has its receive at v (as many of one as
 * of the other for each pair): a program whose graph does not match is
 * erroneous, and bundling it could not even be laid out.
 */
static int matched(const struct gc_plan_graph *g, int64_t cross, int *ok)
{
    int64_t *sends = malloc((size_t)(cross > 0 ? cross : 1) * sizeof *sends);
    int64_t *recvs = malloc((size_t)(cross > 0 ? cross : 1) * sizeof *recvs);
    int64_t ns = 0, nr = 0;
    *ok = 0;
    if (sends == NULL || recvs == NULL) {
        free(sends);
        free(recvs);
        return -1;
    }
    for (int v = 0; v < g->n; v++) {
        for (int o = g->out_index[v]; o < g->out_index[v + 1]; o++) {
            int w = g->out_adj[o];
            if (w >= 0 && g->site[w] != g->site[v] && ns < cross)
                sends[ns++] = (int64_t)v * g->n + w;
        }
        for (int i = g->in_index[v]; i < g->in_index[v + 1]; i++) {
            int u = g->in_adj[i];
            if (u >= 0 && g->site[u] != g->site[v] && nr < cross)
                recvs[nr++] = (int64_t)u * g->n + v;
            else if (u >= 0 && g->site[u] != g->site[v])
                nr++; /* more receives than sends: no match */
        }
    }
    if (ns == cross && nr == cross) {
        qsort(sends, (size_t)ns, sizeof *sends, cmp_key);
        qsort(recvs, (size_t)nr, sizeof *recvs, cmp_key);
        *ok = memcmp(sends, recvs, (size_t)ns * sizeof *sends) == 0;
    }
    free(sends);
    free(recvs);
    return 0;
}

/*
 * The place of u's occ-th (from 0) block to v among v's receives from
 * site t, counted in v's posting order.
 */
static int slot_of(const struct gc_plan_graph *g, int v, int u, int occ, int t)
{
    int slot = 0;
    for (int i = g->in_index[v]; i < g->in_index[v + 1]; i++) {
        int w = g->in_adj[i];
        if (w < 0 || g->site[w] != t)
            continue;
        if (w == u && occ-- == 0)
            return slot;
        slot++;
    }
    return -1; /* not reached in a matched graph */
}

/* This member coordinates its site's traffic with t: its arrays. */
static int coordinate(const struct gc_plan_graph *g, int me, int t,
                      const int *nout, const int *nin, struct gc_plan_pair *p)
{
    int s = g->site[me], out = gc_plan_bundled(p->out_edges),
        in = gc_plan_bundled(p->in_edges);
    size_t n = (size_t)g->n;
    p->member = malloc(n * sizeof *p->member);
    p->n_out = malloc(n * sizeof *p->n_out);
    p->n_in = malloc(n * sizeof *p->n_in);
    p->in_member = malloc((size_t)(p->in_edges + 1) * sizeof *p->in_member);
    p->in_slot = malloc((size_t)(p->in_edges + 1) * sizeof *p->in_slot);
    if (!p->member || !p->n_out || !p->n_in || !p->in_member || !p->in_slot)
        return -1;
    int *index_of = malloc(n * sizeof *index_of), *occ = NULL;
    if (index_of == NULL)
        return -1;
    for (int v = 0; v < g->n; v++) {
        index_of[v] = -1;
        int o = out ? nout[(size_t)v * S + t] : 0;
        int i = in ? nin[(size_t)v * S + t] : 0;
        if (g->site[v] != s || (o == 0 && i == 0))
            continue;
        index_of[v] = p->members;
        p->member[p->members] = v;
        p->n_out[p->members] = o;
        p->n_in[p->members++] = i;
    }
    int b = 0, status = 0;
    if (in) {
        occ = calloc(n, sizeof *occ); /* blocks seen from u to each v */
        status = occ != NULL ? 0 : -1;
    }
    for (int u = 0; in && status == 0 && u < g->n; u++) {
        if (g->site[u] != t)
            continue;
        for (int o = g->out_index[u]; o < g->out_index[u + 1]; o++) {
            int v = g->out_adj[o];
            if (v < 0 || g->site[v] != s)
                continue;
            p->in_member[b] = index_of[v];
            p->in_slot[b++] = slot_of(g, v, u, occ[v]++, t);
        }
        for (int o = g->out_index[u]; o < g->out_index[u + 1]; o++)
            if (g->out_adj[o] >= 0)
                occ[g->out_adj[o]] = 0;
    }
    free(occ);
    free(index_of);
    return status;
}

int gc_plan_build(const struct gc_plan_graph *g, int me, struct gc_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int t = 0; t < S; t++)
        plan->pair[t].coord_here = plan->pair[t].coord_there = -1;
    /* Blocks per ordered pair of sites, per member and other site. */
    int(*edges)[S] = calloc(S, sizeof *edges);
    int(*coord)[S] = malloc(S * sizeof *coord);
    int *nout = calloc((size_t)g->n * S, sizeof *nout);
    int *nin = calloc((size_t)g->n * S, sizeof *nin);
    int *roles = calloc((size_t)g->n + 1, sizeof *roles);
    int status = -1, ok = 0;
    int64_t cross = 0;
    if (edges == NULL || coord == NULL || nout == NULL || nin == NULL ||
        roles == NULL)
        goto cleanup;
    for (int v = 0; v < g->n; v++) {
        for (int o = g->out_index[v]; o < g->out_index[v + 1]; o++) {
            int w = g->out_adj[o];
            if (w < 0 || g->site[w] == g->site[v])
                continue;
            edges[g->site[v]][g->site[w]]++;
            nout[(size_t)v * S + g->site[w]]++;
            cross++;
        }
        for (int i = g->in_index[v]; i < g->in_index[v + 1]; i++) {
            int u = g->in_adj[i];
            if (u >= 0 && g->site[u] != g->site[v])
                nin[(size_t)v * S + g->site[u]]++;
        }
    }
    if (matched(g, cross, &ok) != 0)
        goto cleanup;
    status = 0;
    plan->matched = ok;
    if (!ok)
        goto cleanup;
    for (int s = 0; s < S; s++)
        for (int t = 0; t < S; t++) {
            coord[s][t] = -1;
            if (s == t || (!gc_plan_bundled(edges[s][t]) &&
                           !gc_plan_bundled(edges[t][s])))
                continue;
            plan->saves = 1;
            int best = -1;
            int64_t best_key = 0;
            for (int v = 0; v < g->n; v++) {
                if (g->site[v] != s)
                    continue;
                int64_t blocks =
                    nout[(size_t)v * S + t] + nin[(size_t)v * S + t];
                /* (has blocks, fewest roles, most blocks), lowest rank */
                int64_t key = (blocks > 0 ? (int64_t)1 << 62 : 0) -
                              ((int64_t)roles[v] << 32) + blocks;
                if (best < 0 || key > best_key) {
                    best = v;
                    best_key = key;
                }
            }
            coord[s][t] = best;
            roles[best]++;
        }
    int s = g->site[me];
    for (int t = 0; t < S && status == 0; t++) {
        struct gc_plan_pair *p = &plan->pair[t];
        if (t == s)
            continue;
        p->out_edges = edges[s][t];
        p->in_edges = edges[t][s];
        p->coord_here = coord[s][t];
        p->coord_there = coord[t][s];
        if (p->coord_here == me)
            status = coordinate(g, me, t, nout, nin, p);
    }
cleanup:
    free(edges);
    free(coord);
    free(nout);
    free(nin);
    free(roles);
    if (status != 0)
        gc_plan_free(plan);
    return status;
}

static int *copy(const int *src, int n)
{
    if (src == NULL)
        return NULL;
    int *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    if (out != NULL && n > 0)
        memcpy(out, src, (size_t)n * sizeof *out);
    return out;
}

int gc_plan_copy(const struct gc_plan *plan, struct gc_plan *out)
{
    *out = *plan;
    int failed = 0;
    for (int t = 0; t < S; t++) {
        const struct gc_plan_pair *p = &plan->pair[t];
        struct gc_plan_pair *q = &out->pair[t];
        q->member = copy(p->member, p->members);
        q->n_out = copy(p->n_out, p->members);
        q->n_in = copy(p->n_in, p->members);
        q->in_member = copy(p->in_member, p->in_edges);
        q->in_slot = copy(p->in_slot, p->in_edges);
        failed |= (p->member && !q->member) || (p->n_out && !q->n_out) ||
                  (p->n_in && !q->n_in) || (p->in_member && !q->in_member) ||
                  (p->in_slot && !q->in_slot);
    }
    if (failed) {
        gc_plan_free(out);
        return -1;
    }
    return 0;
}

void gc_plan_free(struct gc_plan *plan)
{
    for (int t = 0; t < S; t++) {
        struct gc_plan_pair *p = &plan->pair[t];
        free(p->member);
        free(p->n_out);
        free(p->n_in);
        free(p->in_member);
        free(p->in_slot);
        p->member = p->n_out = p->n_in = p->in_member = p->in_slot = NULL;
        p->members = 0;
    }
}
