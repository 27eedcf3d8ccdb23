/*
 * Internal transfers of the collectives (gc_xfer.h): byte
 * messages between members of a grid communicator on different sites, on
 * its collective context, carried out by the point-to-point engine
 * (gc_p2p_engine.c) without generalized requests.  Every one crosses the
 * WAN and counts for the running collective (gc_coll_account_wan).
 */
#include "p2p/gc_xfer.h"
#include "core/gc_comm.h"
#include "core/gc_progress.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/gc_wan_stats.h"
#include <stddef.h>

int gc_xfer_isend(struct gc_comm *c, int dst, int tag, const void *buf,
                  size_t len, struct gc_xfer **req)
{
    return gc_xfer_isend_on(c, GC_CTX_COLL, dst, tag, buf, len, req);
}

int gc_xfer_isend_on(struct gc_comm *c, enum gc_ctx_class cls, int dst, int tag,
                     const void *buf, size_t len, struct gc_xfer **req)
{
    *req = NULL;
    struct op *op =
        gc_op_new(OP_SEND, c, dst, tag, (void *)buf, (MPI_Count)len, MPI_BYTE);
    if (op == NULL)
        return MPI_ERR_NO_MEM;
    op->coll = (int)cls;
    int status = gc_op_start_remote_send(op, 0);
    if (status != MPI_SUCCESS) {
        gc_op_free(op);
        return status;
    }
    gc_wan_account(len);
    *req = (struct gc_xfer *)op;
    return MPI_SUCCESS;
}

int gc_xfer_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
                  struct gc_xfer **req)
{
    return gc_xfer_irecv_on(c, GC_CTX_COLL, src, tag, buf, len, req);
}

int gc_xfer_irecv_on(struct gc_comm *c, enum gc_ctx_class cls, int src, int tag,
                     void *buf, size_t len, struct gc_xfer **req)
{
    *req = NULL;
    struct op *op =
        gc_op_new(OP_RECV, c, src, tag, buf, (MPI_Count)len, MPI_BYTE);
    if (op == NULL)
        return MPI_ERR_NO_MEM;
    op->coll = (int)cls;
    op->exact_length = 1;
    gc_op_post_recv(op);
    *req = (struct gc_xfer *)op;
    return MPI_SUCCESS;
}

int gc_xfer_waitall(int count, struct gc_xfer **reqs)
{
    int status = MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        struct op *op = (struct op *)reqs[i];
        if (op == NULL)
            continue;
        /* Only the relay can finish these: sleep in poll() on its socket
         * rather than spin against local ranks for the CPU.  Look before
         * sleeping: a send the relay client wrote out at once finishes
         * without anything arriving to wake the poll. */
        gc_progress(0);
        while (!op->done)
            gc_wait_relay(10);
        if (op->error != MPI_SUCCESS && status == MPI_SUCCESS)
            status = op->error;
        gc_op_free(op);
        reqs[i] = NULL;
    }
    return status;
}

int gc_xfer_test(struct gc_xfer **req, int *done)
{
    struct op *op = (struct op *)*req;
    *done = op->done;
    if (!op->done)
        return MPI_SUCCESS;
    int status = op->error;
    gc_op_free(op);
    *req = NULL;
    return status;
}
