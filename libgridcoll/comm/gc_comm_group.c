/*
 * The constructors that only the new communicator's members call
 * (MPI 4.1 §7.4.2): MPI_Comm_create_group, which the parent's other
 * members do not enter, and MPI_Comm_create_from_group, which has no
 * parent, on groups whose members are on several sites.
 *
 * No collective of a parent may be used, so the members agree on the new
 * relay context among themselves (docs/design/mpi-layer.md,
 * "Communicators").  Phases, for a group of n members on S sites:
 *   1. this site's part: MPICH's own constructor over this site's members
 *      (PMPI_Comm_create_group of the parent's `local`, or
 *      PMPI_Comm_create_from_group), which numbers them in group order;
 *   2. the largest next free context id of the site's members, at the
 *      site's first member (PMPI_Reduce on that part);
 *   3. the site leaders send it to each other over the relays, on the
 *      constructor context (GC_CTX_CREATE) of a communicator holding every
 *      member (the parent, or the layer's grid), tagged with the
 *      program's tag, so that concurrent constructions do not match each
 *      other's messages: an all-to-all between coordinators as in MagPIe
 *      (Kielmann et al., PPoPP 1999, section 3);
 *   4. PMPI_Bcast of the largest on this site's part.
 * Cost: S(S-1) WAN messages of 4 bytes, one WAN latency, plus a local
 * reduce and bcast; members on the same site alone (S = 1) skip 2-4.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/gc_coll.h"
#include "comm/gc_context.h"
#include "comm/gc_group.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_xfer.h"

/*
 * One round of phases 2-4 for the members `g` (grid ranks, new-rank
 * order), whose part on this site is `local`; `via` holds every member.
 * In: this member's proposal (0: it yields, gc_context.c).  Out: the
 * largest proposal, and whether a member yielded.
 */
static int agree_round(struct gc_comm *via, const struct gc_ranks *g,
                       MPI_Comm local, int tag, uint32_t mine,
                       uint32_t *largest, int *yielded)
{
    /* [largest proposal, whether one yielded]: both combine by MPI_MAX. */
    uint32_t site[2] = {0, 0}, mine2[2] = {mine, mine == 0};
    uint32_t proposal[GC_MAX_SITES][2] = {{0}};
    int leader[GC_MAX_SITES], local_rank;
    struct gc_xfer *reqs[2 * GC_MAX_SITES];
    int n = 0;
    unsigned held = gc_block_begin();
    int status = PMPI_Reduce(mine2, site, 2, MPI_UINT32_T, MPI_MAX, 0, local);
    gc_block_end(held);
    if (status != MPI_SUCCESS)
        return status;
    PMPI_Comm_rank(local, &local_rank);
    uint32_t result[3] = {site[0], site[1], 0};
    if (local_rank == 0) {
        for (int s = 0; s < GC_MAX_SITES; s++)
            leader[s] = -1;
        for (int i = 0; i < g->size; i++) {
            int r = via->comm_rank_of_grid[g->rank[i]];
            if (leader[via->site[r]] < 0)
                leader[via->site[r]] = r;
        }
        for (int s = 0; s < GC_MAX_SITES && status == MPI_SUCCESS; s++) {
            if (leader[s] < 0 || s == gc_world.site_index)
                continue;
            status = gc_xfer_isend_on(via, GC_CTX_CREATE, leader[s], tag, site,
                                      sizeof site, &reqs[n]);
            if (status != MPI_SUCCESS)
                break;
            n++;
            status =
                gc_xfer_irecv_on(via, GC_CTX_CREATE, leader[s], tag,
                                 proposal[s], sizeof proposal[s], &reqs[n]);
            if (status == MPI_SUCCESS)
                n++;
        }
        int waited = gc_xfer_waitall(n, reqs);
        if (status == MPI_SUCCESS)
            status = waited;
        for (int s = 0; s < GC_MAX_SITES; s++) {
            if (proposal[s][0] > result[0])
                result[0] = proposal[s][0];
            result[1] |= proposal[s][1];
        }
        result[2] = status != MPI_SUCCESS;
    }
    /* A leader whose exchange failed still takes part in the bcast, so
     * that its site's members do not wait forever; they then fail too. */
    held = gc_block_begin();
    int bcast = PMPI_Bcast(result, 3, MPI_UINT32_T, 0, local);
    gc_block_end(held);
    if (status != MPI_SUCCESS)
        return status;
    if (bcast != MPI_SUCCESS)
        return bcast;
    if (result[2] != 0)
        return MPI_ERR_OTHER;
    *largest = result[0];
    *yielded = result[1] != 0;
    return MPI_SUCCESS;
}

/* Phases 2-4, in rounds until no member yields (gc_context.c). */
static int agree_context(struct gc_comm *via, const struct gc_ranks *g,
                         MPI_Comm local, int tag, uint32_t *context)
{
    struct gc_ctx_claim claim;
    int status = MPI_SUCCESS, exhausted = 0;
    gc_ctx_claim_begin(&claim, via->context, tag);
    for (*context = 0; *context == 0 && !exhausted && status == MPI_SUCCESS;) {
        uint32_t largest = 0;
        int yielded = 0;
        status = agree_round(via, g, local, tag, gc_ctx_propose(&claim),
                             &largest, &yielded);
        if (status == MPI_SUCCESS)
            *context = gc_ctx_decide(&claim, largest, yielded, &exhausted);
    }
    gc_ctx_claim_end(&claim);
    return status == MPI_SUCCESS && exhausted ? MPI_ERR_INTERN : status;
}

/*
 * Phases 2-4 once this site's part is made (`local`, MPI_COMM_NULL when
 * this process is not a member): the new communicator, registered when
 * its members span sites.  Errors go to `report_to`, or to local's own
 * handler (the one MPI_Comm_create_from_group was given) when that is
 * MPI_COMM_NULL.
 */
static int finish(struct gc_comm *via, const struct gc_ranks *g, MPI_Comm local,
                  int tag, MPI_Comm report_to, const char *function,
                  MPI_Comm *newcomm)
{
    uint32_t context = 0;
    *newcomm = local;
    if (local == MPI_COMM_NULL || gc_ranks_on_site(g))
        return MPI_SUCCESS;
    int status = agree_context(via, g, local, tag, &context);
    if (status == MPI_SUCCESS &&
        gc_comm_build(g->rank, g->size, local, context) == NULL)
        status = MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS)
        return MPI_SUCCESS;
    status = gc_error(report_to != MPI_COMM_NULL ? report_to : local, status,
                      function,
                      status == MPI_ERR_NO_MEM
                          ? "out of memory"
                          : "the members could not agree on a relay context");
    PMPI_Comm_free(newcomm);
    return status;
}

/*
 * This site's members of g as an MPICH group (*site, to free), and
 * whether this process is one of g's members.  With `parent` (an MPICH
 * communicator holding them) the group is made from parent's own group:
 * MPICH 4.0.2's MPI_Comm_create_group crashes on a group made from
 * another communicator's, even of the same processes.
 */
static int site_part(const struct gc_ranks *g, MPI_Comm parent, MPI_Group *site,
                     int *member)
{
    const struct gc_site *own = &gc_world.sites[gc_world.site_index];
    struct gc_ranks part = {0, NULL, malloc((size_t)g->size * sizeof(int) + 1)};
    MPI_Group from = MPI_GROUP_NULL, of_parent = MPI_GROUP_NULL;
    *member = 0;
    if (part.owned == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < g->size; i++) {
        if (g->rank[i] < own->offset || g->rank[i] >= own->offset + own->size)
            continue;
        part.owned[part.size++] = g->rank[i];
        *member |= g->rank[i] == gc_world.grid_rank;
    }
    part.rank = part.owned;
    int status = gc_group_to_site(&part, &from);
    if (status == MPI_SUCCESS && parent != MPI_COMM_NULL && part.size > 0) {
        int *seq = malloc((size_t)part.size * sizeof *seq);
        int *ranks = malloc((size_t)part.size * sizeof *ranks);
        status = seq != NULL && ranks != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        for (int i = 0; i < part.size && status == MPI_SUCCESS; i++)
            seq[i] = i;
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_group(parent, &of_parent);
        if (status == MPI_SUCCESS)
            status = PMPI_Group_translate_ranks(from, part.size, seq, of_parent,
                                                ranks);
        if (status == MPI_SUCCESS)
            status = PMPI_Group_incl(of_parent, part.size, ranks, site);
        if (of_parent != MPI_GROUP_NULL)
            PMPI_Group_free(&of_parent);
        PMPI_Group_free(&from);
        free(seq);
        free(ranks);
    } else {
        *site = from;
    }
    gc_ranks_free(&part);
    return status;
}

int gc_comm_create_group_grid(struct gc_comm *c, MPI_Group group, int tag,
                              MPI_Comm *newcomm)
{
    static const char function[] = "MPI_Comm_create_group";
    struct gc_ranks g = {0};
    MPI_Group site = MPI_GROUP_NULL;
    MPI_Comm local = MPI_COMM_NULL;
    int member = 0;
    int status = gc_group_ranks(group, c->handle, function, &g);
    if (status != MPI_SUCCESS)
        return status;
    /* Every member sees the same group: they all fail here alike. */
    if (newcomm == NULL || tag < 0) {
        status = gc_error(c->handle, MPI_ERR_ARG, function,
                          newcomm == NULL ? "newcomm is NULL"
                                          : "the tag is negative");
        goto cleanup;
    }
    for (int i = 0; i < g.size; i++)
        if (c->comm_rank_of_grid[g.rank[i]] < 0) {
            status = gc_error(c->handle, MPI_ERR_GROUP, function,
                              "the group has a process outside the "
                              "communicator");
            goto cleanup;
        }
    status = site_part(&g, c->local, &site, &member);
    if (status != MPI_SUCCESS) {
        status = gc_error(c->handle, status, function,
                          "cannot make this site's group");
        goto cleanup;
    }
    /* A caller outside the group gets MPI_COMM_NULL, as from MPICH. */
    if (member) {
        unsigned held = gc_block_begin();
        status = PMPI_Comm_create_group(c->local, site, tag, &local);
        gc_block_end(held);
    }
    if (status == MPI_SUCCESS)
        status = finish(c, &g, local, tag, c->handle, function, newcomm);
cleanup:
    if (site != MPI_GROUP_NULL && site != MPI_GROUP_EMPTY)
        PMPI_Group_free(&site);
    gc_ranks_free(&g);
    return status;
}

/* The errors of MPI_Comm_create_from_group go to the handler it was
 * given: a private self communicator carries it. */
static int report_with(MPI_Errhandler handler, int code, const char *problem)
{
    MPI_Comm self;
    if (PMPI_Comm_dup(gc_world.site_self, &self) != MPI_SUCCESS)
        return code;
    PMPI_Comm_set_errhandler(self, handler);
    code = gc_error(self, code, "MPI_Comm_create_from_group", "%s", problem);
    PMPI_Comm_free(&self);
    return code;
}

uint32_t gc_stringtag_hash(const char *stringtag)
{
    uint32_t hash = 2166136261u;
    for (const char *p = stringtag; *p != '\0'; p++)
        hash = (hash ^ (unsigned char)*p) * 16777619u;
    return hash;
}

/* The stringtag as a tag of the constructor context: below -1
 * (MPI_ANY_TAG), apart from MPI_Comm_create_group's, which are the
 * program's and not negative. */
static int stringtag_tag(const char *stringtag)
{
    return -2 - (int)(gc_stringtag_hash(stringtag) & 0x3fffffffu);
}

int gc_comm_from_group_grid(MPI_Group group, const char *stringtag,
                            MPI_Info info, MPI_Errhandler errhandler,
                            MPI_Comm *newcomm)
{
    struct gc_ranks g = {0};
    MPI_Group site = MPI_GROUP_NULL;
    MPI_Comm local = MPI_COMM_NULL;
    int member = 0, status;
    if (newcomm == NULL || stringtag == NULL)
        return report_with(errhandler, MPI_ERR_ARG,
                           "newcomm or stringtag is NULL");
    *newcomm = MPI_COMM_NULL;
    status = gc_group_ranks(group, gc_world.site_self,
                            "MPI_Comm_create_from_group", &g);
    if (status != MPI_SUCCESS)
        return status;
    status = site_part(&g, MPI_COMM_NULL, &site, &member);
    if (status != MPI_SUCCESS) {
        status = report_with(errhandler, status, "out of memory");
        goto cleanup;
    }
    /* MPI: only the group's members call it. */
    if (!member) {
        status = report_with(errhandler, MPI_ERR_GROUP,
                             "the calling process is not in the group");
        goto cleanup;
    }
    unsigned held = gc_block_begin();
    status =
        PMPI_Comm_create_from_group(site, stringtag, info, errhandler, &local);
    gc_block_end(held);
    if (status == MPI_SUCCESS)
        status = finish(gc_world.grid, &g, local, stringtag_tag(stringtag),
                        MPI_COMM_NULL, "MPI_Comm_create_from_group", newcomm);
cleanup:
    if (site != MPI_GROUP_NULL && site != MPI_GROUP_EMPTY)
        PMPI_Group_free(&site);
    gc_ranks_free(&g);
    return status;
}
