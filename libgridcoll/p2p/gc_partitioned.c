/*
 * MPI-4 partitioned communication (MPI 4.1, chapter 4: MPI_Psend_init,
 * MPI_Precv_init, MPI_Pready, MPI_Pready_range, MPI_Pready_list,
 * MPI_Parrived) on grid communicators (docs/design/mpi-layer.md,
 * "Point-to-point").
 *
 * Every request is a persistent request of layer_request.c.  Between two
 * members of one site it drives MPICH's own, on the communicator's local
 * part (`inner`), and reports the source as the program names it: MPICH
 * knows only its site rank.  On an intercommunicator MPICH made for the
 * layer (all on this site) it drives MPICH's on the intercommunicator's
 * union (gc_site_union says why).  Between sites the partitions
 * travel together, as one message, once the last is ready (MPI 4.1, 4.2
 * lets the library choose when data moves); MPI_Parrived reports a
 * partition when the whole message is in the receive buffer, which is never
 * before its own bytes are.  The message's relay tag is -2 - tag: never a
 * point-to-point tag (those are >= 0) nor MPI_ANY_TAG, so a partitioned
 * message matches only the partitioned receive of its (communicator,
 * source, tag), in order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_site_union.h"
#include "core/gc_world.h"
#include "p2p/gc_p2p.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/layer_request.h"

struct partitioned {
    enum op_kind kind;
    struct gc_comm *comm; /* NULL: an MPICH intercommunicator's union */
    int remote_offset;    /* then: the union rank of remote rank 0 */
    void *buf;
    int partitions;
    MPI_Count count; /* elements of the whole message */
    MPI_Datatype type;
    int peer;
    int tag;     /* the relay's: -2 - the program's */
    char *ready; /* send: per partition, since MPI_Start */
    int unready;
    struct layer_request *request;
    MPI_Request inner; /* same site: MPICH's, on comm->local or the union */
    struct op *op;     /* of the active run */
    int arrived;       /* receive: the run's message is in the buffer */
};

static int partitioned_start(struct layer_request *r, void *run)
{
    struct partitioned *p = run;
    p->request = r;
    p->arrived = 0;
    if (p->inner != MPI_REQUEST_NULL)
        return PMPI_Start(&p->inner);
    if (p->kind == OP_SEND) {
        for (int i = 0; i < p->partitions; i++)
            p->ready[i] = 0;
        p->unready = p->partitions;
        return MPI_SUCCESS;
    }
    p->op =
        gc_op_new(OP_RECV, p->comm, p->peer, p->tag, p->buf, p->count, p->type);
    if (p->op == NULL)
        return gc_error(p->comm->handle, MPI_ERR_NO_MEM, "MPI_Start", NULL);
    gc_op_post_recv(p->op);
    return MPI_SUCCESS;
}

/* A same-site run: MPICH's request completes it. */
static void poll_inner(struct layer_request *r, struct partitioned *p)
{
    int flag = 0;
    MPI_Status st;
    int error = PMPI_Test(&p->inner, &flag, &st);
    if (error == MPI_SUCCESS && !flag)
        return;
    struct layer_result result = {MPI_UNDEFINED, MPI_UNDEFINED, 0, 0};
    if (error == MPI_SUCCESS && p->kind == OP_RECV) {
        result.source =
            st.MPI_SOURCE == MPI_PROC_NULL ? MPI_PROC_NULL
            : p->comm == NULL
                ? st.MPI_SOURCE - p->remote_offset
                : gc_comm_member_peer(p->comm,
                                      p->comm->local_to_comm[st.MPI_SOURCE]);
        result.tag = st.MPI_TAG;
        PMPI_Get_elements_x(&st, MPI_BYTE, &result.bytes);
    }
    layer_request_done(r, error, &result);
}

static void partitioned_poll(struct layer_request *r, void *run)
{
    struct partitioned *p = run;
    if (p->inner != MPI_REQUEST_NULL) {
        poll_inner(r, p);
        return;
    }
    if (p->op == NULL || !p->op->done)
        return;
    struct layer_result result = {MPI_UNDEFINED, MPI_UNDEFINED,
                                  (MPI_Count)p->op->bytes, 0};
    if (p->kind == OP_RECV) {
        result.source = gc_comm_member_peer(p->comm, p->peer);
        result.tag = -2 - p->tag;
        p->arrived = 1;
    }
    int error = p->op->error;
    gc_op_free(p->op);
    p->op = NULL;
    layer_request_done(r, error, &result);
}

static void partitioned_destroy(void *run)
{
    struct partitioned *p = run;
    if (p->inner != MPI_REQUEST_NULL)
        PMPI_Request_free(&p->inner);
    gc_type_release(&p->type);
    if (p->comm != NULL)
        gc_comm_unref(p->comm);
    free(p->ready);
    free(p);
}

static const struct layer_request_class partitioned_class = {
    .start = partitioned_start,
    .poll = partitioned_poll,
    .destroy = partitioned_destroy};

/*
 * The peer is checked (and, on an intercommunicator, translated to its
 * union rank) before anything looks it up.  A same-site request is
 * MPICH's, which checks the rest.
 */
static int partitioned_init(struct gc_comm *c, enum op_kind kind,
                            const void *buf, int partitions, MPI_Count count,
                            MPI_Datatype type, int peer, int tag, MPI_Info info,
                            MPI_Request *request, const char *function)
{
    int status = check_rank(c, &peer, 0, function);
    if (status != MPI_SUCCESS)
        return status;
    int local = peer == MPI_PROC_NULL || is_local_member(c, peer);
    MPI_Count total = (MPI_Count)partitions * count;
    if (!local && (partitions < 1 || count < 0))
        return gc_error(c->handle, partitions < 1 ? MPI_ERR_ARG : MPI_ERR_COUNT,
                        function, NULL);
    if (!local && (status = check_args(c, buf, total, type, tag, 0,
                                       function)) != MPI_SUCCESS)
        return status;
    struct partitioned *p = calloc(1, sizeof *p);
    if (p == NULL || (kind == OP_SEND && !local &&
                      (p->ready = calloc((size_t)partitions, 1)) == NULL)) {
        free(p);
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    }
    p->inner = MPI_REQUEST_NULL;
    p->type = MPI_DATATYPE_NULL;
    if (local) {
        int to = peer == MPI_PROC_NULL ? MPI_PROC_NULL : c->site_rank[peer];
        status = kind == OP_SEND
                     ? PMPI_Psend_init(buf, partitions, count, type, to, tag,
                                       c->local, info, &p->inner)
                     : PMPI_Precv_init((void *)buf, partitions, count, type, to,
                                       tag, c->local, info, &p->inner);
    } else {
        status = gc_type_hold(type, &p->type);
        if (status != MPI_SUCCESS)
            gc_error(c->handle, status, function, NULL);
    }
    if (status != MPI_SUCCESS) {
        free(p->ready);
        free(p);
        return status;
    }
    p->kind = kind;
    p->comm = c;
    p->buf = (void *)buf;
    p->partitions = partitions;
    p->count = total;
    p->peer = peer;
    p->tag = -2 - tag;
    gc_comm_retain(c);
    status = layer_request_create(&partitioned_class, p, c->handle, 1, request);
    if (status != MPI_SUCCESS)
        partitioned_destroy(p);
    return status;
}

/*
 * On an MPICH intercommunicator: MPICH's request on its union, if the
 * layer made it, after the peer is checked against the remote group
 * (MPICH would take any union rank); MPICH checks the rest.
 */
static int site_inter_init(MPI_Comm comm, enum op_kind kind, const void *buf,
                           int partitions, MPI_Count count, MPI_Datatype type,
                           int peer, int tag, MPI_Info info,
                           MPI_Request *request, const char *function)
{
    MPI_Comm whole;
    int remote_offset, remote_size, status;
    if (!gc_site_union(comm, &whole, &remote_offset))
        return gc_unsupported(comm, function);
    PMPI_Comm_remote_size(comm, &remote_size);
    if (peer != MPI_PROC_NULL && (peer < 0 || peer >= remote_size)) {
        return gc_error(comm, MPI_ERR_RANK, function, "rank %d is not in 0..%d",
                        peer, remote_size - 1);
    }
    struct partitioned *p = calloc(1, sizeof *p);
    if (p == NULL)
        return gc_error(comm, MPI_ERR_NO_MEM, function, NULL);
    p->kind = kind;
    p->remote_offset = remote_offset;
    p->type = MPI_DATATYPE_NULL;
    p->inner = MPI_REQUEST_NULL;
    int to = peer == MPI_PROC_NULL ? MPI_PROC_NULL : peer + remote_offset;
    status = kind == OP_SEND
                 ? PMPI_Psend_init(buf, partitions, count, type, to, tag, whole,
                                   info, &p->inner)
                 : PMPI_Precv_init((void *)buf, partitions, count, type, to,
                                   tag, whole, info, &p->inner);
    if (status != MPI_SUCCESS) {
        free(p);
        return gc_error(comm, status, function, NULL);
    }
    status = layer_request_create(&partitioned_class, p, comm, 1, request);
    if (status != MPI_SUCCESS)
        partitioned_destroy(p);
    return status;
}

/* The run's message leaves when its last partition is ready. */
static int ready(struct partitioned *p, int partition, const char *function)
{
    if (p->inner != MPI_REQUEST_NULL)
        return PMPI_Pready(partition, p->inner);
    if (p->kind != OP_SEND || partition < 0 || partition >= p->partitions ||
        p->ready[partition]) {
        return gc_error(
            p->comm->handle, MPI_ERR_ARG, function,
            "partition %d is not an unready one of 0..%d of a send request",
            partition, p->partitions - 1);
    }
    p->ready[partition] = 1;
    if (--p->unready > 0)
        return MPI_SUCCESS;
    p->op =
        gc_op_new(OP_SEND, p->comm, p->peer, p->tag, p->buf, p->count, p->type);
    int status =
        p->op != NULL ? gc_op_start_remote_send(p->op, 0) : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS)
        return status;
    if (p->op != NULL)
        gc_op_free(p->op);
    p->op = NULL;
    layer_request_done(p->request, status, NULL);
    return gc_error(p->comm->handle, status, function, NULL);
}

/* ---- the MPI functions ---------------------------------------------------
 */

/* MPI_Psend_init and MPI_Precv_init on any communicator. */
static int open_request(MPI_Comm comm, enum op_kind kind, const void *buf,
                        int partitions, MPI_Count count, MPI_Datatype type,
                        int peer, int tag, MPI_Info info, MPI_Request *request,
                        const char *function)
{
    struct gc_comm *c = gc_world.active ? gc_comm_find(comm) : NULL;
    int inter = 0;
    if (c == NULL && gc_world.active && comm != MPI_COMM_NULL)
        PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return site_inter_init(comm, kind, buf, partitions, count, type, peer,
                               tag, info, request, function);
    if (c != NULL)
        return partitioned_init(c, kind, buf, partitions, count, type, peer,
                                tag, info, request, function);
    return kind == OP_SEND
               ? PMPI_Psend_init(buf, partitions, count, type, peer, tag, comm,
                                 info, request)
               : PMPI_Precv_init((void *)buf, partitions, count, type, peer,
                                 tag, comm, info, request);
}

int MPI_Psend_init(const void *buf, int partitions, MPI_Count count,
                   MPI_Datatype type, int dst, int tag, MPI_Comm comm,
                   MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    return open_request(comm, OP_SEND, buf, partitions, count, type, dst, tag,
                        info, request, "MPI_Psend_init");
}

int MPI_Precv_init(void *buf, int partitions, MPI_Count count,
                   MPI_Datatype type, int src, int tag, MPI_Comm comm,
                   MPI_Info info, MPI_Request *request)
{
    GC_ENTER();
    return open_request(comm, OP_RECV, buf, partitions, count, type, src, tag,
                        info, request, "MPI_Precv_init");
}

static struct partitioned *find(MPI_Request request)
{
    return gc_world.active ? layer_request_run(request, &partitioned_class)
                           : NULL;
}

int MPI_Pready(int partition, MPI_Request request)
{
    GC_ENTER();
    struct partitioned *p = find(request);
    if (p == NULL)
        return PMPI_Pready(partition, request);
    return ready(p, partition, "MPI_Pready");
}

int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    GC_ENTER();
    struct partitioned *p = find(request);
    if (p == NULL)
        return PMPI_Pready_range(partition_low, partition_high, request);
    int status = MPI_SUCCESS;
    for (int i = partition_low; i <= partition_high && status == MPI_SUCCESS;
         i++)
        status = ready(p, i, "MPI_Pready_range");
    return status;
}

int MPI_Pready_list(int length, int array_of_partitions[], MPI_Request request)
{
    GC_ENTER();
    struct partitioned *p = find(request);
    if (p == NULL)
        return PMPI_Pready_list(length, array_of_partitions, request);
    int status = MPI_SUCCESS;
    for (int i = 0; i < length && status == MPI_SUCCESS; i++)
        status = ready(p, array_of_partitions[i], "MPI_Pready_list");
    return status;
}

int MPI_Parrived(MPI_Request request, int partition, int *flag)
{
    GC_ENTER();
    struct partitioned *p = find(request);
    if (p == NULL)
        return PMPI_Parrived(request, partition, flag);
    if (p->inner != MPI_REQUEST_NULL)
        return PMPI_Parrived(p->inner, partition, flag);
    if (p->kind != OP_RECV || partition < 0 || partition >= p->partitions)
        return gc_error(p->comm->handle, MPI_ERR_ARG,
                        "MPI_Parrived: not a partition of a receive request",
                        NULL);
    gc_progress(0);
    *flag = p->arrived || (p->op != NULL && p->op->done);
    return MPI_SUCCESS;
}
