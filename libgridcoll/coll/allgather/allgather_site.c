/*
 * What the intra-site allgather strategies share (allgather_site.h): the
 * choice per site (the site level of allgather's table, gc_coll_select.c),
 * running the chosen one, and rounds of messages made of block ranges.
 */
#include <stdlib.h>

#include "coll/allgather/allgather_site.h"
#include "coll/gc_coll.h"
#include "coll/node_shm.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_settings.h"

/* Every strategy message uses this tag on the private communicator:
 * strategies post their rounds in the same order on every member, and
 * MPI keeps messages between a pair in order. */
enum { SITE_TAG = 1 };

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

/* ---- choosing and running a strategy ------------------------------------ */

int allgather_site_select(struct gc_comm *c, const char *fn, int blocking,
                          const MPI_Aint *off, const struct coll_algo **algo)
{
    /* The site rules' bytes: a member's block on average, rounded up (the
     * bounds Kumar & Kale give per block). */
    MPI_Aint n = c->local_size;
    return coll_site_select(GC_COLL_ALLGATHER, c, fn, blocking,
                            (size_t)((off[n] + n - 1) / n), algo);
}

int allgather_site_run(struct gc_comm *c, const char *fn,
                       const struct coll_algo *algo, unsigned char *buf,
                       const MPI_Aint *off)
{
    if (c->local_size == 1)
        return MPI_SUCCESS;
    struct site_blocks b = {.grid = c,
                            .size = c->local_size,
                            .rank = c->local_rank,
                            .buf = buf,
                            .off = off,
                            .k = gc_settings_allgather_k()};
    int status = coll_local_p2p(c, &b.comm);
    if (status == MPI_SUCCESS)
        status = algo->site.allgather(&b);
    if (status == MPI_ERR_NO_MEM)
        return coll_no_mem(c);
    if (status != MPI_SUCCESS) {
        return gc_error(c->handle, status, fn,
                        "intra-site allgather (%s) failed", algo->name);
    }
    return MPI_SUCCESS;
}

int allgather_site_bcast(struct gc_comm *c, const struct coll_algo *algo,
                         unsigned char *buf, MPI_Aint len)
{
    return algo->node ? bcast_site_shm(c, buf, len, MPI_BYTE)
                      : PMPI_Bcast_c(buf, len, MPI_BYTE, 0, c->local);
}
