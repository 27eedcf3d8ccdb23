/*
 * The root's layout and the remote members' steps of the hier Gatherv
 * and Scatterv; rooted_common.h says what each is for.
 */
#include "coll/rooted_common.h"

#include <string.h>

#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_world.h"

int rooted_layout_make(struct coll_sched *s, const MPI_Count *counts,
                       const MPI_Aint *displs, MPI_Datatype type,
                       struct rooted_layout **out)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t n = (size_t)c->size, local = (size_t)c->local_size;
    struct rooted_layout *x = coll_sched_alloc(s, sizeof *x);
    MPI_Count *counts_copy = coll_sched_alloc(s, (n + local) * sizeof *counts);
    MPI_Aint *displs_copy = coll_sched_alloc(s, (n + local) * sizeof *displs);
    int *member = coll_sched_alloc(s, n * sizeof *member);
    if (x == NULL || counts_copy == NULL || displs_copy == NULL ||
        member == NULL)
        return coll_no_mem(c);
    MPI_Aint lb;
    int status = PMPI_Type_get_extent(type, &lb, &x->extent);
    if (status != MPI_SUCCESS)
        return status;
    /* Copies: the program may reuse Gather's arrays (the entry point's
     * own) once a nonblocking call returns. */
    memcpy(counts_copy, counts, n * sizeof *counts);
    memcpy(displs_copy, displs, n * sizeof *displs);
    x->counts = counts_copy;
    x->displs = displs_copy;
    x->member = member;
    x->lcounts = counts_copy + n;
    x->ldispls = displs_copy + n;
    x->type = coll_sched_type(s, type);
    for (int k = 0; k < c->local_size; k++) {
        x->lcounts[k] = counts[c->local_to_comm[k]];
        x->ldispls[k] = displs[c->local_to_comm[k]];
    }
    int at = 0;
    for (int t = 0; t < GC_MAX_SITES; t++) {
        x->first[t] = at;
        for (int r = 0; r < c->size; r++)
            if (c->site[r] == t)
                x->member[at++] = r;
        x->nmembers[t] = at - x->first[t];
        if (x->nmembers[t] == 0 || t == c->site[c->rank])
            continue;
        for (int i = x->first[t]; i < at; i++) {
            size_t len;
            status = coll_packed_size(c, counts[x->member[i]], type, &len);
            if (status != MPI_SUCCESS)
                return status;
            x->bytes[t] += len;
        }
        if ((x->block[t] = coll_sched_alloc(s, x->bytes[t])) == NULL)
            return coll_no_mem(c);
    }
    *out = x;
    return MPI_SUCCESS;
}

struct copy_site {
    struct rooted_layout *x;
    int site;
    void *buf;
    int unpack;
};

static int copy_site(struct coll_sched *s, void *arg)
{
    struct copy_site *k = arg;
    struct rooted_layout *x = k->x;
    struct gc_comm *c = coll_sched_comm(s);
    size_t pos = 0;
    for (int i = x->first[k->site];
         i < x->first[k->site] + x->nmembers[k->site]; i++) {
        int r = x->member[i];
        size_t len;
        int status = coll_packed_size(c, x->counts[r], x->type, &len);
        if (status != MPI_SUCCESS)
            return status;
        if (len == 0) /* buf may be NULL when nothing moves */
            continue;
        char *at = (char *)k->buf + x->displs[r] * x->extent;
        unsigned char *bytes = x->block[k->site] + pos;
        status = k->unpack
                     ? coll_unpack(c, bytes, len, at, x->counts[r], x->type)
                     : coll_pack(c, at, x->counts[r], x->type, bytes, len);
        if (status != MPI_SUCCESS)
            return status;
        pos += len;
    }
    return MPI_SUCCESS;
}

int rooted_copy_step(struct coll_sched *s, struct rooted_layout *x, int t,
                     void *buf, int unpack, int after)
{
    struct copy_site *k = coll_sched_alloc(s, sizeof *k);
    if (k == NULL)
        return -1;
    *k = (struct copy_site){x, t, buf, unpack};
    return coll_sched_call(s, copy_site, k, after);
}

/*
 * A remote site's byte phase: every member moves `len` packed bytes;
 * the leader lays them out in site-rank order (lens[], displs[], the
 * site's total) once it knows them, and points the steps that move the
 * site's bytes at a block that large.
 */
struct remote {
    MPI_Count len;
    MPI_Count *lens; /* leader: [local_size] */
    MPI_Aint *displs;
    unsigned char *block;
    size_t cap;
    int wan_step, local_step; /* leader: the steps the block is for */
};

static int lay_out(struct coll_sched *s, void *arg)
{
    struct remote *x = arg;
    struct gc_comm *c = coll_sched_comm(s);
    size_t total = 0;
    for (int k = 0; k < c->local_size; k++) {
        x->displs[k] = (MPI_Aint)total;
        total += (size_t)x->lens[k];
    }
    if (total > x->cap) {
        /* A later run of a persistent collective may need more. */
        x->block = coll_sched_alloc(s, total);
        if (x->block == NULL)
            return MPI_ERR_NO_MEM;
        x->cap = total;
    }
    coll_sched_retarget(s, x->wan_step, x->block, (MPI_Count)total);
    struct sched_local *l = coll_sched_local_args(s, x->local_step);
    if (l->op == LOCAL_GATHERV)
        l->rbuf = x->block;
    else
        l->sbuf = x->block;
    return MPI_SUCCESS;
}

int rooted_remote(struct coll_sched *s, void *buf, MPI_Count count,
                  MPI_Datatype type, int root, int uniform, int gather,
                  int after, int *done)
{
    struct gc_comm *c = coll_sched_comm(s);
    int leader = c->local_rank == 0;
    size_t len;
    int status = coll_packed_size(c, count, type, &len);
    if (status != MPI_SUCCESS)
        return status;
    struct remote *x = coll_sched_alloc(s, sizeof *x);
    unsigned char *mine = coll_sched_alloc(s, len);
    if (x == NULL || mine == NULL)
        return coll_no_mem(c);
    x->len = (MPI_Count)len;
    if (leader) {
        x->lens = coll_sched_alloc(s, (size_t)c->local_size * sizeof *x->lens);
        x->displs =
            coll_sched_alloc(s, (size_t)c->local_size * sizeof *x->displs);
        if (x->lens == NULL || x->displs == NULL)
            return coll_no_mem(c);
        for (int k = 0; k < c->local_size; k++)
            x->lens[k] = x->len;
    }
    int sizes = after;
    if (!uniform) {
        /* The leader learns every member's length. */
        size_t local = leader ? (size_t)c->local_size : 0;
        MPI_Count *ones = coll_sched_alloc(s, local * sizeof *ones);
        MPI_Aint *at = coll_sched_alloc(s, local * sizeof *at);
        if (ones == NULL || at == NULL)
            return coll_no_mem(c);
        for (int k = 0; leader && k < c->local_size; k++) {
            ones[k] = 1;
            at[k] = k;
        }
        struct sched_local l = {.op = LOCAL_GATHERV,
                                .sbuf = &x->len,
                                .count = 1,
                                .type = MPI_COUNT,
                                .rbuf = x->lens,
                                .counts = ones,
                                .displs = at,
                                .rtype = MPI_COUNT};
        sizes = coll_sched_local(s, &l, after);
    }
    int laid = leader ? coll_sched_call(s, lay_out, x, sizes) : sizes;
    if (gather) {
        int packed = coll_sched_pack(s, buf, count, type, mine, len, after);
        int ready[2] = {packed, laid};
        struct sched_local l = {.op = LOCAL_GATHERV,
                                .sbuf = mine,
                                .count = x->len,
                                .type = MPI_BYTE,
                                .counts = x->lens,
                                .displs = x->displs,
                                .rtype = MPI_BYTE};
        x->local_step = coll_sched_local(s, &l, coll_sched_join(s, ready, 2));
        if (leader)
            x->wan_step = coll_sched_send(s, root, TAG_GATHER, NULL, 0,
                                          MPI_BYTE, x->local_step);
    } else {
        int in = laid;
        if (leader)
            in = x->wan_step =
                coll_sched_recv(s, root, TAG_SCATTER, NULL, 0, MPI_BYTE, laid);
        struct sched_local l = {.op = LOCAL_SCATTERV,
                                .counts = x->lens,
                                .displs = x->displs,
                                .type = MPI_BYTE,
                                .rbuf = mine,
                                .rcount = x->len,
                                .rtype = MPI_BYTE};
        x->local_step = coll_sched_local(s, &l, in);
        coll_sched_unpack(s, mine, len, buf, count, type, x->local_step);
    }
    *done = coll_sched_fence(s);
    return MPI_SUCCESS;
}
