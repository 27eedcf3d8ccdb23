/*
 * Bruck's all-to-all inside a site: J. Bruck, C.-T. Ho, S. Kipnis, E.
 * Upfal, D. Weathersby, "Efficient algorithms for all-to-all
 * communications in multiport message-passing systems", IEEE TPDS 8(11),
 * 1997, §3 (the index algorithm, radix 2), as MPICH does it in
 * src/mpi/coll/alltoall/alltoall_intra_brucks.c, here for blocks of any
 * size (Alltoallw: every pair its own count and datatype).
 *
 * Phases, rank r of n:
 *   1. Pack: index i holds r's block for rank (r + i) mod n.
 *   2. Step k = 0 .. ceil(log2 n)-1: send to (r + 2^k) mod n every block
 *      whose index has bit k set, and receive from (r - 2^k) mod n the
 *      blocks of the same indices in their place.  A block keeps its index
 *      and moves i ranks in all, so it ends at its destination.
 *   3. Index i now holds the block of rank (r - i) mod n: unpack.
 * Intermediate ranks do not know the sizes of the blocks they forward, so
 * each message starts with the byte count of every block it carries (8
 * bytes each) and is sized at the receiver with MPI_Mprobe.
 *
 * Cost for n ranks, m bytes a pair: ceil(log2 n) (alpha + (n/2)(m + 8)
 * beta) plus the packing copies, against (n-1)(alpha + m beta) for the
 * pairwise schedules: fewer start-ups for about (log2 n)/2 times the
 * bytes.  Wins for small blocks (up to a few hundred bytes) and many
 * ranks; loses for large blocks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall/alltoall.h"

/* The pairwise schedules use tag 0 on the same communicator. */
enum { BRUCK_TAG = 1 };

struct bruck {
    int n, rank;
    unsigned char **at;   /* [n] where block index i is now */
    uint64_t *len;        /* [n] its bytes */
    unsigned char **held; /* the packed blocks, then every message received */
    int held_count;
};

static int bruck_pack(MPI_Comm comm, const struct alltoall_exchange *x,
                      struct bruck *b)
{
    MPI_Count total = 0, bytes;
    for (int i = 0; i < b->n; i++) {
        int dst = (b->rank + i) % b->n;
        int status =
            alltoall_type_bytes(x->scounts[dst], x->stypes[dst], &bytes);
        if (status != MPI_SUCCESS)
            return status;
        b->len[i] = (uint64_t)bytes;
        total += bytes;
    }
    unsigned char *packed = coll_alloc((size_t)total);
    if (packed == NULL)
        return MPI_ERR_NO_MEM;
    b->held[b->held_count++] = packed;
    for (int i = 0; i < b->n; i++) {
        int dst = (b->rank + i) % b->n;
        MPI_Count position = 0;
        b->at[i] = packed;
        if (b->len[i] > 0) {
            int status = PMPI_Pack_c((const char *)x->sbuf + x->sdispls[dst],
                                     x->scounts[dst], x->stypes[dst], packed,
                                     (MPI_Count)b->len[i], &position, comm);
            if (status != MPI_SUCCESS)
                return status;
        }
        packed += b->len[i];
    }
    return MPI_SUCCESS;
}

/* Lengths of the blocks with bit `bit` set, then their bytes. */
static unsigned char *bruck_message(const struct bruck *b, int bit,
                                    size_t *size)
{
    size_t blocks = 0, bytes = 0;
    for (int i = 1; i < b->n; i++)
        if (i & bit) {
            blocks++;
            bytes += (size_t)b->len[i];
        }
    *size = blocks * sizeof(uint64_t) + bytes;
    unsigned char *msg = coll_alloc(*size);
    if (msg == NULL)
        return NULL;
    unsigned char *head = msg, *data = msg + blocks * sizeof(uint64_t);
    for (int i = 1; i < b->n; i++)
        if (i & bit) {
            memcpy(head, &b->len[i], sizeof(uint64_t));
            head += sizeof(uint64_t);
            memcpy(data, b->at[i], (size_t)b->len[i]);
            data += b->len[i];
        }
    return msg;
}

/* Point the blocks with bit `bit` set into `msg`, checking its framing. */
static int bruck_take(struct bruck *b, int bit, unsigned char *msg, size_t size)
{
    size_t blocks = 0;
    for (int i = 1; i < b->n; i++)
        blocks += (i & bit) != 0;
    if (size < blocks * sizeof(uint64_t))
        return MPI_ERR_TRUNCATE;
    const unsigned char *head = msg;
    unsigned char *data = msg + blocks * sizeof(uint64_t);
    size_t left = size - blocks * sizeof(uint64_t);
    for (int i = 1; i < b->n; i++)
        if (i & bit) {
            memcpy(&b->len[i], head, sizeof(uint64_t));
            head += sizeof(uint64_t);
            if (b->len[i] > left)
                return MPI_ERR_TRUNCATE;
            b->at[i] = data;
            data += b->len[i];
            left -= (size_t)b->len[i];
        }
    return left == 0 ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

static int bruck_step(MPI_Comm comm, struct bruck *b, int step)
{
    int bit = 1 << step;
    int to = (b->rank + bit) % b->n, from = (b->rank - bit + b->n) % b->n;
    size_t out_size;
    unsigned char *out = bruck_message(b, bit, &out_size);
    if (out == NULL)
        return MPI_ERR_NO_MEM;
    MPI_Request send;
    int status = PMPI_Isend_c(out, (MPI_Count)out_size, MPI_BYTE, to,
                              BRUCK_TAG + step, comm, &send);
    if (status != MPI_SUCCESS) {
        free(out);
        return status;
    }
    MPI_Message message;
    MPI_Status probed;
    MPI_Count in_size = 0;
    unsigned char *in = NULL;
    status = PMPI_Mprobe(from, BRUCK_TAG + step, comm, &message, &probed);
    if (status == MPI_SUCCESS)
        status = PMPI_Get_count_c(&probed, MPI_BYTE, &in_size);
    if (status == MPI_SUCCESS) {
        in = coll_alloc((size_t)in_size);
        /* A probed message must be received: take it even without memory. */
        status = PMPI_Mrecv_c(in != NULL ? in : out, in != NULL ? in_size : 0,
                              MPI_BYTE, &message, MPI_STATUS_IGNORE);
        if (in == NULL)
            status = MPI_ERR_NO_MEM;
    }
    if (in != NULL) {
        b->held[b->held_count++] = in;
        if (status == MPI_SUCCESS)
            status = bruck_take(b, bit, in, (size_t)in_size);
    }
    int wait_status = coll_local_wait(&send);
    free(out);
    return status == MPI_SUCCESS ? wait_status : status;
}

static int bruck_unpack(MPI_Comm comm, const struct alltoall_exchange *x,
                        const struct bruck *b)
{
    for (int i = 0; i < b->n; i++) {
        int src = (b->rank - i + b->n) % b->n;
        MPI_Count want, position = 0;
        int status =
            alltoall_type_bytes(x->rcounts[src], x->rtypes[src], &want);
        if (status == MPI_SUCCESS && (uint64_t)want != b->len[i])
            status = MPI_ERR_TRUNCATE;
        if (status == MPI_SUCCESS && want > 0)
            status = PMPI_Unpack_c(b->at[i], want, &position,
                                   (char *)x->rbuf + x->rdispls[src],
                                   x->rcounts[src], x->rtypes[src], comm);
        if (status != MPI_SUCCESS)
            return status;
    }
    return MPI_SUCCESS;
}

int alltoall_site_bruck(MPI_Comm comm, const struct alltoall_exchange *x,
                        const struct alltoall_pattern *pattern)
{
    (void)pattern;
    struct bruck b = {0};
    int steps = 0;
    int status = PMPI_Comm_size(comm, &b.n);
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_rank(comm, &b.rank);
    if (status != MPI_SUCCESS)
        return status;
    while ((1 << steps) < b.n)
        steps++;
    b.at = malloc((size_t)b.n * sizeof *b.at);
    b.len = malloc((size_t)b.n * sizeof *b.len);
    b.held = malloc((size_t)(steps + 1) * sizeof *b.held);
    if (b.at == NULL || b.len == NULL || b.held == NULL)
        status = MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS)
        status = bruck_pack(comm, x, &b);
    for (int k = 0; k < steps && status == MPI_SUCCESS; k++)
        status = bruck_step(comm, &b, k);
    if (status == MPI_SUCCESS)
        status = bruck_unpack(comm, x, &b);
    for (int i = 0; i < b.held_count; i++)
        free(b.held[i]);
    free(b.at);
    free(b.len);
    free(b.held);
    return status;
}
