/*
 * Hierarchical Allgather(v) across sites: the MagPIe scheme (Kielmann et
 * al., "MagPIe: MPI's collective communication operations for clustered
 * wide area systems", PPoPP 1999, section 3: every datum crosses each WAN
 * link at most once, one WAN latency) with the leader-based structure of
 * Mamidala's thesis (ch. 6.2 and 9.2.1: the processes of a node gather
 * into one buffer, one leader per node exchanges it over the network,
 * the others copy the result out), and a selectable intra-site allgather
 * (Kumar & Kalé, allgather_site.h) for the local phase.
 *
 * Every member's block is packed once; the packed blocks of all members
 * live in one buffer, this site's first (in site-rank order), then the
 * other sites' in site order, so a site's blocks are one byte range.
 *   1. Each leader posts its receives for the other sites' ranges.
 *   2. Local allgather of this site's blocks with the site's strategy
 *      (the site level of the table, GRIDCOLL_ALLGATHER_LOCAL, default by
 *      block size): afterwards
 *      every member holds its whole site's range.
 *   3. Each leader sends its site's range to every other leader: S(S-1)
 *      WAN messages in one round, site s's n_s blocks crossing each WAN
 *      link once.  Ranges of 0 bytes are not sent (everyone knows every
 *      block's size from recvcounts).
 *   4. Local PMPI_Bcast of the other sites' ranges from the leader
 *      (strategy shm: through the node layer, bcast_site_shm.c).
 *   5. Every member unpacks every block into its place in recvbuf (its
 *      own too, unless MPI_IN_PLACE left it there).
 * The local allgather plus the broadcast of the remote part move no more
 * bytes inside a site than gather-then-broadcast of everything (each
 * member receives (N-1) m instead of N m), and the strategy runs on all
 * members in parallel instead of funnelling into the leader.
 *
 * Cost, S sites, N members, n_s on site s, m bytes per block, L and B the
 * WAN latency and bandwidth:
 *   T = T_site(n_s, m) + L + (S-1) n_s m / B + T_bcast((N - n_s) m)
 *   WAN per site s: S-1 messages, (S-1) n_s m bytes; total S(S-1)
 *   messages; the bound of docs/design ("allgather: T >= L +
 *   n_other m / B") is met up to the leader's S-1 sends of its range.
 *
 * When it wins: always across sites (one WAN latency; gather_bcast pays
 * two and sends everything twice through rank 0's site).  Handles
 * Allgatherv (uneven and zero counts), MPI_IN_PLACE, any datatype, any
 * number of sites and members per site; sites need not be contiguous
 * rank ranges.
 */
#include <string.h>

#include "coll/allgather/allgather_site.h"
#include "coll/engine/coll_sched.h"
#include "coll/gc_coll.h"
#include "coll/select/gc_coll_algo.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_world.h"

/* Where every member's packed block lives in the buffer (schedule
 * memory, like the arguments it keeps). */
struct layout {
    struct gc_comm *c;
    const char *fn;
    const struct coll_rooted_args *r; /* the copy in the schedule */
    unsigned char *all;
    size_t *len;        /* [size] packed bytes by comm rank */
    MPI_Aint *pos;      /* [size] offset by comm rank */
    MPI_Aint *site_off; /* [local_size + 1] offset by local rank */
    MPI_Aint start[GC_MAX_SITES];
    MPI_Aint bytes[GC_MAX_SITES];
    MPI_Aint total;
    MPI_Aint extent;
    /* The site's strategy; nonblocking calls: mpich, the only one not
     * blocking-only, run as MPICH's Iallgatherv. */
    const struct coll_algo *site;
};

static int layout_make(struct coll_sched *s, const struct coll_args *a,
                       struct layout **out)
{
    struct gc_comm *c = a->comm;
    const struct coll_rooted_args *r = &a->u.rooted;
    size_t n = (size_t)c->size;
    int my_site = c->site[c->rank];
    struct layout *l = coll_sched_alloc(s, sizeof *l);
    struct coll_rooted_args *kept = coll_sched_alloc(s, sizeof *kept);
    MPI_Count *counts = coll_sched_alloc(s, n * sizeof *counts);
    MPI_Aint *displs = coll_sched_alloc(s, n * sizeof *displs);
    if (l != NULL) {
        l->len = coll_sched_alloc(s, n * sizeof *l->len);
        l->pos = coll_sched_alloc(s, n * sizeof *l->pos);
        l->site_off = coll_sched_alloc(s, ((size_t)c->local_size + 1) *
                                              sizeof *l->site_off);
    }
    if (l == NULL || kept == NULL || counts == NULL || displs == NULL ||
        l->len == NULL || l->pos == NULL || l->site_off == NULL)
        return coll_no_mem(c);
    /* The counts and displacements may be the entry point's own. */
    *kept = *r;
    memcpy(counts, r->counts, n * sizeof *counts);
    memcpy(displs, r->displs, n * sizeof *displs);
    kept->counts = counts;
    kept->displs = displs;
    kept->many_type = coll_sched_type(s, r->many_type);
    kept->block_type = coll_sched_type(s, r->block_type);
    l->c = c;
    l->fn = a->fn;
    l->r = kept;
    MPI_Aint lb;
    int status = PMPI_Type_get_extent(r->many_type, &lb, &l->extent);
    for (size_t q = 0; q < n && status == MPI_SUCCESS; q++)
        status = coll_packed_size(c, r->counts[q], r->many_type, &l->len[q]);
    if (status != MPI_SUCCESS)
        return status;
    /* This site first, then the others in site order. */
    for (int i = -1; i < GC_MAX_SITES; i++) {
        int t = i < 0 ? my_site : i;
        if (i == my_site)
            continue;
        l->start[t] = l->total;
        for (int q = 0; q < c->size; q++)
            if (c->site[q] == t) {
                l->pos[q] = l->total;
                l->total += (MPI_Aint)l->len[q];
            }
        l->bytes[t] = l->total - l->start[t];
    }
    for (int k = 0; k < c->local_size; k++)
        l->site_off[k] = l->pos[c->local_to_comm[k]];
    l->site_off[c->local_size] = l->bytes[my_site];
    if ((l->all = coll_sched_alloc(s, (size_t)l->total)) == NULL)
        return coll_no_mem(c);
    *out = l;
    return MPI_SUCCESS;
}

/* Pack this member's block into its place. */
static int pack_own(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct layout *l = arg;
    const struct gc_comm *c = l->c;
    const struct coll_rooted_args *r = l->r;
    int me = c->rank;
    if (r->sbuf == MPI_IN_PLACE) {
        if (r->counts[me] == 0)
            return MPI_SUCCESS;
        const char *slot = (const char *)r->rbuf + r->displs[me] * l->extent;
        return coll_pack(c, slot, r->counts[me], r->many_type,
                         l->all + l->pos[me], l->len[me]);
    }
    size_t len;
    int status = coll_packed_size(c, r->block_count, r->block_type, &len);
    if (status != MPI_SUCCESS)
        return status;
    if (len != l->len[me])
        return gc_error(c->handle, MPI_ERR_TRUNCATE, l->fn,
                        "the send block and this rank's receive "
                        "block differ in size");
    return coll_pack(c, r->sbuf, r->block_count, r->block_type,
                     l->all + l->pos[me], len);
}

/* Every block into its place in recvbuf (the own one too, unless
 * MPI_IN_PLACE left it there). */
static int unpack_all(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct layout *l = arg;
    const struct coll_rooted_args *r = l->r;
    int status = MPI_SUCCESS;
    for (int q = 0; q < l->c->size && status == MPI_SUCCESS; q++)
        if (r->counts[q] > 0 && !(q == l->c->rank && r->sbuf == MPI_IN_PLACE))
            status = coll_unpack(l->c, l->all + l->pos[q], l->len[q],
                                 (char *)r->rbuf + r->displs[q] * l->extent,
                                 r->counts[q], r->many_type);
    return status;
}

/* Blocking calls: the site's strategy and its bcast, written as
 * blocking code (allgather_site.c). */
static int site_run(struct coll_sched *s, void *arg)
{
    struct layout *l = arg;
    return allgather_site_run(coll_sched_comm(s), l->fn, l->site, l->all,
                              l->site_off);
}

static int site_bcast(struct coll_sched *s, void *arg)
{
    struct layout *l = arg;
    MPI_Aint own = l->bytes[l->c->site[l->c->rank]];
    return allgather_site_bcast(coll_sched_comm(s), l->site, l->all + own,
                                l->total - own);
}

int allgather_grid_hier(struct coll_sched *s, const struct coll_args *a)
{
    struct gc_comm *c = a->comm;
    int my_site = c->site[c->rank], leader = c->local_rank == 0;
    int blocking = coll_may_block(a);
    struct layout *l = NULL;
    int status = layout_make(s, a, &l);
    if (status == MPI_SUCCESS)
        status =
            allgather_site_select(c, a->fn, blocking, l->site_off, &l->site);
    if (status != MPI_SUCCESS)
        return status;
    int in[GC_MAX_SITES + 1], n = 0;
    /* Receives first: data arriving early lands in place. */
    for (int t = 0; leader && t < GC_MAX_SITES; t++)
        if (t != my_site && c->leader[t] >= 0 && l->bytes[t] > 0)
            in[n++] = coll_sched_recv(s, c->leader[t], TAG_ALLGATHER,
                                      l->all + l->start[t],
                                      (MPI_Count)l->bytes[t], MPI_BYTE, -1);
    int packed = coll_sched_call(s, pack_own, l, -1), gathered;
    if (blocking) {
        gathered = coll_sched_call_blocking(s, site_run, l, packed);
    } else {
        MPI_Count *counts =
            coll_sched_alloc(s, (size_t)c->local_size * sizeof *counts);
        if (counts == NULL)
            return coll_no_mem(c);
        for (int k = 0; k < c->local_size; k++)
            counts[k] = l->site_off[k + 1] - l->site_off[k];
        struct sched_local g = {.op = LOCAL_ALLGATHERV,
                                .sbuf = MPI_IN_PLACE,
                                .rbuf = l->all,
                                .counts = counts,
                                .displs = l->site_off,
                                .rtype = MPI_BYTE};
        gathered = coll_sched_local(s, &g, packed);
    }
    for (int t = 0; leader && t < GC_MAX_SITES; t++)
        if (t != my_site && c->leader[t] >= 0 && l->bytes[my_site] > 0)
            coll_sched_send(s, c->leader[t], TAG_ALLGATHER, l->all,
                            (MPI_Count)l->bytes[my_site], MPI_BYTE, gathered);
    in[n++] = gathered;
    int known = coll_sched_join(s, in, n);
    MPI_Aint own = l->bytes[my_site];
    if (c->local_size > 1 && l->total > own) {
        if (blocking) {
            known = coll_sched_call_blocking(s, site_bcast, l, known);
        } else {
            struct sched_local b = {.op = LOCAL_BCAST,
                                    .rbuf = l->all + own,
                                    .count = l->total - own,
                                    .type = MPI_BYTE};
            known = coll_sched_local(s, &b, known);
        }
    }
    coll_sched_call(s, unpack_all, l, known);
    return MPI_SUCCESS;
}
