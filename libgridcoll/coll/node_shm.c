/*
 * The node layer (node_shm.h): node and leader communicators, the shared
 * segment, flag words, datatype helpers, and the choice of the local
 * phases.
 */
#include "coll/node_shm.h"

#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coll/gc_coll.h"
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_progress.h"
#include "core/gc_settings.h"
#include "core/gc_world.h"

#define DEFAULT_SHM_BYTES GC_SETTINGS_SHM_BYTES_DEFAULT
#define LINE              64

/* Flag words are shared between processes, which is only defined for
 * lock-free atomics (C11 7.17.5: they should be address-free). */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics not lock-free");

struct node_flag {
    atomic_ullong seq;
    unsigned char pad[LINE - sizeof(atomic_ullong)];
};

/* ---- making and freeing -------------------------------------------------- */

static size_t round_line(size_t bytes)
{
    return (bytes + LINE - 1) / LINE * LINE;
}

static void node_free(struct coll_node *n)
{
    int finalized = 1;
    if (PMPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) {
        if (n->win != MPI_WIN_NULL) {
            PMPI_Win_unlock_all(n->win);
            PMPI_Win_free(&n->win);
        }
        if (n->leaders != MPI_COMM_NULL)
            PMPI_Comm_free(&n->leaders);
        if (n->comm != MPI_COMM_NULL)
            PMPI_Comm_free(&n->comm);
    }
    free(n->node_of);
    free(n->leader);
    free(n);
}

/* The node, its leaders, and who is on which node. */
static int make_comms(struct gc_comm *c, struct coll_node *n)
{
    MPI_Comm shared;
    int k, cyclic;
    gc_settings_node_size(&k, &cyclic);
    int status = PMPI_Comm_split_type(c->local, MPI_COMM_TYPE_SHARED,
                                      c->local_rank, MPI_INFO_NULL, &shared);
    if (status != MPI_SUCCESS)
        return status;
    if (k > 0) {
        /* Virtual nodes of up to k members, each inside one real node:
         * consecutive members, or every ceil(s/k)-th member (nodes that
         * interleave in rank order, as a round-robin placement makes). */
        int r, s;
        status = PMPI_Comm_rank(shared, &r);
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_size(shared, &s);
        int color = cyclic ? r % ((s + k - 1) / k) : r / k;
        if (status == MPI_SUCCESS)
            status = PMPI_Comm_split(shared, color, r, &n->comm);
        PMPI_Comm_free(&shared);
    } else {
        n->comm = shared;
    }
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_set_errhandler(n->comm, MPI_ERRORS_RETURN);
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_size(n->comm, &n->size);
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_rank(n->comm, &n->rank);
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_split(c->local, n->rank == 0 ? 0 : MPI_UNDEFINED,
                                 c->local_rank, &n->leaders);
    if (status == MPI_SUCCESS && n->leaders != MPI_COMM_NULL)
        status = PMPI_Comm_set_errhandler(n->leaders, MPI_ERRORS_RETURN);
    if (status == MPI_SUCCESS && n->leaders != MPI_COMM_NULL)
        status = PMPI_Comm_rank(n->leaders, &n->index);
    if (status == MPI_SUCCESS)
        status = PMPI_Bcast(&n->index, 1, MPI_INT, 0, n->comm);
    if (status != MPI_SUCCESS)
        return status;
    n->node_of = malloc((size_t)c->local_size * sizeof *n->node_of);
    n->leader = malloc((size_t)c->local_size * sizeof *n->leader);
    int *members = calloc((size_t)c->local_size, sizeof *members);
    if (n->node_of == NULL || n->leader == NULL || members == NULL) {
        free(members);
        return MPI_ERR_NO_MEM;
    }
    status =
        PMPI_Allgather(&n->index, 1, MPI_INT, n->node_of, 1, MPI_INT, c->local);
    /* Leaders are numbered by local rank, so a node's first member in
     * local-rank order is its leader, and node indices first appear in
     * increasing order. */
    n->contiguous = 1;
    for (int r = 0; r < c->local_size && status == MPI_SUCCESS; r++) {
        int j = n->node_of[r];
        if (members[j]++ == 0)
            n->leader[n->nodes++] = r;
        else if (n->node_of[r - 1] != j)
            n->contiguous = 0;
        if (members[j] > n->max_size)
            n->max_size = members[j];
    }
    free(members);
    return status;
}

/* Freed with the communicator, by every member of the site together. */
static void node_release(struct gc_comm *c)
{
    node_free(c->node);
    c->node = NULL;
}

static const struct gc_comm_part node_part = {.name = "node layer",
                                              .release = node_release};

/* The shared segment: flags, the leader's words, the data. */
static int make_window(struct coll_node *n, size_t bytes)
{
    size_t flags = round_line((size_t)n->size * sizeof(struct node_flag));
    size_t words = round_line((size_t)n->nodes * sizeof(int));
    /* One line more: the base is aligned by hand (MPI promises none). */
    MPI_Aint total = (MPI_Aint)(flags + words + bytes + LINE);
    unsigned char *mine, *base;
    MPI_Aint size;
    int disp_unit;
    int status = PMPI_Win_allocate_shared(
        n->rank == 0 ? total : 0, 1, MPI_INFO_NULL, n->comm, &mine, &n->win);
    if (status != MPI_SUCCESS) {
        n->win = MPI_WIN_NULL;
        return status;
    }
    status = PMPI_Win_set_errhandler(n->win, MPI_ERRORS_RETURN);
    if (status == MPI_SUCCESS)
        status = PMPI_Win_shared_query(n->win, 0, &size, &disp_unit, &base);
    if (status != MPI_SUCCESS) {
        PMPI_Win_free(&n->win);
        return status;
    }
    /* Every process maps the segment page-aligned, so the same padding. */
    base += (LINE - (uintptr_t)base % LINE) % LINE;
    n->flags = (struct node_flag *)(void *)base;
    n->published = (int *)(void *)(base + flags);
    n->data = base + flags + words;
    n->bytes = bytes;
    if (n->rank == 0)
        for (int i = 0; i < n->size; i++)
            atomic_store_explicit(&n->flags[i].seq, 0, memory_order_relaxed);
    status = PMPI_Win_lock_all(MPI_MODE_NOCHECK, n->win);
    if (status == MPI_SUCCESS)
        status = PMPI_Win_sync(n->win);
    if (status == MPI_SUCCESS)
        status = PMPI_Barrier(n->comm);
    if (status == MPI_SUCCESS)
        status = PMPI_Win_sync(n->win);
    return status;
}

int coll_node_get(struct gc_comm *c, struct coll_node **node)
{
    if (c->node == NULL) {
        struct coll_node *n = calloc(1, sizeof *n);
        if (n == NULL)
            return MPI_ERR_NO_MEM;
        n->comm = MPI_COMM_NULL;
        n->leaders = MPI_COMM_NULL;
        n->win = MPI_WIN_NULL;
        /* Made here, where every member of the site is, for the steps
         * that only some members take (bcast_site_shm.c). */
        MPI_Comm p2p;
        int status = coll_local_p2p(c, &p2p);
        if (status == MPI_SUCCESS) {
            unsigned held = gc_block_begin();
            status = make_comms(c, n);
            gc_block_end(held);
        }
        if (status != MPI_SUCCESS) {
            node_free(n);
            return status;
        }
        c->node = n;
        gc_comm_attach(c, &node_part);
    }
    *node = c->node;
    return MPI_SUCCESS;
}

int coll_node_begin(struct gc_comm *c, int slots, struct coll_node **node)
{
    struct coll_node *n;
    int status = coll_node_get(c, &n);
    if (status == MPI_SUCCESS && n->win == MPI_WIN_NULL) {
        unsigned held = gc_block_begin();
        status = make_window(n, gc_settings_shm_bytes());
        gc_block_end(held);
    }
    if (status != MPI_SUCCESS)
        return status;
    if (!slots || !n->slots)
        n->fence = n->seq;
    n->slots = slots;
    n->issued = n->seq;
    *node = n;
    return MPI_SUCCESS;
}

int coll_node_default(struct gc_comm *c, const char *fn, int *shm)
{
    struct coll_node *n;
    *shm = 0;
    if (c->local_size == 1)
        return MPI_SUCCESS;
    int status = coll_node_get(c, &n);
    if (status != MPI_SUCCESS)
        return gc_error(c->handle, status, fn, "node layer failed");
    *shm = n->nodes == 1;
    return MPI_SUCCESS;
}

/* ---- flags --------------------------------------------------------------- */

int node_post_to(struct coll_node *n, uint64_t value)
{
    int status = PMPI_Win_sync(n->win);
    n->seq = value;
    atomic_store_explicit(&n->flags[n->rank].seq, value, memory_order_release);
    return status;
}

int node_post(struct coll_node *n)
{
    return node_post_to(n, n->seq + 1);
}

static int at_least(struct coll_node *n, int member, uint64_t value)
{
    return atomic_load_explicit(&n->flags[member].seq, memory_order_acquire) >=
           value;
}

/*
 * While a member waits for a flag, MPICH must still progress: a message
 * it received may owe its sender an acknowledgement (UCX's rendezvous),
 * and that sender may be the member it waits for.  The node communicator
 * carries no point-to-point traffic, so this probe never matches
 * anything; it only runs MPICH's progress engine.
 */
static void progress(struct coll_node *n)
{
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, n->comm, &flag, MPI_STATUS_IGNORE);
}

int node_reached(struct coll_node *n, int member, uint64_t value)
{
    if (!at_least(n, member, value)) {
        progress(n);
        return 0;
    }
    return PMPI_Win_sync(n->win) == MPI_SUCCESS;
}

int node_all_reached(struct coll_node *n, uint64_t value)
{
    for (int i = 0; i < n->size; i++)
        if (i != n->rank && !at_least(n, i, value)) {
            progress(n);
            return 0;
        }
    return PMPI_Win_sync(n->win) == MPI_SUCCESS;
}

int node_wait(struct coll_node *n, int member, uint64_t value)
{
    while (!at_least(n, member, value)) {
        progress(n);
        sched_yield();
    }
    return PMPI_Win_sync(n->win);
}

int node_wait_all(struct coll_node *n, uint64_t value)
{
    for (int i = 0; i < n->size; i++)
        while (i != n->rank && !at_least(n, i, value)) {
            progress(n);
            sched_yield();
        }
    return PMPI_Win_sync(n->win);
}

size_t node_slot_bytes(const struct coll_node *n, int slots)
{
    return n->bytes / (size_t)slots / LINE * LINE;
}

/* ---- datatypes ----------------------------------------------------------- */

int node_type_get(MPI_Datatype type, struct node_type *t)
{
    MPI_Aint lb;
    t->type = type;
    int status = PMPI_Type_get_extent(type, &lb, &t->extent);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_get_true_extent(type, &t->true_lb, &t->true_extent);
    if (status == MPI_SUCCESS)
        status = PMPI_Type_size_c(type, &t->size);
    t->plain = status == MPI_SUCCESS && lb == 0 && t->true_lb == 0 &&
               t->extent == t->size && t->true_extent == t->size;
    return status;
}

MPI_Aint node_type_span(const struct node_type *t, MPI_Aint n)
{
    MPI_Aint step = t->extent < 0 ? -t->extent : t->extent;
    return t->true_extent + (n - 1) * step;
}

MPI_Aint node_type_lo(const struct node_type *t, MPI_Aint n)
{
    return t->true_lb + (t->extent < 0 ? (n - 1) * t->extent : 0);
}

MPI_Aint node_type_fit(const struct node_type *t, size_t bytes)
{
    MPI_Aint step = t->extent < 0 ? -t->extent : t->extent;
    if (t->true_extent > (MPI_Aint)bytes)
        return 0;
    if (step == 0) /* every element in the same place */
        return (MPI_Aint)bytes;
    return 1 + ((MPI_Aint)bytes - t->true_extent) / step;
}

int node_type_copy(const struct node_type *t, const void *from, void *to, int n,
                   void *bounce)
{
    if (n == 0 || t->size == 0)
        return MPI_SUCCESS;
    if (t->plain) {
        memcpy(to, from, (size_t)n * (size_t)t->size);
        return MPI_SUCCESS;
    }
    MPI_Count len = (MPI_Count)n * t->size, position = 0;
    int status = PMPI_Pack_c(from, n, t->type, bounce, len, &position,
                             gc_world.site_self);
    position = 0;
    if (status == MPI_SUCCESS)
        status = PMPI_Unpack_c(bounce, len, &position, to, n, t->type,
                               gc_world.site_self);
    return status;
}

/* ---- choosing the local phases ------------------------------------------- */

int site_local_shm(struct gc_comm *c, const char *fn, enum gc_coll_kind kind,
                   int blocking, size_t bytes, int *shm)
{
    const struct coll_algo *algo;
    int status = coll_site_select(kind, c, fn, blocking, bytes, &algo);
    /* One-member sites have no local phase. */
    *shm = status == MPI_SUCCESS && algo->node && c->local_size > 1;
    return status;
}

void coll_node_print(FILE *out)
{
    fprintf(out,
            "node layer (shared memory, for the shm local phases):\n"
            "  GRIDCOLL_SHM_BYTES=BYTES  shared data per node, default %zu; "
            "larger messages go through it in chunks\n"
            "  GRIDCOLL_NODE_SIZE=K[,cyclic]  testing: cut each node into "
            "virtual nodes of up to K members, consecutive or interleaved "
            "(cyclic)\n\n",
            DEFAULT_SHM_BYTES);
}
