/*
 * Messages and collective contributions larger than 2 GiB, and counts
 * beyond INT_MAX elements, across sites through the large-count calls
 * (MPI 4.1, 5.2.2 and 6.1): every byte checked against a pattern.  Rank 0
 * and the last rank are on different sites in every multi-site layout
 * (tests/integration/test_mpi_bigcount.py).  send_c needs about 4 GiB on
 * rank 0 and 2 GiB on the last rank, bcast_c 2 GiB on every rank.
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

/* Just past 2 GiB, and not a multiple of any chunk or page size. */
#define HUGE_BYTES (((MPI_Count)1 << 31) + 4099)

static int world_rank, world_size;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Word i of the pattern of `key`: a different word at every offset, so a
 * chunk placed at the wrong offset cannot pass.  Words rather than bytes
 * keep a 2 GiB fill and check to a second. */
static uint64_t pattern_word(uint64_t key, size_t i)
{
    return mix64(key * 0x9e3779b97f4a7c15ULL + i);
}

static unsigned char pattern_byte(uint64_t key, size_t i)
{
    uint64_t word = pattern_word(key, i / 8);
    unsigned char bytes[8];
    memcpy(bytes, &word, 8);
    return bytes[i % 8];
}

static void fill(unsigned char *buf, size_t bytes, uint64_t key)
{
    size_t words = bytes / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t word = pattern_word(key, i);
        memcpy(buf + 8 * i, &word, 8);
    }
    for (size_t i = 8 * words; i < bytes; i++)
        buf[i] = pattern_byte(key, i);
}

static void check_bytes(const unsigned char *buf, size_t bytes, uint64_t key,
                        const char *what)
{
    size_t from = 0;
    for (size_t i = 0; i < bytes / 8; i++, from += 8) {
        uint64_t word = pattern_word(key, i);
        if (memcmp(buf + from, &word, 8) != 0)
            break;
    }
    for (size_t i = from; i < bytes; i++)
        if (buf[i] != pattern_byte(key, i))
            fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i,
                 bytes, buf[i], pattern_byte(key, i));
}

/* A status of HUGE_BYTES from `source`: the int count does not fit. */
static void check_huge_status(const MPI_Status *status, int source,
                              const char *what)
{
    MPI_Count count = -1, elements = -1;
    int small = 0;
    MPI_CHECK(MPI_Get_count_c(status, MPI_BYTE, &count));
    MPI_CHECK(MPI_Get_elements_c(status, MPI_BYTE, &elements));
    MPI_CHECK(MPI_Get_count(status, MPI_BYTE, &small));
    if (status->MPI_SOURCE != source || count != HUGE_BYTES ||
        elements != HUGE_BYTES || small != MPI_UNDEFINED)
        fail("%s: source %d count %lld elements %lld int count %d, expected "
             "%d, %lld, %lld, MPI_UNDEFINED",
             what, status->MPI_SOURCE, (long long)count, (long long)elements,
             small, source, (long long)HUGE_BYTES, (long long)HUGE_BYTES);
}

/* One MPI_Send_c of HUGE_BYTES (a count beyond INT_MAX of MPI_BYTE) from
 * rank 0 to the last rank, into the receive buffer in place; then back
 * with MPI_Isend_c and a late MPI_Irecv_c, through the library's buffer
 * for an unexpected message. */
static void send_c(void)
{
    int last = world_size - 1;
    size_t bytes = (size_t)HUGE_BYTES;
    if (world_rank != 0 && world_rank != last)
        return;
    unsigned char *buf = xmalloc(bytes);
    if (world_rank == 0) {
        fill(buf, bytes, 1);
        MPI_CHECK(
            MPI_Send_c(buf, HUGE_BYTES, MPI_BYTE, last, 1, MPI_COMM_WORLD));
        memset(buf, 0, bytes);
        MPI_Status status;
        MPI_Message message;
        MPI_CHECK(MPI_Mprobe(last, 2, MPI_COMM_WORLD, &message, &status));
        check_huge_status(&status, last, "probe of message last -> 0");
        MPI_CHECK(MPI_Mrecv_c(buf, HUGE_BYTES, MPI_BYTE, &message, &status));
        check_huge_status(&status, last, "message last -> 0");
        check_bytes(buf, bytes, 2, "message last -> 0");
    } else {
        MPI_Status status;
        MPI_CHECK(MPI_Recv_c(buf, HUGE_BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                             &status));
        check_huge_status(&status, 0, "message 0 -> last");
        check_bytes(buf, bytes, 1, "message 0 -> last");
        fill(buf, bytes, 2);
        MPI_Request request;
        MPI_CHECK(MPI_Isend_c(buf, HUGE_BYTES, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                              &request));
        MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    }
    free(buf);
}

/* MPI_Bcast_c of HUGE_BYTES from the last rank, on another site than
 * rank 0: one collective contribution beyond 2 GiB through the relays. */
static void bcast_c(void)
{
    size_t bytes = (size_t)HUGE_BYTES;
    int root = world_size - 1;
    unsigned char *buf = xmalloc(bytes);
    if (world_rank == root)
        fill(buf, bytes, 3);
    else
        memset(buf, 0, bytes);
    MPI_CHECK(MPI_Bcast_c(buf, HUGE_BYTES, MPI_BYTE, root, MPI_COMM_WORLD));
    check_bytes(buf, bytes, 3, "MPI_Bcast_c");
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_setup(world_rank, argc - 1, argv + 1);
    if (begin("send_c")) {
        send_c();
        passed();
    }
    if (begin("bcast_c")) {
        bcast_c();
        passed();
    }
    MPI_Finalize();
    return 0;
}
