/*
 * What the intra-site allgather strategies share (allgather_site.h): the
 * strategy table, the choice per site, and rounds of messages made of
 * block ranges.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "allgather_site.h"
#include "gc_coll.h"
#include "gc_settings.h"
#include "node_shm.h"

/* Every strategy message uses this tag on the private communicator:
 * strategies post their rounds in the same order on every member, and
 * MPI keeps messages between a pair in order. */
enum { SITE_TAG = 1 };

/*
 * Defaults, from Kumar & Kalé: combining strategies beat direct ones for
 * messages under 8 KB (section 4.6), and k = 8 (section 4.5: a larger k
 * sends from the NIC more often; 8 = 2 * 4^1 keeps kShift's +k shift and
 * kPrefix's ring congestion free by Lemma 6, and is a power of two as
 * kPrefix needs).
 */
#define SHORT_BLOCK ((MPI_Aint)8192)
#define DEFAULT_K   GC_SETTINGS_ALLGATHER_K_DEFAULT

static const struct site_strategy {
    const char *name;
    const char *description;
    site_allgather_fn *run;
} strategies[] = {
    {"ring", "P-1 steps, each rank forwards one block to its right neighbour",
     allgather_site_ring},
    {"recursive_doubling",
     "log P pairwise exchanges of doubling size; non-powers of two: "
     "the ranks that had a partner hand its half on within their subtree",
     allgather_site_recursive_doubling},
    {"kshift",
     "each block goes to k neighbours at once, the one k away forwards it "
     "on: about P/k rounds",
     allgather_site_kshift},
    {"kprefix",
     "prefix exchange (XOR) in groups of k, ring between groups (k: the "
     "largest power of two <= K dividing P)",
     allgather_site_kprefix},
    {"mesh",
     "2-D mesh combining: row multicast, then rows to columns; holes in "
     "the last row mapped onto full rows",
     allgather_site_mesh},
    {"hypercube",
     "dimension exchange with the last two dimensions direct; ranks past "
     "a power of two fold onto the cube and get everything at the end",
     allgather_site_hypercube},
    {"mpich", "MPICH's own Allgatherv on the site's members",
     allgather_site_mpich},
    {"shm",
     "blocks into each node's shared memory, node leaders exchange their "
     "nodes' blocks, members copy out while the leaders' messages arrive",
     allgather_site_shm},
};
#define STRATEGY_COUNT ((int)(sizeof strategies / sizeof *strategies))

/* ---- rounds of messages -------------------------------------------------- */

static int post(struct site_round *r, const struct site_blocks *b, int peer,
                const int *ranges, int nranges, int send)
{
    size_t room = nranges > 0 ? (size_t)nranges : 1;
    MPI_Count *lens = malloc(2 * room * sizeof *lens);
    if (lens == NULL)
        return MPI_ERR_NO_MEM;
    MPI_Count *displs = lens + room;
    int runs = 0;
    for (int i = 0; i < nranges; i++) {
        MPI_Aint from = b->off[ranges[2 * i]];
        MPI_Aint to = b->off[ranges[2 * i + 1]];
        if (to <= from)
            continue;
        if (runs > 0 && displs[runs - 1] + lens[runs - 1] == from) {
            lens[runs - 1] += to - from;
            continue;
        }
        displs[runs] = from;
        lens[runs++] = to - from;
    }
    int status = MPI_SUCCESS;
    if (runs == 0)
        goto cleanup;
    if (r->n == r->cap) {
        int cap = r->cap > 0 ? 2 * r->cap : 8;
        MPI_Request *grown = realloc(r->reqs, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            status = MPI_ERR_NO_MEM;
            goto cleanup;
        }
        r->reqs = grown;
        r->cap = cap;
    }
    MPI_Request *req = &r->reqs[r->n];
    if (runs == 1) {
        unsigned char *at = b->buf + displs[0];
        status = send ? PMPI_Isend_c(at, lens[0], MPI_BYTE, peer, SITE_TAG,
                                     b->comm, req)
                      : PMPI_Irecv_c(at, lens[0], MPI_BYTE, peer, SITE_TAG,
                                     b->comm, req);
    } else {
        /* Several ranges: one message all the same, described in place
         * (the type may be freed as soon as the operation is posted). */
        MPI_Datatype type;
        status =
            PMPI_Type_create_hindexed_c(runs, lens, displs, MPI_BYTE, &type);
        if (status != MPI_SUCCESS)
            goto cleanup;
        status = PMPI_Type_commit(&type);
        if (status == MPI_SUCCESS)
            status = send ? PMPI_Isend_c(b->buf, 1, type, peer, SITE_TAG,
                                         b->comm, req)
                          : PMPI_Irecv_c(b->buf, 1, type, peer, SITE_TAG,
                                         b->comm, req);
        PMPI_Type_free(&type);
    }
    if (status == MPI_SUCCESS)
        r->n++;
cleanup:
    free(lens);
    return status;
}

int site_round_send(struct site_round *r, const struct site_blocks *b, int peer,
                    const int *ranges, int nranges)
{
    return post(r, b, peer, ranges, nranges, 1);
}

int site_round_recv(struct site_round *r, const struct site_blocks *b, int peer,
                    const int *ranges, int nranges)
{
    return post(r, b, peer, ranges, nranges, 0);
}

int site_round_wait(struct site_round *r, int status)
{
    /* Posted operations use the caller's buffer: finish them even after
     * a failed post. */
    int wait_status = coll_local_waitall(r->n, r->reqs);
    if (status == MPI_SUCCESS)
        status = wait_status;
    r->n = 0;
    return status;
}

void site_round_free(struct site_round *r)
{
    free(r->reqs);
    *r = (struct site_round)SITE_ROUND_INIT;
}

/* ---- choosing a strategy ------------------------------------------------- */

static int is_power_of_two(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/*
 * The default.  Short blocks: the α terms dominate, so combine: the
 * hypercube sends log2 P messages (eq. 4) against the mesh's 2 sqrt(P)
 * (eq. 3), but off a power of two its fold doubles the bytes and adds a
 * message (eq. 5) while the mesh's holes cost nothing (section 3.1).
 * Long blocks: every strategy moves (P-1) m per rank, so the fewest
 * rounds on the critical path win: kShift's ~P/k rounds (eq. 10) against
 * the ring's P-1 (eq. 7), as long as P is a multiple of k, where kShift
 * is congestion free on a fat tree (Lemma 6); otherwise the ring, which
 * is congestion free for every P (Lemma 1).  (Before all these: shm when
 * the site is one node of several members, coll_node_default.)
 */
static const char *default_strategy(int size, MPI_Aint bytes, int k)
{
    if (bytes <= SHORT_BLOCK * size)
        return is_power_of_two(size) ? "hypercube" : "mesh";
    return size % (k < size ? k : size) == 0 ? "kshift" : "ring";
}

static int find_strategy(const char *name)
{
    for (int i = 0; i < STRATEGY_COUNT; i++)
        if (strcmp(strategies[i].name, name) == 0)
            return i;
    return 0;
}

static int env_error(struct gc_comm *c, const char *fn, const char *var,
                     const char *value, const char *what)
{
    char text[512], names[256] = "";
    for (int i = 0; i < STRATEGY_COUNT; i++) {
        if (i > 0)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, strategies[i].name, sizeof names - strlen(names) - 1);
    }
    snprintf(text, sizeof text, "%s: %s=%s %s (strategies: %s)", fn, var, value,
             what, names);
    return gc_error(c->handle, MPI_ERR_ARG, text);
}

static int choose(struct gc_comm *c, const char *fn, MPI_Aint bytes, int *index,
                  int *k)
{
    *k = gc_settings_allgather_k();
    const char *env = gc_settings_algorithm("GRIDCOLL_ALLGATHER_LOCAL");
    if (env == NULL || env[0] == '\0') {
        int shm;
        int status = coll_node_default(c, fn, &shm);
        *index = find_strategy(
            shm ? "shm" : default_strategy(c->local_size, bytes, *k));
        return status;
    }
    for (*index = 0; *index < STRATEGY_COUNT; (*index)++)
        if (strcmp(strategies[*index].name, env) == 0)
            return MPI_SUCCESS;
    return env_error(c, fn, "GRIDCOLL_ALLGATHER_LOCAL", env,
                     "is not an intra-site allgather strategy");
}

int allgather_site_run(struct gc_comm *c, const char *fn, unsigned char *buf,
                       const MPI_Aint *off)
{
    if (c->local_size == 1)
        return MPI_SUCCESS;
    struct site_blocks b = {.grid = c,
                            .size = c->local_size,
                            .rank = c->local_rank,
                            .buf = buf,
                            .off = off};
    int index;
    int status = choose(c, fn, off[c->local_size], &index, &b.k);
    if (status != MPI_SUCCESS)
        return status;
    status = coll_local_p2p(c, &b.comm);
    if (status == MPI_SUCCESS)
        status = strategies[index].run(&b);
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(c);
    if (status != MPI_SUCCESS) {
        char text[160];
        snprintf(text, sizeof text, "%s: intra-site allgather (%s) failed", fn,
                 strategies[index].name);
        return gc_error(c->handle, status, text);
    }
    return MPI_SUCCESS;
}

int allgather_site_bcast(struct gc_comm *c, const char *fn, const MPI_Aint *off,
                         unsigned char *buf, MPI_Aint len)
{
    int index, k;
    int status = choose(c, fn, off[c->local_size], &index, &k);
    if (status != MPI_SUCCESS)
        return status;
    return strategies[index].run == allgather_site_shm
               ? bcast_site_shm(c, buf, len, MPI_BYTE)
               : PMPI_Bcast_c(buf, len, MPI_BYTE, 0, c->local);
}

void allgather_site_print(FILE *out)
{
    fprintf(out,
            "allgather, allgatherv: intra-site strategy of hier "
            "(GRIDCOLL_ALLGATHER_LOCAL=NAME, GRIDCOLL_ALLGATHER_K=K, "
            "default %d)\n",
            DEFAULT_K);
    for (int i = 0; i < STRATEGY_COUNT; i++)
        fprintf(out, "  %-20s %s\n", strategies[i].name,
                strategies[i].description);
    fprintf(out,
            "  default: shm when the site has several members, all on one "
            "node; else up to %ld bytes per block on average hypercube (P "
            "a power of two) or mesh; larger kshift (P a multiple of "
            "min(k, P)) or ring\n\n",
            (long)SHORT_BLOCK);
}
