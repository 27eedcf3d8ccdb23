/*
 * p2p_persistent_check: a self-checking test of persistent and
 * partitioned point-to-point requests, MPI_Isendrecv(_replace), the
 * request lifecycle (MPI_Request_free while active, Request_get_status,
 * MPI_Cancel, MPI_Test_cancelled) and buffered sends against the attached
 * buffer.  It only uses MPI, so it runs under plain MPICH as well as
 * through gridrun, where rank 0 and the last rank sit on different sites.
 *
 *   mpiexec -n 4 p2p_persistent_check [CASE...]
 *   gridrun --site-sizes 2,1,2 -- p2p_persistent_check [CASE...]
 *
 * Every rank sends to its right neighbour and receives from its left one
 * (crossing sites wherever the ring does), and rank 0 and the last rank
 * exchange too.  Payloads depend on source, destination, tag and round;
 * every byte is checked, as are statuses and the bytes past each buffer.
 * After each case rank 0 prints "OK <case>"; a mismatch prints
 * "FAIL <case>: rank R: ..." and calls MPI_Abort.
 *
 * The checks are MPI 4.1's.  Plain MPICH 4.0.2 fails some of them with
 * its own bugs: a persistent receive from MPI_PROC_NULL reports an empty
 * status (proc_null), MPI_Isendrecv(_c) leaves its status unset
 * (large_count) and crashes on MPI_PROC_NULL (isendrecv); it may not
 * withdraw unmatched sends (cancel, MPICH tickets 2266, 2270); through
 * gridrun on several sites these requests are the layer's.
 *
 * Cases:
 *   persistent   Send/Ssend/Rsend/Bsend_init + Recv_init restarted 5 times
 *                with new data, by MPI_Start and by MPI_Startall over an
 *                array mixing them with MPI_Barrier_init and ordinary
 *                requests; completed by Waitall, Test loops, Waitany,
 *                Waitsome; an inactive request's empty status
 *   wildcard     Recv_init with MPI_ANY_SOURCE / MPI_ANY_TAG: the status
 *                names the sender and its tag
 *   proc_null    persistent send and receive with MPI_PROC_NULL
 *   large_count  the _c forms: Send_init_c, Recv_init_c, Isendrecv_c
 *   free_active  MPI_Request_free of active Irecv, Isend and Recv_init
 *                requests: the operations complete later, the data lands
 *   get_status   MPI_Request_get_status alone completes a cross-site
 *                receive (nonblocking and persistent), status not consumed
 *   cancel       cancel of an unmatched persistent receive (then restarted
 *                and used), of unmatched sends to another site (never
 *                delivered) and of a received one (not cancelled)
 *   isendrecv    Isendrecv and Isendrecv_replace (vector type) around the
 *                ring, mixed with MPI_PROC_NULL
 *   bsend_buffer MPI_ERR_BUFFER without room, an exactly sized buffer,
 *                Ibsend, Bsend_init, detach waiting for delivery
 *   partitioned  Psend_init/Precv_init with Pready, Pready_range,
 *                Pready_list and Parrived, restarted 3 times
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

#define GUARD 16
#define FILL  0xA5

static int world_rank, world_size, last_rank;

static int right_of(int rank)
{
    return (rank + 1) % world_size;
}

static int left_of(int rank)
{
    return (rank + world_size - 1) % world_size;
}

/* ---- payloads ------------------------------------------------------------
 */

static unsigned char pattern(int src, int dst, int tag, int round, size_t i)
{
    uint32_t x = (uint32_t)src * 2654435761u ^ (uint32_t)dst * 40503u ^
                 (uint32_t)tag * 97u ^ (uint32_t)round * 7919u ^
                 (uint32_t)i * 2246822519u;
    x ^= x >> 15;
    return (unsigned char)(x * 0x2c1b3c6du >> 24);
}

static void fill(unsigned char *buf, size_t size, int src, int dst, int tag,
                 int round)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = pattern(src, dst, tag, round, i);
}

/* A receive area of `size` bytes followed by GUARD untouched bytes. */
static unsigned char *area(size_t size)
{
    unsigned char *buf = xmalloc(size + GUARD);
    memset(buf, FILL, size + GUARD);
    return buf;
}

static void expect(const unsigned char *buf, size_t size, int src, int dst,
                   int tag, int round, const char *what)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != pattern(src, dst, tag, round, i))
            fail("%s: byte %zu of %zu from %d (tag %d, round %d): expected "
                 "0x%02x, got 0x%02x",
                 what, i, size, src, tag, round,
                 pattern(src, dst, tag, round, i), buf[i]);
    for (size_t i = size; i < size + GUARD; i++)
        if (buf[i] != FILL)
            fail("%s: byte %zu past the %zu received was written", what,
                 i - size, size);
}

static void check_status(const MPI_Status *st, int source, int tag,
                         MPI_Count bytes, const char *what)
{
    MPI_Count count;
    int cancelled;
    MPI_Get_count_c(st, MPI_BYTE, &count);
    MPI_Test_cancelled(st, &cancelled);
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != bytes ||
        cancelled)
        fail("%s: status source %d tag %d count %lld cancelled %d, expected "
             "%d/%d/%lld/0",
             what, st->MPI_SOURCE, st->MPI_TAG, (long long)count, cancelled,
             source, tag, (long long)bytes);
}

/* MPI 4.1, 3.7.3: the empty status of a null or inactive request. */
static void check_empty(const MPI_Status *st, const char *what)
{
    MPI_Count count;
    MPI_Get_count_c(st, MPI_BYTE, &count);
    if (st->MPI_SOURCE != MPI_ANY_SOURCE || st->MPI_TAG != MPI_ANY_TAG ||
        count != 0)
        fail("%s: expected an empty status, got source %d tag %d count %lld",
             what, st->MPI_SOURCE, st->MPI_TAG, (long long)count);
}

/* ---- persistent ------------------------------------------------------------
 */

static const size_t sizes[] = {0, 7, 4096, 70000};
#define SIZES   ((int)(sizeof sizes / sizeof sizes[0]))
#define ROUNDS  5
#define MODES   4
#define FLIGHTS (SIZES * MODES)

typedef int (*init_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm,
                       MPI_Request *);
static const init_fn send_inits[MODES] = {MPI_Send_init, MPI_Ssend_init,
                                          MPI_Rsend_init, MPI_Bsend_init};

/*
 * One size and send mode per flight: FLIGHTS sends to the right
 * neighbour, FLIGHTS receives from the left, a persistent barrier and an
 * ordinary send/receive pair, all in one MPI_Startall array; restarted
 * ROUNDS times with new data, completed a different way each round.
 */
static void case_persistent(int base_tag)
{
    int right = right_of(world_rank), left = left_of(world_rank);
    int n = 2 * FLIGHTS + 1;
    MPI_Request req[2 * FLIGHTS + 3];
    unsigned char *sbuf[FLIGHTS], *rbuf[FLIGHTS];
    size_t room = MPI_BSEND_OVERHEAD;
    for (int f = 0; f < FLIGHTS; f++) {
        size_t size = sizes[f % SIZES];
        int mode = f / SIZES;
        sbuf[f] = xmalloc(size);
        rbuf[f] = area(size);
        if (mode == 3)
            room += size + MPI_BSEND_OVERHEAD;
        MPI_CHECK(MPI_Recv_init(rbuf[f], (int)size, MPI_BYTE, left,
                                base_tag + f, MPI_COMM_WORLD, &req[f]));
        MPI_CHECK(send_inits[mode](sbuf[f], (int)size, MPI_BYTE, right,
                                   base_tag + f, MPI_COMM_WORLD,
                                   &req[FLIGHTS + f]));
    }
    void *bsend_buffer = xmalloc(room);
    MPI_CHECK(MPI_Buffer_attach(bsend_buffer, (int)room));
    MPI_CHECK(
        MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req[2 * FLIGHTS]));
    MPI_Status st[2 * FLIGHTS + 3];
    /* Before any start: inactive requests complete at once, empty. */
    int flag = 0;
    MPI_CHECK(MPI_Test(&req[0], &flag, &st[0]));
    if (!flag)
        fail("MPI_Test of an inactive persistent request: flag 0");
    check_empty(&st[0], "inactive Recv_init");
    unsigned char extra_out[64], extra_in[64 + GUARD];
    for (int round = 0; round < ROUNDS; round++) {
        for (int f = 0; f < FLIGHTS; f++) {
            fill(sbuf[f], sizes[f % SIZES], world_rank, right, base_tag + f,
                 round);
            memset(rbuf[f], FILL, sizes[f % SIZES] + GUARD);
        }
        fill(extra_out, sizeof extra_out, world_rank, right, base_tag + 900,
             round);
        memset(extra_in, FILL, sizeof extra_in);
        /* Receives first (everyone), for MPI_Rsend_init's sake. */
        MPI_CHECK(MPI_Startall(FLIGHTS, req));
        MPI_CHECK(MPI_Irecv(extra_in, sizeof extra_out, MPI_BYTE, left,
                            base_tag + 900, MPI_COMM_WORLD, &req[n]));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (round % 2 == 0) {
            MPI_CHECK(MPI_Startall(FLIGHTS + 1, req + FLIGHTS));
        } else {
            for (int f = FLIGHTS; f < n; f++)
                MPI_CHECK(MPI_Start(&req[f]));
        }
        MPI_CHECK(MPI_Isend(extra_out, sizeof extra_out, MPI_BYTE, right,
                            base_tag + 900, MPI_COMM_WORLD, &req[n + 1]));
        int total = n + 2, done = 0;
        switch (round % 4) {
        case 0: MPI_CHECK(MPI_Waitall(total, req, st)); break;
        case 1: {
            /* MPI_Test one by one (not MPI_Testall: MPICH 4.0.2's
             * deactivates persistent requests in calls that return
             * flag 0, which MPI 4.1, 3.7.5 forbids). */
            int finished[2 * FLIGHTS + 3] = {0};
            while (done < total) {
                for (int k = 0; k < total; k++) {
                    int finished_now = 0;
                    if (finished[k])
                        continue;
                    MPI_CHECK(MPI_Test(&req[k], &finished_now, &st[k]));
                    finished[k] = finished_now;
                    done += finished_now;
                }
                if (done < total)
                    nap(100);
            }
            break;
        }
        case 2:
        default: {
            /* A completed persistent request is inactive, which Waitany
             * and Waitsome should skip (MPI 4.1, 3.7.5); MPICH 4.0.2
             * reports some again, so completed slots are nulled in a
             * copy of the array. */
            MPI_Request work[2 * FLIGHTS + 3];
            memcpy(work, req, sizeof work);
            while (done < total) {
                int outcount = 1, indices[2 * FLIGHTS + 3];
                MPI_Status some[2 * FLIGHTS + 3];
                if (round % 4 == 2)
                    MPI_CHECK(MPI_Waitany(total, work, &indices[0], &some[0]));
                else
                    MPI_CHECK(
                        MPI_Waitsome(total, work, &outcount, indices, some));
                if (outcount == MPI_UNDEFINED || indices[0] == MPI_UNDEFINED)
                    fail("MPI_Waitany/some: MPI_UNDEFINED with %d left",
                         total - done);
                for (int i = 0; i < outcount; i++) {
                    st[indices[i]] = some[i];
                    work[indices[i]] = MPI_REQUEST_NULL;
                    if (indices[i] >= n)
                        req[indices[i]] = MPI_REQUEST_NULL;
                }
                done += outcount;
            }
            break;
        }
        }
        for (int f = 0; f < FLIGHTS; f++) {
            size_t size = sizes[f % SIZES];
            char what[96];
            snprintf(what, sizeof what, "round %d, %s of %zu bytes", round,
                     f / SIZES == 0   ? "Send_init"
                     : f / SIZES == 1 ? "Ssend_init"
                     : f / SIZES == 2 ? "Rsend_init"
                                      : "Bsend_init",
                     size);
            expect(rbuf[f], size, left, world_rank, base_tag + f, round, what);
            check_status(&st[f], left, base_tag + f, (MPI_Count)size, what);
        }
        expect(extra_in, sizeof extra_out, left, world_rank, base_tag + 900,
               round, "ordinary Irecv among persistent requests");
        check_status(&st[n], left, base_tag + 900, sizeof extra_out,
                     "ordinary Irecv among persistent requests");
        if (req[n] != MPI_REQUEST_NULL || req[n + 1] != MPI_REQUEST_NULL)
            fail("ordinary requests not freed by their completion");
        for (int f = 0; f < n; f++)
            if (req[f] == MPI_REQUEST_NULL)
                fail("persistent request %d freed by its completion", f);
    }
    /* Completed and inactive now: an empty status again. */
    MPI_CHECK(MPI_Wait(&req[FLIGHTS - 1], &st[0]));
    check_empty(&st[0], "completed Recv_init waited again");
    for (int f = 0; f < n; f++)
        MPI_CHECK(MPI_Request_free(&req[f]));
    void *detached;
    int detached_size;
    MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
    free(bsend_buffer);
    for (int f = 0; f < FLIGHTS; f++) {
        free(sbuf[f]);
        free(rbuf[f]);
    }
}

/*
 * Rank 0 receives three messages from every other rank with one
 * persistent ANY_SOURCE/ANY_TAG receive (per-source order kept), then
 * three more from the last rank (another site) with a named source and
 * MPI_ANY_TAG.
 */
static void case_wildcard(int base_tag)
{
    const size_t size = 300;
    if (world_rank != 0) {
        unsigned char *out = xmalloc(size);
        for (int round = 0; round < 6; round++) {
            if (round == 3 && world_rank != last_rank)
                break;
            if (round == 3)
                MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            int tag = base_tag + world_rank % 100 * 10 + round;
            fill(out, size, world_rank, 0, tag, round);
            MPI_CHECK(
                MPI_Send(out, (int)size, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
        }
        if (world_rank != last_rank)
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        free(out);
        return;
    }
    unsigned char *in = area(size);
    MPI_Request any, any_tag;
    MPI_Status st;
    MPI_CHECK(MPI_Recv_init(in, (int)size, MPI_BYTE, MPI_ANY_SOURCE,
                            MPI_ANY_TAG, MPI_COMM_WORLD, &any));
    MPI_CHECK(MPI_Recv_init(in, (int)size, MPI_BYTE, last_rank, MPI_ANY_TAG,
                            MPI_COMM_WORLD, &any_tag));
    int *next_round = calloc((size_t)world_size, sizeof *next_round);
    for (int got = 0; got < 3 * (world_size - 1); got++) {
        memset(in, FILL, size + GUARD);
        MPI_CHECK(MPI_Start(&any));
        MPI_CHECK(MPI_Wait(&any, &st));
        int src = st.MPI_SOURCE;
        if (src < 1 || src > last_rank)
            fail("ANY_SOURCE: status source %d", src);
        int round = next_round[src]++;
        int tag = base_tag + src % 100 * 10 + round;
        check_status(&st, src, tag, size, "ANY_SOURCE/ANY_TAG Recv_init");
        expect(in, size, src, 0, tag, round, "ANY_SOURCE/ANY_TAG Recv_init");
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 3; round < 6; round++) {
        memset(in, FILL, size + GUARD);
        MPI_CHECK(MPI_Start(&any_tag));
        MPI_CHECK(MPI_Wait(&any_tag, &st));
        int tag = base_tag + last_rank % 100 * 10 + round;
        check_status(&st, last_rank, tag, size, "named source, ANY_TAG");
        expect(in, size, last_rank, 0, tag, round, "named source, ANY_TAG");
    }
    free(next_round);
    MPI_CHECK(MPI_Request_free(&any));
    MPI_CHECK(MPI_Request_free(&any_tag));
    free(in);
}

static void case_proc_null(int base_tag)
{
    MPI_Request req[2];
    int data = 7;
    MPI_CHECK(MPI_Send_init(&data, 1, MPI_INT, MPI_PROC_NULL, base_tag,
                            MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Recv_init(&data, 1, MPI_INT, MPI_PROC_NULL, base_tag,
                            MPI_COMM_WORLD, &req[1]));
    for (int round = 0; round < 3; round++) {
        MPI_Status st[2];
        MPI_CHECK(MPI_Startall(2, req));
        MPI_CHECK(MPI_Waitall(2, req, st));
        check_status(&st[1], MPI_PROC_NULL, MPI_ANY_TAG, 0,
                     "Recv_init from MPI_PROC_NULL");
        if (data != 7)
            fail("a receive from MPI_PROC_NULL wrote its buffer");
    }
    MPI_CHECK(MPI_Request_free(&req[0]));
    MPI_CHECK(MPI_Request_free(&req[1]));
}

static void case_large_count(int base_tag)
{
    int right = right_of(world_rank), left = left_of(world_rank);
    const MPI_Count size = 5000;
    unsigned char *out = xmalloc((size_t)size), *in = area((size_t)size);
    MPI_Request req[2];
    MPI_Status st[2];
    MPI_CHECK(MPI_Recv_init_c(in, size, MPI_BYTE, left, base_tag,
                              MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Send_init_c(out, size, MPI_BYTE, right, base_tag,
                              MPI_COMM_WORLD, &req[1]));
    for (int round = 0; round < 2; round++) {
        fill(out, (size_t)size, world_rank, right, base_tag, round);
        memset(in, FILL, (size_t)size + GUARD);
        MPI_CHECK(MPI_Startall(2, req));
        MPI_CHECK(MPI_Waitall(2, req, st));
        expect(in, (size_t)size, left, world_rank, base_tag, round,
               "Send_init_c/Recv_init_c");
        check_status(&st[0], left, base_tag, size, "Recv_init_c");
    }
    MPI_CHECK(MPI_Request_free(&req[0]));
    MPI_CHECK(MPI_Request_free(&req[1]));
    fill(out, (size_t)size, world_rank, right, base_tag + 1, 0);
    memset(in, FILL, (size_t)size + GUARD);
    MPI_CHECK(MPI_Isendrecv_c(out, size, MPI_BYTE, right, base_tag + 1, in,
                              size, MPI_BYTE, left, base_tag + 1,
                              MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Wait(&req[0], &st[0]));
    expect(in, (size_t)size, left, world_rank, base_tag + 1, 0,
           "MPI_Isendrecv_c");
    check_status(&st[0], left, base_tag + 1, size, "MPI_Isendrecv_c");
    free(out);
    free(in);
}

/*
 * MPI_Request_free of active requests (MPI 4.1, 3.7.3): the operation
 * completes later.  The last rank frees its receives from rank 0 (another
 * site) before anything was sent; rank 0 then sends, and a message sent
 * after them on the same tag (non-overtaking: matched after) tells the
 * receiver they are in.  Rank 0 frees its sends as soon as they start.
 */
static void case_free_active(int base_tag)
{
    const size_t size = 100000;
    if (world_rank == last_rank) {
        unsigned char *in[3];
        MPI_Request req;
        for (int k = 0; k < 3; k++) {
            in[k] = area(size);
            if (k < 2) {
                MPI_CHECK(MPI_Irecv(in[k], (int)size, MPI_BYTE, 0, base_tag,
                                    MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Request_free(&req));
            } else {
                MPI_CHECK(MPI_Recv_init(in[k], (int)size, MPI_BYTE, 0, base_tag,
                                        MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Start(&req));
                MPI_CHECK(MPI_Request_free(&req));
            }
            if (req != MPI_REQUEST_NULL)
                fail("MPI_Request_free left the handle set");
        }
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, base_tag + 1, MPI_COMM_WORLD));
        unsigned char *last = area(size);
        MPI_CHECK(MPI_Recv(last, (int)size, MPI_BYTE, 0, base_tag,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(last, size, 0, last_rank, base_tag, 3, "after the freed ones");
        /* Matched before `last`, so delivered before it (one relay
         * path); a last poll lets the engine finish the copies. */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int k = 0; k < 3; k++) {
            expect(in[k], size, 0, last_rank, base_tag, k,
                   "receive freed while active");
            free(in[k]);
        }
        free(last);
    } else if (world_rank == 0) {
        unsigned char *out[4];
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, last_rank, base_tag + 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int k = 0; k < 4; k++) {
            out[k] = xmalloc(size);
            fill(out[k], size, 0, last_rank, base_tag, k);
            MPI_Request req;
            if (k < 3) {
                MPI_CHECK(MPI_Isend(out[k], (int)size, MPI_BYTE, last_rank,
                                    base_tag, MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Request_free(&req));
            } else {
                MPI_CHECK(MPI_Send_init(out[k], (int)size, MPI_BYTE, last_rank,
                                        base_tag, MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Start(&req));
                MPI_CHECK(MPI_Request_free(&req));
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int k = 0; k < 4; k++)
            free(out[k]);
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
}

/* MPI_Request_get_status alone must complete a receive from another
 * site, and leave the request to the completion call. */
static void case_get_status(int base_tag)
{
    const size_t size = 20000;
    if (world_rank == 0) {
        unsigned char *out = xmalloc(size);
        for (int round = 0; round < 2; round++) {
            fill(out, size, 0, last_rank, base_tag, round);
            MPI_CHECK(MPI_Send(out, (int)size, MPI_BYTE, last_rank, base_tag,
                               MPI_COMM_WORLD));
        }
        free(out);
    } else if (world_rank == last_rank) {
        unsigned char *in = area(size);
        for (int round = 0; round < 2; round++) {
            MPI_Request req;
            memset(in, FILL, size + GUARD);
            if (round == 0)
                MPI_CHECK(MPI_Irecv(in, (int)size, MPI_BYTE, 0, base_tag,
                                    MPI_COMM_WORLD, &req));
            else {
                MPI_CHECK(MPI_Recv_init(in, (int)size, MPI_BYTE, 0, base_tag,
                                        MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Start(&req));
            }
            int flag = 0;
            MPI_Status st;
            while (!flag) {
                MPI_CHECK(MPI_Request_get_status(req, &flag, &st));
                if (!flag)
                    nap(100);
            }
            if (req == MPI_REQUEST_NULL)
                fail("MPI_Request_get_status freed the request");
            check_status(&st, 0, base_tag, size, "MPI_Request_get_status");
            expect(in, size, 0, last_rank, base_tag, round,
                   "completed by MPI_Request_get_status");
            MPI_CHECK(MPI_Wait(&req, &st));
            check_status(&st, 0, base_tag, size, "MPI_Wait after get_status");
            if (round == 1)
                MPI_CHECK(MPI_Request_free(&req));
        }
        free(in);
    }
}

static void check_cancelled(const MPI_Status *st, int expected,
                            const char *what)
{
    int cancelled;
    MPI_CHECK(MPI_Test_cancelled(st, &cancelled));
    if (cancelled != expected)
        fail("%s: MPI_Test_cancelled %d, expected %d", what, cancelled,
             expected);
}

/*
 * The last rank cancels a persistent receive from rank 0 that nothing
 * matched, restarts it and receives with it; rank 0 cancels sends to the
 * last rank that nothing receives (withdrawn: never delivered) and a send
 * the last rank has received (it cannot be cancelled any more).
 */
static void case_cancel(int base_tag)
{
    const size_t size = 5000;
    if (world_rank == last_rank) {
        unsigned char *in = area(size);
        MPI_Request req;
        MPI_Status st;
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* rank 0's sends withdrawn */
        MPI_CHECK(MPI_Recv_init(in, (int)size, MPI_BYTE, 0, base_tag,
                                MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Cancel(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        check_cancelled(&st, 1, "unmatched Recv_init");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* rank 0 may send now */
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        check_cancelled(&st, 0, "restarted Recv_init");
        check_status(&st, 0, base_tag, size, "restarted Recv_init");
        expect(in, size, 0, last_rank, base_tag, 0,
               "receive after a cancelled run");
        MPI_CHECK(MPI_Request_free(&req));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        free(in);
        /* The sends rank 0 could not cancel any more arrive, in order;
         * no other. */
        int kept;
        MPI_CHECK(MPI_Recv(&kept, 1, MPI_INT, 0, base_tag + 2, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int k = 0; k < 3; k++) {
            if (!(kept & 1 << k))
                continue;
            in = area(size);
            MPI_CHECK(MPI_Recv(in, (int)size, MPI_BYTE, 0, base_tag + 1,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            expect(in, size, 0, last_rank, base_tag, 0, "send not cancelled");
            free(in);
        }
        int flag;
        MPI_CHECK(MPI_Iprobe(0, base_tag + 1, MPI_COMM_WORLD, &flag,
                             MPI_STATUS_IGNORE));
        if (flag)
            fail("a cancelled send was delivered");
    } else if (world_rank == 0) {
        unsigned char *out = xmalloc(size);
        MPI_Request req;
        MPI_Status st;
        fill(out, size, 0, last_rank, base_tag, 0);
        /* Nobody receives tag base_tag + 1 yet: a synchronous send is
         * withdrawn; a standard one (also persistent) too unless it
         * completed before MPI_Cancel (a progress thread may have
         * finished it), and then it is delivered. */
        int kept = 0;
        for (int k = 0; k < 3; k++) {
            if (k == 0)
                MPI_CHECK(MPI_Isend(out, (int)size, MPI_BYTE, last_rank,
                                    base_tag + 1, MPI_COMM_WORLD, &req));
            else if (k == 1)
                MPI_CHECK(MPI_Issend(out, (int)size, MPI_BYTE, last_rank,
                                     base_tag + 1, MPI_COMM_WORLD, &req));
            else {
                MPI_CHECK(MPI_Send_init(out, (int)size, MPI_BYTE, last_rank,
                                        base_tag + 1, MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Start(&req));
            }
            MPI_CHECK(MPI_Cancel(&req));
            MPI_CHECK(MPI_Wait(&req, &st));
            int cancelled;
            MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
            if (k == 1)
                check_cancelled(&st, 1, "unmatched Issend");
            kept |= !cancelled << k;
            if (k == 2)
                MPI_CHECK(MPI_Request_free(&req));
        }
        MPI_CHECK(MPI_Send(&kept, 1, MPI_INT, last_rank, base_tag + 2,
                           MPI_COMM_WORLD));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* withdrawn */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* the receive was cancelled */
        MPI_CHECK(MPI_Isend(out, (int)size, MPI_BYTE, last_rank, base_tag,
                            MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* received by now */
        MPI_CHECK(MPI_Cancel(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        check_cancelled(&st, 0, "send already received");
        free(out);
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
}

/* A vector of every other int: the replace case's layout. */
static void case_isendrecv(int base_tag)
{
    int right = right_of(world_rank), left = left_of(world_rank);
    const size_t size = 9000;
    unsigned char *out = xmalloc(size), *in = area(size);
    MPI_Request req[2];
    MPI_Status st[2];
    fill(out, size, world_rank, right, base_tag, 0);
    MPI_CHECK(MPI_Isendrecv(out, (int)size, MPI_BYTE, right, base_tag, in,
                            (int)size, MPI_BYTE, left, base_tag, MPI_COMM_WORLD,
                            &req[0]));
    /* Source MPI_PROC_NULL: the status says so, the buffer is untouched. */
    unsigned char untouched[GUARD];
    memset(untouched, FILL, sizeof untouched);
    MPI_CHECK(MPI_Isendrecv(out, 0, MPI_BYTE, MPI_PROC_NULL, base_tag + 1,
                            untouched, 0, MPI_BYTE, MPI_PROC_NULL, base_tag + 1,
                            MPI_COMM_WORLD, &req[1]));
    MPI_CHECK(MPI_Waitall(2, req, st));
    expect(in, size, left, world_rank, base_tag, 0, "MPI_Isendrecv");
    check_status(&st[0], left, base_tag, size, "MPI_Isendrecv");
    check_status(&st[1], MPI_PROC_NULL, MPI_ANY_TAG, 0,
                 "MPI_Isendrecv from MPI_PROC_NULL");

    enum { INTS = 4001 };
    MPI_Datatype every_other;
    MPI_CHECK(MPI_Type_vector(INTS / 2 + 1, 1, 2, MPI_INT, &every_other));
    MPI_CHECK(MPI_Type_commit(&every_other));
    int *ints = xmalloc(INTS * sizeof *ints);
    for (int i = 0; i < INTS; i++)
        ints[i] = i % 2 ? -i : world_rank * 100000 + i;
    MPI_CHECK(MPI_Isendrecv_replace(ints, 1, every_other, right, base_tag + 2,
                                    left, base_tag + 2, MPI_COMM_WORLD,
                                    &req[0]));
    /* MPI 4.1 lets the type go while the request is active. */
    MPI_CHECK(MPI_Type_free(&every_other));
    MPI_CHECK(MPI_Wait(&req[0], &st[0]));
    for (int i = 0; i < INTS; i++) {
        int want = i % 2 ? -i : left * 100000 + i;
        if (ints[i] != want)
            fail("MPI_Isendrecv_replace: int %d is %d, expected %d", i, ints[i],
                 want);
    }
    check_status(&st[0], left, base_tag + 2,
                 (MPI_Count)(INTS / 2 + 1) * (MPI_Count)sizeof(int),
                 "MPI_Isendrecv_replace");
    free(ints);
    free(out);
    free(in);
}

static int bsend_quietly(const void *buf, int count, int dst, int tag)
{
    return MPI_Bsend(buf, count, MPI_BYTE, dst, tag, MPI_COMM_WORLD);
}

/*
 * Rank 0 sends to the last rank (another site) with room for exactly two
 * messages, before the receiver posts anything; a message larger than the
 * buffer fails with MPI_ERR_BUFFER, as does a Bsend with no buffer.
 */
static void case_bsend_buffer(int base_tag)
{
    const size_t size = 3000;
    if (world_rank == 0) {
        unsigned char *out = xmalloc(size);
        fill(out, size, 0, last_rank, base_tag, 0);
        /* Nothing attached: no room at all. */
        int rc = bsend_quietly(out, (int)size, last_rank, base_tag + 5);
        int cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_BUFFER)
            fail("Bsend without a buffer: error class %d, expected "
                 "MPI_ERR_BUFFER (%d)",
                 cls, MPI_ERR_BUFFER);
        int room = 2 * ((int)size + MPI_BSEND_OVERHEAD);
        char *buffer = xmalloc((size_t)room);
        MPI_CHECK(MPI_Buffer_attach(buffer, room));
        MPI_CHECK(bsend_quietly(out, (int)size, last_rank, base_tag));
        MPI_Request ibsend;
        MPI_CHECK(MPI_Ibsend(out, (int)size, MPI_BYTE, last_rank, base_tag + 1,
                             MPI_COMM_WORLD, &ibsend));
        MPI_CHECK(MPI_Wait(&ibsend, MPI_STATUS_IGNORE));
        /* More than the whole buffer holds (whether or not the two have
         * left: MPI does not say when their space comes back). */
        char *big = xmalloc((size_t)room + 1);
        rc = bsend_quietly(big, room + 1, last_rank, base_tag + 5);
        free(big);
        cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_BUFFER)
            fail("Bsend larger than the buffer: error class %d, expected "
                 "MPI_ERR_BUFFER",
                 cls);
        /* The sends may change the source buffer now (they are copied). */
        memset(out, 0, size);
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, last_rank, base_tag + 2,
                           MPI_COMM_WORLD));
        void *detached;
        int detached_size;
        MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
        if (detached != buffer || detached_size != room)
            fail("MPI_Buffer_detach: %p/%d, attached %p/%d", detached,
                 detached_size, (void *)buffer, room);
        /* Persistent buffered sends through a buffer attached again. */
        MPI_CHECK(MPI_Buffer_attach(buffer, room));
        MPI_Request req;
        MPI_CHECK(MPI_Bsend_init(out, (int)size, MPI_BYTE, last_rank,
                                 base_tag + 3, MPI_COMM_WORLD, &req));
        for (int round = 0; round < 3; round++) {
            fill(out, size, 0, last_rank, base_tag + 3, round);
            MPI_CHECK(MPI_Start(&req));
            MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        MPI_CHECK(MPI_Request_free(&req));
        MPI_CHECK(MPI_Buffer_detach(&detached, &detached_size));
        free(buffer);
        free(out);
    } else if (world_rank == last_rank) {
        unsigned char *in = area(size);
        /* Rank 0 finished its Bsends before any receive here. */
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, base_tag + 2, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        for (int k = 0; k < 2; k++) {
            MPI_Status st;
            memset(in, FILL, size + GUARD);
            MPI_CHECK(MPI_Recv(in, (int)size, MPI_BYTE, 0, base_tag + k,
                               MPI_COMM_WORLD, &st));
            expect(in, size, 0, last_rank, base_tag, 0, "buffered message");
            check_status(&st, 0, base_tag + k, size, "buffered message");
        }
        for (int round = 0; round < 3; round++) {
            memset(in, FILL, size + GUARD);
            MPI_CHECK(MPI_Recv(in, (int)size, MPI_BYTE, 0, base_tag + 3,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            expect(in, size, 0, last_rank, base_tag + 3, round,
                   "Bsend_init message");
        }
        int flag;
        MPI_CHECK(MPI_Iprobe(0, base_tag + 5, MPI_COMM_WORLD, &flag,
                             MPI_STATUS_IGNORE));
        if (flag)
            fail("a Bsend that failed with MPI_ERR_BUFFER was delivered");
        free(in);
    }
}

/*
 * Partitioned: every rank to its right neighbour, PARTS partitions of
 * PART bytes, made ready one by one, by range and by list in turn; the
 * receiver polls MPI_Parrived and checks each partition it reports.
 */
static void case_partitioned(int base_tag)
{
    enum { PARTS = 8, PART = 1000 };
    int right = right_of(world_rank), left = left_of(world_rank);
    unsigned char *out = xmalloc(PARTS * PART), *in = area(PARTS * PART);
    MPI_Request send, recv;
    MPI_CHECK(MPI_Precv_init(in, PARTS, PART, MPI_BYTE, left, base_tag,
                             MPI_COMM_WORLD, MPI_INFO_NULL, &recv));
    MPI_CHECK(MPI_Psend_init(out, PARTS, PART, MPI_BYTE, right, base_tag,
                             MPI_COMM_WORLD, MPI_INFO_NULL, &send));
    for (int round = 0; round < 3; round++) {
        memset(in, FILL, PARTS * PART + GUARD);
        memset(out, 0, PARTS * PART);
        MPI_CHECK(MPI_Start(&recv));
        MPI_CHECK(MPI_Start(&send));
        for (int p = 0; p < PARTS; p++) {
            fill(out + p * PART, PART, world_rank, right, base_tag,
                 round * PARTS + p);
            if (round == 0)
                MPI_CHECK(MPI_Pready(p, send));
        }
        if (round == 1) {
            MPI_CHECK(MPI_Pready_range(0, PARTS / 2 - 1, send));
            MPI_CHECK(MPI_Pready_range(PARTS / 2, PARTS - 1, send));
        } else if (round == 2) {
            int list[PARTS];
            for (int p = 0; p < PARTS; p++)
                list[p] = PARTS - 1 - p;
            MPI_CHECK(MPI_Pready_list(PARTS, list, send));
        }
        int checked[PARTS] = {0}, left_to_check = PARTS;
        while (left_to_check > 0) {
            for (int p = 0; p < PARTS; p++) {
                int flag = 0;
                if (checked[p])
                    continue;
                MPI_CHECK(MPI_Parrived(recv, p, &flag));
                if (!flag)
                    continue;
                for (int i = 0; i < PART; i++)
                    if (in[p * PART + i] != pattern(left, world_rank, base_tag,
                                                    round * PARTS + p,
                                                    (size_t)i))
                        fail("round %d: partition %d reported arrived, byte "
                             "%d wrong",
                             round, p, i);
                checked[p] = 1;
                left_to_check--;
            }
            nap(50);
        }
        MPI_Status st;
        MPI_CHECK(MPI_Wait(&send, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&recv, &st));
        for (int i = PARTS * PART; i < PARTS * PART + GUARD; i++)
            if (in[i] != FILL)
                fail("partitioned receive wrote past its buffer");
    }
    MPI_CHECK(MPI_Request_free(&send));
    MPI_CHECK(MPI_Request_free(&recv));
    free(out);
    free(in);
}

/* ---- driver ----------------------------------------------------------- */

static const struct check_case cases[] = {
    {"persistent", case_persistent},
    {"wildcard", case_wildcard},
    {"proc_null", case_proc_null},
    {"large_count", case_large_count},
    {"free_active", case_free_active},
    {"get_status", case_get_status},
    {"cancel", case_cancel},
    {"isendrecv", case_isendrecv},
    {"bsend_buffer", case_bsend_buffer},
    {"partitioned", case_partitioned},
};
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

/* The program's globals, once MPI is up. */
static void setup(void)
{
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    last_rank = world_size - 1;
}

int main(int argc, char **argv)
{
    return check_main("p2p_persistent", argc, argv, setup, cases, CASE_COUNT);
}
