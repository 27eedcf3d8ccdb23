/*
 * Pairwise exchange inside a site, phase by phase, with the partners of
 * each phase taken from a pattern (struct alltoall_pattern): LIN
 * (alltoall_site_lin.c), XOR (alltoall_site_xor.c), or a pattern from a
 * schedule library such as Prisacari's fat-tree OPT.  This is MPICH's
 * pairwise algorithm (src/mpi/coll/alltoall/alltoall_intra_pairwise.c)
 * with the pattern made a parameter, as Prisacari et al. ("Bandwidth-
 * optimal all-to-all exchanges in fat tree networks", ICS 2013, §3.1)
 * define an exchange: a function of (phase, rank) giving the destination.
 *
 * Phases: for p = 0 .. phases-1, rank r posts the receive of the block of
 * src(p, r) and the send of its block for dst(p, r), and waits for both
 * before the next phase; a pair whose block is empty (both ends compute
 * the same byte count) exchanges nothing.  Blocks move with their own
 * datatypes (count, type, byte displacement), no packing.
 *
 * Cost for n ranks and m bytes a pair: phases x alpha + (n-1) m beta per
 * rank, with one message in and one out per rank at any time, so the
 * pattern alone decides which links a phase loads (Prisacari §3: LIN and
 * XOR load the top of a fat tree in half of their phases, OPT evenly).
 * It wins for large blocks, where keeping one message per rank in flight
 * avoids the contention of posting every pair at once; for small blocks
 * the n-1 latencies lose to Bruck.
 */
#include <stdlib.h>

#include "coll/alltoall/alltoall.h"

/* Bruck uses tags from 1 on the same communicator. */
enum { PAIRWISE_TAG = 0 };

static int post(MPI_Comm comm, int peer, int is_send, const void *buf,
                MPI_Count count, MPI_Datatype type, MPI_Request *reqs, int *n)
{
    MPI_Count bytes;
    int status = alltoall_type_bytes(count, type, &bytes);
    if (status != MPI_SUCCESS || bytes == 0)
        return status;
    status = is_send ? PMPI_Isend_c(buf, count, type, peer, PAIRWISE_TAG, comm,
                                    &reqs[*n])
                     : PMPI_Irecv_c((void *)buf, count, type, peer,
                                    PAIRWISE_TAG, comm, &reqs[*n]);
    if (status == MPI_SUCCESS)
        (*n)++;
    return status;
}

int alltoall_site_pairwise(MPI_Comm comm, const struct alltoall_exchange *x,
                           const struct alltoall_pattern *pattern)
{
    int n, rank;
    void *state = NULL;
    int status = PMPI_Comm_size(comm, &n);
    if (status == MPI_SUCCESS)
        status = PMPI_Comm_rank(comm, &rank);
    if (status != MPI_SUCCESS)
        return status;
    if (pattern->prepare != NULL && pattern->prepare(n, &state) != 0)
        return MPI_ERR_NO_MEM;
    int phases = pattern->phases(state, n);
    for (int p = 0; p < phases && status == MPI_SUCCESS; p++) {
        MPI_Request reqs[2];
        int posted = 0;
        int from = pattern->src(state, n, p, rank);
        int to = pattern->dst(state, n, p, rank);
        if (from >= 0)
            status = post(comm, from, 0, (char *)x->rbuf + x->rdispls[from],
                          x->rcounts[from], x->rtypes[from], reqs, &posted);
        if (to >= 0 && status == MPI_SUCCESS)
            status = post(comm, to, 1, (const char *)x->sbuf + x->sdispls[to],
                          x->scounts[to], x->stypes[to], reqs, &posted);
        /* What was posted uses the buffers: finish it even after a failure. */
        int wait_status = coll_local_waitall(posted, reqs);
        if (status == MPI_SUCCESS)
            status = wait_status;
    }
    free(state);
    return status;
}
