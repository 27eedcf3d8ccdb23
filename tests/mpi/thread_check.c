/*
 * MPI_THREAD_MULTIPLE across sites: THREADS threads of every rank call
 * MPI at once (libgridcoll/core/gc_lock.h), every result checked byte for
 * byte.  Cases (arguments select them by prefix):
 *
 *   levels          MPI_Init_thread gives MPI_THREAD_MULTIPLE, and
 *                   MPI_Query_thread and MPI_Is_thread_main agree;
 *   ring_comms      each thread a ring of MPI_Sendrecv on a communicator
 *                   of its own (sizes from 8 B to 64 KiB);
 *   ring_tags       the same on one communicator, threads told apart by
 *                   tag;
 *   wildcard        one thread receives with MPI_ANY_SOURCE/MPI_ANY_TAG
 *                   what the other threads of every rank send, each
 *                   sender thread's messages in order (MPI 4.1, 3.5);
 *   comm_create     threads dup and split their own communicators at the
 *                   same time (relay context ids agreed concurrently) and
 *                   use the new ones: a shared id would cross messages;
 *   create_group    threads call MPI_Comm_create_group on MPI_COMM_WORLD
 *                   at once, told apart by tag, alternately for ranks
 *                   0..size/2 and for all (a site outside the first group
 *                   keeps working on the second meanwhile);
 *   intercomm       threads make intercommunicators between the ranks
 *                   below size/2 and the others of their own duplicate
 *                   (one group all on one site in uneven layouts), with
 *                   duplications in between, and merge them;
 *   collectives     each thread allreduce, bcast and alltoall on its own
 *                   communicator;
 *   persistent      each thread a ring of persistent requests
 *                   (MPI_Send_init, MPI_Recv_init, MPI_Startall), restarted
 *                   with new data every iteration;
 *   local_blocking  one thread blocks in MPI_Recv on a site-local
 *                   communicator for a message another thread sends only
 *                   after a cross-site exchange: the first must not keep
 *                   the second out of the library while it waits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_util.h"

#define THREADS 4
#define ITERS   60
#define BIG     65536

static int rank, size;
static MPI_Comm own[THREADS]; /* one duplicate of MPI_COMM_WORLD per thread */

static void run_threads(void *(*body)(void *))
{
    pthread_t id[THREADS];
    for (intptr_t t = 0; t < THREADS; t++)
        if (pthread_create(&id[t], NULL, body, (void *)t) != 0)
            fail("pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(id[t], NULL);
}

static unsigned char pattern(int from, int thread, int iter, size_t i)
{
    return (unsigned char)(from * 131 + thread * 29 + iter * 7 + i * 3 + 1);
}

/* One ring step on comm: send to the next rank, receive from the
 * previous, check data and status. */
static void ring_step(MPI_Comm comm, int thread, int iter, int tag,
                      unsigned char *out, unsigned char *in)
{
    size_t len = iter % 3 == 0 ? BIG : (size_t)(8 + iter);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t i = 0; i < len; i++)
        out[i] = pattern(rank, thread, iter, i);
    MPI_Status st;
    MPI_CHECK(MPI_Sendrecv(out, (int)len, MPI_BYTE, next, tag, in, BIG,
                           MPI_BYTE, prev, tag, comm, &st));
    int count;
    MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    if (st.MPI_SOURCE != prev || st.MPI_TAG != tag || count != (int)len)
        fail("thread %d iteration %d: status source %d tag %d count %d, "
             "want %d %d %zu",
             thread, iter, st.MPI_SOURCE, st.MPI_TAG, count, prev, tag, len);
    for (size_t i = 0; i < len; i++)
        if (in[i] != pattern(prev, thread, iter, i))
            fail("thread %d iteration %d: byte %zu is %u, want %u", thread,
                 iter, i, in[i], pattern(prev, thread, iter, i));
}

static void *ring_comms(void *arg)
{
    int t = (int)(intptr_t)arg;
    unsigned char *out = xmalloc(BIG), *in = xmalloc(BIG);
    for (int iter = 0; iter < ITERS; iter++)
        ring_step(own[t], t, iter, iter % 5, out, in);
    free(out);
    free(in);
    return NULL;
}

static void *ring_tags(void *arg)
{
    int t = (int)(intptr_t)arg;
    unsigned char *out = xmalloc(BIG), *in = xmalloc(BIG);
    for (int iter = 0; iter < ITERS; iter++)
        ring_step(own[0], t, iter, t, out, in);
    free(out);
    free(in);
    return NULL;
}

/* ---- wildcard ---------------------------------------------------------- */

#define WILD_MSGS 20

struct wild_msg {
    int32_t rank, thread, seq;
};

static void *wildcard(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm comm = own[1];
    if (t > 0) {
        for (int seq = 0; seq < WILD_MSGS; seq++)
            for (int to = 0; to < size; to++) {
                if (to == rank)
                    continue;
                struct wild_msg m = {rank, t, seq};
                MPI_CHECK(MPI_Send(&m, 3, MPI_INT32_T, to, t, comm));
            }
        return NULL;
    }
    /* next[src][thread]: the sequence number expected next. */
    int *next = calloc((size_t)size * THREADS, sizeof *next);
    if (next == NULL)
        fail("out of memory");
    int total = (size - 1) * (THREADS - 1) * WILD_MSGS;
    for (int n = 0; n < total; n++) {
        struct wild_msg m;
        MPI_Status st;
        MPI_CHECK(MPI_Recv(&m, 3, MPI_INT32_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           comm, &st));
        if (st.MPI_SOURCE != m.rank || st.MPI_TAG != m.thread ||
            m.rank == rank || m.thread < 1 || m.thread >= THREADS)
            fail("message %d: status source %d tag %d, payload %d %d", n,
                 st.MPI_SOURCE, st.MPI_TAG, m.rank, m.thread);
        int *expect = &next[m.rank * THREADS + m.thread];
        if (m.seq != *expect)
            fail("from rank %d thread %d: sequence %d before %d", m.rank,
                 m.thread, m.seq, *expect);
        ++*expect;
    }
    free(next);
    return NULL;
}

/* ---- comm_create ------------------------------------------------------- */

#define CREATIONS 6

static void *comm_create(void *arg)
{
    int t = (int)(intptr_t)arg;
    unsigned char *out = xmalloc(BIG), *in = xmalloc(BIG);
    for (int k = 0; k < CREATIONS; k++) {
        MPI_Comm dup, half;
        MPI_CHECK(MPI_Comm_dup(own[t], &dup));
        MPI_CHECK(MPI_Comm_split(dup, rank % 2, -rank, &half));
        int sum = 0;
        MPI_CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
        if (sum != size * (size - 1) / 2)
            fail("thread %d creation %d: sum of ranks %d", t, k, sum);
        /* The ring on the duplicate: a message of another thread's
         * communicator arriving here would carry another pattern. */
        ring_step(dup, t, k, 0, out, in);
        int half_size, half_rank;
        MPI_CHECK(MPI_Comm_size(half, &half_size));
        MPI_CHECK(MPI_Comm_rank(half, &half_rank));
        int want_size = size / 2 + (rank % 2 == 0 ? size % 2 : 0);
        /* key -rank: the highest world rank of the colour comes first */
        int want_rank = 0;
        for (int r = rank + 2; r < size; r += 2)
            want_rank++;
        if (half_size != want_size || half_rank != want_rank)
            fail("thread %d creation %d: split gave rank %d of %d, want %d "
                 "of %d",
                 t, k, half_rank, half_size, want_rank, want_size);
        int token = t * 1000 + k, got = -1;
        MPI_CHECK(MPI_Allreduce(&token, &got, 1, MPI_INT, MPI_MAX, half));
        if (got != token)
            fail("thread %d creation %d: allreduce on the split gave %d", t, k,
                 got);
        MPI_CHECK(MPI_Comm_free(&half));
        MPI_CHECK(MPI_Comm_free(&dup));
    }
    free(out);
    free(in);
    return NULL;
}

/* ---- create_group ------------------------------------------------------- */

#define GROUP_ROUNDS 4

static void check_created(MPI_Comm comm, int t, int k, int members)
{
    int got_size, got_rank;
    MPI_CHECK(MPI_Comm_size(comm, &got_size));
    MPI_CHECK(MPI_Comm_rank(comm, &got_rank));
    if (got_size != members || got_rank != rank)
        fail("thread %d round %d: rank %d of %d, want %d of %d", t, k, got_rank,
             got_size, rank, members);
    /* A token per thread and round: a message of another creation's
     * communicator would change the sum. */
    long token = t * 100000L + k * 10L + members, sum = 0;
    long mine = token + rank;
    MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
    long want = members * token + (long)members * (members - 1) / 2;
    if (sum != want)
        fail("thread %d round %d: sum %ld on %d members, want %ld", t, k, sum,
             members, want);
}

static void *create_group(void *arg)
{
    int t = (int)(intptr_t)arg;
    int first = size / 2 + 1;
    int range[1][3] = {{0, first - 1, 1}};
    MPI_Group world, part;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_range_incl(world, 1, range, &part));
    for (int k = 0; k < GROUP_ROUNDS; k++) {
        MPI_Comm comm;
        if (rank < first) {
            MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, part, t, &comm));
            check_created(comm, t, k, first);
            MPI_CHECK(MPI_Comm_free(&comm));
        }
        MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, world, t, &comm));
        check_created(comm, t, k, size);
        MPI_CHECK(MPI_Comm_free(&comm));
    }
    MPI_CHECK(MPI_Group_free(&part));
    MPI_CHECK(MPI_Group_free(&world));
    return NULL;
}

/* ---- intercomm ------------------------------------------------------------
 */

static void *intercomm(void *arg)
{
    int t = (int)(intptr_t)arg;
    int low = rank < size / 2, lows = size / 2;
    for (int k = 0; k < GROUP_ROUNDS; k++) {
        MPI_Comm dup, local, inter, merged;
        MPI_CHECK(MPI_Comm_dup(own[t], &dup));
        MPI_CHECK(MPI_Comm_split(dup, low, rank, &local));
        MPI_CHECK(
            MPI_Intercomm_create(local, 0, dup, low ? lows : 0, t, &inter));
        int remote;
        MPI_CHECK(MPI_Comm_remote_size(inter, &remote));
        if (remote != (low ? size - lows : lows))
            fail("thread %d round %d: remote size %d", t, k, remote);
        /* The low group first: the merged ranks are the world's. */
        MPI_CHECK(MPI_Intercomm_merge(inter, !low, &merged));
        check_created(merged, t, k, size);
        MPI_CHECK(MPI_Comm_free(&merged));
        MPI_CHECK(MPI_Comm_free(&inter));
        MPI_CHECK(MPI_Comm_free(&local));
        MPI_CHECK(MPI_Comm_free(&dup));
    }
    return NULL;
}

/* ---- collectives -------------------------------------------------------- */

#define COLL_ITERS 20
#define VEC        16

static void *collectives(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm comm = own[t];
    int *all_out = xmalloc((size_t)size * sizeof(int));
    int *all_in = xmalloc((size_t)size * sizeof(int));
    for (int iter = 0; iter < COLL_ITERS; iter++) {
        int v[VEC], sum[VEC];
        for (int i = 0; i < VEC; i++)
            v[i] = rank * (t + 1) + i + iter;
        MPI_CHECK(MPI_Allreduce(v, sum, VEC, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < VEC; i++) {
            int want = (t + 1) * size * (size - 1) / 2 + size * (i + iter);
            if (sum[i] != want)
                fail("thread %d allreduce %d: element %d is %d, want %d", t,
                     iter, i, sum[i], want);
        }
        int root = (iter + t) % size;
        unsigned char b[256];
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = rank == root ? pattern(root, t, iter, i) : 0;
        MPI_CHECK(MPI_Bcast(b, (int)sizeof b, MPI_BYTE, root, comm));
        for (size_t i = 0; i < sizeof b; i++)
            if (b[i] != pattern(root, t, iter, i))
                fail("thread %d bcast %d: byte %zu", t, iter, i);
        for (int r = 0; r < size; r++)
            all_out[r] = (rank * size + r) * (t + 1) + iter;
        MPI_CHECK(MPI_Alltoall(all_out, 1, MPI_INT, all_in, 1, MPI_INT, comm));
        for (int r = 0; r < size; r++)
            if (all_in[r] != (r * size + rank) * (t + 1) + iter)
                fail("thread %d alltoall %d: from %d got %d", t, iter, r,
                     all_in[r]);
    }
    free(all_out);
    free(all_in);
    return NULL;
}

/* ---- persistent ------------------------------------------------------- */

static void *persistent(void *arg)
{
    int t = (int)(intptr_t)arg;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t len = 4096;
    unsigned char *out = xmalloc(len), *in = xmalloc(len);
    MPI_Request reqs[2];
    MPI_CHECK(MPI_Recv_init(in, (int)len, MPI_BYTE, prev, t, own[t], &reqs[0]));
    MPI_CHECK(
        MPI_Send_init(out, (int)len, MPI_BYTE, next, t, own[t], &reqs[1]));
    for (int iter = 0; iter < ITERS; iter++) {
        for (size_t i = 0; i < len; i++)
            out[i] = pattern(rank, t, iter, i);
        MPI_Status st[2];
        MPI_CHECK(MPI_Startall(2, reqs));
        MPI_CHECK(MPI_Waitall(2, reqs, st));
        if (st[0].MPI_SOURCE != prev || st[0].MPI_TAG != t)
            fail("thread %d iteration %d: status source %d tag %d", t, iter,
                 st[0].MPI_SOURCE, st[0].MPI_TAG);
        for (size_t i = 0; i < len; i++)
            if (in[i] != pattern(prev, t, iter, i))
                fail("thread %d iteration %d: byte %zu", t, iter, i);
    }
    MPI_CHECK(MPI_Request_free(&reqs[0]));
    MPI_CHECK(MPI_Request_free(&reqs[1]));
    free(out);
    free(in);
    return NULL;
}

/* ---- local_blocking ----------------------------------------------------- */

static MPI_Comm site_local;

static void *local_blocking(void *arg)
{
    int t = (int)(intptr_t)arg;
    int local_rank, local_size;
    MPI_CHECK(MPI_Comm_rank(site_local, &local_rank));
    MPI_CHECK(MPI_Comm_size(site_local, &local_size));
    if (t == 0 && local_size > 1) {
        /* Blocks first, for the message thread 1 of the neighbour sends
         * only after its cross-site exchange. */
        int got = -1;
        MPI_CHECK(MPI_Recv(&got, 1, MPI_INT, (local_rank + 1) % local_size, 5,
                           site_local, MPI_STATUS_IGNORE));
        if (got != (local_rank + 1) % local_size)
            fail("local message %d", got);
    } else if (t == 1) {
        const struct timespec later = {0, 20 * 1000 * 1000};
        nanosleep(&later, NULL);
        unsigned char out[BIG], in[BIG];
        ring_step(own[1], 1, 0, 9, out, in);
        if (local_size > 1)
            MPI_CHECK(MPI_Send(&local_rank, 1, MPI_INT,
                               (local_rank + local_size - 1) % local_size, 5,
                               site_local));
    }
    return NULL;
}

/* ---- levels -------------------------------------------------------------- */

static void *not_main(void *arg)
{
    int *flag = arg;
    MPI_CHECK(MPI_Is_thread_main(flag));
    return NULL;
}

static void levels(int provided)
{
    int queried = -1, main_flag = 0, other_flag = 1;
    MPI_CHECK(MPI_Query_thread(&queried));
    MPI_CHECK(MPI_Is_thread_main(&main_flag));
    pthread_t id;
    if (pthread_create(&id, NULL, not_main, &other_flag) != 0)
        fail("pthread_create");
    pthread_join(id, NULL);
    if (provided != MPI_THREAD_MULTIPLE || queried != MPI_THREAD_MULTIPLE ||
        !main_flag || other_flag)
        fail("provided %d, MPI_Query_thread %d, MPI_Is_thread_main %d in the "
             "main thread and %d in another",
             provided, queried, main_flag, other_flag);
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_setup(rank, argc - 1, argv + 1);
    for (int t = 0; t < THREADS; t++)
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &own[t]));
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                                  MPI_INFO_NULL, &site_local));

    if (begin("levels")) {
        levels(provided);
        passed();
    }
    static const struct {
        const char *name;
        void *(*body)(void *);
    } cases[] = {
        {"ring_comms", ring_comms},
        {"ring_tags", ring_tags},
        {"wildcard", wildcard},
        {"comm_create", comm_create},
        {"create_group", create_group},
        {"intercomm", intercomm},
        {"collectives", collectives},
        {"persistent", persistent},
        {"local_blocking", local_blocking},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (begin("%s", cases[i].name)) {
            run_threads(cases[i].body);
            passed();
        }

    MPI_CHECK(MPI_Comm_free(&site_local));
    for (int t = 0; t < THREADS; t++)
        MPI_CHECK(MPI_Comm_free(&own[t]));
    MPI_CHECK(MPI_Finalize());
    return 0;
}
