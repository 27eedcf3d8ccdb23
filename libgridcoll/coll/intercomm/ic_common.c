/*
 * What the intercommunicator collectives share (intercomm.h).
 */
#include <limits.h>
#include <stdio.h>

#include "coll/intercomm/intercomm.h"
#include "engine/coll_request.h"

int ic_blocking_only(struct gc_comm *c, const char *fn,
                     const struct coll_form *form)
{
    if (form->request == NULL)
        return MPI_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "%s on an intercommunicator", fn);
    return gc_unsupported(c->handle, what);
}

int ic_role_of(struct gc_comm *c, const char *fn, int root, enum ic_role *role,
               int *root_member)
{
    *root_member = -1;
    if (root == MPI_ROOT) {
        *role = IC_ROOT;
    } else if (root == MPI_PROC_NULL) {
        *role = IC_IDLE;
    } else if (root >= 0 && root < c->inter->remote_size) {
        *role = IC_LEAF;
        *root_member = ic_remote(c, root);
    } else {
        return coll_arg_error(c, MPI_ERR_ROOT, fn,
                              "root is not MPI_ROOT, MPI_PROC_NULL or a rank "
                              "of the remote group");
    }
    return MPI_SUCCESS;
}

struct coll_sched *ic_sched_new(struct gc_comm *c, const char *fn)
{
    struct coll_sched *s = coll_sched_new(c, fn, NULL);
    if (s == NULL)
        coll_no_mem(c);
    return s;
}

int ic_sched_run(struct coll_sched *s)
{
    int status = coll_sched_run(s);
    coll_sched_free(s);
    return status;
}

int ic_sched_finish(struct coll_sched *s, const struct coll_form *form)
{
    if (form->request == NULL)
        return ic_sched_run(s);
    return form->persistent ? coll_request_persistent(s, form->request)
                            : coll_request_start(s, form->request);
}

/* Bytes of count x type to cross sites in, or -1 (reported). */
static int wire_length(struct coll_sched *s, int count, MPI_Datatype type)
{
    struct gc_comm *c = coll_sched_comm(s);
    size_t len;
    if (coll_packed_size(c, count, type, &len) != MPI_SUCCESS)
        return -1;
    if (len > INT_MAX) {
        coll_arg_error(c, MPI_ERR_COUNT, "intercommunicator collective",
                       "message too large");
        return -1;
    }
    return (int)len;
}

static int same_site(struct coll_sched *s, int peer)
{
    struct gc_comm *c = coll_sched_comm(s);
    return c->site[peer] == c->site[c->rank];
}

int ic_send(struct coll_sched *s, int peer, int tag, const void *buf, int count,
            MPI_Datatype type, int after)
{
    type = coll_sched_type(s, type);
    if (same_site(s, peer) || type == MPI_BYTE)
        return coll_sched_send(s, peer, tag, buf, count, type, after);
    int len = wire_length(s, count, type);
    void *packed = len >= 0 ? coll_sched_alloc(s, (size_t)len) : NULL;
    if (packed == NULL)
        return -1;
    int step = coll_sched_pack(s, buf, count, type, packed, (size_t)len, after);
    return coll_sched_send(s, peer, tag, packed, len, MPI_BYTE, step);
}

int ic_recv(struct coll_sched *s, int peer, int tag, void *buf, int count,
            MPI_Datatype type, int after)
{
    type = coll_sched_type(s, type);
    if (same_site(s, peer) || type == MPI_BYTE)
        return coll_sched_recv(s, peer, tag, buf, count, type, after);
    int len = wire_length(s, count, type);
    void *packed = len >= 0 ? coll_sched_alloc(s, (size_t)len) : NULL;
    if (packed == NULL)
        return -1;
    int step = coll_sched_recv(s, peer, tag, packed, len, MPI_BYTE, after);
    return coll_sched_unpack(s, packed, (size_t)len, buf, count, type, step);
}

int ic_check_counts(const struct gc_comm *c, const char *fn, int n,
                    const int *counts)
{
    if (counts == NULL && n > 0)
        return coll_arg_error(c, MPI_ERR_ARG, fn, "counts array is NULL");
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return coll_arg_error(c, MPI_ERR_COUNT, fn, "negative count");
    return MPI_SUCCESS;
}
