/*
 * Cyclic parallel reduction in shared memory: Mamidala's thesis, ch.
 * 9.2.2 ("Optimized MPI_Allreduce", the shmem-cyclic scheme of Figure
 * 9.4): the members of a node copy their vectors into the node's shared
 * buffer, each member reduces one part of the vector over all the
 * copies, visiting them in a cyclic order that starts at its own, so the
 * members never work on the same copy at the same time; the result is
 * read back from shared memory.  The local phase of allreduce hier
 * (reduce_site_shm, whose result the node leaders then reduce over PMPI)
 * and of allreduce multileader on one-node sites (reduce_scatter_site_shm),
 * with GRIDCOLL_ALLREDUCE_LOCAL=shm.
 *
 * Per round (one round while the vector fits: the node's shared data,
 * GRIDCOLL_SHM_BYTES, holds one slot per member of the site's largest
 * node, each slot the elements of a round laid out as the datatype says;
 * longer vectors take several rounds, the same on every node):
 *   1. Every member waits until the node finished the previous round,
 *      copies its elements of the round into its slot, and posts.
 *   2. Once all are in, member i of p reduces part i of the round (the
 *      elements floor(n i/p) .. floor(n (i+1)/p)) over the p slots with
 *      PMPI_Reduce_local, going down from its own slot, i, i-1, ..., 0,
 *      then p-1, ..., i+1 (cyclic, as the thesis's process 1 starts at
 *      block b), and posts.  To keep rank order for non-commutative ops
 *      it folds i-1 .. 0 into slot i (x_k op acc: x_0 op ... op x_i) and
 *      p-2 .. i+1 into slot p-1 (x_{i+1} op ... op x_{p-1}), then slot i
 *      into slot p-1: p-1 reductions, the same count as any order, and
 *      part i of slot p-1 holds x_0 op ... op x_{p-1}.
 *   3. reduce_site_shm: the node leader takes slot p-1: the site's
 *      result at local rank 0 when the site is one node, else a
 *      PMPI_Reduce of the node results over the leaders' communicator
 *      (rank order = node order when every node is a contiguous range of
 *      local ranks; a non-commutative op on interleaved nodes falls back
 *      to PMPI_Reduce on the site).  reduce_scatter_site_shm: the parts
 *      are the members' own slices of the vector (part i placed at i q in
 *      the slot, q = slot elements / p), each member copies its part of
 *      slot p-1 out.  Every member posts.
 * An element larger than a slot, or an empty datatype, falls back to
 * MPICH.  Any datatype: slots hold the type's memory layout; types with
 * holes are copied in and out through PMPI_Pack/PMPI_Unpack.
 *
 * Cost, M bytes, p members per node, N nodes, β_m memory's cost per
 * byte, γ the op's per byte, t_f a flag handoff, one round:
 *   T = M β_m + t_f + (p-1)(M/p) γ + t_f + M β_m (leader's copy)
 *       [+ T_reduce over N leaders (M bytes)]
 *   all p members compute at once: (p-1) M/p γ on the critical path
 *   against MPICH's binomial reduce with log p steps of M γ each (and
 *   M-byte messages), or its reduce-scatter + gather for long vectors.
 *   No WAN traffic.
 *
 * When it wins: several members per node and vectors from a few hundred
 * bytes, where the reduction arithmetic and the message steps of a tree
 * dominate; the cyclic order matters where copies sit in different
 * caches or NUMA domains (the thesis measured 23% on Opteron).
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "core/gc_comm.h"

/* The rounds of one call on this node. */
struct cyclic {
    struct coll_node *n;
    struct node_type t;
    MPI_Op op;
    size_t slot;    /* bytes per member */
    MPI_Aint cap;   /* elements per slot */
    void *bounce;   /* one slot's packed bytes, for types with holes */
    MPI_Aint *from; /* [p] first element of each part in the input */
    int *len;       /* [p] elements of each part */
    MPI_Aint *at;   /* [p] place of each part in a slot (elements) */
};

/* Element e of member k's slot. */
static char *element(const struct cyclic *g, int k, MPI_Aint e)
{
    return (char *)g->n->data + (size_t)k * g->slot -
           node_type_lo(&g->t, g->cap) + e * g->t.extent;
}

static void cyclic_free(struct cyclic *g)
{
    free(g->bounce);
    free(g->from);
    free(g->len);
    free(g->at);
}

/* The node layer and the geometry for slots of `members` members; *ok is
 * 0 when the node layer cannot run the call (then MPICH's does). */
static int cyclic_make(struct gc_comm *c, MPI_Datatype type, MPI_Op op,
                       struct cyclic *g, int *ok)
{
    int commutative;
    *ok = 0;
    int status = node_type_get(type, &g->t);
    if (status == MPI_SUCCESS)
        status = PMPI_Op_commutative(op, &commutative);
    if (status == MPI_SUCCESS)
        status = coll_node_begin(c, 0, &g->n);
    if (status != MPI_SUCCESS || g->t.size == 0 ||
        (!commutative && !g->n->contiguous))
        return status;
    g->op = op;
    g->slot = node_slot_bytes(g->n, g->n->max_size);
    g->cap = node_type_fit(&g->t, g->slot);
    if (g->cap > INT_MAX)
        g->cap = INT_MAX;
    if (g->cap == 0)
        return MPI_SUCCESS;
    int p = g->n->size;
    g->bounce = g->t.plain ? NULL : malloc((size_t)g->cap * (size_t)g->t.size);
    g->from = malloc((size_t)p * sizeof *g->from);
    g->len = malloc((size_t)p * sizeof *g->len);
    g->at = malloc((size_t)p * sizeof *g->at);
    if ((!g->t.plain && g->bounce == NULL) || g->from == NULL ||
        g->len == NULL || g->at == NULL)
        return MPI_ERR_NO_MEM;
    *ok = 1;
    return MPI_SUCCESS;
}

/* This member's part over every slot, in rank order, into slot p-1. */
static int reduce_part(const struct cyclic *g)
{
    int p = g->n->size, me = g->n->rank, cnt = g->len[me];
    MPI_Aint at = g->at[me];
    int status = MPI_SUCCESS;
    if (cnt == 0)
        return status;
    for (int k = me - 1; k >= 0 && status == MPI_SUCCESS; k--)
        status = PMPI_Reduce_local(element(g, k, at), element(g, me, at), cnt,
                                   g->t.type, g->op);
    for (int k = p - 2; k > me && status == MPI_SUCCESS; k--)
        status = PMPI_Reduce_local(element(g, k, at), element(g, p - 1, at),
                                   cnt, g->t.type, g->op);
    if (me != p - 1 && status == MPI_SUCCESS)
        status = PMPI_Reduce_local(element(g, me, at), element(g, p - 1, at),
                                   cnt, g->t.type, g->op);
    return status;
}

/* Phases 1 and 2 of a round whose parts are in from/len/at. */
static int reduce_round(const struct cyclic *g, const void *input)
{
    struct coll_node *n = g->n;
    int status = node_wait_all(n, n->seq);
    for (int i = 0; i < n->size && status == MPI_SUCCESS; i++)
        status = node_type_copy(
            &g->t, (const char *)input + g->from[i] * g->t.extent,
            element(g, n->rank, g->at[i]), g->len[i], g->bounce);
    if (status == MPI_SUCCESS)
        status = node_post(n);
    if (status == MPI_SUCCESS)
        status = node_wait_all(n, n->seq);
    if (status == MPI_SUCCESS)
        status = reduce_part(g);
    return status == MPI_SUCCESS ? node_post(n) : status;
}

int reduce_site_shm(struct gc_comm *c, const void *sbuf, void *rbuf,
                    MPI_Count count, MPI_Datatype type, MPI_Op op)
{
    struct cyclic g = {0};
    int ok = 0, status = MPI_SUCCESS;
    if (c->local_size > 1)
        status = cyclic_make(c, type, op, &g, &ok);
    if (status != MPI_SUCCESS || !ok) {
        cyclic_free(&g);
        return status != MPI_SUCCESS ? status
                                     : coll_local_reduce(sbuf, rbuf, count,
                                                         type, op, 0, c->local);
    }
    struct coll_node *n = g.n;
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    int p = n->size;
    for (MPI_Count first = 0; first < count && status == MPI_SUCCESS;
         first += g.cap) {
        int round = (int)(count - first < g.cap ? count - first : g.cap);
        for (int i = 0; i < p; i++) {
            g.at[i] = (MPI_Aint)((long long)round * i / p);
            g.from[i] = first + g.at[i];
            g.len[i] = (int)((long long)round * (i + 1) / p - g.at[i]);
        }
        status = reduce_round(&g, input);
        if (status == MPI_SUCCESS && n->rank == 0) {
            status = node_wait_all(n, n->seq);
            /* rbuf matters at local rank 0 only (NULL elsewhere). */
            char *out = c->local_rank == 0
                            ? (char *)rbuf + (MPI_Aint)first * g.t.extent
                            : NULL;
            if (status == MPI_SUCCESS && n->nodes == 1)
                status = node_type_copy(&g.t, element(&g, p - 1, 0), out, round,
                                        g.bounce);
            else if (status == MPI_SUCCESS)
                status = coll_local_reduce(element(&g, p - 1, 0), out, round,
                                           type, op, 0, n->leaders);
        }
        if (status == MPI_SUCCESS)
            status = node_post(n);
    }
    cyclic_free(&g);
    return status;
}

int reduce_scatter_site_shm(struct gc_comm *c, const void *input, void *out,
                            const MPI_Count *rcounts, MPI_Datatype type,
                            MPI_Op op)
{
    struct cyclic g = {0};
    int ok = 0, status = MPI_SUCCESS;
    if (c->local_size > 1)
        status = cyclic_make(c, type, op, &g, &ok);
    int q = ok ? (int)(g.cap / g.n->size) : 0;
    if (status != MPI_SUCCESS || q == 0 || g.n->nodes > 1) {
        cyclic_free(&g);
        return status != MPI_SUCCESS
                   ? status
                   : PMPI_Reduce_scatter_c(input, out, rcounts, type, op,
                                           c->local);
    }
    struct coll_node *n = g.n;
    int p = n->size;
    MPI_Count longest = 0;
    for (int i = 0; i < p; i++)
        longest = rcounts[i] > longest ? rcounts[i] : longest;
    for (MPI_Count done = 0; done < longest && status == MPI_SUCCESS;
         done += q) {
        MPI_Aint start = 0;
        for (int i = 0; i < p; i++) {
            MPI_Count left = rcounts[i] - done;
            g.from[i] = start + done;
            g.len[i] = left < 0 ? 0 : left < q ? (int)left : q;
            g.at[i] = (MPI_Aint)i * q;
            start += rcounts[i];
        }
        status = reduce_round(&g, input);
        if (status == MPI_SUCCESS)
            status = node_type_copy(&g.t, element(&g, p - 1, g.at[n->rank]),
                                    (char *)out + (MPI_Aint)done * g.t.extent,
                                    g.len[n->rank], g.bounce);
        if (status == MPI_SUCCESS)
            status = node_post(n);
    }
    cyclic_free(&g);
    return status;
}
