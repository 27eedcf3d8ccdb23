/*
 * The rendezvous of large point-to-point messages to another site
 * (libgridcoll/p2p/gc_p2p_rndv.c; tests/integration/test_mpi_rndv.py), on
 * --site-sizes 1,2: rank 0 alone on site A, ranks 1 and 2 on site B.
 *
 *   flood        rank 0 sends FLOOD_COUNT messages of FLOOD_BYTES to rank
 *                1, each followed by a small eager one of the same tag,
 *                cancels one more, then tells rank 1 (a small message
 *                after them all, in the pair's order) that it is done.
 *                Rank 1 waits inside MPI for that message, prints how much
 *                its resident size grew meanwhile ("RSS_GROWTH_KIB"),
 *                which the test bounds (an eager flood grows it by the
 *                flood), probes the first message (its size, tag and
 *                source), then receives them all in order and checks every
 *                byte: non-overtaking of a small message after a large one.
 *   small_flood  the same with SMALL_COUNT messages of SMALL_FLOOD_BYTES,
 *                each below the threshold: the eager window bounds them.
 *   probe_mrecv  MPI_Mprobe + MPI_Mrecv of an announced message, MPI_Ssend
 *                of one, a non-contiguous receive type, a wildcard receive
 *                posted before the announcement, truncation.
 *   bsend_detach rank 0 MPI_Bsends a large message, detaches its buffer
 *                (which waits for the message) and only then sends the
 *                small one that rank 1 receives first: buffered sends
 *                must not wait for their receive.
 *   blocked      rank 1 posts a receive, then blocks in a call MPICH runs
 *                alone (a PMPI_Recv on a copy of its site's world) that
 *                only ends after rank 0 has sent two large messages: the
 *                first into that receive (eager, on the receive's credit),
 *                the second, larger than the credit left, never posted:
 *                the sender must push its data unasked
 *                (GRIDCOLL_RNDV_PUSH_MS) where an eager send would have
 *                completed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

enum {
    FLOOD_COUNT = 32,
    FLOOD_BYTES = (2 << 20) + 4099, /* not a multiple of anything */
    SMALL_BYTES = 100,
    SMALL_COUNT = 4096,
    SMALL_FLOOD_BYTES = 8 << 10,
    BIG_BYTES = (1 << 20) + 17,
    /* above what a receive of BIG_BYTES lets its sender send ahead */
    BIGGER_BYTES = 4 * BIG_BYTES + 1,
};

static int rank, size;

static unsigned char pattern(int message, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)message * 7u + (i >> 13));
}

static void fill(unsigned char *buf, size_t bytes, int message)
{
    for (size_t i = 0; i < bytes; i++)
        buf[i] = pattern(message, i);
}

static void expect(const unsigned char *buf, size_t bytes, int message)
{
    for (size_t i = 0; i < bytes; i++)
        CHECK(buf[i] == pattern(message, i),
              "message %d: byte %zu is %u, want %u", message, i, buf[i],
              pattern(message, i));
}

static void expect_status(const MPI_Status *st, int source, int tag,
                          MPI_Count bytes)
{
    MPI_Count count;
    MPI_CHECK(MPI_Get_count_c(st, MPI_BYTE, &count));
    CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag && count == bytes,
          "status source %d tag %d count %lld, want %d %d %lld", st->MPI_SOURCE,
          st->MPI_TAG, (long long)count, source, tag, (long long)bytes);
}

/* Resident size (VmRSS) in KiB: what the process holds now (its peak,
 * VmHWM, would keep an earlier case's). */
static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static void flood(int base)
{
    int tag = base + 1, cancel_tag = base + 2, done_tag = base + 3;
    if (rank == 0) {
        MPI_Request req[2 * FLOOD_COUNT];
        unsigned char *big = xmalloc((size_t)FLOOD_COUNT * FLOOD_BYTES);
        unsigned char small[FLOOD_COUNT][SMALL_BYTES];
        for (int i = 0; i < FLOOD_COUNT; i++) {
            fill(big + (size_t)i * FLOOD_BYTES, FLOOD_BYTES, 2 * i);
            fill(small[i], SMALL_BYTES, 2 * i + 1);
            MPI_CHECK(MPI_Isend(big + (size_t)i * FLOOD_BYTES, FLOOD_BYTES,
                                MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req[2 * i]));
            MPI_CHECK(MPI_Isend(small[i], SMALL_BYTES, MPI_BYTE, 1, tag,
                                MPI_COMM_WORLD, &req[2 * i + 1]));
        }
        /* Nothing receives it: withdrawn, never sent. */
        MPI_Request cancelled;
        MPI_Status st;
        int flag = 0;
        MPI_CHECK(MPI_Isend(big, FLOOD_BYTES, MPI_BYTE, 1, cancel_tag,
                            MPI_COMM_WORLD, &cancelled));
        MPI_CHECK(MPI_Cancel(&cancelled));
        MPI_CHECK(MPI_Wait(&cancelled, &st));
        MPI_CHECK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "the unmatched large send was not cancelled");
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, done_tag, MPI_COMM_WORLD));
        for (int i = 0; i < 2 * FLOOD_COUNT; i++)
            MPI_CHECK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        free(big);
    } else if (rank == 1) {
        long before = resident_kib();
        MPI_Status st;
        MPI_CHECK(
            MPI_Recv(NULL, 0, MPI_BYTE, 0, done_tag, MPI_COMM_WORLD, &st));
        /* A while longer inside MPI: nothing may arrive unasked. */
        double until = MPI_Wtime() + 0.5;
        int flag = 0;
        while (MPI_Wtime() < until) {
            MPI_CHECK(MPI_Iprobe(0, cancel_tag, MPI_COMM_WORLD, &flag, &st));
            CHECK(!flag, "the cancelled send can be probed");
            nap(1000);
        }
        long after = resident_kib();
        printf("RSS_GROWTH_KIB flood %ld (of %d KiB)\n", after - before,
               FLOOD_COUNT * (FLOOD_BYTES >> 10));
        fflush(stdout);
        MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        expect_status(&st, 0, tag, FLOOD_BYTES);
        unsigned char *buf = xmalloc(FLOOD_BYTES);
        for (int i = 0; i < 2 * FLOOD_COUNT; i++) {
            size_t bytes = i % 2 ? SMALL_BYTES : FLOOD_BYTES;
            memset(buf, 0, bytes);
            MPI_CHECK(MPI_Recv(buf, FLOOD_BYTES, MPI_BYTE, 0, tag,
                               MPI_COMM_WORLD, &st));
            expect_status(&st, 0, tag, (MPI_Count)bytes);
            expect(buf, bytes, i);
        }
        free(buf);
    }
}

static void small_flood(int base)
{
    int tag = base + 1, done_tag = base + 2;
    size_t total = (size_t)SMALL_COUNT * SMALL_FLOOD_BYTES;
    if (rank == 0) {
        MPI_Request *req = xmalloc(SMALL_COUNT * sizeof *req);
        unsigned char *data = xmalloc(total);
        for (int i = 0; i < SMALL_COUNT; i++) {
            fill(data + (size_t)i * SMALL_FLOOD_BYTES, SMALL_FLOOD_BYTES, i);
            MPI_CHECK(MPI_Isend(data + (size_t)i * SMALL_FLOOD_BYTES,
                                SMALL_FLOOD_BYTES, MPI_BYTE, 1, tag,
                                MPI_COMM_WORLD, &req[i]));
        }
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, done_tag, MPI_COMM_WORLD));
        for (int i = 0; i < SMALL_COUNT; i++)
            MPI_CHECK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        free(data);
        free(req);
    } else if (rank == 1) {
        long before = resident_kib();
        MPI_Status st;
        MPI_CHECK(
            MPI_Recv(NULL, 0, MPI_BYTE, 0, done_tag, MPI_COMM_WORLD, &st));
        long after = resident_kib();
        printf("RSS_GROWTH_KIB small_flood %ld (of %zu KiB)\n", after - before,
               total >> 10);
        fflush(stdout);
        unsigned char buf[SMALL_FLOOD_BYTES];
        for (int i = 0; i < SMALL_COUNT; i++) {
            MPI_CHECK(MPI_Recv(buf, SMALL_FLOOD_BYTES, MPI_BYTE, 0, tag,
                               MPI_COMM_WORLD, &st));
            expect_status(&st, 0, tag, SMALL_FLOOD_BYTES);
            expect(buf, SMALL_FLOOD_BYTES, i);
        }
    }
}

static void probe_mrecv(int base)
{
    unsigned char *buf = xmalloc(2 * (size_t)BIG_BYTES);
    MPI_Status st;
    if (rank == 0) {
        for (int i = 0; i < 4; i++) {
            fill(buf, BIG_BYTES, 100 + i);
            if (i == 1)
                MPI_CHECK(MPI_Ssend(buf, BIG_BYTES, MPI_BYTE, 1, base + i,
                                    MPI_COMM_WORLD));
            else
                MPI_CHECK(MPI_Send(buf, BIG_BYTES, MPI_BYTE, 1, base + i,
                                   MPI_COMM_WORLD));
        }
        /* Wait until rank 1's wildcard receive is posted. */
        MPI_CHECK(
            MPI_Recv(NULL, 0, MPI_BYTE, 1, base + 10, MPI_COMM_WORLD, &st));
        fill(buf, BIG_BYTES, 104);
        MPI_CHECK(
            MPI_Send(buf, BIG_BYTES, MPI_BYTE, 1, base + 4, MPI_COMM_WORLD));
        fill(buf, BIG_BYTES, 105);
        MPI_CHECK(
            MPI_Send(buf, BIG_BYTES, MPI_BYTE, 1, base + 5, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Message message;
        MPI_CHECK(MPI_Mprobe(0, base, MPI_COMM_WORLD, &message, &st));
        expect_status(&st, 0, base, BIG_BYTES);
        memset(buf, 0, BIG_BYTES);
        MPI_CHECK(MPI_Mrecv(buf, BIG_BYTES, MPI_BYTE, &message, &st));
        expect_status(&st, 0, base, BIG_BYTES);
        expect(buf, BIG_BYTES, 100);
        /* The synchronous one, into a larger buffer. */
        MPI_CHECK(MPI_Recv(buf, 2 * BIG_BYTES, MPI_BYTE, 0, base + 1,
                           MPI_COMM_WORLD, &st));
        expect_status(&st, 0, base + 1, BIG_BYTES);
        expect(buf, BIG_BYTES, 101);
        /* Every other byte of a 2-byte stride: unpacked by the library. */
        MPI_Datatype strided;
        MPI_CHECK(MPI_Type_vector(BIG_BYTES, 1, 2, MPI_BYTE, &strided));
        MPI_CHECK(MPI_Type_commit(&strided));
        memset(buf, 0, 2 * (size_t)BIG_BYTES);
        MPI_CHECK(MPI_Recv(buf, 1, strided, 0, base + 2, MPI_COMM_WORLD, &st));
        MPI_CHECK(MPI_Type_free(&strided));
        for (size_t i = 0; i < BIG_BYTES; i++)
            CHECK(buf[2 * i] == pattern(102, i), "strided byte %zu", i);
        /* Truncated: an error, the first bytes delivered. */
        MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int rc = MPI_Recv(buf, BIG_BYTES / 2, MPI_BYTE, 0, base + 3,
                          MPI_COMM_WORLD, &st);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: class %d", cls);
        expect(buf, BIG_BYTES / 2, 103);
        /* Posted before the announcement comes: matched on arrival. */
        MPI_Request any;
        memset(buf, 0, BIG_BYTES);
        MPI_CHECK(MPI_Irecv(buf, BIG_BYTES, MPI_BYTE, MPI_ANY_SOURCE,
                            MPI_ANY_TAG, MPI_COMM_WORLD, &any));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, base + 10, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&any, &st));
        expect_status(&st, 0, base + 4, BIG_BYTES);
        expect(buf, BIG_BYTES, 104);
        MPI_CHECK(MPI_Recv(buf, BIG_BYTES, MPI_BYTE, MPI_ANY_SOURCE,
                           MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        expect_status(&st, 0, base + 5, BIG_BYTES);
        expect(buf, BIG_BYTES, 105);
    }
    free(buf);
}

static void bsend_detach(int base)
{
    unsigned char *buf = xmalloc(BIG_BYTES);
    MPI_Status st;
    if (rank == 0) {
        int attached = BIG_BYTES + MPI_BSEND_OVERHEAD;
        void *space = xmalloc((size_t)attached);
        fill(buf, BIG_BYTES, 300);
        MPI_CHECK(MPI_Buffer_attach(space, attached));
        MPI_CHECK(
            MPI_Bsend(buf, BIG_BYTES, MPI_BYTE, 1, base + 1, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Buffer_detach(&space, &attached));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, base + 2, MPI_COMM_WORLD));
        free(space);
    } else if (rank == 1) {
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, base + 2, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Recv(buf, BIG_BYTES, MPI_BYTE, 0, base + 1,
                           MPI_COMM_WORLD, &st));
        expect_status(&st, 0, base + 1, BIG_BYTES);
        expect(buf, BIG_BYTES, 300);
    }
    free(buf);
}

static void blocked(int base)
{
    if (size < 3)
        return;
    /* PMPI: MPICH's world is this site's; the copy is MPICH's alone. */
    MPI_Comm site_plain;
    MPI_CHECK(PMPI_Comm_dup(MPI_COMM_WORLD, &site_plain));
    unsigned char *buf = xmalloc(BIGGER_BYTES);
    MPI_Status st;
    int token = 0;
    if (rank == 0) {
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, base, MPI_COMM_WORLD, &st));
        fill(buf, BIG_BYTES, 200);
        MPI_CHECK(
            MPI_Send(buf, BIG_BYTES, MPI_BYTE, 1, base + 1, MPI_COMM_WORLD));
        fill(buf, BIGGER_BYTES, 201);
        MPI_CHECK(
            MPI_Send(buf, BIGGER_BYTES, MPI_BYTE, 1, base + 4, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Send(&token, 1, MPI_INT, 2, base + 2, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Request request;
        MPI_CHECK(MPI_Irecv(buf, BIG_BYTES, MPI_BYTE, 0, base + 1,
                            MPI_COMM_WORLD, &request));
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, base, MPI_COMM_WORLD));
        /* Rank 2 is site rank 1 of site B; rank 1 site rank 0. */
        MPI_CHECK(PMPI_Recv(&token, 1, MPI_INT, 1, base + 3, site_plain,
                            MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&request, &st));
        expect_status(&st, 0, base + 1, BIG_BYTES);
        expect(buf, BIG_BYTES, 200);
        MPI_CHECK(MPI_Recv(buf, BIGGER_BYTES, MPI_BYTE, 0, base + 4,
                           MPI_COMM_WORLD, &st));
        expect_status(&st, 0, base + 4, BIGGER_BYTES);
        expect(buf, BIGGER_BYTES, 201);
    } else if (rank == 2) {
        MPI_CHECK(
            MPI_Recv(&token, 1, MPI_INT, 0, base + 2, MPI_COMM_WORLD, &st));
        MPI_CHECK(PMPI_Send(&token, 1, MPI_INT, 0, base + 3, site_plain));
    }
    MPI_CHECK(PMPI_Comm_free(&site_plain));
    free(buf);
}

static void setup(void)
{
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
}

int main(int argc, char **argv)
{
    static const struct check_case cases[] = {
        {"flood", flood},
        {"small_flood", small_flood},
        {"probe_mrecv", probe_mrecv},
        {"bsend_detach", bsend_detach},
        {"blocked", blocked},
    };
    return check_main("rndv_check", argc, argv, setup, cases,
                      sizeof cases / sizeof *cases);
}
