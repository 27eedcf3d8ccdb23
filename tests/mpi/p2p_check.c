/*
 * p2p_check: a self-checking conformance test of MPI point-to-point
 * communication.  It only uses MPI, so it runs under plain MPICH as well as
 * through gridrun, where rank 0 and the last rank sit on different sites.
 *
 *   mpiexec -n 4 p2p_check [CASE...]
 *   gridrun --site-sizes 1,3 -- p2p_check [CASE...]
 *
 * Runs every case (or the ones named) on any number of ranks >= 2; one rank
 * prints "SKIP p2p: needs 2 ranks".  Messages go between ring neighbours
 * and, in every case, between rank 0 and the last rank.  Payloads depend on
 * source, destination, tag and index, and every byte is checked, as are
 * statuses and the bytes just past each receive buffer.  After each case
 * all ranks meet in MPI_Barrier (whose traffic cannot match point-to-point
 * receives) and rank 0 prints "OK <case>".  The first mismatch prints
 * "FAIL <case>: rank R: <what, expected vs got>" and calls
 * MPI_Abort(MPI_COMM_WORLD, 2).  MPI_ERRORS_RETURN is set from the start so
 * that a failing MPI call is reported the same way, with its error string.
 * A hang (a lost message, a receive that never completes) has no FAIL
 * line: run under gridrun --timeout; the last OK line names the case
 * before the one that hung.
 *
 * Cases (sizes are 0, 1, 7, 4096, 65539 B, 1 MiB, and 5 MiB for the far
 * pair only):
 *   send_recv        Send/Recv between every pair, ring and far pair; self
 *   ssend            Ssend; Issend must not complete before the receive
 *   rsend            Rsend after the receiver's "posted" token
 *   bsend            Bsend completes before any receive is posted
 *   nonblocking      Isend/Issend/Irsend/Ibsend + Irecv, all flows at once
 *   wildcards        ANY_SOURCE/ANY_TAG statuses, STATUS(ES)_IGNORE
 *   get_count        Get_count/Get_elements, partial derived elements
 *   proc_null        every send, receive and probe on MPI_PROC_NULL
 *   non_overtaking   200 mixed-size messages, one tag, far pair
 *   non_overtaking_any_source  per-source order with ANY_SOURCE at rank 0
 *   tag_out_of_order tag 2 received before tag 1
 *   sendrecv         Sendrecv and Sendrecv_replace, derived types
 *   probe            Probe, Iprobe, Mprobe/Mrecv, Improbe/Imrecv
 *   wait_test        Wait, Test and the -all/-any/-some variants
 *   cancel           cancel of unmatched and of already matched receives
 *   datatypes        vector, indexed, struct with gaps, resized
 *   truncate         MPI_ERR_TRUNCATE from Recv, Wait and Waitall
 *   many_outstanding 64 Irecv and 64 Isend per peer, one Waitall
 *   large            64 MiB from rank 0 to the last rank and back
 *   comm_isolation   the same tag on MPI_COMM_WORLD and on a dup of it
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

#define GUARD_BYTES 64
#define FILL_BYTE   0xA5
#define GUARD_INTS  8
/* Negative, so it can never equal a pattern int (those are >= 0). */
#define SENTINEL_INT (-0x5A5A5A5B)
#define ONE_MIB      ((size_t)1 << 20)

static int world_rank, world_size, last_rank;

static void *xcalloc(size_t count, size_t size)
{
    void *memory = calloc(count ? count : 1, size ? size : 1);
    if (!memory)
        fail("out of memory (%zu x %zu bytes)", count, size);
    return memory;
}

static int right_of(int rank)
{
    return (rank + 1) % world_size;
}

static int left_of(int rank)
{
    return (rank + world_size - 1) % world_size;
}

/* Rank 0 and the last rank are on different sites in every multi-site
 * layout; the ranks in between have no far partner. */
static int far_partner(int rank)
{
    if (rank == 0)
        return last_rank;
    if (rank == last_rank)
        return 0;
    return MPI_PROC_NULL;
}

/* ---- payload patterns ------------------------------------------------- */

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* One key per message: a message delivered to the wrong receive, or in the
 * wrong order, carries the wrong bytes. */
static uint32_t stream_key(int src, int dst, int tag, int seq)
{
    uint32_t key = mix32((uint32_t)src + 0x9e3779b9U);
    key = mix32(key ^ ((uint32_t)dst * 0x85ebca6bU));
    key = mix32(key ^ ((uint32_t)tag * 0xc2b2ae35U));
    return mix32(key ^ ((uint32_t)seq * 0x27d4eb2fU));
}

static uint32_t pattern_word(uint32_t key, size_t index)
{
    return mix32(key ^ ((uint32_t)index * 0x9e3779b9U));
}

static unsigned char pattern_byte(uint32_t key, size_t index)
{
    return (unsigned char)(pattern_word(key, index) >> 24);
}

static int pattern_int(uint32_t key, size_t index)
{
    return (int)(pattern_word(key, index) & 0x7fffffffU);
}

static double pattern_double(uint32_t key, size_t index)
{
    /* Exactly representable, so == comparison is right. */
    return (double)(pattern_word(key, index) & 0xfffffU) / 8.0;
}

static const char *describe(int src, int dst, int tag, size_t size)
{
    static char text[160];
    snprintf(text, sizeof text, "message %d->%d tag %d (%zu B)", src, dst, tag,
             size);
    return text;
}

static unsigned char *new_message(size_t size, uint32_t key)
{
    unsigned char *data = xmalloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = pattern_byte(key, i);
    return data;
}

/* A receive buffer of `capacity` bytes followed by a guard; all of it is
 * filled so that bytes the receive must not write can be checked. */
static unsigned char *new_recv_area(size_t capacity)
{
    unsigned char *area = xmalloc(capacity + GUARD_BYTES);
    memset(area, FILL_BYTE, capacity + GUARD_BYTES);
    return area;
}

static void check_untouched(const unsigned char *area, size_t from,
                            size_t capacity, const char *what)
{
    for (size_t i = from; i < capacity + GUARD_BYTES; i++)
        if (area[i] != FILL_BYTE)
            fail("%s: byte %zu (buffer holds %zu) was written: expected "
                 "0x%02x got 0x%02x",
                 what, i, capacity, FILL_BYTE, area[i]);
}

static void check_payload(const unsigned char *area, size_t capacity,
                          size_t size, uint32_t key, const char *what)
{
    for (size_t i = 0; i < size; i++) {
        unsigned char expected = pattern_byte(key, i);
        if (area[i] != expected)
            fail("%s: byte %zu expected 0x%02x got 0x%02x", what, i, expected,
                 area[i]);
    }
    check_untouched(area, size, capacity, what);
}

static void check_status(const MPI_Status *status, int source, int tag,
                         MPI_Datatype type, int count, const char *what)
{
    if (status->MPI_SOURCE != source)
        fail("%s: status.MPI_SOURCE expected %d got %d", what, source,
             status->MPI_SOURCE);
    if (status->MPI_TAG != tag)
        fail("%s: status.MPI_TAG expected %d got %d", what, tag,
             status->MPI_TAG);
    int got = -1;
    MPI_CHECK(MPI_Get_count(status, type, &got));
    if (got != count)
        fail("%s: MPI_Get_count expected %d got %d", what, count, got);
}

/* Like MPI_Waitall, but names the failing request's own error. */
static void waitall_checked(int count, MPI_Request *requests,
                            MPI_Status *statuses)
{
    int rc = MPI_Waitall(count, requests, statuses);
    if (rc == MPI_ERR_IN_STATUS) {
        for (int i = 0; i < count; i++)
            mpi_check(statuses[i].MPI_ERROR, "MPI_Waitall (request error)");
    }
    MPI_CHECK(rc);
}

/* MPI_Waitall with MPI_STATUSES_IGNORE.  gcc 12 takes that constant
 * ((MPI_Status *)1) for a zero-size array and warns (-Wstringop-overflow);
 * reading it through a volatile hides the constant, not the behaviour. */
static int waitall_ignoring_statuses(int count, MPI_Request *requests)
{
    MPI_Status *volatile ignore = MPI_STATUSES_IGNORE;
    return MPI_Waitall(count, requests, ignore);
}

/* ---- message plans ---------------------------------------------------- */

struct transfer {
    int src, dst, tag;
    size_t size;
};

static const size_t message_sizes[] = {
    0, 1, 7, 4096, 65536 + 3, ONE_MIB, 5 * ONE_MIB,
};
#define SIZE_COUNT ((int)(sizeof message_sizes / sizeof message_sizes[0]))

/* Concurrent flows: the ring (each rank to its right neighbour, which
 * includes last -> 0) and/or both directions between rank 0 and the last
 * rank.  Room for world_size + 2 entries is needed. */
static int ring_and_far_flows(struct transfer *flows, int base_tag, size_t size,
                              int ring, int far)
{
    int n = 0;
    if (ring)
        for (int r = 0; r < world_size; r++, n++)
            flows[n] = (struct transfer){r, right_of(r), base_tag + n, size};
    if (far) {
        flows[n] = (struct transfer){0, last_rank, base_tag + n, size};
        n++;
        flows[n] = (struct transfer){last_rank, 0, base_tag + n, size};
        n++;
    }
    return n;
}

static struct transfer *new_flows(void)
{
    return xmalloc(sizeof(struct transfer) * (size_t)(world_size + 2));
}

/* A list that every rank walks in the same order, one transfer at a time,
 * so blocking modes cannot deadlock.  5 MiB goes only between rank 0 and
 * the last rank (to keep oversubscribed runs short), 1 MiB also around the
 * ring, smaller sizes around the ring or between every ordered pair. */
static struct transfer *plan_transfers(int every_pair, int base_tag, int *count)
{
    size_t room = (size_t)(world_size * world_size + 2) * SIZE_COUNT;
    struct transfer *plan = xmalloc(sizeof *plan * room);
    struct transfer *flows = new_flows();
    int n = 0;
    for (int s = 0; s < SIZE_COUNT; s++) {
        size_t size = message_sizes[s];
        if (size > ONE_MIB) {
            int nf = ring_and_far_flows(flows, 0, size, 0, 1);
            for (int f = 0; f < nf; f++)
                plan[n++] = flows[f];
        } else if (every_pair && size < ONE_MIB) {
            for (int src = 0; src < world_size; src++)
                for (int dst = 0; dst < world_size; dst++)
                    if (src != dst)
                        plan[n++] = (struct transfer){src, dst, 0, size};
        } else {
            int nf = ring_and_far_flows(flows, 0, size, 1, 1);
            for (int f = 0; f < nf; f++)
                plan[n++] = flows[f];
        }
    }
    for (int i = 0; i < n; i++)
        plan[i].tag = base_tag + i % 997;
    free(flows);
    *count = n;
    return plan;
}

enum blocking_mode { MODE_SEND, MODE_SSEND, MODE_RSEND, MODE_BSEND };

/* token_tag carries the handshakes: "my receive is posted" for Rsend, "my
 * Bsend has returned" for Bsend. */
static void blocking_transfer(enum blocking_mode mode, const struct transfer *t,
                              int token_tag)
{
    const char *what = describe(t->src, t->dst, t->tag, t->size);
    uint32_t key = stream_key(t->src, t->dst, t->tag, 0);
    int token = 1;
    int count = (int)t->size;
    if (world_rank == t->src) {
        unsigned char *data = new_message(t->size, key);
        switch (mode) {
        case MODE_SEND:
            MPI_CHECK(MPI_Send(data, count, MPI_BYTE, t->dst, t->tag,
                               MPI_COMM_WORLD));
            break;
        case MODE_SSEND:
            MPI_CHECK(MPI_Ssend(data, count, MPI_BYTE, t->dst, t->tag,
                                MPI_COMM_WORLD));
            break;
        case MODE_RSEND:
            MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, t->dst, token_tag,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Rsend(data, count, MPI_BYTE, t->dst, t->tag,
                                MPI_COMM_WORLD));
            break;
        case MODE_BSEND:
            /* The receiver posts nothing until the Bsend has returned: a
             * buffered send must complete locally. */
            MPI_CHECK(MPI_Bsend(data, count, MPI_BYTE, t->dst, t->tag,
                                MPI_COMM_WORLD));
            MPI_CHECK(MPI_Send(&token, 1, MPI_INT, t->dst, token_tag,
                               MPI_COMM_WORLD));
            break;
        }
        free(data);
    } else if (world_rank == t->dst) {
        unsigned char *area = new_recv_area(t->size);
        MPI_Status status;
        MPI_Request request;
        switch (mode) {
        case MODE_SEND:
        case MODE_SSEND:
            MPI_CHECK(MPI_Recv(area, count, MPI_BYTE, t->src, t->tag,
                               MPI_COMM_WORLD, &status));
            break;
        case MODE_RSEND:
            MPI_CHECK(MPI_Irecv(area, count, MPI_BYTE, t->src, t->tag,
                                MPI_COMM_WORLD, &request));
            MPI_CHECK(MPI_Send(&token, 1, MPI_INT, t->src, token_tag,
                               MPI_COMM_WORLD));
            MPI_CHECK(MPI_Wait(&request, &status));
            break;
        case MODE_BSEND:
            MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, t->src, token_tag,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Recv(area, count, MPI_BYTE, t->src, t->tag,
                               MPI_COMM_WORLD, &status));
            break;
        }
        check_status(&status, t->src, t->tag, MPI_BYTE, count, what);
        check_payload(area, t->size, t->size, key, what);
        free(area);
    }
}

static void run_blocking_plan(enum blocking_mode mode, int every_pair,
                              int base_tag)
{
    int count;
    struct transfer *plan = plan_transfers(every_pair, base_tag, &count);
    for (int i = 0; i < count; i++)
        blocking_transfer(mode, &plan[i], base_tag + 999);
    free(plan);
}

/* ---- cases: send modes ------------------------------------------------ */

/* 64 MiB from rank 0 to the last rank and back: many relay chunks, striped
 * over the link's streams, reassembled in place. */
static void case_large(int base_tag)
{
    const size_t size = (size_t)64 << 20;
    int last = world_size - 1;
    for (int round = 0; round < 2; round++) {
        struct transfer t = {round == 0 ? 0 : last, round == 0 ? last : 0,
                             base_tag + round, size};
        if (world_rank != t.src && world_rank != t.dst)
            continue;
        blocking_transfer(MODE_SEND, &t, base_tag + 999);
    }
}

static void case_send_recv(int base_tag)
{
    run_blocking_plan(MODE_SEND, 1, base_tag);

    /* A rank sending to itself must work too (Isend first: a blocking
     * Send to self may wait for the receive). */
    int tag = base_tag + 998;
    size_t size = 4096;
    uint32_t key = stream_key(world_rank, world_rank, tag, 0);
    unsigned char *data = new_message(size, key);
    unsigned char *area = new_recv_area(size);
    MPI_Request request;
    MPI_Status status;
    MPI_CHECK(MPI_Isend(data, (int)size, MPI_BYTE, world_rank, tag,
                        MPI_COMM_WORLD, &request));
    MPI_CHECK(MPI_Recv(area, (int)size, MPI_BYTE, world_rank, tag,
                       MPI_COMM_WORLD, &status));
    MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    const char *what = describe(world_rank, world_rank, tag, size);
    check_status(&status, world_rank, tag, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, key, what);
    free(data);
    free(area);
}

/* MPI_Issend may not complete before the matching receive has started; the
 * receiver here posts it only after a token the sender sends once it has
 * seen the Issend stay incomplete. */
static void issend_waits_for_receiver(const struct transfer *t, int token_tag)
{
    const char *what = describe(t->src, t->dst, t->tag, t->size);
    uint32_t key = stream_key(t->src, t->dst, t->tag, 0);
    int token = 1;
    if (world_rank == t->src) {
        unsigned char *data = new_message(t->size, key);
        MPI_Request request;
        MPI_CHECK(MPI_Issend(data, (int)t->size, MPI_BYTE, t->dst, t->tag,
                             MPI_COMM_WORLD, &request));
        for (int attempt = 0; attempt < 5; attempt++) {
            int done = 0;
            MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
            if (done)
                fail("%s: MPI_Issend completed before the receiver posted "
                     "a receive",
                     what);
            nap(2000);
        }
        MPI_CHECK(
            MPI_Send(&token, 1, MPI_INT, t->dst, token_tag, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        free(data);
    } else if (world_rank == t->dst) {
        unsigned char *area = new_recv_area(t->size);
        MPI_Status status;
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, t->src, token_tag,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Recv(area, (int)t->size, MPI_BYTE, t->src, t->tag,
                           MPI_COMM_WORLD, &status));
        check_status(&status, t->src, t->tag, MPI_BYTE, (int)t->size, what);
        check_payload(area, t->size, t->size, key, what);
        free(area);
    }
}

static void case_ssend(int base_tag)
{
    run_blocking_plan(MODE_SSEND, 0, base_tag);
    struct transfer *flows = new_flows();
    static const size_t sizes[] = {0, 65536 + 3};
    for (int s = 0; s < 2; s++) {
        int nf =
            ring_and_far_flows(flows, base_tag + 900 + 10 * s, sizes[s], 1, 1);
        for (int f = 0; f < nf; f++)
            issend_waits_for_receiver(&flows[f], base_tag + 999);
    }
    free(flows);
}

static void case_rsend(int base_tag)
{
    run_blocking_plan(MODE_RSEND, 0, base_tag);
}

static void case_bsend(int base_tag)
{
    int count;
    struct transfer *plan = plan_transfers(0, base_tag, &count);
    /* Room for everything this rank sends: nothing is guaranteed to have
     * left the buffer before MPI_Buffer_detach. */
    size_t room = 0;
    for (int i = 0; i < count; i++)
        if (plan[i].src == world_rank)
            room += plan[i].size + MPI_BSEND_OVERHEAD;
    room += MPI_BSEND_OVERHEAD;
    free(plan);
    void *buffer = xmalloc(room);
    MPI_CHECK(MPI_Buffer_attach(buffer, (int)room));
    run_blocking_plan(MODE_BSEND, 0, base_tag);
    void *detached = NULL;
    int detached_size = 0;
    MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
    if (detached != buffer || detached_size != (int)room)
        fail("MPI_Buffer_detach returned %p/%d, attached %p/%d", detached,
             detached_size, buffer, (int)room);
    free(buffer);
}

enum nonblocking_mode { MODE_ISEND, MODE_ISSEND, MODE_IRSEND, MODE_IBSEND };
static const char *const nonblocking_names[] = {"MPI_Isend", "MPI_Issend",
                                                "MPI_Irsend", "MPI_Ibsend"};

/* All flows at once: every receive is posted, then (for Irsend) a token
 * tells each sender its receive is posted, then every send starts. */
static void nonblocking_exchange(enum nonblocking_mode mode,
                                 const struct transfer *flows, int nflows,
                                 int token_tag)
{
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)(3 * nflows));
    int *recv_index = xcalloc((size_t)nflows, sizeof *recv_index);
    unsigned char **areas = xcalloc((size_t)nflows, sizeof *areas);
    unsigned char **messages = xcalloc((size_t)nflows, sizeof *messages);
    static const int token_out = 1;
    int token_in = 0;
    int nreq = 0;
    for (int i = 0; i < nflows; i++) {
        const struct transfer *t = &flows[i];
        if (t->dst != world_rank)
            continue;
        areas[i] = new_recv_area(t->size);
        MPI_CHECK(MPI_Irecv(areas[i], (int)t->size, MPI_BYTE, t->src, t->tag,
                            MPI_COMM_WORLD, &requests[nreq]));
        recv_index[i] = nreq++;
    }
    if (mode == MODE_IRSEND)
        for (int i = 0; i < nflows; i++)
            if (flows[i].dst == world_rank)
                MPI_CHECK(MPI_Isend(&token_out, 1, MPI_INT, flows[i].src,
                                    token_tag, MPI_COMM_WORLD,
                                    &requests[nreq++]));
    void *buffer = NULL;
    size_t room = MPI_BSEND_OVERHEAD;
    if (mode == MODE_IBSEND) {
        for (int i = 0; i < nflows; i++)
            if (flows[i].src == world_rank)
                room += flows[i].size + MPI_BSEND_OVERHEAD;
        buffer = xmalloc(room);
        MPI_CHECK(MPI_Buffer_attach(buffer, (int)room));
    }
    for (int i = 0; i < nflows; i++) {
        const struct transfer *t = &flows[i];
        if (t->src != world_rank)
            continue;
        messages[i] =
            new_message(t->size, stream_key(t->src, t->dst, t->tag, 0));
        int count = (int)t->size;
        MPI_Request *request = &requests[nreq++];
        switch (mode) {
        case MODE_ISEND:
            MPI_CHECK(MPI_Isend(messages[i], count, MPI_BYTE, t->dst, t->tag,
                                MPI_COMM_WORLD, request));
            break;
        case MODE_ISSEND:
            MPI_CHECK(MPI_Issend(messages[i], count, MPI_BYTE, t->dst, t->tag,
                                 MPI_COMM_WORLD, request));
            break;
        case MODE_IRSEND:
            MPI_CHECK(MPI_Recv(&token_in, 1, MPI_INT, t->dst, token_tag,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Irsend(messages[i], count, MPI_BYTE, t->dst, t->tag,
                                 MPI_COMM_WORLD, request));
            break;
        case MODE_IBSEND:
            MPI_CHECK(MPI_Ibsend(messages[i], count, MPI_BYTE, t->dst, t->tag,
                                 MPI_COMM_WORLD, request));
            break;
        }
    }
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)nreq);
    waitall_checked(nreq, requests, statuses);
    for (int i = 0; i < nflows; i++) {
        const struct transfer *t = &flows[i];
        if (t->dst != world_rank)
            continue;
        char what[320];
        snprintf(what, sizeof what, "%s %s", nonblocking_names[mode],
                 describe(t->src, t->dst, t->tag, t->size));
        check_status(&statuses[recv_index[i]], t->src, t->tag, MPI_BYTE,
                     (int)t->size, what);
        check_payload(areas[i], t->size, t->size,
                      stream_key(t->src, t->dst, t->tag, 0), what);
    }
    if (mode == MODE_IBSEND) {
        void *detached;
        int detached_size;
        MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
        free(buffer);
    }
    for (int i = 0; i < nflows; i++) {
        free(areas[i]);
        free(messages[i]);
    }
    free(statuses);
    free(areas);
    free(messages);
    free(recv_index);
    free(requests);
}

static void case_nonblocking(int base_tag)
{
    struct transfer *flows = new_flows();
    for (int mode = MODE_ISEND; mode <= MODE_IBSEND; mode++) {
        for (int s = 0; s < SIZE_COUNT; s++) {
            size_t size = message_sizes[s];
            int nf = ring_and_far_flows(flows, base_tag + 100 * mode + 10 * s,
                                        size, size <= ONE_MIB, 1);
            nonblocking_exchange((enum nonblocking_mode)mode, flows, nf,
                                 base_tag + 999);
        }
    }
    free(flows);
}

/* ---- cases: wildcards, statuses, counts, MPI_PROC_NULL ------------------ */

static size_t wildcard_size(int src)
{
    return src == last_rank ? ONE_MIB + 1 : (size_t)(97 * src);
}

static void case_wildcards(int base_tag)
{
    /* Barriers separate the parts: an MPI_ANY_TAG receive would otherwise
     * take a message meant for the next part. */
    int far = far_partner(world_rank);
    MPI_Status status;

    /* Everyone to rank 0, received with MPI_ANY_SOURCE and MPI_ANY_TAG. */
    if (world_rank == 0) {
        size_t capacity = ONE_MIB + 1;
        unsigned char *area = new_recv_area(capacity);
        int *seen = xcalloc((size_t)world_size, sizeof *seen);
        for (int n = 1; n < world_size; n++) {
            memset(area, FILL_BYTE, capacity + GUARD_BYTES);
            MPI_CHECK(MPI_Recv(area, (int)capacity, MPI_BYTE, MPI_ANY_SOURCE,
                               MPI_ANY_TAG, MPI_COMM_WORLD, &status));
            int src = status.MPI_SOURCE;
            if (src < 1 || src >= world_size || seen[src])
                fail("ANY_SOURCE receive %d: status.MPI_SOURCE %d is not an "
                     "unseen rank in 1..%d",
                     n, src, world_size - 1);
            seen[src] = 1;
            int tag = base_tag + src;
            const char *what = describe(src, 0, tag, wildcard_size(src));
            check_status(&status, src, tag, MPI_BYTE, (int)wildcard_size(src),
                         what);
            check_payload(area, capacity, wildcard_size(src),
                          stream_key(src, 0, tag, 0), what);
        }
        free(seen);
        free(area);
    } else {
        int tag = base_tag + world_rank;
        unsigned char *data = new_message(wildcard_size(world_rank),
                                          stream_key(world_rank, 0, tag, 0));
        MPI_CHECK(MPI_Send(data, (int)wildcard_size(world_rank), MPI_BYTE, 0,
                           tag, MPI_COMM_WORLD));
        free(data);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Between rank 0 and the last rank, three tags in order, received with
     * (ANY_SOURCE, tag), (source, ANY_TAG), (ANY_SOURCE, ANY_TAG). */
    if (far != MPI_PROC_NULL) {
        static const size_t sizes[3] = {7, 65536 + 3, 0};
        const int sources[3] = {MPI_ANY_SOURCE, far, MPI_ANY_SOURCE};
        const int tags[3] = {base_tag + 100, MPI_ANY_TAG, MPI_ANY_TAG};
        MPI_Request requests[3];
        unsigned char *data[3];
        for (int i = 0; i < 3; i++) {
            int tag = base_tag + 100 + i;
            data[i] =
                new_message(sizes[i], stream_key(world_rank, far, tag, 0));
            MPI_CHECK(MPI_Isend(data[i], (int)sizes[i], MPI_BYTE, far, tag,
                                MPI_COMM_WORLD, &requests[i]));
        }
        for (int i = 0; i < 3; i++) {
            int tag = base_tag + 100 + i;
            size_t capacity = 65536 + 3;
            unsigned char *area = new_recv_area(capacity);
            MPI_CHECK(MPI_Recv(area, (int)capacity, MPI_BYTE, sources[i],
                               tags[i], MPI_COMM_WORLD, &status));
            const char *what = describe(far, world_rank, tag, sizes[i]);
            check_status(&status, far, tag, MPI_BYTE, (int)sizes[i], what);
            check_payload(area, capacity, sizes[i],
                          stream_key(far, world_rank, tag, 0), what);
            free(area);
        }
        MPI_CHECK(waitall_ignoring_statuses(3, requests));
        for (int i = 0; i < 3; i++)
            free(data[i]);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* Ring with MPI_ANY_SOURCE: only the left neighbour uses this tag. */
    {
        int tag = base_tag + 200;
        size_t size = 4096;
        int left = left_of(world_rank), right = right_of(world_rank);
        unsigned char *data =
            new_message(size, stream_key(world_rank, right, tag, 0));
        unsigned char *area = new_recv_area(size);
        MPI_Request requests[2];
        MPI_Status statuses[2];
        MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, MPI_ANY_SOURCE, tag,
                            MPI_COMM_WORLD, &requests[0]));
        MPI_CHECK(MPI_Isend(data, (int)size, MPI_BYTE, right, tag,
                            MPI_COMM_WORLD, &requests[1]));
        waitall_checked(2, requests, statuses);
        const char *what = describe(left, world_rank, tag, size);
        check_status(&statuses[0], left, tag, MPI_BYTE, (int)size, what);
        check_payload(area, size, size, stream_key(left, world_rank, tag, 0),
                      what);
        free(data);
        free(area);
    }

    /* MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE must still deliver data. */
    {
        int tag = base_tag + 300;
        size_t size = 65536 + 3;
        int left = left_of(world_rank), right = right_of(world_rank);
        unsigned char *data =
            new_message(size, stream_key(world_rank, right, tag, 0));
        unsigned char *area = new_recv_area(size);
        MPI_Request requests[2];
        MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, left, tag,
                            MPI_COMM_WORLD, &requests[0]));
        MPI_CHECK(MPI_Isend(data, (int)size, MPI_BYTE, right, tag,
                            MPI_COMM_WORLD, &requests[1]));
        MPI_CHECK(waitall_ignoring_statuses(2, requests));
        check_payload(area, size, size, stream_key(left, world_rank, tag, 0),
                      describe(left, world_rank, tag, size));
        free(data);
        free(area);
    }
    if (far != MPI_PROC_NULL) {
        /* Recv, Wait, Test and Sendrecv, each with MPI_STATUS_IGNORE. */
        size_t size = 4096;
        for (int step = 0; step < 4; step++) {
            int tag = base_tag + 400 + step;
            unsigned char *data =
                new_message(size, stream_key(world_rank, far, tag, 0));
            unsigned char *area = new_recv_area(size);
            MPI_Request send_request, recv_request;
            if (step == 3) {
                MPI_CHECK(MPI_Sendrecv(data, (int)size, MPI_BYTE, far, tag,
                                       area, (int)size, MPI_BYTE, far, tag,
                                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Isend(data, (int)size, MPI_BYTE, far, tag,
                                    MPI_COMM_WORLD, &send_request));
                if (step == 0) {
                    MPI_CHECK(MPI_Recv(area, (int)size, MPI_BYTE, far, tag,
                                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                } else {
                    MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, far, tag,
                                        MPI_COMM_WORLD, &recv_request));
                    if (step == 1)
                        MPI_CHECK(MPI_Wait(&recv_request, MPI_STATUS_IGNORE));
                    for (int done = step == 1; !done;) {
                        MPI_CHECK(
                            MPI_Test(&recv_request, &done, MPI_STATUS_IGNORE));
                        if (!done)
                            nap(100);
                    }
                }
                MPI_CHECK(MPI_Wait(&send_request, MPI_STATUS_IGNORE));
            }
            check_payload(area, size, size, stream_key(far, world_rank, tag, 0),
                          describe(far, world_rank, tag, size));
            free(data);
            free(area);
        }
    }
}

struct int_double {
    int i;
    double d;
};

struct int_double_int {
    int a;
    double b;
    int c;
};

static MPI_Datatype make_int_double_type(void)
{
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {offsetof(struct int_double, i),
                                 offsetof(struct int_double, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Datatype raw, resized;
    MPI_CHECK(MPI_Type_create_struct(2, lengths, displacements, types, &raw));
    MPI_CHECK(
        MPI_Type_create_resized(raw, 0, sizeof(struct int_double), &resized));
    MPI_CHECK(MPI_Type_commit(&resized));
    MPI_CHECK(MPI_Type_free(&raw));
    return resized;
}

static MPI_Datatype make_int_double_int_type(void)
{
    int lengths[3] = {1, 1, 1};
    MPI_Aint displacements[3] = {offsetof(struct int_double_int, a),
                                 offsetof(struct int_double_int, b),
                                 offsetof(struct int_double_int, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Datatype type;
    MPI_CHECK(MPI_Type_create_struct(3, lengths, displacements, types, &type));
    MPI_CHECK(MPI_Type_commit(&type));
    return type;
}

static void check_counts(const MPI_Status *status, MPI_Datatype type,
                         int expected_count, int expected_elements,
                         const char *what)
{
    int count = -2, elements = -2;
    MPI_Count elements_x = -2;
    MPI_CHECK(MPI_Get_count(status, type, &count));
    MPI_CHECK(MPI_Get_elements(status, type, &elements));
    MPI_CHECK(MPI_Get_elements_x(status, type, &elements_x));
    if (count != expected_count)
        fail("%s: MPI_Get_count expected %d got %d", what, expected_count,
             count);
    if (elements != expected_elements || elements_x != expected_elements)
        fail("%s: MPI_Get_elements expected %d got %d (_x: %lld)", what,
             expected_elements, elements, (long long)elements_x);
}

/* One pair's worth of count checks: short messages into derived types
 * whose last element is only partly filled. */
static void count_transfer(const struct transfer *t, MPI_Datatype three_ints,
                           MPI_Datatype int_double, MPI_Datatype int_double_int)
{
    int tag = t->tag;
    uint32_t key = stream_key(t->src, t->dst, tag, 0);
    if (world_rank == t->src) {
        int ints[9];
        double doubles[1000];
        struct int_double_int triple = {
            pattern_int(key, 0), pattern_double(key, 1), pattern_int(key, 2)};
        for (int i = 0; i < 9; i++)
            ints[i] = pattern_int(key, (size_t)i);
        for (int i = 0; i < 1000; i++)
            doubles[i] = pattern_double(key, (size_t)i);
        MPI_Request requests[5];
        MPI_CHECK(MPI_Isend(ints, 7, MPI_INT, t->dst, tag, MPI_COMM_WORLD,
                            &requests[0]));
        MPI_CHECK(MPI_Isend(ints, 9, MPI_INT, t->dst, tag + 1, MPI_COMM_WORLD,
                            &requests[1]));
        MPI_CHECK(MPI_Isend(ints, 0, MPI_INT, t->dst, tag + 2, MPI_COMM_WORLD,
                            &requests[2]));
        MPI_CHECK(MPI_Isend(&triple, 1, int_double_int, t->dst, tag + 3,
                            MPI_COMM_WORLD, &requests[3]));
        MPI_CHECK(MPI_Isend(doubles, 1000, MPI_DOUBLE, t->dst, tag + 4,
                            MPI_COMM_WORLD, &requests[4]));
        MPI_CHECK(waitall_ignoring_statuses(5, requests));
        return;
    }
    if (world_rank != t->dst)
        return;
    char what[320];
    MPI_Status status;
    int ints[15];

    /* 7 ints into 3-int elements: 2 whole elements and a partial one. */
    for (int i = 0; i < 15; i++)
        ints[i] = SENTINEL_INT;
    MPI_CHECK(
        MPI_Recv(ints, 5, three_ints, t->src, tag, MPI_COMM_WORLD, &status));
    snprintf(what, sizeof what, "7 ints %d->%d as 3-int type", t->src, t->dst);
    check_counts(&status, three_ints, MPI_UNDEFINED, 7, what);
    for (int i = 0; i < 15; i++) {
        int expected = i < 7 ? pattern_int(key, (size_t)i) : SENTINEL_INT;
        if (ints[i] != expected)
            fail("%s: int %d expected %d got %d", what, i, expected, ints[i]);
    }

    MPI_CHECK(MPI_Recv(ints, 5, three_ints, t->src, tag + 1, MPI_COMM_WORLD,
                       &status));
    snprintf(what, sizeof what, "9 ints %d->%d as 3-int type", t->src, t->dst);
    check_counts(&status, three_ints, 3, 9, what);

    for (int i = 0; i < 15; i++)
        ints[i] = SENTINEL_INT;
    MPI_CHECK(
        MPI_Recv(ints, 10, MPI_INT, t->src, tag + 2, MPI_COMM_WORLD, &status));
    snprintf(what, sizeof what, "0 ints %d->%d", t->src, t->dst);
    check_counts(&status, MPI_INT, 0, 0, what);
    check_status(&status, t->src, tag + 2, MPI_INT, 0, what);
    for (int i = 0; i < 15; i++)
        if (ints[i] != SENTINEL_INT)
            fail("%s: int %d written by an empty message", what, i);

    /* int,double,int received as (int,double) pairs: 1.5 elements. */
    struct int_double pairs[2];
    memset(pairs, FILL_BYTE, sizeof pairs);
    struct int_double untouched;
    memset(&untouched, FILL_BYTE, sizeof untouched);
    MPI_CHECK(MPI_Recv(pairs, 2, int_double, t->src, tag + 3, MPI_COMM_WORLD,
                       &status));
    snprintf(what, sizeof what, "int,double,int %d->%d as (int,double) type",
             t->src, t->dst);
    check_counts(&status, int_double, MPI_UNDEFINED, 3, what);
    if (pairs[0].i != pattern_int(key, 0) ||
        pairs[0].d != pattern_double(key, 1) ||
        pairs[1].i != pattern_int(key, 2) ||
        memcmp(&pairs[1].d, &untouched.d, sizeof(double)) != 0)
        fail("%s: got {%d, %g} {%d, ...}, expected {%d, %g} {%d, untouched}",
             what, pairs[0].i, pairs[0].d, pairs[1].i, pattern_int(key, 0),
             pattern_double(key, 1), pattern_int(key, 2));

    double doubles[2000];
    MPI_CHECK(MPI_Recv(doubles, 2000, MPI_DOUBLE, t->src, tag + 4,
                       MPI_COMM_WORLD, &status));
    snprintf(what, sizeof what, "1000 doubles %d->%d", t->src, t->dst);
    check_counts(&status, MPI_DOUBLE, 1000, 1000, what);
    for (int i = 0; i < 1000; i++)
        if (doubles[i] != pattern_double(key, (size_t)i))
            fail("%s: double %d expected %g got %g", what, i,
                 pattern_double(key, (size_t)i), doubles[i]);
}

static void case_get_count(int base_tag)
{
    MPI_Datatype three_ints;
    MPI_CHECK(MPI_Type_contiguous(3, MPI_INT, &three_ints));
    MPI_CHECK(MPI_Type_commit(&three_ints));
    MPI_Datatype int_double = make_int_double_type();
    MPI_Datatype int_double_int = make_int_double_int_type();
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, 0, 0, 1, 1);
    for (int f = 0; f < nf; f++) {
        flows[f].tag = base_tag + 10 * f;
        count_transfer(&flows[f], three_ints, int_double, int_double_int);
    }
    free(flows);
    MPI_CHECK(MPI_Type_free(&three_ints));
    MPI_CHECK(MPI_Type_free(&int_double));
    MPI_CHECK(MPI_Type_free(&int_double_int));
}

static void check_proc_null_status(const MPI_Status *status, const char *what)
{
    check_status(status, MPI_PROC_NULL, MPI_ANY_TAG, MPI_BYTE, 0, what);
}

/* MPICH before 4.2 completes a nonblocking receive from MPI_PROC_NULL with
 * MPI_SOURCE and MPI_TAG 0 (pmodels/mpich#6805, fixed by #6819).  Exactly
 * that is accepted from those versions; the count is still checked. */
static void check_proc_null_request_status(const MPI_Status *status,
                                           const char *what)
{
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40200000
    if (status->MPI_SOURCE == 0 && status->MPI_TAG == 0) {
        check_status(status, 0, 0, MPI_BYTE, 0, what);
        return;
    }
#endif
    check_proc_null_status(status, what);
}

static void case_proc_null(int base_tag)
{
    int tag = base_tag;
    unsigned char data[16];
    memset(data, 0x11, sizeof data);
    unsigned char *area = new_recv_area(16);
    MPI_Status status;
    MPI_Request requests[4];

    MPI_CHECK(MPI_Send(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD));
    MPI_CHECK(
        MPI_Ssend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD));
    MPI_CHECK(
        MPI_Rsend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD));
    /* Attach a buffer anyway: the standard does not say a Bsend to
     * MPI_PROC_NULL needs none. */
    size_t room = 16 + MPI_BSEND_OVERHEAD;
    void *buffer = xmalloc(room);
    MPI_CHECK(MPI_Buffer_attach(buffer, (int)room));
    MPI_CHECK(
        MPI_Bsend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD));
    void *detached;
    int detached_size;
    MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
    free(buffer);

    MPI_CHECK(MPI_Recv(area, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD,
                       &status));
    check_proc_null_status(&status, "MPI_Recv from MPI_PROC_NULL");
    check_untouched(area, 0, 16, "MPI_Recv from MPI_PROC_NULL");

    MPI_CHECK(MPI_Irecv(area, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD,
                        &requests[0]));
    MPI_CHECK(MPI_Isend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD,
                        &requests[1]));
    MPI_CHECK(MPI_Issend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD,
                         &requests[2]));
    MPI_CHECK(MPI_Irsend(data, 16, MPI_BYTE, MPI_PROC_NULL, tag, MPI_COMM_WORLD,
                         &requests[3]));
    MPI_Status statuses[4];
    waitall_checked(4, requests, statuses);
    check_proc_null_request_status(&statuses[0],
                                   "MPI_Irecv from MPI_PROC_NULL");
    check_untouched(area, 0, 16, "MPI_Irecv from MPI_PROC_NULL");

    int flag = 0;
    MPI_CHECK(MPI_Probe(MPI_PROC_NULL, tag, MPI_COMM_WORLD, &status));
    check_proc_null_status(&status, "MPI_Probe of MPI_PROC_NULL");
    MPI_CHECK(MPI_Iprobe(MPI_PROC_NULL, tag, MPI_COMM_WORLD, &flag, &status));
    if (!flag)
        fail("MPI_Iprobe of MPI_PROC_NULL: flag false");
    check_proc_null_status(&status, "MPI_Iprobe of MPI_PROC_NULL");
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_CHECK(
        MPI_Mprobe(MPI_PROC_NULL, tag, MPI_COMM_WORLD, &message, &status));
    if (message != MPI_MESSAGE_NO_PROC)
        fail("MPI_Mprobe of MPI_PROC_NULL did not return "
             "MPI_MESSAGE_NO_PROC");
    check_proc_null_status(&status, "MPI_Mprobe of MPI_PROC_NULL");
    MPI_CHECK(MPI_Mrecv(area, 16, MPI_BYTE, &message, &status));
    check_proc_null_status(&status, "MPI_Mrecv of MPI_MESSAGE_NO_PROC");
    if (message != MPI_MESSAGE_NULL)
        fail("MPI_Mrecv left the message handle set");
    check_untouched(area, 0, 16, "MPI_Mrecv of MPI_MESSAGE_NO_PROC");

    /* A non-periodic shift: the ends talk to MPI_PROC_NULL. */
    int left = world_rank == 0 ? MPI_PROC_NULL : world_rank - 1;
    int right = world_rank == last_rank ? MPI_PROC_NULL : world_rank + 1;
    size_t size = 4096;
    unsigned char *message_out =
        new_message(size, stream_key(world_rank, right, tag + 1, 0));
    unsigned char *shift_area = new_recv_area(size);
    MPI_CHECK(MPI_Sendrecv(message_out, (int)size, MPI_BYTE, right, tag + 1,
                           shift_area, (int)size, MPI_BYTE, left, tag + 1,
                           MPI_COMM_WORLD, &status));
    const char *what = describe(left, world_rank, tag + 1, size);
    if (left == MPI_PROC_NULL) {
        check_proc_null_status(&status, "MPI_Sendrecv from MPI_PROC_NULL");
        check_untouched(shift_area, 0, size, what);
    } else {
        check_status(&status, left, tag + 1, MPI_BYTE, (int)size, what);
        check_payload(shift_area, size, size,
                      stream_key(left, world_rank, tag + 1, 0), what);
    }
    free(message_out);
    free(shift_area);
    free(area);
}

/* ---- cases: ordering -------------------------------------------------- */

#define ORDER_MAX_SIZE ((size_t)100 * 1024)

/* Sizes from 0 to 100 KiB, interleaving tiny messages with ones large
 * enough for a rendezvous protocol, which is where overtaking shows. */
static size_t mixed_size(int seq, uint32_t salt)
{
    uint32_t h = mix32((uint32_t)seq * 0x9e3779b9U ^ salt);
    switch (seq % 4) {
    case 0: return h % 8;
    case 1: return ORDER_MAX_SIZE - h % 1024;
    case 2: return h % 256;
    default: return h % (ORDER_MAX_SIZE + 1);
    }
}

/* Starts `count` messages with one tag to dst; returns the buffers. */
static unsigned char **send_sequence(int dst, int tag, int count,
                                     MPI_Request *requests)
{
    unsigned char **messages = xmalloc(sizeof *messages * (size_t)count);
    for (int seq = 0; seq < count; seq++) {
        size_t size = mixed_size(seq, (uint32_t)world_rank);
        messages[seq] =
            new_message(size, stream_key(world_rank, dst, tag, seq));
        MPI_CHECK(MPI_Isend(messages[seq], (int)size, MPI_BYTE, dst, tag,
                            MPI_COMM_WORLD, &requests[seq]));
    }
    return messages;
}

static void check_sequence_message(const unsigned char *area,
                                   const MPI_Status *status, int src, int tag,
                                   int seq)
{
    size_t size = mixed_size(seq, (uint32_t)src);
    char what[320];
    snprintf(what, sizeof what, "message #%d of the sequence %d->%d tag %d",
             seq, src, world_rank, tag);
    check_status(status, src, tag, MPI_BYTE, (int)size, what);
    check_payload(area, ORDER_MAX_SIZE, size,
                  stream_key(src, world_rank, tag, seq), what);
}

static void case_non_overtaking(int base_tag)
{
    enum { COUNT = 200 };
    int far = far_partner(world_rank);
    if (far == MPI_PROC_NULL)
        return;
    int tag = base_tag;
    MPI_Request requests[COUNT];
    unsigned char **messages = send_sequence(far, tag, COUNT, requests);
    unsigned char *area = new_recv_area(ORDER_MAX_SIZE);
    MPI_Status status;
    for (int seq = 0; seq < COUNT; seq++) {
        memset(area, FILL_BYTE, ORDER_MAX_SIZE + GUARD_BYTES);
        MPI_CHECK(MPI_Recv(area, (int)ORDER_MAX_SIZE, MPI_BYTE, far, tag,
                           MPI_COMM_WORLD, &status));
        check_sequence_message(area, &status, far, tag, seq);
    }
    MPI_CHECK(waitall_ignoring_statuses(COUNT, requests));
    for (int seq = 0; seq < COUNT; seq++)
        free(messages[seq]);
    free(messages);
    free(area);
}

/* send_sequence, waited for. */
static void send_sequence_done(int dst, int tag, int count)
{
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)count);
    unsigned char **messages = send_sequence(dst, tag, count, requests);
    MPI_CHECK(waitall_ignoring_statuses(count, requests));
    for (int seq = 0; seq < count; seq++)
        free(messages[seq]);
    free(messages);
    free(requests);
}

static void case_non_overtaking_any_source(int base_tag)
{
    enum { COUNT = 50 };
    int tag = base_tag;
    if (world_rank != 0) {
        send_sequence_done(0, tag, COUNT);
        return;
    }
    int *next_seq = xcalloc((size_t)world_size, sizeof *next_seq);
    unsigned char *area = new_recv_area(ORDER_MAX_SIZE);
    MPI_Status status;
    for (int n = 0; n < COUNT * (world_size - 1); n++) {
        memset(area, FILL_BYTE, ORDER_MAX_SIZE + GUARD_BYTES);
        MPI_CHECK(MPI_Recv(area, (int)ORDER_MAX_SIZE, MPI_BYTE, MPI_ANY_SOURCE,
                           tag, MPI_COMM_WORLD, &status));
        int src = status.MPI_SOURCE;
        if (src < 1 || src >= world_size || next_seq[src] >= COUNT)
            fail("ANY_SOURCE receive %d: unexpected status.MPI_SOURCE %d", n,
                 src);
        check_sequence_message(area, &status, src, tag, next_seq[src]++);
    }
    free(next_seq);
    free(area);
}

/*
 * The same with every receive posted before any message is sent: the
 * messages of one source must fill the receives in posting order however
 * they interleave with the passes that match them (same-site messages
 * arriving between two receives' probes once went to the later one).
 */
static void case_any_source_preposted(int base_tag)
{
    enum { COUNT = 30 };
    int tag = base_tag;
    if (world_rank != 0) {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        send_sequence_done(0, tag, COUNT);
        return;
    }
    int n = COUNT * (world_size - 1);
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)n);
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)n);
    unsigned char **areas = xmalloc(sizeof *areas * (size_t)n);
    for (int i = 0; i < n; i++) {
        areas[i] = new_recv_area(ORDER_MAX_SIZE);
        MPI_CHECK(MPI_Irecv(areas[i], (int)ORDER_MAX_SIZE, MPI_BYTE,
                            MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &requests[i]));
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Waitall(n, requests, statuses));
    int *next_seq = xcalloc((size_t)world_size, sizeof *next_seq);
    for (int i = 0; i < n; i++) {
        int src = statuses[i].MPI_SOURCE;
        if (src < 1 || src >= world_size || next_seq[src] >= COUNT)
            fail("preposted ANY_SOURCE receive %d: unexpected "
                 "status.MPI_SOURCE %d",
                 i, src);
        check_sequence_message(areas[i], &statuses[i], src, tag,
                               next_seq[src]++);
        free(areas[i]);
    }
    free(next_seq);
    free(areas);
    free(statuses);
    free(requests);
}

/*
 * Rank 1 posts (ANY_SOURCE, tag A) then (rank 0, ANY_TAG); rank 0 sends
 * tag B, which only the second receive takes, and sends tag A only once
 * rank 1 has it: the first receive, unmatched, must not hold the second
 * back (MPI 4.1, 3.5: a message goes to the first receive that matches).
 */
static void case_behind_wildcard(int base_tag)
{
    int tag_a = base_tag, tag_b = base_tag + 1, ack = base_tag + 2;
    int in[2] = {-1, -1}, value;
    if (world_rank == 1) {
        MPI_Request requests[2];
        MPI_Status status;
        MPI_CHECK(MPI_Irecv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, tag_a,
                            MPI_COMM_WORLD, &requests[0]));
        MPI_CHECK(MPI_Irecv(&in[1], 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD,
                            &requests[1]));
        MPI_CHECK(MPI_Wait(&requests[1], &status));
        if (in[1] != tag_b || status.MPI_TAG != tag_b)
            fail("(0, ANY_TAG) behind (ANY_SOURCE, %d): got %d tag %d, want "
                 "%d",
                 tag_a, in[1], status.MPI_TAG, tag_b);
        MPI_CHECK(MPI_Send(&in[1], 1, MPI_INT, 0, ack, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&requests[0], &status));
        if (in[0] != tag_a || status.MPI_SOURCE != 0)
            fail("(ANY_SOURCE, %d): got %d from %d", tag_a, in[0],
                 status.MPI_SOURCE);
    } else if (world_rank == 0) {
        MPI_CHECK(MPI_Send(&tag_b, 1, MPI_INT, 1, tag_b, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Recv(&value, 1, MPI_INT, 1, ack, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Send(&tag_a, 1, MPI_INT, 1, tag_a, MPI_COMM_WORLD));
    }
}

static void case_tag_out_of_order(int base_tag)
{
    /* Both messages are started before either receive: with blocking sends
     * the program would be unsafe (tag 1 may wait for its receive). */
    static const size_t sizes[2] = {7, ONE_MIB};
    struct transfer *flows = new_flows();
    for (int s = 0; s < 2; s++) {
        int nf = ring_and_far_flows(flows, 0, sizes[s], 1, 1);
        int nreq = 0;
        MPI_Request *requests = xmalloc(sizeof *requests * (size_t)(2 * nf));
        unsigned char **messages = xcalloc((size_t)(2 * nf), sizeof *messages);
        for (int f = 0; f < nf; f++) {
            if (flows[f].src != world_rank)
                continue;
            for (int k = 0; k < 2; k++) {
                int tag = base_tag + 2 * (s * nf + f) + 1 + k;
                messages[2 * f + k] = new_message(
                    sizes[s], stream_key(world_rank, flows[f].dst, tag, 0));
                MPI_CHECK(MPI_Isend(messages[2 * f + k], (int)sizes[s],
                                    MPI_BYTE, flows[f].dst, tag, MPI_COMM_WORLD,
                                    &requests[nreq++]));
            }
        }
        unsigned char *area = new_recv_area(sizes[s]);
        for (int f = 0; f < nf; f++) {
            if (flows[f].dst != world_rank)
                continue;
            for (int k = 1; k >= 0; k--) {
                int tag = base_tag + 2 * (s * nf + f) + 1 + k;
                /* The far flow takes tag 2 with MPI_ANY_SOURCE. */
                int source =
                    (k == 1 && f >= world_size) ? MPI_ANY_SOURCE : flows[f].src;
                MPI_Status status;
                memset(area, FILL_BYTE, sizes[s] + GUARD_BYTES);
                MPI_CHECK(MPI_Recv(area, (int)sizes[s], MPI_BYTE, source, tag,
                                   MPI_COMM_WORLD, &status));
                const char *what =
                    describe(flows[f].src, world_rank, tag, sizes[s]);
                check_status(&status, flows[f].src, tag, MPI_BYTE,
                             (int)sizes[s], what);
                check_payload(area, sizes[s], sizes[s],
                              stream_key(flows[f].src, world_rank, tag, 0),
                              what);
            }
        }
        MPI_CHECK(waitall_ignoring_statuses(nreq, requests));
        for (int i = 0; i < 2 * nf; i++)
            free(messages[i]);
        free(messages);
        free(requests);
        free(area);
    }
    free(flows);
}

/* ---- int layouts for derived datatypes -------------------------------- */

/* Where the k-th int of a message lives in a user buffer of `span` ints
 * when sent or received as (type, count); computed by hand so that the
 * check does not rely on the MPI datatype engine under test. */
struct int_layout {
    const char *name;
    MPI_Datatype type;
    int count;
    int span;
    int elements;
    int *positions;
};

static struct int_layout layout_contiguous(int count)
{
    struct int_layout layout = {
        "contiguous ints", MPI_INT, count, count, count, NULL};
    layout.positions = xmalloc(sizeof(int) * (size_t)count);
    for (int k = 0; k < count; k++)
        layout.positions[k] = k;
    return layout;
}

static struct int_layout layout_vector(int blocks, int block_length, int stride,
                                       int count)
{
    struct int_layout layout = {"vector", MPI_DATATYPE_NULL, count, 0, 0, NULL};
    MPI_CHECK(
        MPI_Type_vector(blocks, block_length, stride, MPI_INT, &layout.type));
    MPI_CHECK(MPI_Type_commit(&layout.type));
    int extent = (blocks - 1) * stride + block_length;
    layout.span = extent * count;
    layout.elements = blocks * block_length * count;
    layout.positions = xmalloc(sizeof(int) * (size_t)layout.elements);
    int k = 0;
    for (int e = 0; e < count; e++)
        for (int b = 0; b < blocks; b++)
            for (int j = 0; j < block_length; j++)
                layout.positions[k++] = e * extent + b * stride + j;
    return layout;
}

static struct int_layout layout_indexed(int count)
{
    static const int lengths[3] = {2, 1, 3};
    static const int displacements[3] = {0, 5, 9};
    const int extent = 12;
    struct int_layout layout = {"indexed", MPI_DATATYPE_NULL, count, 0, 0,
                                NULL};
    MPI_CHECK(
        MPI_Type_indexed(3, lengths, displacements, MPI_INT, &layout.type));
    MPI_CHECK(MPI_Type_commit(&layout.type));
    layout.span = extent * count;
    layout.elements = 6 * count;
    layout.positions = xmalloc(sizeof(int) * (size_t)layout.elements);
    int k = 0;
    for (int e = 0; e < count; e++)
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < lengths[b]; j++)
                layout.positions[k++] = e * extent + displacements[b] + j;
    return layout;
}

static struct int_layout layout_every_third(int count)
{
    struct int_layout layout = {"int resized to 3 ints",
                                MPI_DATATYPE_NULL,
                                count,
                                3 * count,
                                count,
                                NULL};
    MPI_CHECK(MPI_Type_create_resized(MPI_INT, 0, 3 * (MPI_Aint)sizeof(int),
                                      &layout.type));
    MPI_CHECK(MPI_Type_commit(&layout.type));
    layout.positions = xmalloc(sizeof(int) * (size_t)count);
    for (int k = 0; k < count; k++)
        layout.positions[k] = 3 * k;
    return layout;
}

static void free_layout(struct int_layout *layout)
{
    if (layout->type != MPI_INT)
        MPI_CHECK(MPI_Type_free(&layout->type));
    free(layout->positions);
}

static int *new_int_message(const struct int_layout *layout, uint32_t key)
{
    int *data = xmalloc(sizeof(int) * (size_t)layout->span);
    for (int i = 0; i < layout->span; i++)
        data[i] = pattern_int(key, (size_t)i);
    return data;
}

static int *new_int_area(const struct int_layout *layout)
{
    size_t length = (size_t)(layout->span + GUARD_INTS);
    int *area = xmalloc(sizeof(int) * length);
    for (size_t i = 0; i < length; i++)
        area[i] = SENTINEL_INT;
    return area;
}

/* The k-th int of the message went from send->positions[k] to
 * recv->positions[k]; everything else in the receive buffer (and its
 * guard) must still hold `untouched(i)`. */
static void check_int_layout(const int *area, const struct int_layout *send,
                             const struct int_layout *recv, uint32_t key,
                             const int *untouched, const char *what)
{
    int length = recv->span + GUARD_INTS;
    unsigned char *written = xcalloc((size_t)length, 1);
    for (int k = 0; k < recv->elements; k++) {
        int at = recv->positions[k];
        int expected = pattern_int(key, (size_t)send->positions[k]);
        written[at] = 1;
        if (area[at] != expected)
            fail("%s: int %d of the message (%s index %d -> %s index %d) "
                 "expected %d got %d",
                 what, k, send->name, send->positions[k], recv->name, at,
                 expected, area[at]);
    }
    for (int i = 0; i < length; i++) {
        int expected =
            untouched && i < recv->span ? untouched[i] : SENTINEL_INT;
        if (!written[i] && area[i] != expected)
            fail("%s: %s index %d lies outside the datatype but changed: "
                 "expected %d got %d",
                 what, recv->name, i, expected, area[i]);
    }
    free(written);
}

/* Every flow at once, each sent as (send->type, send->count) and received
 * as (recv->type, recv->count). */
static void exchange_int_layouts(const struct int_layout *send,
                                 const struct int_layout *recv, int base_tag,
                                 int ring)
{
    if (send->elements != recv->elements)
        fail("test bug: %s and %s carry different element counts", send->name,
             recv->name);
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, base_tag, 0, ring, 1);
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)(2 * nf));
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)(2 * nf));
    int *recv_index = xcalloc((size_t)nf, sizeof *recv_index);
    int **areas = xcalloc((size_t)nf, sizeof *areas);
    int **messages = xcalloc((size_t)nf, sizeof *messages);
    int nreq = 0;
    for (int f = 0; f < nf; f++) {
        if (flows[f].dst != world_rank)
            continue;
        areas[f] = new_int_area(recv);
        MPI_CHECK(MPI_Irecv(areas[f], recv->count, recv->type, flows[f].src,
                            flows[f].tag, MPI_COMM_WORLD, &requests[nreq]));
        recv_index[f] = nreq++;
    }
    for (int f = 0; f < nf; f++) {
        if (flows[f].src != world_rank)
            continue;
        messages[f] = new_int_message(
            send, stream_key(flows[f].src, flows[f].dst, flows[f].tag, 0));
        MPI_CHECK(MPI_Isend(messages[f], send->count, send->type, flows[f].dst,
                            flows[f].tag, MPI_COMM_WORLD, &requests[nreq++]));
    }
    waitall_checked(nreq, requests, statuses);
    for (int f = 0; f < nf; f++) {
        if (flows[f].dst != world_rank)
            continue;
        char what[320];
        snprintf(what, sizeof what, "%d x %s -> %d x %s, %d->%d tag %d",
                 send->count, send->name, recv->count, recv->name, flows[f].src,
                 flows[f].dst, flows[f].tag);
        const MPI_Status *status = &statuses[recv_index[f]];
        check_status(status, flows[f].src, flows[f].tag, recv->type,
                     recv->count, what);
        check_counts(status, recv->type, recv->count, recv->elements, what);
        check_int_layout(
            areas[f], send, recv,
            stream_key(flows[f].src, flows[f].dst, flows[f].tag, 0), NULL,
            what);
    }
    for (int f = 0; f < nf; f++) {
        free(areas[f]);
        free(messages[f]);
    }
    free(areas);
    free(messages);
    free(recv_index);
    free(statuses);
    free(requests);
    free(flows);
}

/* ---- cases: sendrecv, probe ------------------------------------------- */

/* Sends to dst and receives with recv_source (which may be a wildcard);
 * the message must come from src. */
static void sendrecv_bytes(int dst, int src, int recv_source, int tag,
                           size_t size)
{
    unsigned char *data =
        new_message(size, stream_key(world_rank, dst, tag, 0));
    unsigned char *area = new_recv_area(size);
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv(data, (int)size, MPI_BYTE, dst, tag, area, (int)size,
                           MPI_BYTE, recv_source, tag, MPI_COMM_WORLD,
                           &status));
    const char *what = describe(src, world_rank, tag, size);
    check_status(&status, src, tag, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, stream_key(src, world_rank, tag, 0), what);
    free(data);
    free(area);
}

/* Sendrecv_replace of `layout` to dst and from src: the layout's ints
 * become the sender's, every other int keeps this rank's own value. */
static void sendrecv_replace_ints(const struct int_layout *layout, int dst,
                                  int src, int tag)
{
    uint32_t own_key = stream_key(world_rank, dst, tag, 0);
    uint32_t their_key = stream_key(src, world_rank, tag, 0);
    int *area = new_int_area(layout);
    for (int i = 0; i < layout->span; i++)
        area[i] = pattern_int(own_key, (size_t)i);
    int *original = xmalloc(sizeof(int) * (size_t)(layout->span + 1));
    memcpy(original, area, sizeof(int) * (size_t)layout->span);
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv_replace(area, layout->count, layout->type, dst, tag,
                                   src, tag, MPI_COMM_WORLD, &status));
    char what[320];
    snprintf(what, sizeof what, "Sendrecv_replace %d x %s %d->%d tag %d",
             layout->count, layout->name, src, world_rank, tag);
    check_status(&status, src, tag, layout->type, layout->count, what);
    check_int_layout(area, layout, layout, their_key, original, what);
    free(original);
    free(area);
}

static void case_sendrecv(int base_tag)
{
    int left = left_of(world_rank), right = right_of(world_rank);
    int far = far_partner(world_rank);
    for (int s = 0; s < SIZE_COUNT && message_sizes[s] <= ONE_MIB; s++) {
        int tag = base_tag + 10 * s;
        sendrecv_bytes(right, left, left, tag, message_sizes[s]);
        sendrecv_bytes(left, right, right, tag + 1, message_sizes[s]);
        sendrecv_bytes(right, left, MPI_ANY_SOURCE, tag + 2, message_sizes[s]);
    }
    if (far != MPI_PROC_NULL)
        sendrecv_bytes(far, far, far, base_tag + 100, 5 * ONE_MIB);

    static const int replace_counts[3] = {0, 1000, 300000};
    for (int c = 0; c < 3; c++) {
        struct int_layout ints = layout_contiguous(replace_counts[c]);
        sendrecv_replace_ints(&ints, right, left, base_tag + 200 + c);
        if (far != MPI_PROC_NULL)
            sendrecv_replace_ints(&ints, far, far, base_tag + 210 + c);
        free_layout(&ints);
    }
    struct int_layout vector = layout_vector(5, 3, 7, 2);
    sendrecv_replace_ints(&vector, right, left, base_tag + 220);
    if (far != MPI_PROC_NULL)
        sendrecv_replace_ints(&vector, far, far, base_tag + 221);

    /* Sent as a vector, received as contiguous ints (same signature). */
    struct int_layout contiguous = layout_contiguous(30);
    int tag = base_tag + 230;
    int *data = new_int_message(&vector, stream_key(world_rank, right, tag, 0));
    int *area = new_int_area(&contiguous);
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv(data, vector.count, vector.type, right, tag, area,
                           contiguous.count, MPI_INT, left, tag, MPI_COMM_WORLD,
                           &status));
    char what[320];
    snprintf(what, sizeof what, "Sendrecv vector -> contiguous %d->%d", left,
             world_rank);
    check_status(&status, left, tag, MPI_INT, 30, what);
    check_int_layout(area, &vector, &contiguous,
                     stream_key(left, world_rank, tag, 0), NULL, what);
    free(data);
    free(area);
    free_layout(&vector);
    free_layout(&contiguous);
}

static unsigned char *probe_and_receive(int source, int tag, int expected_src,
                                        size_t expected_size, const char *how)
{
    MPI_Status status;
    MPI_CHECK(MPI_Probe(source, tag, MPI_COMM_WORLD, &status));
    char what[320];
    snprintf(what, sizeof what, "%s: %s", how,
             describe(expected_src, world_rank, tag, expected_size));
    check_status(&status, expected_src, tag, MPI_BYTE, (int)expected_size,
                 what);
    unsigned char *area = new_recv_area(expected_size);
    MPI_CHECK(MPI_Recv(area, (int)expected_size, MPI_BYTE, status.MPI_SOURCE,
                       tag, MPI_COMM_WORLD, &status));
    check_status(&status, expected_src, tag, MPI_BYTE, (int)expected_size,
                 what);
    check_payload(area, expected_size, expected_size,
                  stream_key(expected_src, world_rank, tag, 0), what);
    return area;
}

static size_t probe_size(int src)
{
    return src == last_rank ? ONE_MIB + 5 : (size_t)(1000 * src + 3);
}

static void case_probe(int base_tag)
{
    int left = left_of(world_rank), right = right_of(world_rank);
    int far = far_partner(world_rank);
    MPI_Status status;

    /* MPI_Probe with MPI_ANY_SOURCE at rank 0; the size comes from the
     * probe, and the receive buffer is exactly that large. */
    int tag = base_tag;
    if (world_rank == 0) {
        int *seen = xcalloc((size_t)world_size, sizeof *seen);
        for (int n = 1; n < world_size; n++) {
            MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status));
            int src = status.MPI_SOURCE;
            if (src < 1 || src >= world_size || seen[src])
                fail("MPI_Probe(ANY_SOURCE) %d: status.MPI_SOURCE %d is not "
                     "an unseen rank",
                     n, src);
            seen[src] = 1;
            free(probe_and_receive(src, tag, src, probe_size(src),
                                   "MPI_Probe(ANY_SOURCE)"));
        }
        free(seen);
    } else {
        unsigned char *data = new_message(probe_size(world_rank),
                                          stream_key(world_rank, 0, tag, 0));
        MPI_CHECK(MPI_Send(data, (int)probe_size(world_rank), MPI_BYTE, 0, tag,
                           MPI_COMM_WORLD));
        free(data);
    }

    /* MPI_Iprobe, polled until the ring message shows up. */
    {
        tag = base_tag + 10;
        size_t size = 4096 + (size_t)world_rank;
        size_t left_size = 4096 + (size_t)left;
        unsigned char *data =
            new_message(size, stream_key(world_rank, right, tag, 0));
        MPI_Request request;
        MPI_CHECK(MPI_Isend(data, (int)size, MPI_BYTE, right, tag,
                            MPI_COMM_WORLD, &request));
        int found = 0;
        while (!found) {
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &found,
                                 &status));
            if (!found)
                nap(200);
        }
        const char *what = describe(left, world_rank, tag, left_size);
        check_status(&status, left, tag, MPI_BYTE, (int)left_size, what);
        free(probe_and_receive(left, tag, left, left_size, "MPI_Iprobe"));
        MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        free(data);
    }

    /* MPI_Mprobe takes the message out of matching: a receive posted
     * afterwards gets the next one, and MPI_Mrecv still gets the first. */
    if (far != MPI_PROC_NULL) {
        tag = base_tag + 20;
        static const size_t sizes[2] = {4096, 65536 + 3};
        MPI_Request requests[2];
        unsigned char *data[2];
        for (int seq = 0; seq < 2; seq++) {
            data[seq] =
                new_message(sizes[seq], stream_key(world_rank, far, tag, seq));
            MPI_CHECK(MPI_Isend(data[seq], (int)sizes[seq], MPI_BYTE, far, tag,
                                MPI_COMM_WORLD, &requests[seq]));
        }
        MPI_Message message;
        char what[320];
        snprintf(what, sizeof what, "MPI_Mprobe(ANY_SOURCE) of %d->%d tag %d",
                 far, world_rank, tag);
        MPI_CHECK(
            MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &message, &status));
        check_status(&status, far, tag, MPI_BYTE, (int)sizes[0], what);
        unsigned char *second = new_recv_area(sizes[1]);
        MPI_CHECK(MPI_Recv(second, (int)sizes[1], MPI_BYTE, MPI_ANY_SOURCE, tag,
                           MPI_COMM_WORLD, &status));
        check_status(&status, far, tag, MPI_BYTE, (int)sizes[1],
                     "MPI_Recv after MPI_Mprobe (must get the 2nd message)");
        check_payload(second, sizes[1], sizes[1],
                      stream_key(far, world_rank, tag, 1),
                      "MPI_Recv after MPI_Mprobe (2nd message)");
        unsigned char *first = new_recv_area(sizes[0]);
        MPI_CHECK(MPI_Mrecv(first, (int)sizes[0], MPI_BYTE, &message, &status));
        if (message != MPI_MESSAGE_NULL)
            fail("%s: MPI_Mrecv did not set the handle to MPI_MESSAGE_NULL",
                 what);
        check_status(&status, far, tag, MPI_BYTE, (int)sizes[0], what);
        check_payload(first, sizes[0], sizes[0],
                      stream_key(far, world_rank, tag, 0), what);
        MPI_CHECK(waitall_ignoring_statuses(2, requests));
        free(first);
        free(second);
        free(data[0]);
        free(data[1]);
    }

    /* MPI_Improbe polled until found, then MPI_Imrecv, around the ring and
     * (1 MiB) between rank 0 and the last rank. */
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, base_tag + 30, 0, 1, 1);
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)nf);
    unsigned char **messages = xcalloc((size_t)nf, sizeof *messages);
    int nreq = 0;
    for (int f = 0; f < nf; f++) {
        flows[f].size = f < world_size ? 7 + (size_t)flows[f].src : ONE_MIB;
        if (flows[f].src != world_rank)
            continue;
        messages[f] =
            new_message(flows[f].size, stream_key(flows[f].src, flows[f].dst,
                                                  flows[f].tag, 0));
        MPI_CHECK(MPI_Isend(messages[f], (int)flows[f].size, MPI_BYTE,
                            flows[f].dst, flows[f].tag, MPI_COMM_WORLD,
                            &requests[nreq++]));
    }
    for (int f = 0; f < nf; f++) {
        const struct transfer *t = &flows[f];
        if (t->dst != world_rank)
            continue;
        MPI_Message message;
        int found = 0;
        while (!found) {
            MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, t->tag, MPI_COMM_WORLD,
                                  &found, &message, &status));
            if (!found)
                nap(200);
        }
        char what[320];
        snprintf(what, sizeof what, "MPI_Improbe/MPI_Imrecv %s",
                 describe(t->src, t->dst, t->tag, t->size));
        check_status(&status, t->src, t->tag, MPI_BYTE, (int)t->size, what);
        int count = 0;
        MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
        unsigned char *area = new_recv_area((size_t)count);
        MPI_Request request;
        MPI_CHECK(MPI_Imrecv(area, count, MPI_BYTE, &message, &request));
        if (message != MPI_MESSAGE_NULL)
            fail("%s: MPI_Imrecv did not set the handle to MPI_MESSAGE_NULL",
                 what);
        MPI_CHECK(MPI_Wait(&request, &status));
        check_status(&status, t->src, t->tag, MPI_BYTE, (int)t->size, what);
        check_payload(area, t->size, t->size,
                      stream_key(t->src, t->dst, t->tag, 0), what);
        free(area);
    }
    MPI_CHECK(waitall_ignoring_statuses(nreq, requests));
    for (int f = 0; f < nf; f++)
        free(messages[f]);
    free(messages);
    free(requests);
    free(flows);
}

/* ---- case: Wait/Test families ----------------------------------------- */

#define WAIT_TEST_REQUESTS 6

struct pending {
    int is_recv;
    int peer;
    int tag;
    size_t size;
    uint32_t key;
    unsigned char *buffer;
    int done;
};

enum completion_style {
    BY_WAIT,
    BY_TEST,
    BY_WAITALL,
    BY_WAITALL_IGNORE,
    BY_WAITANY,
    BY_WAITSOME,
    BY_TESTALL,
    BY_TESTANY,
    BY_TESTSOME,
    STYLE_COUNT
};

static const char *const style_names[STYLE_COUNT] = {
    "MPI_Wait",     "MPI_Test",     "MPI_Waitall", "MPI_Waitall(IGNORE)",
    "MPI_Waitany",  "MPI_Waitsome", "MPI_Testall", "MPI_Testany",
    "MPI_Testsome",
};

static void complete_slot(struct pending *slots, int nslots, int index,
                          const MPI_Status *status, const char *how)
{
    if (index < 0 || index >= nslots)
        fail("%s returned index %d of %d requests", how, index, nslots);
    struct pending *p = &slots[index];
    if (p->done)
        fail("%s reported request %d complete a second time", how, index);
    p->done = 1;
    if (!p->is_recv)
        return;
    char what[320];
    snprintf(what, sizeof what, "%s, request %d: %s", how, index,
             describe(p->peer, world_rank, p->tag, p->size));
    if (p->peer == MPI_PROC_NULL) {
        if (status)
            check_proc_null_request_status(status, what);
        return;
    }
    if (status)
        check_status(status, p->peer, p->tag, MPI_BYTE, (int)p->size, what);
    check_payload(p->buffer, p->size, p->size, p->key, what);
}

static void complete_requests(enum completion_style style, int n,
                              MPI_Request *requests, struct pending *slots)
{
    const char *how = style_names[style];
    MPI_Status statuses[WAIT_TEST_REQUESTS];
    int indices[WAIT_TEST_REQUESTS];
    int index, flag, outcount, done = 0;
    switch (style) {
    case BY_WAIT:
        for (int i = 0; i < n; i++) {
            MPI_CHECK(MPI_Wait(&requests[i], &statuses[0]));
            complete_slot(slots, n, i, &statuses[0], how);
        }
        break;
    case BY_TEST:
        for (int i = 0; i < n; i++) {
            for (flag = 0; !flag;) {
                MPI_CHECK(MPI_Test(&requests[i], &flag, &statuses[0]));
                if (!flag)
                    nap(100);
            }
            complete_slot(slots, n, i, &statuses[0], how);
        }
        break;
    case BY_WAITALL:
        waitall_checked(n, requests, statuses);
        for (int i = 0; i < n; i++)
            complete_slot(slots, n, i, &statuses[i], how);
        break;
    case BY_WAITALL_IGNORE:
        MPI_CHECK(waitall_ignoring_statuses(n, requests));
        for (int i = 0; i < n; i++)
            complete_slot(slots, n, i, NULL, how);
        break;
    case BY_WAITANY:
        for (int k = 0; k < n; k++) {
            MPI_CHECK(MPI_Waitany(n, requests, &index, &statuses[0]));
            complete_slot(slots, n, index, &statuses[0], how);
        }
        MPI_CHECK(MPI_Waitany(n, requests, &index, &statuses[0]));
        if (index != MPI_UNDEFINED)
            fail("MPI_Waitany on inactive requests returned index %d, "
                 "expected MPI_UNDEFINED",
                 index);
        break;
    case BY_WAITSOME:
        while (done < n) {
            MPI_CHECK(MPI_Waitsome(n, requests, &outcount, indices, statuses));
            if (outcount < 1 || outcount > n - done)
                fail("MPI_Waitsome returned outcount %d with %d requests "
                     "pending",
                     outcount, n - done);
            for (int j = 0; j < outcount; j++)
                complete_slot(slots, n, indices[j], &statuses[j], how);
            done += outcount;
        }
        MPI_CHECK(MPI_Waitsome(n, requests, &outcount, indices, statuses));
        if (outcount != MPI_UNDEFINED)
            fail("MPI_Waitsome on inactive requests returned outcount %d, "
                 "expected MPI_UNDEFINED",
                 outcount);
        break;
    case BY_TESTALL:
        for (flag = 0; !flag;) {
            MPI_CHECK(MPI_Testall(n, requests, &flag, statuses));
            if (!flag)
                nap(100);
        }
        for (int i = 0; i < n; i++)
            complete_slot(slots, n, i, &statuses[i], how);
        break;
    case BY_TESTANY:
        while (done < n) {
            MPI_CHECK(MPI_Testany(n, requests, &index, &flag, &statuses[0]));
            if (!flag) {
                nap(100);
                continue;
            }
            if (index == MPI_UNDEFINED)
                fail("MPI_Testany: flag true, index MPI_UNDEFINED with %d "
                     "requests pending",
                     n - done);
            complete_slot(slots, n, index, &statuses[0], how);
            done++;
        }
        MPI_CHECK(MPI_Testany(n, requests, &index, &flag, &statuses[0]));
        if (!flag || index != MPI_UNDEFINED)
            fail("MPI_Testany on inactive requests: flag %d index %d, "
                 "expected 1 and MPI_UNDEFINED",
                 flag, index);
        break;
    case BY_TESTSOME:
        while (done < n) {
            MPI_CHECK(MPI_Testsome(n, requests, &outcount, indices, statuses));
            if (outcount == MPI_UNDEFINED || outcount < 0 ||
                outcount > n - done)
                fail("MPI_Testsome returned outcount %d with %d requests "
                     "pending",
                     outcount, n - done);
            if (outcount == 0)
                nap(100);
            for (int j = 0; j < outcount; j++)
                complete_slot(slots, n, indices[j], &statuses[j], how);
            done += outcount;
        }
        MPI_CHECK(MPI_Testsome(n, requests, &outcount, indices, statuses));
        if (outcount != MPI_UNDEFINED)
            fail("MPI_Testsome on inactive requests returned outcount %d, "
                 "expected MPI_UNDEFINED",
                 outcount);
        break;
    case STYLE_COUNT: break;
    }
    for (int i = 0; i < n; i++)
        if (requests[i] != MPI_REQUEST_NULL)
            fail("%s left request %d active after completing it", how, i);
}

static void case_wait_test(int base_tag)
{
    /* Each array mixes receives from both neighbours and from the far
     * partner (MPI_PROC_NULL for ranks in between) with the matching
     * sends, so rank 0 waits on rank 1 and the last rank at once; the
     * order rotates so every slot sees every kind of request. */
    int left = left_of(world_rank), right = right_of(world_rank);
    int far = far_partner(world_rank);
    size_t near_size = 65536 + 3;
    size_t far_size = far == MPI_PROC_NULL ? 0 : ONE_MIB;
    for (int style = 0; style < STYLE_COUNT; style++) {
        /* tag: rightwards around the ring, +1: far pair, +2: leftwards. */
        int tag = base_tag + 10 * style;
        struct pending kinds[WAIT_TEST_REQUESTS] = {
            {1, left, tag, near_size, stream_key(left, world_rank, tag, 0),
             NULL, 0},
            {1, far, tag + 1, far_size, stream_key(far, world_rank, tag + 1, 0),
             NULL, 0},
            {1, right, tag + 2, near_size,
             stream_key(right, world_rank, tag + 2, 0), NULL, 0},
            {0, right, tag, near_size, stream_key(world_rank, right, tag, 0),
             NULL, 0},
            {0, far, tag + 1, far_size, stream_key(world_rank, far, tag + 1, 0),
             NULL, 0},
            {0, left, tag + 2, near_size,
             stream_key(world_rank, left, tag + 2, 0), NULL, 0},
        };
        struct pending slots[WAIT_TEST_REQUESTS];
        MPI_Request requests[WAIT_TEST_REQUESTS];
        for (int i = 0; i < WAIT_TEST_REQUESTS; i++) {
            struct pending *p = &slots[i];
            *p = kinds[(i + style) % WAIT_TEST_REQUESTS];
            if (p->is_recv) {
                p->buffer = new_recv_area(p->size);
                MPI_CHECK(MPI_Irecv(p->buffer, (int)p->size, MPI_BYTE, p->peer,
                                    p->tag, MPI_COMM_WORLD, &requests[i]));
            } else {
                p->buffer = new_message(p->size, p->key);
                MPI_CHECK(MPI_Isend(p->buffer, (int)p->size, MPI_BYTE, p->peer,
                                    p->tag, MPI_COMM_WORLD, &requests[i]));
            }
        }
        complete_requests((enum completion_style)style, WAIT_TEST_REQUESTS,
                          requests, slots);
        for (int i = 0; i < WAIT_TEST_REQUESTS; i++)
            free(slots[i].buffer);
    }
}

/* ---- case: cancel ----------------------------------------------------- */

static void case_cancel(int base_tag)
{
    int left = left_of(world_rank), right = right_of(world_rank);
    int far = far_partner(world_rank);
    int cancelled_tag = base_tag + 1;
    int token_tag = base_tag + 2;
    static const int token_out = 1;
    int token_in = 0;
    MPI_Status status;

    /* Receives that no send can match yet: nothing with cancelled_tag is
     * sent before every rank has finished cancelling (the tokens below). */
    const int sources[3] = {left, MPI_ANY_SOURCE, far};
    for (int i = 0; i < 3; i++) {
        if (sources[i] == MPI_PROC_NULL)
            continue;
        unsigned char *area = new_recv_area(16);
        MPI_Request request;
        MPI_CHECK(MPI_Irecv(area, 16, MPI_BYTE, sources[i], cancelled_tag,
                            MPI_COMM_WORLD, &request));
        MPI_CHECK(MPI_Cancel(&request));
        MPI_CHECK(MPI_Wait(&request, &status));
        int cancelled = 0;
        MPI_CHECK(MPI_Test_cancelled(&status, &cancelled));
        if (!cancelled)
            fail("receive from %d tag %d that nothing matches: "
                 "MPI_Test_cancelled false after MPI_Cancel",
                 sources[i], cancelled_tag);
        check_untouched(area, 0, 16, "cancelled receive");
        free(area);
    }

    /* A cancelled receive must not take a later message with its
     * envelope: the senders go only after this rank's token. */
    MPI_Request token_requests[2];
    int ntokens = 0;
    MPI_CHECK(MPI_Isend(&token_out, 1, MPI_INT, left, token_tag, MPI_COMM_WORLD,
                        &token_requests[ntokens++]));
    if (far != MPI_PROC_NULL)
        MPI_CHECK(MPI_Isend(&token_out, 1, MPI_INT, far, token_tag,
                            MPI_COMM_WORLD, &token_requests[ntokens++]));
    MPI_CHECK(MPI_Recv(&token_in, 1, MPI_INT, right, token_tag, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    if (far != MPI_PROC_NULL)
        MPI_CHECK(MPI_Recv(&token_in, 1, MPI_INT, far, token_tag,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHECK(waitall_ignoring_statuses(ntokens, token_requests));
    {
        size_t size = 7;
        const int peers_out[2] = {right, far};
        const int peers_in[2] = {left, far};
        MPI_Request requests[2];
        unsigned char *data[2] = {NULL, NULL};
        int nsend = 0;
        for (int seq = 0; seq < 2; seq++) {
            if (peers_out[seq] == MPI_PROC_NULL)
                continue;
            data[seq] = new_message(size, stream_key(world_rank, peers_out[seq],
                                                     cancelled_tag, seq));
            MPI_CHECK(MPI_Isend(data[seq], (int)size, MPI_BYTE, peers_out[seq],
                                cancelled_tag, MPI_COMM_WORLD,
                                &requests[nsend++]));
        }
        for (int seq = 0; seq < 2; seq++) {
            if (peers_in[seq] == MPI_PROC_NULL)
                continue;
            unsigned char *area = new_recv_area(size);
            MPI_CHECK(MPI_Recv(area, (int)size, MPI_BYTE, peers_in[seq],
                               cancelled_tag, MPI_COMM_WORLD, &status));
            const char *what =
                describe(peers_in[seq], world_rank, cancelled_tag, size);
            check_status(&status, peers_in[seq], cancelled_tag, MPI_BYTE,
                         (int)size, what);
            check_payload(
                area, size, size,
                stream_key(peers_in[seq], world_rank, cancelled_tag, seq),
                what);
            free(area);
        }
        MPI_CHECK(waitall_ignoring_statuses(nsend, requests));
        free(data[0]);
        free(data[1]);
    }

    /* Cancelling a receive that is already matched must fail.  MPI_Ssend
     * returning means the receive has started; the sender says so with a
     * token, and only then is the receive cancelled. */
    {
        size_t size = 4096;
        int matched_tag = base_tag + 3;
        const int peers_out[2] = {right, far};
        const int peers_in[2] = {left, far};
        MPI_Request receives[2];
        unsigned char *areas[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            if (peers_in[k] == MPI_PROC_NULL)
                continue;
            areas[k] = new_recv_area(size);
            MPI_CHECK(MPI_Irecv(areas[k], (int)size, MPI_BYTE, peers_in[k],
                                matched_tag + k, MPI_COMM_WORLD, &receives[k]));
        }
        ntokens = 0;
        for (int k = 0; k < 2; k++) {
            if (peers_out[k] == MPI_PROC_NULL)
                continue;
            unsigned char *data = new_message(
                size, stream_key(world_rank, peers_out[k], matched_tag + k, 0));
            MPI_CHECK(MPI_Ssend(data, (int)size, MPI_BYTE, peers_out[k],
                                matched_tag + k, MPI_COMM_WORLD));
            free(data);
            MPI_CHECK(MPI_Isend(&token_out, 1, MPI_INT, peers_out[k],
                                token_tag + 10, MPI_COMM_WORLD,
                                &token_requests[ntokens++]));
        }
        for (int k = 0; k < 2; k++) {
            if (peers_in[k] == MPI_PROC_NULL)
                continue;
            MPI_CHECK(MPI_Recv(&token_in, 1, MPI_INT, peers_in[k],
                               token_tag + 10, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Cancel(&receives[k]));
            MPI_CHECK(MPI_Wait(&receives[k], &status));
            int cancelled = 1;
            MPI_CHECK(MPI_Test_cancelled(&status, &cancelled));
            const char *what =
                describe(peers_in[k], world_rank, matched_tag + k, size);
            if (cancelled)
                fail("%s: MPI_Cancel succeeded on a receive whose MPI_Ssend "
                     "had already completed",
                     what);
            check_status(&status, peers_in[k], matched_tag + k, MPI_BYTE,
                         (int)size, what);
            check_payload(
                areas[k], size, size,
                stream_key(peers_in[k], world_rank, matched_tag + k, 0), what);
            free(areas[k]);
        }
        MPI_CHECK(waitall_ignoring_statuses(ntokens, token_requests));
    }
}

/* ---- case: derived datatypes ------------------------------------------ */

struct record {
    char label;
    double value;
    int triple[3];
};

/* The same signature (char, double, 3 ints) without gaps: 21 bytes. */
#define PACKED_RECORD_SIZE 21

static MPI_Datatype make_record_type(int packed)
{
    int lengths[3] = {1, 1, 3};
    MPI_Aint aligned[3] = {offsetof(struct record, label),
                           offsetof(struct record, value),
                           offsetof(struct record, triple)};
    MPI_Aint unaligned[3] = {0, 1, 9};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Datatype raw, resized;
    MPI_CHECK(MPI_Type_create_struct(3, lengths, packed ? unaligned : aligned,
                                     types, &raw));
    MPI_CHECK(MPI_Type_create_resized(
        raw, 0, packed ? PACKED_RECORD_SIZE : (MPI_Aint)sizeof(struct record),
        &resized));
    MPI_CHECK(MPI_Type_commit(&resized));
    MPI_CHECK(MPI_Type_free(&raw));
    return resized;
}

static struct record expected_record(uint32_t key, int index)
{
    struct record r;
    memset(&r, 0, sizeof r);
    size_t base = 8 * (size_t)index;
    r.label = (char)(pattern_word(key, base) & 0x7f);
    r.value = pattern_double(key, base + 1);
    for (int j = 0; j < 3; j++)
        r.triple[j] = pattern_int(key, base + 2 + (size_t)j);
    return r;
}

static void check_record(const struct record *got, const struct record *want,
                         const char *what, int index)
{
    if (got->label != want->label || got->value != want->value ||
        memcmp(got->triple, want->triple, sizeof want->triple) != 0)
        fail("%s: record %d expected {%d, %g, %d %d %d} got {%d, %g, %d %d "
             "%d}",
             what, index, want->label, want->value, want->triple[0],
             want->triple[1], want->triple[2], got->label, got->value,
             got->triple[0], got->triple[1], got->triple[2]);
}

/* Structs with alignment gaps: received into the same layout (the gaps
 * must stay untouched) and into a packed, unaligned layout. */
static void exchange_records(int packed_receiver, int base_tag)
{
    enum { COUNT = 4 };
    MPI_Datatype record_type = make_record_type(0);
    MPI_Datatype recv_type = make_record_type(packed_receiver);
    size_t recv_bytes = packed_receiver ? COUNT * PACKED_RECORD_SIZE
                                        : COUNT * sizeof(struct record);
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, base_tag, 0, 1, 1);
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)(2 * nf));
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)(2 * nf));
    int *recv_index = xcalloc((size_t)nf, sizeof *recv_index);
    unsigned char **areas = xcalloc((size_t)nf, sizeof *areas);
    struct record **messages = xcalloc((size_t)nf, sizeof *messages);
    int nreq = 0;
    for (int f = 0; f < nf; f++) {
        if (flows[f].dst != world_rank)
            continue;
        areas[f] = new_recv_area(recv_bytes);
        MPI_CHECK(MPI_Irecv(areas[f], COUNT, recv_type, flows[f].src,
                            flows[f].tag, MPI_COMM_WORLD, &requests[nreq]));
        recv_index[f] = nreq++;
    }
    for (int f = 0; f < nf; f++) {
        if (flows[f].src != world_rank)
            continue;
        uint32_t key = stream_key(flows[f].src, flows[f].dst, flows[f].tag, 0);
        messages[f] = xmalloc(sizeof(struct record) * COUNT);
        /* Garbage in the sender's gaps must not reach the receiver. */
        memset(messages[f], 0x3C, sizeof(struct record) * COUNT);
        for (int i = 0; i < COUNT; i++) {
            struct record r = expected_record(key, i);
            messages[f][i].label = r.label;
            messages[f][i].value = r.value;
            memcpy(messages[f][i].triple, r.triple, sizeof r.triple);
        }
        MPI_CHECK(MPI_Isend(messages[f], COUNT, record_type, flows[f].dst,
                            flows[f].tag, MPI_COMM_WORLD, &requests[nreq++]));
    }
    waitall_checked(nreq, requests, statuses);
    for (int f = 0; f < nf; f++) {
        if (flows[f].dst != world_rank)
            continue;
        uint32_t key = stream_key(flows[f].src, flows[f].dst, flows[f].tag, 0);
        char what[320];
        snprintf(what, sizeof what, "struct with gaps -> %s struct, %d->%d",
                 packed_receiver ? "packed" : "same", flows[f].src,
                 flows[f].dst);
        check_status(&statuses[recv_index[f]], flows[f].src, flows[f].tag,
                     recv_type, COUNT, what);
        check_counts(&statuses[recv_index[f]], recv_type, COUNT, 5 * COUNT,
                     what);
        for (int i = 0; i < COUNT; i++) {
            struct record want = expected_record(key, i);
            struct record got;
            if (packed_receiver) {
                const unsigned char *at = areas[f] + i * PACKED_RECORD_SIZE;
                got.label = (char)at[0];
                memcpy(&got.value, at + 1, sizeof got.value);
                memcpy(got.triple, at + 9, sizeof got.triple);
            } else {
                memcpy(&got, areas[f] + i * sizeof(struct record), sizeof got);
                /* Gap bytes: between label and value, after triple. */
                const unsigned char *at = areas[f] + i * sizeof(struct record);
                for (size_t b = 1; b < offsetof(struct record, value); b++)
                    if (at[b] != FILL_BYTE)
                        fail("%s: record %d gap byte %zu was written", what, i,
                             b);
                for (size_t b =
                         offsetof(struct record, triple) + 3 * sizeof(int);
                     b < sizeof(struct record); b++)
                    if (at[b] != FILL_BYTE)
                        fail("%s: record %d tail gap byte %zu was written",
                             what, i, b);
            }
            check_record(&got, &want, what, i);
        }
        check_untouched(areas[f], recv_bytes, recv_bytes, what);
    }
    for (int f = 0; f < nf; f++) {
        free(areas[f]);
        free(messages[f]);
    }
    free(areas);
    free(messages);
    free(recv_index);
    free(statuses);
    free(requests);
    free(flows);
    MPI_CHECK(MPI_Type_free(&record_type));
    MPI_CHECK(MPI_Type_free(&recv_type));
}

static void case_datatypes(int base_tag)
{
    struct int_layout vector = layout_vector(5, 3, 7, 2);
    struct int_layout contiguous30 = layout_contiguous(30);
    struct int_layout indexed3 = layout_indexed(3);
    struct int_layout indexed5 = layout_indexed(5);
    struct int_layout contiguous18 = layout_contiguous(18);
    struct int_layout every_third = layout_every_third(10);
    struct int_layout contiguous10 = layout_contiguous(10);
    const struct int_layout *pairs[][2] = {
        {&vector, &contiguous30},
        {&contiguous30, &vector},
        {&vector, &vector},
        {&indexed3, &contiguous18},
        {&contiguous18, &indexed3},
        {&indexed3, &indexed3},
        {&vector, &indexed5},
        {&every_third, &contiguous10},
        {&contiguous10, &every_third},
        {&every_third, &every_third},
    };
    int npairs = (int)(sizeof pairs / sizeof pairs[0]);
    for (int p = 0; p < npairs; p++)
        exchange_int_layouts(pairs[p][0], pairs[p][1], base_tag + 20 * p, 1);

    /* A large strided message (1.2 MB of payload) between the far pair. */
    struct int_layout big_vector = layout_vector(100000, 3, 4, 1);
    struct int_layout big_contiguous = layout_contiguous(300000);
    exchange_int_layouts(&big_vector, &big_contiguous, base_tag + 400, 0);
    exchange_int_layouts(&big_contiguous, &big_vector, base_tag + 420, 0);

    exchange_records(0, base_tag + 500);
    exchange_records(1, base_tag + 520);

    free_layout(&vector);
    free_layout(&contiguous30);
    free_layout(&indexed3);
    free_layout(&indexed5);
    free_layout(&contiguous18);
    free_layout(&every_third);
    free_layout(&contiguous10);
    free_layout(&big_vector);
    free_layout(&big_contiguous);
}

/* ---- case: truncation ------------------------------------------------- */

static void expect_truncate(int rc, const char *what)
{
    int error_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_CHECK(MPI_Error_class(rc, &error_class));
    if (error_class != MPI_ERR_TRUNCATE) {
        char text[MPI_MAX_ERROR_STRING] = "MPI_SUCCESS";
        int length = 0;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, text, &length);
        fail("%s: expected error class MPI_ERR_TRUNCATE (%d), got class %d "
             "(%s)",
             what, MPI_ERR_TRUNCATE, error_class, text);
    }
}

static void case_truncate(int base_tag)
{
    /* MPI_ERRORS_RETURN is set on MPI_COMM_WORLD since MPI_Init (main). */
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, 0, 0, 1, 1);
    /* Per flow: sent size, receive capacity. */
    static const size_t sent[5] = {100, ONE_MIB, 64, 4096, 4096};
    static const size_t capacity[5] = {50, 65536, 64, 7, 4096};
    MPI_Request *sends = xmalloc(sizeof *sends * (size_t)(5 * nf));
    unsigned char **messages = xcalloc((size_t)(5 * nf), sizeof *messages);
    int nsend = 0;
    for (int f = 0; f < nf; f++) {
        if (flows[f].src != world_rank)
            continue;
        for (int m = 0; m < 5; m++) {
            int tag = base_tag + 10 * f + m;
            messages[5 * f + m] = new_message(
                sent[m], stream_key(world_rank, flows[f].dst, tag, 0));
            MPI_CHECK(MPI_Isend(messages[5 * f + m], (int)sent[m], MPI_BYTE,
                                flows[f].dst, tag, MPI_COMM_WORLD,
                                &sends[nsend++]));
        }
    }
    for (int f = 0; f < nf; f++) {
        if (flows[f].dst != world_rank)
            continue;
        int src = flows[f].src;
        int tag = base_tag + 10 * f;
        unsigned char *areas[5];
        for (int m = 0; m < 5; m++)
            areas[m] = new_recv_area(capacity[m]);
        MPI_Status status;
        char what[320];

        /* MPI_Recv reports truncation in its return code. */
        snprintf(what, sizeof what, "MPI_Recv of %s into %zu B",
                 describe(src, world_rank, tag, sent[0]), capacity[0]);
        expect_truncate(MPI_Recv(areas[0], (int)capacity[0], MPI_BYTE, src, tag,
                                 MPI_COMM_WORLD, &status),
                        what);
        check_untouched(areas[0], capacity[0], capacity[0], what);

        MPI_Request requests[2];
        MPI_CHECK(MPI_Irecv(areas[1], (int)capacity[1], MPI_BYTE, src, tag + 1,
                            MPI_COMM_WORLD, &requests[0]));
        snprintf(what, sizeof what, "MPI_Wait of %s into %zu B",
                 describe(src, world_rank, tag + 1, sent[1]), capacity[1]);
        expect_truncate(MPI_Wait(&requests[0], &status), what);
        check_untouched(areas[1], capacity[1], capacity[1], what);

        /* MPI_Waitall: MPI_ERR_IN_STATUS, per-request MPI_ERROR. */
        MPI_Status statuses[2];
        MPI_CHECK(MPI_Irecv(areas[2], (int)capacity[2], MPI_BYTE, src, tag + 2,
                            MPI_COMM_WORLD, &requests[0]));
        MPI_CHECK(MPI_Irecv(areas[3], (int)capacity[3], MPI_BYTE, src, tag + 3,
                            MPI_COMM_WORLD, &requests[1]));
        int rc = MPI_Waitall(2, requests, statuses);
        snprintf(what, sizeof what,
                 "MPI_Waitall of %s into %zu B and %zu B "
                 "into %zu B",
                 describe(src, world_rank, tag + 2, sent[2]), capacity[2],
                 sent[3], capacity[3]);
        int error_class = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            MPI_CHECK(MPI_Error_class(rc, &error_class));
        if (error_class != MPI_ERR_IN_STATUS)
            fail("%s: expected MPI_ERR_IN_STATUS, got class %d", what,
                 error_class);
        if (statuses[0].MPI_ERROR != MPI_SUCCESS)
            fail("%s: the message that fits has status.MPI_ERROR %d, "
                 "expected MPI_SUCCESS",
                 what, statuses[0].MPI_ERROR);
        expect_truncate(statuses[1].MPI_ERROR, what);
        check_status(&statuses[0], src, tag + 2, MPI_BYTE, (int)sent[2], what);
        check_payload(areas[2], capacity[2], sent[2],
                      stream_key(src, world_rank, tag + 2, 0), what);
        check_untouched(areas[3], capacity[3], capacity[3], what);

        /* The pair still communicates normally afterwards. */
        snprintf(what, sizeof what, "after truncation: %s",
                 describe(src, world_rank, tag + 4, sent[4]));
        MPI_CHECK(MPI_Recv(areas[4], (int)capacity[4], MPI_BYTE, src, tag + 4,
                           MPI_COMM_WORLD, &status));
        check_status(&status, src, tag + 4, MPI_BYTE, (int)sent[4], what);
        check_payload(areas[4], capacity[4], sent[4],
                      stream_key(src, world_rank, tag + 4, 0), what);
        for (int m = 0; m < 5; m++)
            free(areas[m]);
    }
    /* Truncation is the receiver's error; the sends succeed. */
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)(nsend + 1));
    waitall_checked(nsend, sends, statuses);
    for (int i = 0; i < 5 * nf; i++)
        free(messages[i]);
    free(statuses);
    free(messages);
    free(sends);
    free(flows);
}

/* ---- case: many outstanding requests ---------------------------------- */

static size_t outstanding_size(int src, int dst, int index)
{
    if (index % 16 == 5)
        return 65536 + 3;
    return mix32(stream_key(src, dst, 0, index)) % 2048;
}

static void case_many_outstanding(int base_tag)
{
    enum { PER_PEER = 64 };
    int total = PER_PEER * (world_size - 1);
    MPI_Request *requests = xmalloc(sizeof *requests * (size_t)(2 * total));
    MPI_Status *statuses = xmalloc(sizeof *statuses * (size_t)(2 * total));
    unsigned char **areas = xcalloc((size_t)total, sizeof *areas);
    unsigned char **messages = xcalloc((size_t)total, sizeof *messages);
    int *recv_index = xcalloc((size_t)total, sizeof *recv_index);
    int nreq = 0;
    /* Tags repeat every 8 messages, so matching also relies on order.
     * Even-numbered receives go first and odd ones after the sends, so
     * some messages arrive expected and some unexpected; within one tag
     * the posting order still follows the sending order. */
    for (int parity = 0; parity < 2; parity++) {
        if (parity == 1) {
            for (int peer = 0, k = 0; peer < world_size; peer++) {
                if (peer == world_rank)
                    continue;
                for (int i = 0; i < PER_PEER; i++, k++) {
                    int tag = base_tag + i % 8;
                    size_t size = outstanding_size(world_rank, peer, i);
                    messages[k] =
                        new_message(size, stream_key(world_rank, peer, tag, i));
                    MPI_CHECK(MPI_Isend(messages[k], (int)size, MPI_BYTE, peer,
                                        tag, MPI_COMM_WORLD,
                                        &requests[nreq++]));
                }
            }
        }
        for (int peer = 0, k = 0; peer < world_size; peer++) {
            if (peer == world_rank)
                continue;
            for (int i = 0; i < PER_PEER; i++, k++) {
                if (i % 2 != parity)
                    continue;
                size_t size = outstanding_size(peer, world_rank, i);
                areas[k] = new_recv_area(size);
                MPI_CHECK(MPI_Irecv(areas[k], (int)size, MPI_BYTE, peer,
                                    base_tag + i % 8, MPI_COMM_WORLD,
                                    &requests[nreq]));
                recv_index[k] = nreq++;
            }
        }
    }
    waitall_checked(nreq, requests, statuses);
    for (int peer = 0, k = 0; peer < world_size; peer++) {
        if (peer == world_rank)
            continue;
        for (int i = 0; i < PER_PEER; i++, k++) {
            int tag = base_tag + i % 8;
            size_t size = outstanding_size(peer, world_rank, i);
            char what[320];
            snprintf(what, sizeof what, "message #%d of %d->%d tag %d (%zu B)",
                     i, peer, world_rank, tag, size);
            check_status(&statuses[recv_index[k]], peer, tag, MPI_BYTE,
                         (int)size, what);
            check_payload(areas[k], size, size,
                          stream_key(peer, world_rank, tag, i), what);
        }
    }
    for (int k = 0; k < total; k++) {
        free(areas[k]);
        free(messages[k]);
    }
    free(areas);
    free(messages);
    free(recv_index);
    free(statuses);
    free(requests);
}

/* ---- case: communicator isolation ------------------------------------- */

static void receive_checked(MPI_Comm comm, int src, int tag, size_t size,
                            uint32_t key, const char *what)
{
    unsigned char *area = new_recv_area(size);
    MPI_Status status;
    MPI_CHECK(MPI_Recv(area, (int)size, MPI_BYTE, src, tag, comm, &status));
    check_status(&status, src, tag, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, key, what);
    free(area);
}

static void send_pattern(MPI_Comm comm, int dst, int tag, size_t size,
                         uint32_t key)
{
    unsigned char *data = new_message(size, key);
    MPI_CHECK(MPI_Send(data, (int)size, MPI_BYTE, dst, tag, comm));
    free(data);
}

/* Both communicators carry the same tag between the same ranks; the keys
 * (seq 0 on MPI_COMM_WORLD, 1 on the duplicate) tell the messages apart. */
static void isolation_transfer(MPI_Comm dup, const struct transfer *t,
                               int token_tag)
{
    int src = t->src, dst = t->dst, tag = t->tag;
    uint32_t world_key = stream_key(src, dst, tag, 0);
    uint32_t dup_key = stream_key(src, dst, tag, 1);
    size_t size = t->size;
    int token = 1;
    MPI_Status status;
    if (world_rank == src) {
        /* 1: world first, while dst has a receive posted on the dup. */
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, dst, token_tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        send_pattern(MPI_COMM_WORLD, dst, tag, size, world_key);
        send_pattern(dup, dst, tag, size, dup_key);
        /* 2: world message, then the dup one only after dst has probed. */
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, dst, token_tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        send_pattern(MPI_COMM_WORLD, dst, tag + 1, size, world_key);
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, dst, token_tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        send_pattern(dup, dst, tag + 1, size, dup_key);
        /* 3: the dup first, while dst has a receive posted on world. */
        MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, dst, token_tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        send_pattern(dup, dst, tag + 2, size, dup_key);
        send_pattern(MPI_COMM_WORLD, dst, tag + 2, size, world_key);
        return;
    }
    if (world_rank != dst)
        return;
    char what[320];
    MPI_Request request;
    unsigned char *area = new_recv_area(size);

    snprintf(what, sizeof what,
             "receive posted on the dup, %s sent on "
             "world first",
             describe(src, dst, tag, size));
    MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, src, tag, dup, &request));
    MPI_CHECK(MPI_Send(&token, 1, MPI_INT, src, token_tag, MPI_COMM_WORLD));
    receive_checked(MPI_COMM_WORLD, src, tag, size, world_key, what);
    MPI_CHECK(MPI_Wait(&request, &status));
    check_status(&status, src, tag, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, dup_key, what);

    snprintf(what, sizeof what,
             "ANY_SOURCE/ANY_TAG on the dup while %s "
             "waits on world",
             describe(src, dst, tag + 1, size));
    memset(area, FILL_BYTE, size + GUARD_BYTES);
    MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                        dup, &request));
    MPI_CHECK(MPI_Send(&token, 1, MPI_INT, src, token_tag, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Probe(src, tag + 1, MPI_COMM_WORLD, &status));
    int flag = 1;
    MPI_CHECK(MPI_Test(&request, &flag, &status));
    if (flag)
        fail("%s: the dup's receive completed with the world message "
             "(source %d tag %d)",
             what, status.MPI_SOURCE, status.MPI_TAG);
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, &status));
    if (flag)
        fail("%s: MPI_Iprobe on the dup saw a message (source %d tag %d)", what,
             status.MPI_SOURCE, status.MPI_TAG);
    receive_checked(MPI_COMM_WORLD, src, tag + 1, size, world_key, what);
    MPI_CHECK(MPI_Send(&token, 1, MPI_INT, src, token_tag, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Wait(&request, &status));
    check_status(&status, src, tag + 1, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, dup_key, what);

    snprintf(what, sizeof what,
             "receive posted on world, %s sent on the "
             "dup first",
             describe(src, dst, tag + 2, size));
    memset(area, FILL_BYTE, size + GUARD_BYTES);
    MPI_CHECK(MPI_Irecv(area, (int)size, MPI_BYTE, src, tag + 2, MPI_COMM_WORLD,
                        &request));
    MPI_CHECK(MPI_Send(&token, 1, MPI_INT, src, token_tag, MPI_COMM_WORLD));
    receive_checked(dup, src, tag + 2, size, dup_key, what);
    MPI_CHECK(MPI_Wait(&request, &status));
    check_status(&status, src, tag + 2, MPI_BYTE, (int)size, what);
    check_payload(area, size, size, world_key, what);
    free(area);
}

static void case_comm_isolation(int base_tag)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int result = MPI_UNEQUAL, dup_rank = -1, dup_size = -1;
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &result));
    MPI_CHECK(MPI_Comm_rank(dup, &dup_rank));
    MPI_CHECK(MPI_Comm_size(dup, &dup_size));
    if (result != MPI_CONGRUENT || dup_rank != world_rank ||
        dup_size != world_size)
        fail("MPI_Comm_dup: compare %d (MPI_CONGRUENT is %d), rank %d size "
             "%d",
             result, MPI_CONGRUENT, dup_rank, dup_size);
    static const size_t sizes[2] = {1024, 65536 + 3};
    struct transfer *flows = new_flows();
    for (int s = 0; s < 2; s++) {
        int nf = ring_and_far_flows(flows, 0, sizes[s], 1, 1);
        for (int f = 0; f < nf; f++) {
            flows[f].tag = base_tag + 100 * s + 4 * f;
            isolation_transfer(dup, &flows[f], base_tag + 999);
        }
    }
    free(flows);
    MPI_CHECK(MPI_Comm_free(&dup));
    if (dup != MPI_COMM_NULL)
        fail("MPI_Comm_free did not set the handle to MPI_COMM_NULL");
}

/* ---- cases: large-count forms ----------------------------------------- */

enum count_c_send {
    C_SEND,
    C_SSEND,
    C_RSEND,
    C_BSEND,
    C_ISEND,
    C_ISSEND,
    C_IRSEND,
    C_IBSEND,
    C_SEND_FORMS
};
enum count_c_recv { C_RECV, C_IRECV, C_MRECV, C_IMRECV, C_RECV_FORMS };

/* The MPI_Count results of a status: MPI_Get_count_c and
 * MPI_Get_elements_c of MPI_BYTE. */
static void check_counts_c(const MPI_Status *status, MPI_Count bytes,
                           const char *what)
{
    MPI_Count count = -2, elements = -2;
    MPI_CHECK(MPI_Get_count_c(status, MPI_BYTE, &count));
    MPI_CHECK(MPI_Get_elements_c(status, MPI_BYTE, &elements));
    if (count != bytes || elements != bytes)
        fail("%s: MPI_Get_count_c %lld, MPI_Get_elements_c %lld, expected "
             "%lld",
             what, (long long)count, (long long)elements, (long long)bytes);
}

/* One transfer by the _c form of a send mode and of a receive: the
 * receive is posted before the token that ready modes wait for. */
static void count_c_transfer(const struct transfer *t, enum count_c_send send,
                             enum count_c_recv recv, int token_tag)
{
    const char *what = describe(t->src, t->dst, t->tag, t->size);
    uint32_t key = stream_key(t->src, t->dst, t->tag, (int)send);
    MPI_Count count = (MPI_Count)t->size;
    int ready = send == C_RSEND || send == C_IRSEND, token = 1;
    MPI_Request request;
    if (world_rank == t->src) {
        unsigned char *data = new_message(t->size, key);
        const void *buf = data;
        int dst = t->dst, tag = t->tag;
        MPI_Comm w = MPI_COMM_WORLD;
        if (ready)
            MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, dst, token_tag, w,
                               MPI_STATUS_IGNORE));
        switch (send) {
        case C_SEND:
            MPI_CHECK(MPI_Send_c(buf, count, MPI_BYTE, dst, tag, w));
            break;
        case C_SSEND:
            MPI_CHECK(MPI_Ssend_c(buf, count, MPI_BYTE, dst, tag, w));
            break;
        case C_RSEND:
            MPI_CHECK(MPI_Rsend_c(buf, count, MPI_BYTE, dst, tag, w));
            break;
        case C_BSEND:
            MPI_CHECK(MPI_Bsend_c(buf, count, MPI_BYTE, dst, tag, w));
            break;
        case C_ISEND:
            MPI_CHECK(MPI_Isend_c(buf, count, MPI_BYTE, dst, tag, w, &request));
            break;
        case C_ISSEND:
            MPI_CHECK(
                MPI_Issend_c(buf, count, MPI_BYTE, dst, tag, w, &request));
            break;
        case C_IRSEND:
            MPI_CHECK(
                MPI_Irsend_c(buf, count, MPI_BYTE, dst, tag, w, &request));
            break;
        case C_IBSEND:
            MPI_CHECK(
                MPI_Ibsend_c(buf, count, MPI_BYTE, dst, tag, w, &request));
            break;
        case C_SEND_FORMS: break;
        }
        if (send >= C_ISEND)
            MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        free(data);
    } else if (world_rank == t->dst) {
        unsigned char *area = new_recv_area(t->size);
        MPI_Status status;
        MPI_Message message;
        int found = 0;
        if (ready)
            recv = C_IRECV;
        switch (recv) {
        case C_RECV:
            MPI_CHECK(MPI_Recv_c(area, count, MPI_BYTE, t->src, t->tag,
                                 MPI_COMM_WORLD, &status));
            break;
        case C_IRECV:
            MPI_CHECK(MPI_Irecv_c(area, count, MPI_BYTE, t->src, t->tag,
                                  MPI_COMM_WORLD, &request));
            if (ready)
                MPI_CHECK(MPI_Send(&token, 1, MPI_INT, t->src, token_tag,
                                   MPI_COMM_WORLD));
            MPI_CHECK(MPI_Wait(&request, &status));
            break;
        case C_MRECV:
            MPI_CHECK(
                MPI_Mprobe(t->src, t->tag, MPI_COMM_WORLD, &message, &status));
            check_counts_c(&status, count, what);
            MPI_CHECK(MPI_Mrecv_c(area, count, MPI_BYTE, &message, &status));
            break;
        case C_IMRECV:
            while (!found) {
                MPI_CHECK(MPI_Improbe(t->src, t->tag, MPI_COMM_WORLD, &found,
                                      &message, &status));
                if (!found)
                    nap(100);
            }
            MPI_CHECK(MPI_Imrecv_c(area, count, MPI_BYTE, &message, &request));
            MPI_CHECK(MPI_Wait(&request, &status));
            break;
        case C_RECV_FORMS: break;
        }
        check_status(&status, t->src, t->tag, MPI_BYTE, (int)t->size, what);
        check_counts_c(&status, count, what);
        check_payload(area, t->size, t->size, key, what);
        free(area);
    }
}

/* Sendrecv_c around the ring, then Sendrecv_replace_c of every third int
 * (a derived type: the data is packed before the receive overwrites it). */
static void count_c_ring(int base_tag)
{
    const size_t size = 65536 + 3;
    int right = right_of(world_rank), left = left_of(world_rank);
    uint32_t key = stream_key(world_rank, right, base_tag, 0);
    unsigned char *data = new_message(size, key);
    unsigned char *area = new_recv_area(size);
    MPI_Status status;
    MPI_CHECK(MPI_Sendrecv_c(data, (MPI_Count)size, MPI_BYTE, right, base_tag,
                             area, (MPI_Count)size, MPI_BYTE, left, base_tag,
                             MPI_COMM_WORLD, &status));
    const char *what = describe(left, world_rank, base_tag, size);
    check_status(&status, left, base_tag, MPI_BYTE, (int)size, what);
    check_counts_c(&status, (MPI_Count)size, what);
    check_payload(area, size, size, stream_key(left, world_rank, base_tag, 0),
                  what);
    free(data);
    free(area);

    enum { ELEMENTS = 4099 };
    MPI_Datatype third;
    MPI_CHECK(MPI_Type_vector(ELEMENTS, 1, 3, MPI_INT, &third));
    MPI_CHECK(MPI_Type_commit(&third));
    int *ints = xmalloc(sizeof(int) * 3 * ELEMENTS);
    uint32_t mine = stream_key(world_rank, right, base_tag + 1, 0);
    uint32_t theirs = stream_key(left, world_rank, base_tag + 1, 0);
    for (size_t i = 0; i < 3 * ELEMENTS; i++)
        ints[i] = i % 3 == 0 ? pattern_int(mine, i) : SENTINEL_INT;
    MPI_CHECK(MPI_Sendrecv_replace_c(ints, 1, third, right, base_tag + 1, left,
                                     base_tag + 1, MPI_COMM_WORLD, &status));
    what = describe(left, world_rank, base_tag + 1, sizeof(int) * ELEMENTS);
    check_counts_c(&status, (MPI_Count)(sizeof(int) * ELEMENTS), what);
    for (size_t i = 0; i < 3 * ELEMENTS; i++) {
        int expected = i % 3 == 0 ? pattern_int(theirs, i) : SENTINEL_INT;
        if (ints[i] != expected)
            fail("%s: int %zu expected %d got %d", what, i, expected, ints[i]);
    }
    free(ints);
    MPI_CHECK(MPI_Type_free(&third));
}

/* Every _c send and receive (MPI 4.1, 5.2.2) around the ring and between
 * the far pair, one transfer at a time, each send mode with each receive;
 * statuses read back with the _c count functions. */
static void case_count_c(int base_tag)
{
    struct transfer *flows = new_flows();
    int nf = ring_and_far_flows(flows, base_tag, 65536 + 3, 1, 1);
    size_t room = MPI_BSEND_OVERHEAD;
    for (int f = 0; f < nf; f++)
        if (flows[f].src == world_rank)
            room += 2 * (flows[f].size + MPI_BSEND_OVERHEAD);
    void *buffer = xmalloc(room);
    MPI_CHECK(MPI_Buffer_attach(buffer, (int)room));
    for (int send = 0; send < C_SEND_FORMS; send++)
        for (int f = 0; f < nf; f++) {
            struct transfer t = flows[f];
            t.tag = base_tag + 10 * f + send;
            count_c_transfer(&t, (enum count_c_send)send,
                             (enum count_c_recv)((send + f) % C_RECV_FORMS),
                             base_tag + 999);
        }
    void *detached;
    int detached_size;
    MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
    free(buffer);
    free(flows);
    count_c_ring(base_tag + 900);
}

/* ---- driver ----------------------------------------------------------- */

static const struct check_case cases[] = {
    {"send_recv", case_send_recv},
    {"ssend", case_ssend},
    {"rsend", case_rsend},
    {"bsend", case_bsend},
    {"nonblocking", case_nonblocking},
    {"wildcards", case_wildcards},
    {"get_count", case_get_count},
    {"proc_null", case_proc_null},
    {"non_overtaking", case_non_overtaking},
    {"non_overtaking_any_source", case_non_overtaking_any_source},
    {"any_source_preposted", case_any_source_preposted},
    {"behind_wildcard", case_behind_wildcard},
    {"tag_out_of_order", case_tag_out_of_order},
    {"sendrecv", case_sendrecv},
    {"probe", case_probe},
    {"wait_test", case_wait_test},
    {"cancel", case_cancel},
    {"datatypes", case_datatypes},
    {"truncate", case_truncate},
    {"many_outstanding", case_many_outstanding},
    {"large", case_large},
    {"comm_isolation", case_comm_isolation},
    {"count_c", case_count_c},
};
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

/* The program's globals once MPI is up, and the least MPI_TAG_UB the
 * standard allows. */
static void setup(void)
{
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    last_rank = world_size - 1;
    int *tag_ub = NULL, has_tag_ub = 0;
    MPI_CHECK(
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_tag_ub));
    if (!has_tag_ub || *tag_ub < 32767)
        fail("MPI_TAG_UB is %d, the standard requires at least 32767",
             has_tag_ub ? *tag_ub : -1);
}

int main(int argc, char **argv)
{
    return check_main("p2p", argc, argv, setup, cases, CASE_COUNT);
}
