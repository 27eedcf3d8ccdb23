/*
 * Buffered sends (MPI_Bsend, MPI_Ibsend, MPI_Bsend_init) and the buffer
 * they use (MPI_Buffer_attach, MPI_Buffer_detach), on every communicator
 * of a grid job (docs/design/mpi-layer.md, "Point-to-point").
 *
 * MPI 4.1, 3.6: a buffered send packs its message into the buffer the
 * program attached, taking its packed size plus MPI_BSEND_OVERHEAD bytes,
 * and fails with MPI_ERR_BUFFER when the free space is too small; the
 * space comes back once the message has left.  MPICH keeps that buffer
 * for its own sends only, and a message to another site leaves through
 * the relay, so the layer keeps the attached buffer itself, for MPICH's
 * communicators too: one account, whichever way a message leaves.  The
 * messages sit in the buffer first fit, in offset order, as MPICH places
 * them; MPI_Buffer_detach returns once all of them have left.
 */
#include "core/gc_comm.h"
#include "core/gc_datatype.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"
#include "core/gc_progress.h"
#include "core/gc_world.h"
#include "p2p/gc_p2p.h"
#include "p2p/gc_p2p_engine.h"
#include <stdio.h>
#include <stdlib.h>

/* A message in the attached buffer, from its Bsend until it has left. */
struct buffered {
    struct buffered *next; /* by offset */
    size_t offset;
    size_t size;       /* packed bytes + MPI_BSEND_OVERHEAD */
    struct op *op;     /* to another site: the engine's send */
    MPI_Request local; /* through MPICH otherwise */
};

static struct {
    char *base; /* NULL: nothing attached */
    size_t size;
    struct buffered *messages;
} attached;

/* Give back the space of the messages that have left. */
static void reclaim(void)
{
    if (gc_world.active)
        gc_progress(0);
    for (struct buffered **p = &attached.messages; *p != NULL;) {
        struct buffered *m = *p;
        int left = 0;
        if (m->op != NULL)
            left = m->op->done;
        else
            PMPI_Test(&m->local, &left, MPI_STATUS_IGNORE);
        if (!left) {
            p = &m->next;
            continue;
        }
        if (m->op != NULL)
            gc_op_free(m->op);
        *p = m->next;
        free(m);
    }
}

/* First fit for `size` bytes, linked in offset order; NULL when full. */
static struct buffered *place(size_t size)
{
    struct buffered **at = &attached.messages;
    size_t offset = 0;
    while (*at != NULL && (*at)->offset - offset < size) {
        offset = (*at)->offset + (*at)->size;
        at = &(*at)->next;
    }
    if (*at == NULL && attached.size - offset < size)
        return NULL;
    struct buffered *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->offset = offset;
    m->size = size;
    m->local = MPI_REQUEST_NULL;
    m->next = *at;
    *at = m;
    return m;
}

static void unplace(struct buffered *m)
{
    struct buffered **p = &attached.messages;
    while (*p != m)
        p = &(*p)->next;
    *p = m->next;
    free(m);
}

int gc_bsend(MPI_Comm comm, struct gc_comm *c, const void *buf, MPI_Count count,
             MPI_Datatype type, int dst, int tag, const char *function)
{
    int status = MPI_SUCCESS;
    if (c != NULL) {
        status = check_rank(c, &dst, 0, function);
        if (status == MPI_SUCCESS)
            status = check_args(c, buf, count, type, tag, 0, function);
        if (status != MPI_SUCCESS)
            return status;
    }
    if (dst == MPI_PROC_NULL)
        return MPI_SUCCESS;
    MPI_Comm pack_comm = c != NULL ? c->local : comm;
    MPI_Count bytes;
    status = PMPI_Pack_size_c(count, type, pack_comm, &bytes);
    if (status != MPI_SUCCESS)
        return status;
    size_t need = (size_t)bytes + MPI_BSEND_OVERHEAD;
    reclaim();
    struct buffered *m = attached.base != NULL ? place(need) : NULL;
    if (m == NULL) {
        return gc_error(comm, MPI_ERR_BUFFER, function,
                        "the attached buffer (%zu bytes) has no room for %zu "
                        "(message and MPI_BSEND_OVERHEAD)",
                        attached.size, need);
    }
    char *data = attached.base + m->offset;
    MPI_Count position = 0;
    status = gc_pack(buf, count, type, data, bytes, &position, pack_comm);
    if (status != MPI_SUCCESS)
        goto cleanup;
    if (c == NULL) {
        status =
            PMPI_Isend_c(data, position, MPI_PACKED, dst, tag, comm, &m->local);
    } else if (is_local_member(c, dst)) {
        status = PMPI_Isend_c(data, position, MPI_PACKED, c->site_rank[dst],
                              tag, c->local, &m->local);
    } else {
        m->op = gc_op_new(OP_SEND, c, dst, tag, data, position, MPI_PACKED);
        if (m->op == NULL) {
            status = MPI_ERR_NO_MEM;
            goto cleanup;
        }
        /* Never by rendezvous: MPI_Buffer_detach waits for the message,
         * and a program may post its receive only after that. */
        m->op->eager_only = 1;
        status = gc_op_start_remote_send(m->op, 0);
        if (status != MPI_SUCCESS) {
            gc_op_free(m->op);
            m->op = NULL;
        }
    }
cleanup:
    if (status != MPI_SUCCESS) {
        unplace(m);
        return gc_error(comm, status, function, NULL);
    }
    return MPI_SUCCESS;
}

void gc_bsend_flush(void)
{
    unsigned idle = 0;
    for (reclaim(); attached.messages != NULL; reclaim())
        gc_idle(&idle);
}

/* ---- the MPI functions ---------------------------------------------------
 */

static int bsend(const void *buf, MPI_Count count, MPI_Datatype type, int dst,
                 int tag, MPI_Comm comm, const char *function)
{
    return gc_bsend(comm, gc_comm_find(comm), buf, count, type, dst, tag,
                    function);
}

/* MPI_Ibsend's request completes as soon as the message is in the
 * buffer: a generalized request completed at once. */
static int done_query(void *extra, MPI_Status *status)
{
    (void)extra;
    PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int done_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int done_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int ibsend(const void *buf, MPI_Count count, MPI_Datatype type, int dst,
                  int tag, MPI_Comm comm, MPI_Request *request,
                  const char *function)
{
    int status = bsend(buf, count, type, dst, tag, comm, function);
    if (status != MPI_SUCCESS)
        return status;
    status =
        PMPI_Grequest_start(done_query, done_free, done_cancel, NULL, request);
    if (status == MPI_SUCCESS)
        status = PMPI_Grequest_complete(*request);
    return status;
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dst, int tag,
              MPI_Comm comm)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Bsend(buf, count, type, dst, tag, comm);
    return bsend(buf, count, type, dst, tag, comm, "MPI_Bsend");
}

int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype type, int dst,
                int tag, MPI_Comm comm)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Bsend_c(buf, count, type, dst, tag, comm);
    return bsend(buf, count, type, dst, tag, comm, "MPI_Bsend_c");
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dst, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Ibsend(buf, count, type, dst, tag, comm, request);
    return ibsend(buf, count, type, dst, tag, comm, request, "MPI_Ibsend");
}

int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype type, int dst,
                 int tag, MPI_Comm comm, MPI_Request *request)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Ibsend_c(buf, count, type, dst, tag, comm, request);
    return ibsend(buf, count, type, dst, tag, comm, request, "MPI_Ibsend_c");
}

static int attach(void *buffer, MPI_Count size, const char *function)
{
    if (attached.base != NULL || size < 0) {
        return gc_error(MPI_COMM_WORLD, MPI_ERR_BUFFER, function, "%s",
                        size < 0 ? "negative size"
                                 : "a buffer is attached already");
    }
    attached.base = buffer;
    attached.size = (size_t)size;
    return MPI_SUCCESS;
}

/* Returns once every message in the buffer has left (MPI 4.1, 3.6.1). */
static void detach(void *buffer_addr, MPI_Count *size)
{
    gc_bsend_flush();
    *(void **)buffer_addr = attached.base;
    *size = (MPI_Count)attached.size;
    attached.base = NULL;
    attached.size = 0;
}

int MPI_Buffer_attach(void *buffer, int size)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Buffer_attach(buffer, size);
    return attach(buffer, size, "MPI_Buffer_attach");
}

int MPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Buffer_attach_c(buffer, size);
    return attach(buffer, size, "MPI_Buffer_attach_c");
}

int MPI_Buffer_detach(void *buffer_addr, int *size)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Buffer_detach(buffer_addr, size);
    MPI_Count bytes;
    detach(buffer_addr, &bytes);
    *size = (int)bytes; /* attached through MPI_Buffer_attach's int */
    return MPI_SUCCESS;
}

int MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Buffer_detach_c(buffer_addr, size);
    detach(buffer_addr, size);
    return MPI_SUCCESS;
}
