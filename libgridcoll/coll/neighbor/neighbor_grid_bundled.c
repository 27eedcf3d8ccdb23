/*
 * Neighbourhood collectives (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w), their I and _init forms) with the blocks
 * between two sites bundled: one relay message per direction of each
 * pair of sites instead of one per cut edge.
 *
 * Source: the definition in MPI-4.0 section 8.6 (sends to the
 * destinations, receives from the sources, matched as
 * neighbor_grid_direct.c's header says); Hoefler and Träff, "Sparse
 * collective operations for MPI", IPDPS 2009, section 3 (the direct
 * exchange, optimal in messages for a flat network); message combining
 * for sparse collectives, Träff, Carpen-Amarie, Hunold and Rougier,
 * "Message-combining algorithms for isomorphic, sparse collective
 * communication" (2016), and for short messages Kumar and Kalé, "Scaling
 * all-to-all multicast on fat-tree networks", section 3 (fewer, larger
 * messages through intermediate nodes when the per-message cost
 * dominates); the site-local regrouping before one WAN transfer per
 * pair of sites is Steffenel et al.'s Local Group, section VI.B
 * (alltoall_grid_lg.c), applied to a sparse pattern.
 *
 * The plan (neighbor_plan.c, made with the topology, the same on every
 * member): a direction s -> t between two sites is bundled when two or
 * more blocks cross it; for each pair of sites with a bundled direction
 * one member of s coordinates s's side (the one with most blocks to and
 * from t, roles spread over the site's members).  Blocks inside a site
 * and across a direction that is not bundled go as in
 * neighbor_grid_direct.c.  For each bundled direction s -> t:
 *  0. v- and w-forms only: every member of s with blocks in a bundled
 *     direction with t sends the coordinator the sizes of its blocks to t
 *     and from t (MPI gives each size to its sender and its receiver
 *     only); the coordinator lays out its buffers and points the steps
 *     below at them (coll_sched_retarget).  Allgather and alltoall skip
 *     this: MPI makes every block the same size on every member.
 *  1. every member of s packs its blocks for t (send order) and sends
 *     them to the coordinator over the site (TAG_NEIGHBOR_GATHER);
 *  2. the coordinator sends t's coordinator one relay message: the
 *     blocks by sending member and its send order, after a header of
 *     their sizes (64 bits each) in the v- and w-forms
 *     (TAG_NEIGHBOR_BUNDLE);
 *  3. t's coordinator checks each size in the header against the size
 *     its receiver gave (MPI_ERR_TRUNCATE if they differ, as a direct
 *     message of the wrong length would get), regroups the blocks by
 *     receiver in the receiver's posting order, and sends each member of
 *     t its blocks (TAG_NEIGHBOR_SPLIT), which it unpacks.
 * The k-th block from u to v is the one v's k-th receive from u takes in
 * its posting order, so duplicate neighbours and the Cartesian -1/+1
 * pairing of dimensions of size 1 and 2 match exactly as in direct.
 * Every step is posted by the engine when the one it waits for has
 * finished: no member blocks, in the nonblocking and persistent forms
 * (whose later starts re-run the sizes step: sizes are fixed by the
 * call's arguments, buffers are reused).
 *
 * Cost, direction s -> t with E blocks of m bytes, the sending members
 * holding at most e of them, α_l/β_l the site's and α_w/β_w/g the WAN's
 * latency, time per byte and gap per message (docs/model.md):
 *   direct:  E WAN messages, L ≈ α_w + E g + E m β_w
 *   bundled: 1 WAN message of E m bytes (E (m + 4): v-, w-forms),
 *            L ≈ [α_l] + 2 (α_l + e m β_l) + E m γ + α_w + E m β_w
 *            ([α_l]: the sizes step of the v-forms; γ: the copies)
 * It saves E - 1 WAN messages (the relays' per-message work, g each)
 * for two local hops; those stay cheaper while m is small (see the
 * selection rule in gc_coll_select.c).
 */
#include <stdint.h>
#include <string.h>

#include "coll/gc_coll.h"
#include "coll/neighbor/neighbor.h"
#include "coll/neighbor/neighbor_plan.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_world.h"

/* A size in a bundle's header and in the sizes step. */
typedef uint64_t nb_len;

/* Blocks of this member, packed back to back at `bytes`. */
struct nb_block {
    char *buf;
    MPI_Count count;
    MPI_Datatype type;
    size_t len;
};

struct nb_blocks {
    struct gc_comm *c;
    int n;
    struct nb_block *b;
    unsigned char *bytes;
    size_t total;
};

/* This member's part in the traffic with one other site. */
struct nb_pair {
    const struct gc_plan_pair *p;
    struct nb_blocks out, in; /* its blocks in bundled directions */
    /* Coordinator: members' sizes (member m's at at[m]: n_out[m] sizes
     * of blocks to the site, then n_in[m] from it) and, for those from
     * it, offsets in the member's share of deliv. */
    int me;     /* this member's index in p->member, -1: none */
    int header; /* bundles start with their blocks' sizes (v-, w-forms) */
    nb_len *sizes;
    size_t *at;
    size_t *slot_at;
    size_t *out_at;   /* [members + 1] shares of the outgoing bundle */
    size_t *deliv_at; /* [members + 1] shares of the incoming one */
    unsigned char *bout, *bin, *deliv;
    size_t bout_cap, bin_cap, deliv_cap;
    int *gather_step, *deliver_step; /* [members] */
    int wan_send, wan_recv;
};

static int pack_blocks(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct nb_blocks *x = arg;
    unsigned char *at = x->bytes;
    int status = MPI_SUCCESS;
    for (int i = 0; i < x->n && status == MPI_SUCCESS; i++) {
        const struct nb_block *b = &x->b[i];
        if (b->len > 0)
            status = coll_pack(x->c, b->buf, b->count, b->type, at, b->len);
        at += b->len;
    }
    return status;
}

static int unpack_blocks(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct nb_blocks *x = arg;
    const unsigned char *at = x->bytes;
    int status = MPI_SUCCESS;
    for (int i = 0; i < x->n && status == MPI_SUCCESS; i++) {
        const struct nb_block *b = &x->b[i];
        if (b->len > 0)
            status = coll_unpack(x->c, at, b->len, b->buf, b->count, b->type);
        at += b->len;
    }
    return status;
}

/* *buf with room for `bytes`, from the schedule when it has too little. */
static int room(struct coll_sched *s, unsigned char **buf, size_t *cap,
                size_t bytes)
{
    if (*buf != NULL && bytes <= *cap)
        return 0;
    *buf = coll_sched_alloc(s, bytes);
    *cap = bytes;
    return *buf != NULL ? 0 : -1;
}

/*
 * Coordinator, once every size is known: the bundles' and deliveries'
 * layout, the header of the outgoing bundle, and the steps that move
 * them pointed at their bytes.  At build time when MPI fixes the sizes,
 * else a step after the sizes arrive.
 */
static int lay_out(struct coll_sched *s, void *arg)
{
    struct nb_pair *x = arg;
    const struct gc_plan_pair *p = x->p;
    int members = p->members;
    x->out_at[0] = x->deliv_at[0] = 0;
    for (int m = 0; m < members; m++) {
        const nb_len *len = x->sizes + x->at[m];
        size_t out = 0, in = 0;
        for (int k = 0; k < p->n_out[m]; k++)
            out += len[k];
        for (int k = 0; k < p->n_in[m]; k++) {
            x->slot_at[x->at[m] + p->n_out[m] + k] = in;
            in += len[p->n_out[m] + k];
        }
        x->out_at[m + 1] = x->out_at[m] + out;
        x->deliv_at[m + 1] = x->deliv_at[m] + in;
    }
    size_t head_out = x->header ? (size_t)p->out_edges * sizeof(nb_len) : 0;
    size_t head_in = x->header ? (size_t)p->in_edges * sizeof(nb_len) : 0;
    size_t bout = head_out + x->out_at[members];
    size_t bin = head_in + x->deliv_at[members];
    if (gc_plan_bundled(p->out_edges)) {
        if (room(s, &x->bout, &x->bout_cap, bout) != 0)
            return MPI_ERR_NO_MEM;
        unsigned char *head = x->bout;
        for (int m = 0; m < members; m++) {
            size_t bytes = (size_t)p->n_out[m] * sizeof(nb_len);
            if (x->header)
                memcpy(head, x->sizes + x->at[m], bytes);
            head += bytes;
            coll_sched_retarget(s, x->gather_step[m],
                                x->bout + head_out + x->out_at[m],
                                (MPI_Count)(x->out_at[m + 1] - x->out_at[m]));
        }
        if (x->me >= 0)
            x->out.bytes = x->bout + head_out + x->out_at[x->me];
        coll_sched_retarget(s, x->wan_send, x->bout, (MPI_Count)bout);
    }
    if (gc_plan_bundled(p->in_edges)) {
        if (room(s, &x->bin, &x->bin_cap, bin) != 0 ||
            room(s, &x->deliv, &x->deliv_cap, x->deliv_at[members]) != 0)
            return MPI_ERR_NO_MEM;
        coll_sched_retarget(s, x->wan_recv, x->bin, (MPI_Count)bin);
        for (int m = 0; m < members; m++)
            coll_sched_retarget(
                s, x->deliver_step[m], x->deliv + x->deliv_at[m],
                (MPI_Count)(x->deliv_at[m + 1] - x->deliv_at[m]));
        if (x->me >= 0)
            x->in.bytes = x->deliv + x->deliv_at[x->me];
    }
    return MPI_SUCCESS;
}

/* Coordinator: the other site's bundle, its header checked, regrouped by
 * receiver in each receiver's posting order. */
static int split(struct coll_sched *s, void *arg)
{
    (void)s;
    struct nb_pair *x = arg;
    const struct gc_plan_pair *p = x->p;
    const unsigned char *data =
        x->bin + (x->header ? (size_t)p->in_edges * sizeof(nb_len) : 0);
    for (int b = 0; b < p->in_edges; b++) {
        int m = p->in_member[b];
        size_t i = x->at[m] + (size_t)p->n_out[m] + (size_t)p->in_slot[b];
        nb_len len = x->sizes[i], sent = len;
        if (x->header)
            memcpy(&sent, x->bin + (size_t)b * sizeof sent, sizeof sent);
        if (sent != len)
            return MPI_ERR_TRUNCATE;
        memcpy(x->deliv + x->deliv_at[m] + x->slot_at[i], data, len);
        data += len;
    }
    return MPI_SUCCESS;
}

/* A block of the call, kept in the schedule with its packed size. */
static int keep_block(struct coll_sched *s, const struct coll_args *a,
                      char *buf, MPI_Count count, MPI_Datatype type,
                      struct nb_blocks *x)
{
    struct nb_block *b = &x->b[x->n++];
    b->buf = buf;
    b->count = count;
    b->type = coll_sched_type(s, type);
    int status = coll_packed_size(a->comm, count, b->type, &b->len);
    x->total += b->len;
    return status;
}

/*
 * This member's blocks to site t in its send order and from t in its
 * posting order, in the directions the plan bundles.
 */
static int my_blocks(struct coll_sched *s, const struct coll_args *a, int t,
                     struct nb_pair *x)
{
    struct gc_comm *c = a->comm;
    const struct coll_neighbor_args *n = &a->u.neighbor;
    int out = gc_plan_bundled(x->p->out_edges);
    int in = gc_plan_bundled(x->p->in_edges);
    x->out.c = x->in.c = c;
    x->out.b = coll_sched_alloc(s, (size_t)n->outdegree * sizeof *x->out.b);
    x->in.b = coll_sched_alloc(s, (size_t)n->indegree * sizeof *x->in.b);
    if (x->out.b == NULL || x->in.b == NULL)
        return coll_no_mem(c);
    int status = MPI_SUCCESS;
    for (int i = 0; out && i < n->outdegree && status == MPI_SUCCESS; i++) {
        int peer = n->destinations[i];
        if (peer != MPI_PROC_NULL && c->site[peer] == t)
            status = keep_block(s, a, (char *)n->sbuf + n->sdispls[i],
                                n->scounts[i], n->stypes[i], &x->out);
    }
    for (int k = 0; in && k < n->indegree && status == MPI_SUCCESS; k++) {
        int j = n->cart ? k ^ 1 : k;
        int peer = n->sources[j];
        if (peer != MPI_PROC_NULL && c->site[peer] == t)
            status = keep_block(s, a, (char *)n->rbuf + n->rdispls[j],
                                n->rcounts[j], n->rtypes[j], &x->in);
    }
    return status;
}

/* A member that does not coordinate: its blocks to and from it. */
static int member(struct coll_sched *s, const struct coll_args *a,
                  struct nb_pair *x)
{
    int coord = x->p->coord_here, n = x->out.n + x->in.n;
    if (n == 0)
        return MPI_SUCCESS;
    if (a->bytes == 0) {
        nb_len *sizes = coll_sched_alloc(s, (size_t)n * sizeof *sizes);
        if (sizes == NULL)
            return coll_no_mem(a->comm);
        for (int i = 0; i < x->out.n; i++)
            sizes[i] = (nb_len)x->out.b[i].len;
        for (int i = 0; i < x->in.n; i++)
            sizes[x->out.n + i] = (nb_len)x->in.b[i].len;
        coll_sched_send(s, coord, TAG_NEIGHBOR_SIZES, sizes,
                        (MPI_Count)(n * sizeof *sizes), MPI_BYTE, -1);
    }
    if (x->out.n > 0) {
        if ((x->out.bytes = coll_sched_alloc(s, x->out.total)) == NULL)
            return coll_no_mem(a->comm);
        coll_sched_send(s, coord, TAG_NEIGHBOR_GATHER, x->out.bytes,
                        (MPI_Count)x->out.total, MPI_BYTE,
                        coll_sched_call(s, pack_blocks, &x->out, -1));
    }
    if (x->in.n > 0) {
        if ((x->in.bytes = coll_sched_alloc(s, x->in.total)) == NULL)
            return coll_no_mem(a->comm);
        coll_sched_call(s, unpack_blocks, &x->in,
                        coll_sched_recv(s, coord, TAG_NEIGHBOR_SPLIT,
                                        x->in.bytes, (MPI_Count)x->in.total,
                                        MPI_BYTE, -1));
    }
    return MPI_SUCCESS;
}

/* The coordinator's buffers of sizes and offsets; its own sizes. */
static int coord_init(struct coll_sched *s, const struct coll_args *a,
                      struct nb_pair *x)
{
    const struct gc_plan_pair *p = x->p;
    struct gc_comm *c = a->comm;
    size_t members = (size_t)p->members;
    x->me = -1;
    x->header = a->bytes == 0;
    x->at = coll_sched_alloc(s, (members + 1) * sizeof *x->at);
    x->out_at = coll_sched_alloc(s, (members + 1) * sizeof *x->out_at);
    x->deliv_at = coll_sched_alloc(s, (members + 1) * sizeof *x->deliv_at);
    x->gather_step = coll_sched_alloc(s, members * sizeof *x->gather_step);
    x->deliver_step = coll_sched_alloc(s, members * sizeof *x->deliver_step);
    if (!x->at || !x->out_at || !x->deliv_at || !x->gather_step ||
        !x->deliver_step)
        return coll_no_mem(c);
    for (size_t m = 0; m < members; m++) {
        x->at[m + 1] = x->at[m] + (size_t)p->n_out[m] + (size_t)p->n_in[m];
        x->gather_step[m] = x->deliver_step[m] = -1;
        if (p->member[m] == c->rank)
            x->me = (int)m;
    }
    x->wan_send = x->wan_recv = -1;
    x->sizes = coll_sched_alloc(s, x->at[members] * sizeof *x->sizes);
    x->slot_at = coll_sched_alloc(s, x->at[members] * sizeof *x->slot_at);
    if (x->sizes == NULL || x->slot_at == NULL)
        return coll_no_mem(c);
    /* The plan and this member's lists describe one graph. */
    int out = x->me >= 0 ? p->n_out[x->me] : 0;
    int in = x->me >= 0 ? p->n_in[x->me] : 0;
    if (out != x->out.n || in != x->in.n)
        return gc_error(c->handle, MPI_ERR_INTERN,
                        "neighbourhood collective: the site-pair plan does "
                        "not match the topology (GridColl bug)",
                        NULL);
    /* Allgather, alltoall: every block has the size every member knows. */
    for (size_t i = 0; a->bytes > 0 && i < x->at[members]; i++)
        x->sizes[i] = (nb_len)a->bytes;
    for (int i = 0; i < out; i++)
        x->sizes[x->at[x->me] + (size_t)i] = (nb_len)x->out.b[i].len;
    for (int i = 0; i < in; i++)
        x->sizes[x->at[x->me] + (size_t)out + (size_t)i] =
            (nb_len)x->in.b[i].len;
    return MPI_SUCCESS;
}

/* The coordinator of this site's traffic with the pair's other site. */
static int coordinator(struct coll_sched *s, const struct coll_args *a,
                       struct nb_pair *x)
{
    const struct gc_plan_pair *p = x->p;
    int members = p->members;
    int status = coord_init(s, a, x);
    if (status != MPI_SUCCESS)
        return status;
    int *steps = coll_sched_alloc(s, ((size_t)members + 2) * sizeof *steps);
    if (steps == NULL)
        return coll_no_mem(a->comm);
    int laid = -1, n = 0;
    if (a->bytes == 0) {
        for (int m = 0; m < members; m++)
            if (m != x->me && x->at[m + 1] > x->at[m])
                steps[n++] = coll_sched_recv(
                    s, p->member[m], TAG_NEIGHBOR_SIZES, x->sizes + x->at[m],
                    (MPI_Count)((x->at[m + 1] - x->at[m]) * sizeof *x->sizes),
                    MPI_BYTE, -1);
        laid = coll_sched_call(s, lay_out, x, coll_sched_join(s, steps, n));
    }
    if (gc_plan_bundled(p->out_edges)) {
        n = 0;
        for (int m = 0; m < members; m++)
            if (m != x->me && p->n_out[m] > 0)
                steps[n++] = x->gather_step[m] =
                    coll_sched_recv(s, p->member[m], TAG_NEIGHBOR_GATHER, NULL,
                                    -1, MPI_BYTE, laid);
        if (x->out.n > 0)
            steps[n++] = coll_sched_call(s, pack_blocks, &x->out, laid);
        steps[n++] = laid;
        x->wan_send =
            coll_sched_send(s, p->coord_there, TAG_NEIGHBOR_BUNDLE, NULL, -1,
                            MPI_BYTE, coll_sched_join(s, steps, n));
    }
    if (gc_plan_bundled(p->in_edges)) {
        x->wan_recv = coll_sched_recv(s, p->coord_there, TAG_NEIGHBOR_BUNDLE,
                                      NULL, -1, MPI_BYTE, laid);
        int split_step = coll_sched_call(s, split, x, x->wan_recv);
        for (int m = 0; m < members; m++)
            if (m != x->me && p->n_in[m] > 0)
                x->deliver_step[m] =
                    coll_sched_send(s, p->member[m], TAG_NEIGHBOR_SPLIT, NULL,
                                    -1, MPI_BYTE, split_step);
        if (x->in.n > 0)
            coll_sched_call(s, unpack_blocks, &x->in, split_step);
    }
    if (a->bytes == 0)
        return MPI_SUCCESS;
    status = lay_out(s, x);
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(a->comm);
    if (status != MPI_SUCCESS)
        return gc_error(a->comm->handle, status, a->fn,
                        "the blocks for another site are over 2 GiB");
    return MPI_SUCCESS;
}

int neighbor_grid_bundled_usable(const struct coll_args *a)
{
    const struct coll_neighborhood *h = a->comm->neighborhood;
    return h != NULL && h->plan.matched && h->plan.saves;
}

/* Whether the block between this member and `peer` goes in a bundle. */
static int bundled(const struct gc_comm *c, int peer, int sending)
{
    if (peer == MPI_PROC_NULL || c->site[peer] == c->site[c->rank])
        return 0;
    const struct gc_plan_pair *p = &c->neighborhood->plan.pair[c->site[peer]];
    return gc_plan_bundled(sending ? p->out_edges : p->in_edges);
}

int neighbor_grid_bundled(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    const struct coll_neighbor_args *n = &a->u.neighbor;
    const struct gc_plan *plan = &c->neighborhood->plan;
    int status = MPI_SUCCESS;
    for (int k = 0; k < n->indegree && status == MPI_SUCCESS; k++) {
        int j = n->cart ? k ^ 1 : k;
        if (!bundled(c, n->sources[j], 0))
            status = neighbor_direct_recv(s, a, j);
    }
    for (int i = 0; i < n->outdegree && status == MPI_SUCCESS; i++)
        if (!bundled(c, n->destinations[i], 1))
            status = neighbor_direct_send(s, a, i);
    /* Sites in order: members and coordinators add the steps they share
     * (one per site with each peer and tag) in the same order. */
    for (int t = 0; t < GC_MAX_SITES && status == MPI_SUCCESS; t++) {
        const struct gc_plan_pair *p = &plan->pair[t];
        if (t == c->site[c->rank] || p->coord_here < 0)
            continue;
        struct nb_pair *x = coll_sched_alloc(s, sizeof *x);
        if (x == NULL)
            return coll_no_mem(c);
        x->p = p;
        status = my_blocks(s, a, t, x);
        if (status == MPI_SUCCESS)
            status = p->coord_here == c->rank ? coordinator(s, a, x)
                                              : member(s, a, x);
    }
    return status;
}
