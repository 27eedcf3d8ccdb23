/*
 * The MPI point-to-point calls on grid communicators: sends in the
 * standard, synchronous and ready modes (buffered ones: gc_bsend.c),
 * receives, probes and matched messages (docs/design/mpi-layer.md,
 * "Point-to-point").
 *
 * A destination on this site is reached through MPICH on the
 * communicator's `local` part; a destination on another site through the
 * relay.  Receives are always the engine's (gc_p2p_engine.c), whatever
 * the source, so MPI's matching order holds across sites.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_p2p.h"
#include "p2p/gc_p2p_engine.h"
#include "p2p/gc_request.h"

/* A status of a probe or of an empty receive.  MPI_ERROR is left alone:
 * MPI sets it only in the multiple-completion calls (MPI 4.1, 3.2.5). */
static void set_probe_status(MPI_Status *status, int source, int tag,
                             MPI_Count bytes)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = source;
    status->MPI_TAG = tag;
    PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(status, 0);
}

/* ---- checks and the calls behind the MPI functions --------------------- */

/* A rank the program named, checked and made a member's (on an
 * intercommunicator it names the remote group). */
int check_rank(struct gc_comm *c, int *rank, int wildcard_ok,
               const char *function)
{
    int peers = gc_comm_peer_count(c);
    if (*rank == MPI_PROC_NULL || (wildcard_ok && *rank == MPI_ANY_SOURCE) ||
        (*rank >= 0 && *rank < peers)) {
        *rank = gc_comm_peer_member(c, *rank);
        return MPI_SUCCESS;
    }
    return gc_error(c->handle, MPI_ERR_RANK, function,
                    "rank %d is not in 0..%d", *rank, peers - 1);
}

/* MPI_TAG_UB of MPICH's world (the site's: MPI_COMM_WORLD is not valid
 * under sessions alone), which the relay's 32-bit tag field holds too. */
static int tag_ub(void)
{
    static int ub = -1;
    if (ub < 0) {
        int *value, flag = 0;
        PMPI_Comm_get_attr(gc_world.site_world, MPI_TAG_UB, &value, &flag);
        ub = flag ? *value : 32767; /* the least MPI allows */
    }
    return ub;
}

static int check_tag(struct gc_comm *c, int tag, int wildcard_ok,
                     const char *function)
{
    if ((tag >= 0 && tag <= tag_ub()) || (wildcard_ok && tag == MPI_ANY_TAG))
        return MPI_SUCCESS;
    return gc_error(c->handle, MPI_ERR_TAG, function, "invalid tag %d (0..%d)",
                    tag, tag_ub());
}

/*
 * The checks MPICH makes on a send or receive, made before the engine
 * takes it: a bad argument found later, on the wire or at completion,
 * would leave the peer waiting.
 */
int check_args(struct gc_comm *c, const void *buf, MPI_Count count,
               MPI_Datatype type, int tag, int wildcard_ok,
               const char *function)
{
    if (count < 0) {
        return gc_error(c->handle, MPI_ERR_COUNT, function,
                        "negative count %lld", (long long)count);
    }
    if (gc_type_check(type) != MPI_SUCCESS) {
        return gc_error(c->handle, MPI_ERR_TYPE, function, "%s",
                        type == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL"
                                                  : "datatype not committed");
    }
    /* NULL is MPI_BOTTOM, valid with a type of absolute addresses only. */
    if (buf == NULL && count > 0 && gc_type_is_named(type)) {
        return gc_error(c->handle, MPI_ERR_BUFFER, function, "null buffer");
    }
    return check_tag(c, tag, wildcard_ok, function);
}

static int grid_isend(struct gc_comm *c, const void *buf, MPI_Count count,
                      MPI_Datatype type, int dst, int tag, enum send_mode mode,
                      MPI_Request *request, const char *function)
{
    int status = check_rank(c, &dst, 0, function);
    if (status == MPI_SUCCESS)
        status = check_args(c, buf, count, type, tag, 0, function);
    if (status != MPI_SUCCESS)
        return status;
    if (dst == MPI_PROC_NULL || is_local_member(c, dst)) {
        int to = dst == MPI_PROC_NULL ? MPI_PROC_NULL : c->site_rank[dst];
        switch (mode) {
        case MODE_SYNC:
            return PMPI_Issend_c(buf, count, type, to, tag, c->local, request);
        case MODE_READY:
            return PMPI_Irsend_c(buf, count, type, to, tag, c->local, request);
        default:
            return PMPI_Isend_c(buf, count, type, to, tag, c->local, request);
        }
    }
    struct op *op = gc_op_new(OP_SEND, c, dst, tag, (void *)buf, count, type);
    if (op == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    op->sync = mode == MODE_SYNC;
    op->eager_only = mode == MODE_READY;
    status = gc_op_start_request(op);
    if (status == MPI_SUCCESS)
        status = gc_op_start_remote_send(op, 0);
    if (status != MPI_SUCCESS) {
        gc_op_discard(op);
        return gc_error(c->handle, status, function, NULL);
    }
    *request = op->request;
    return MPI_SUCCESS;
}

static int grid_irecv(struct gc_comm *c, void *buf, MPI_Count count,
                      MPI_Datatype type, int src, int tag, MPI_Request *request,
                      const char *function)
{
    int status = check_rank(c, &src, 1, function);
    if (status == MPI_SUCCESS)
        status = check_args(c, buf, count, type, tag, 1, function);
    if (status != MPI_SUCCESS)
        return status;
    if (src == MPI_PROC_NULL)
        return PMPI_Irecv_c(buf, count, type, MPI_PROC_NULL, tag, c->local,
                            request);
    struct op *op = gc_op_new(OP_RECV, c, src, tag, buf, count, type);
    if (op == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    status = gc_op_start_request(op);
    if (status != MPI_SUCCESS) {
        gc_op_discard(op);
        return gc_error(c->handle, status, function, NULL);
    }
    *request = op->request;
    gc_op_post_recv(op);
    return MPI_SUCCESS;
}

/* ---- probes and matched messages ---------------------------------------- */

/* Handles for messages from other sites taken by MPI_Mprobe: values with
 * MPICH's "invalid" handle kind (top two bits 00), which it never makes. */
#define GRID_MESSAGE_BASE 0x0d000000
#define GRID_MESSAGE_MASK 0x00ffffff

struct message {
    struct message *next;
    MPI_Message handle;
    struct gc_comm *comm;
    struct rx *rx; /* NULL: an MPICH message from this site */
};

static struct {
    struct message *messages; /* MPI_Message handles made by Mprobe */
    unsigned next_message_id;
} p2p;

static int remember_message(MPI_Message handle, struct gc_comm *c,
                            struct rx *rx)
{
    struct message *m = malloc(sizeof *m);
    if (m == NULL)
        return MPI_ERR_NO_MEM;
    m->handle = handle;
    m->comm = c;
    m->rx = rx;
    m->next = p2p.messages;
    p2p.messages = m;
    return MPI_SUCCESS;
}

static struct message *take_message(MPI_Message handle)
{
    for (struct message **p = &p2p.messages; *p != NULL; p = &(*p)->next)
        if ((*p)->handle == handle) {
            struct message *m = *p;
            *p = m->next;
            return m;
        }
    return NULL;
}

/*
 * One look for a message matching (src, tag) on c, remote then local.
 * With `message` non-NULL the message is taken out of matching (Mprobe).
 */
static int grid_iprobe(struct gc_comm *c, int src, int tag, int *flag,
                       MPI_Message *message, MPI_Status *status)
{
    *flag = 0;
    if (src == MPI_PROC_NULL) {
        *flag = 1;
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
        if (message != NULL)
            *message = MPI_MESSAGE_NO_PROC;
        return MPI_SUCCESS;
    }
    gc_progress(0);
    struct op probe = {.comm = c, .peer = src, .tag = tag};
    if (can_match_remote(&probe)) {
        struct rx *rx = gc_engine_find_unexpected(&probe, message != NULL);
        if (rx != NULL) {
            const struct gc_rc_msg_info *info = gc_rx_info(rx);
            *flag = 1;
            set_probe_status(
                status,
                gc_comm_member_peer(c, c->comm_rank_of_grid[info->src_rank]),
                info->tag, (MPI_Count)info->msg_len);
            if (message == NULL)
                return MPI_SUCCESS;
            *message = GRID_MESSAGE_BASE |
                       (int)(p2p.next_message_id++ & GRID_MESSAGE_MASK);
            return remember_message(*message, c, rx);
        }
    }
    if (src != MPI_ANY_SOURCE && !is_local_member(c, src))
        return MPI_SUCCESS;
    MPI_Status st;
    int local_src = src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->site_rank[src];
    int rc = message == NULL
                 ? PMPI_Iprobe(local_src, tag, c->local, flag, &st)
                 : PMPI_Improbe(local_src, tag, c->local, flag, message, &st);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    MPI_Count count;
    PMPI_Get_count_c(&st, MPI_BYTE, &count);
    set_probe_status(status,
                     gc_comm_member_peer(c, c->local_to_comm[st.MPI_SOURCE]),
                     st.MPI_TAG, count);
    return message == NULL ? MPI_SUCCESS : remember_message(*message, c, NULL);
}

static int grid_probe(struct gc_comm *c, int src, int tag, MPI_Message *message,
                      MPI_Status *status)
{
    unsigned idle = 0;
    for (;;) {
        int flag;
        int rc = grid_iprobe(c, src, tag, &flag, message, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        gc_idle(&idle);
    }
}

static int grid_imrecv(struct message *m, void *buf, MPI_Count count,
                       MPI_Datatype type, MPI_Message *message,
                       MPI_Request *request)
{
    struct op *op = gc_op_new(OP_RECV, m->comm, MPI_ANY_SOURCE, MPI_ANY_TAG,
                              buf, count, type);
    int status = op != NULL ? gc_op_start_request(op) : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS && m->rx == NULL)
        status = PMPI_Imrecv_c(buf, count, type, message, &op->local);
    if (status != MPI_SUCCESS) {
        if (op != NULL)
            gc_op_discard(op);
        free(m);
        return gc_error(MPI_COMM_WORLD, status, "MPI_Imrecv", NULL);
    }
    *request = op->request;
    *message = MPI_MESSAGE_NULL;
    gc_op_post_matched(op, m->rx);
    free(m);
    return MPI_SUCCESS;
}

/* ---- the MPI functions ----------------------------------------------------
 *
 * Every call has its int-count form and its large-count form, MPI_Send and
 * MPI_Send_c (MPI 4.1, 5.2.2), which differ only in the type of their
 * counts: one macro defines both (the suffix and the count type are its
 * last two arguments) over one implementation that takes MPI_Count.
 */

static int grid_send(struct gc_comm *c, const void *buf, MPI_Count count,
                     MPI_Datatype type, int dst, int tag, enum send_mode mode,
                     const char *function)
{
    MPI_Request request;
    int status =
        grid_isend(c, buf, count, type, dst, tag, mode, &request, function);
    if (status != MPI_SUCCESS)
        return status;
    return gc_request_wait(&request, MPI_STATUS_IGNORE);
}

static int grid_recv(struct gc_comm *c, void *buf, MPI_Count count,
                     MPI_Datatype type, int src, int tag, MPI_Status *status,
                     const char *function)
{
    if (src == MPI_PROC_NULL) {
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
        return MPI_SUCCESS;
    }
    MPI_Request request;
    int rc = grid_irecv(c, buf, count, type, src, tag, &request, function);
    return rc != MPI_SUCCESS ? rc : gc_request_wait(&request, status);
}

static int grid_sendrecv(struct gc_comm *c, const void *sendbuf,
                         MPI_Count sendcount, MPI_Datatype sendtype, int dst,
                         int sendtag, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int src, int recvtag,
                         MPI_Status *status, const char *function)
{
    MPI_Request recv_request, send_request;
    int rc = grid_irecv(c, recvbuf, recvcount, recvtype, src, recvtag,
                        &recv_request, function);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = grid_isend(c, sendbuf, sendcount, sendtype, dst, sendtag,
                    MODE_STANDARD, &send_request, function);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&recv_request);
        PMPI_Request_free(&recv_request);
        return rc;
    }
    int send_rc = gc_request_wait(&send_request, MPI_STATUS_IGNORE);
    rc = gc_request_wait(&recv_request, status);
    /* MPICH 4.0's request for a receive from MPI_PROC_NULL reports source
     * 0; MPI_Sendrecv (its own, and this one) says MPI_PROC_NULL. */
    if (src == MPI_PROC_NULL)
        set_probe_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    return rc != MPI_SUCCESS ? rc : send_rc;
}

static int grid_sendrecv_replace(struct gc_comm *c, void *buf, MPI_Count count,
                                 MPI_Datatype type, int dst, int sendtag,
                                 int src, int recvtag, MPI_Status *status,
                                 const char *function)
{
    /* The outgoing data is packed first so the receive can land in buf. */
    size_t bytes;
    int rc = gc_packed_size(count, type, &bytes);
    if (rc != MPI_SUCCESS)
        return gc_error(c->handle, rc, function, NULL);
    void *packed = malloc(bytes ? bytes : 1);
    if (packed == NULL)
        return gc_error(c->handle, MPI_ERR_NO_MEM, function, NULL);
    MPI_Count position = 0;
    rc = gc_pack(buf, count, type, packed, (MPI_Count)bytes, &position,
                 c->local);
    if (rc == MPI_SUCCESS)
        rc = grid_sendrecv(c, packed, position, MPI_PACKED, dst, sendtag, buf,
                           count, type, src, recvtag, status, function);
    free(packed);
    return rc;
}

#define GRID_SEND_FORM(NAME, MODE, SUFFIX, COUNT)                              \
    int MPI_##NAME##SUFFIX(const void *buf, COUNT count, MPI_Datatype type,    \
                           int dst, int tag, MPI_Comm comm)                    \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_##NAME##SUFFIX(buf, count, type, dst, tag, comm);      \
        return grid_send(c, buf, count, type, dst, tag, MODE,                  \
                         "MPI_" #NAME #SUFFIX);                                \
    }
#define GRID_ISEND_FORM(NAME, MODE, SUFFIX, COUNT)                             \
    int MPI_##NAME##SUFFIX(const void *buf, COUNT count, MPI_Datatype type,    \
                           int dst, int tag, MPI_Comm comm,                    \
                           MPI_Request *request)                               \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_##NAME##SUFFIX(buf, count, type, dst, tag, comm,       \
                                       request);                               \
        return grid_isend(c, buf, count, type, dst, tag, MODE, request,        \
                          "MPI_" #NAME #SUFFIX);                               \
    }
#define GRID_SEND(NAME, MODE)                                                  \
    GRID_SEND_FORM(NAME, MODE, , int)                                          \
    GRID_SEND_FORM(NAME, MODE, _c, MPI_Count)
#define GRID_ISEND(NAME, MODE)                                                 \
    GRID_ISEND_FORM(NAME, MODE, , int)                                         \
    GRID_ISEND_FORM(NAME, MODE, _c, MPI_Count)

GRID_SEND(Send, MODE_STANDARD)
GRID_SEND(Ssend, MODE_SYNC)
GRID_SEND(Rsend, MODE_READY)
GRID_ISEND(Isend, MODE_STANDARD)
GRID_ISEND(Issend, MODE_SYNC)
GRID_ISEND(Irsend, MODE_READY)

#define GRID_RECV_FORMS(SUFFIX, COUNT)                                         \
    int MPI_Irecv##SUFFIX(void *buf, COUNT count, MPI_Datatype type, int src,  \
                          int tag, MPI_Comm comm, MPI_Request *request)        \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_Irecv##SUFFIX(buf, count, type, src, tag, comm,        \
                                      request);                                \
        return grid_irecv(c, buf, count, type, src, tag, request,              \
                          "MPI_Irecv" #SUFFIX);                                \
    }                                                                          \
    int MPI_Recv##SUFFIX(void *buf, COUNT count, MPI_Datatype type, int src,   \
                         int tag, MPI_Comm comm, MPI_Status *status)           \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_Recv##SUFFIX(buf, count, type, src, tag, comm,         \
                                     status);                                  \
        return grid_recv(c, buf, count, type, src, tag, status,                \
                         "MPI_Recv" #SUFFIX);                                  \
    }                                                                          \
    int MPI_Sendrecv##SUFFIX(                                                  \
        const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, int dst,  \
        int sendtag, void *recvbuf, COUNT recvcount, MPI_Datatype recvtype,    \
        int src, int recvtag, MPI_Comm comm, MPI_Status *status)               \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_Sendrecv##SUFFIX(                                      \
                sendbuf, sendcount, sendtype, dst, sendtag, recvbuf,           \
                recvcount, recvtype, src, recvtag, comm, status);              \
        return grid_sendrecv(c, sendbuf, sendcount, sendtype, dst, sendtag,    \
                             recvbuf, recvcount, recvtype, src, recvtag,       \
                             status, "MPI_Sendrecv" #SUFFIX);                  \
    }                                                                          \
    int MPI_Sendrecv_replace##SUFFIX(                                          \
        void *buf, COUNT count, MPI_Datatype type, int dst, int sendtag,       \
        int src, int recvtag, MPI_Comm comm, MPI_Status *status)               \
    {                                                                          \
        GC_ENTER();                                                            \
        struct gc_comm *c = GC_FIND(comm);                                     \
        if (c == NULL)                                                         \
            return PMPI_Sendrecv_replace##SUFFIX(                              \
                buf, count, type, dst, sendtag, src, recvtag, comm, status);   \
        return grid_sendrecv_replace(c, buf, count, type, dst, sendtag, src,   \
                                     recvtag, status,                          \
                                     "MPI_Sendrecv_replace" #SUFFIX);          \
    }

GRID_RECV_FORMS(, int)
GRID_RECV_FORMS(_c, MPI_Count)

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Iprobe(src, tag, comm, flag, status);
    int rc = check_rank(c, &src, 1, "MPI_Iprobe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Iprobe");
    return rc != MPI_SUCCESS ? rc
                             : grid_iprobe(c, src, tag, flag, NULL, status);
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Probe(src, tag, comm, status);
    int rc = check_rank(c, &src, 1, "MPI_Probe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Probe");
    return rc != MPI_SUCCESS ? rc : grid_probe(c, src, tag, NULL, status);
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag,
                MPI_Message *message, MPI_Status *status)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Improbe(src, tag, comm, flag, message, status);
    int rc = check_rank(c, &src, 1, "MPI_Improbe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Improbe");
    return rc != MPI_SUCCESS ? rc
                             : grid_iprobe(c, src, tag, flag, message, status);
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message,
               MPI_Status *status)
{
    GC_ENTER();
    struct gc_comm *c = GC_FIND(comm);
    if (c == NULL)
        return PMPI_Mprobe(src, tag, comm, message, status);
    int rc = check_rank(c, &src, 1, "MPI_Mprobe");
    if (rc == MPI_SUCCESS)
        rc = check_tag(c, tag, 1, "MPI_Mprobe");
    return rc != MPI_SUCCESS ? rc : grid_probe(c, src, tag, message, status);
}

#define GRID_MRECV_FORMS(SUFFIX, COUNT)                                        \
    int MPI_Imrecv##SUFFIX(void *buf, COUNT count, MPI_Datatype type,          \
                           MPI_Message *message, MPI_Request *request)         \
    {                                                                          \
        GC_ENTER();                                                            \
        struct message *m = gc_world.active ? take_message(*message) : NULL;   \
        if (m == NULL)                                                         \
            return PMPI_Imrecv##SUFFIX(buf, count, type, message, request);    \
        return grid_imrecv(m, buf, count, type, message, request);             \
    }                                                                          \
    int MPI_Mrecv##SUFFIX(void *buf, COUNT count, MPI_Datatype type,           \
                          MPI_Message *message, MPI_Status *status)            \
    {                                                                          \
        GC_ENTER();                                                            \
        struct message *m = gc_world.active ? take_message(*message) : NULL;   \
        if (m == NULL)                                                         \
            return PMPI_Mrecv##SUFFIX(buf, count, type, message, status);      \
        MPI_Request request;                                                   \
        int rc = grid_imrecv(m, buf, count, type, message, &request);          \
        return rc != MPI_SUCCESS ? rc : gc_request_wait(&request, status);     \
    }

GRID_MRECV_FORMS(, int)
GRID_MRECV_FORMS(_c, MPI_Count)

/* ---- shutdown ----------------------------------------------------------- */

void gc_p2p_shutdown(void)
{
    while (p2p.messages != NULL) {
        struct message *m = take_message(p2p.messages->handle);
        gc_rx_free(m->rx);
        free(m);
    }
    gc_engine_shutdown();
}
