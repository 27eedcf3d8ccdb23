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
 *      (GRIDCOLL_ALLGATHER_LOCAL, default by block size): afterwards
 *      every member holds its whole site's range.
 *   3. Each leader sends its site's range to every other leader: S(S-1)
 *      WAN messages in one round, site s's n_s blocks crossing each WAN
 *      link once.  Ranges of 0 bytes are not sent (everyone knows every
 *      block's size from recvcounts).
 *   4. Local PMPI_Bcast of the other sites' ranges from the leader.
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
#include <stdlib.h>

#include "allgather_site.h"
#include "gc_coll.h"
#include "gc_coll_algo.h"

/* Where every member's packed block lives in the buffer. */
struct layout {
    size_t *len;        /* [size] packed bytes by comm rank */
    MPI_Aint *pos;      /* [size] offset by comm rank */
    MPI_Aint *site_off; /* [local_size + 1] offset by local rank */
    MPI_Aint start[GC_MAX_SITES];
    MPI_Aint bytes[GC_MAX_SITES];
    MPI_Aint total;
};

static void layout_free(struct layout *l)
{
    free(l->len);
    free(l->pos);
    free(l->site_off);
}

static int layout_make(const struct gc_comm *c, const struct site_map *map,
                       const struct coll_rooted_args *r, struct layout *l)
{
    int my_site = c->site[c->rank];
    l->len = malloc((size_t)c->size * sizeof *l->len);
    l->pos = malloc((size_t)c->size * sizeof *l->pos);
    l->site_off = malloc((size_t)(c->local_size + 1) * sizeof *l->site_off);
    if (l->len == NULL || l->pos == NULL || l->site_off == NULL)
        return coll_no_mem(c);
    for (int q = 0; q < c->size; q++) {
        int status =
            coll_packed_size(c, r->counts[q], r->many_type, &l->len[q]);
        if (status != MPI_SUCCESS)
            return status;
    }
    l->total = 0;
    /* This site first, then the others in site order. */
    for (int i = -1; i < GC_MAX_SITES; i++) {
        int s = i < 0 ? my_site : i;
        if (i == my_site)
            continue;
        l->start[s] = l->total;
        for (int j = map->first[s]; j < map->first[s] + map->count[s]; j++) {
            l->pos[map->member[j]] = l->total;
            l->total += (MPI_Aint)l->len[map->member[j]];
        }
        l->bytes[s] = l->total - l->start[s];
    }
    for (int k = 0; k < c->local_size; k++)
        l->site_off[k] = l->pos[c->local_to_comm[k]];
    l->site_off[c->local_size] = l->bytes[my_site];
    return MPI_SUCCESS;
}

/* Pack this member's block into its place. */
static int pack_own(const struct gc_comm *c, const char *fn,
                    const struct coll_rooted_args *r, const struct layout *l,
                    MPI_Aint extent, unsigned char *all)
{
    int me = c->rank;
    if (r->sbuf == MPI_IN_PLACE) {
        if (r->counts[me] == 0)
            return MPI_SUCCESS;
        const char *slot = (const char *)r->rbuf + r->displs[me] * extent;
        return coll_pack(c, slot, r->counts[me], r->many_type, all + l->pos[me],
                         l->len[me]);
    }
    size_t len;
    int status = coll_packed_size(c, r->block_count, r->block_type, &len);
    if (status != MPI_SUCCESS)
        return status;
    if (len != l->len[me])
        return coll_arg_error(c, MPI_ERR_TRUNCATE, fn,
                              "the send block and this rank's receive "
                              "block differ in size");
    return coll_pack(c, r->sbuf, r->block_count, r->block_type,
                     all + l->pos[me], len);
}

int allgather_grid_hier(const struct coll_args *a)
{
    const struct coll_rooted_args *r = &a->u.rooted;
    struct gc_comm *c = a->comm;
    int my_site = c->site[c->rank], leader = c->local_rank == 0;
    struct site_map map = {0};
    struct layout l = {0};
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    unsigned char *all = NULL;
    MPI_Aint lb, extent;
    int n = 0, local_status = MPI_SUCCESS;
    int status = PMPI_Type_get_extent(r->many_type, &lb, &extent);
    if (status == MPI_SUCCESS)
        status = site_map_build(c, &map);
    if (status == MPI_SUCCESS)
        status = layout_make(c, &map, r, &l);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if ((all = coll_alloc((size_t)l.total)) == NULL) {
        status = coll_no_mem(c);
        goto cleanup;
    }
    status = pack_own(c, a->fn, r, &l, extent, all);
    if (status != MPI_SUCCESS)
        goto cleanup;

    /* Receives first: data arriving early lands in place. */
    for (int s = 0; leader && s < GC_MAX_SITES && status == MPI_SUCCESS; s++)
        if (s != my_site && map.count[s] > 0 && l.bytes[s] > 0)
            status = coll_irecv(c, c->leader[s], TAG_ALLGATHER,
                                all + l.start[s], (size_t)l.bytes[s], reqs, &n);
    /* Reported by itself: coll_wait reports only transfer failures. */
    if (status == MPI_SUCCESS)
        local_status = allgather_site_run(c, a->fn, all, l.site_off);
    for (int s = 0; leader && s < GC_MAX_SITES && status == MPI_SUCCESS &&
                    local_status == MPI_SUCCESS;
         s++)
        if (s != my_site && map.count[s] > 0 && l.bytes[my_site] > 0)
            status = coll_isend(c, c->leader[s], TAG_ALLGATHER, all,
                                (size_t)l.bytes[my_site], reqs, &n);
    status = coll_wait(c, n, reqs, status);
    if (status == MPI_SUCCESS)
        status = local_status;
    if (status == MPI_SUCCESS && c->local_size > 1 &&
        l.total > l.bytes[my_site])
        status =
            PMPI_Bcast_c(all + l.bytes[my_site], l.total - l.bytes[my_site],
                         MPI_BYTE, 0, c->local);

    for (int q = 0; q < c->size && status == MPI_SUCCESS; q++)
        if (r->counts[q] > 0 && !(q == c->rank && r->sbuf == MPI_IN_PLACE))
            status = coll_unpack(c, all + l.pos[q], l.len[q],
                                 (char *)r->rbuf + r->displs[q] * extent,
                                 r->counts[q], r->many_type);
cleanup:
    free(all);
    layout_free(&l);
    site_map_free(&map);
    return status;
}
