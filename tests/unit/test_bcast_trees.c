/*
 * Multilane bcast trees (libgridcoll/coll/bcast/bcast_grid_multilane.c,
 * docs/algorithms/bcast.md) on every layout of up to four sites with up
 * to 40, 20, 9 and 6 members per site (1, 2, 3, 4 sites); the root is the
 * first position, its site the first.  For each layout:
 *   - every member but the root gets each lane from exactly one member,
 *     and following the senders leads back to the root (no cycle);
 *   - no member sends more than two streams in all (so at most M);
 *   - each lane crosses exactly S-1 site boundaries, each from site k to
 *     site k+1: every byte crosses each WAN link of the chain once;
 * and the 3+5 trees are the ones docs/algorithms/bcast.md shows.
 * Pure construction: no MPI call is made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/bcast/bcast_common.h"

#define MAX_SITES 4

static int failures;

static void fail(const int *counts, int sites, const char *what, int v)
{
    printf("FAIL layout");
    for (int k = 0; k < sites; k++)
        printf("%s%d", k ? "+" : " ", counts[k]);
    printf(": %s (position %d)\n", what, v);
    failures++;
}

static void layout(struct bcast_order *o, const int *counts, int sites)
{
    memset(o, 0, sizeof *o);
    o->sites = sites;
    for (int k = 0, v = 0; k < sites; v += counts[k], k++) {
        o->first[k] = v;
        o->count[k] = counts[k];
    }
}

/* 0 when the trees of this layout keep every promise above. */
static int check(const int *counts, int sites, int *from)
{
    struct bcast_order o;
    int p = 0, site[64], sends[64] = {0}, scratch[128];
    layout(&o, counts, sites);
    for (int k = 0; k < sites; k++)
        for (int i = 0; i < counts[k]; i++)
            site[p++] = k;
    int before = failures;
    if (bcast_multilane_trees(&o, p, from, scratch) != 0) {
        fail(counts, sites, "ran out of sends", -1);
        return -1;
    }
    for (int lane = 0; lane < 2; lane++) {
        const int *f = from + lane * p;
        int crossings = 0;
        if (f[0] != -1)
            fail(counts, sites, "the root receives", 0);
        for (int v = 1; v < p; v++) {
            if (f[v] < 0 || f[v] >= p) {
                fail(counts, sites, "a member gets no lane", v);
                continue;
            }
            sends[f[v]]++;
            if (site[f[v]] != site[v]) {
                crossings++;
                if (site[v] != site[f[v]] + 1)
                    fail(counts, sites, "a lane skips a site", v);
            }
            int hops = 0;
            for (int x = v; x != 0 && hops <= p; x = f[x])
                if (f[x] < 0 || ++hops > p) {
                    fail(counts, sites, "senders do not lead to the root", v);
                    break;
                }
        }
        if (crossings != sites - 1)
            fail(counts, sites, "a lane crosses sites more than once", -1);
    }
    for (int v = 0; v < p; v++)
        if (sends[v] > 2)
            fail(counts, sites, "a member sends more than two streams", v);
    return failures == before ? 0 : -1;
}

int main(void)
{
    static const int limit[MAX_SITES + 1] = {0, 40, 20, 9, 6};
    int from[128], layouts = 0;
    for (int sites = 1; sites <= MAX_SITES; sites++) {
        int counts[MAX_SITES];
        for (int k = 0; k < sites; k++)
            counts[k] = 1;
        for (;;) {
            if (sites > 1 || counts[0] > 1) {
                check(counts, sites, from);
                layouts++;
            }
            int k = 0;
            while (k < sites && ++counts[k] > limit[sites])
                counts[k++] = 1;
            if (k == sites)
                break;
        }
    }

    /* 3+5, as docs/algorithms/bcast.md shows it. */
    static const int counts35[] = {3, 5};
    static const int want35[2][8] = {{-1, 0, 1, 1, 3, 3, 4, 4},
                                     {-1, 2, 0, 7, 7, 6, 2, 6}};
    if (check(counts35, 2, from) == 0)
        for (int lane = 0; lane < 2; lane++)
            for (int v = 0; v < 8; v++)
                if (from[lane * 8 + v] != want35[lane][v])
                    fail(counts35, 2, "trees differ from the documented ones",
                         v);

    printf("%d layouts, %d failures\n", layouts, failures);
    return failures == 0 ? 0 : 1;
}
