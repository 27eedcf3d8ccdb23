/*
 * Internal transfers of the collectives (gc_xfer.c).
 */
#ifndef GC_XFER_H
#define GC_XFER_H

#include <stddef.h>

#include "core/gc_comm.h"

/*
 * Byte transfers between members of a grid communicator on different
 * sites, on its collective context; `tag` tells concurrent collective
 * phases apart.  Received length must equal `len` exactly.  Completed
 * together by gc_xfer_waitall, which keeps draining incoming traffic
 * while it waits, so two sites sending to each other first never
 * deadlock; or tested one by one (gc_xfer_test).
 */
struct gc_xfer;
int gc_xfer_isend(struct gc_comm *c, int dst, int tag, const void *buf,
                  size_t len, struct gc_xfer **req);
int gc_xfer_irecv(struct gc_comm *c, int src, int tag, void *buf, size_t len,
                  struct gc_xfer **req);
/* The same on context class `cls` of c (GC_CTX_CREATE). */
int gc_xfer_isend_on(struct gc_comm *c, enum gc_ctx_class cls, int dst, int tag,
                     const void *buf, size_t len, struct gc_xfer **req);
int gc_xfer_irecv_on(struct gc_comm *c, enum gc_ctx_class cls, int src, int tag,
                     void *buf, size_t len, struct gc_xfer **req);
int gc_xfer_waitall(int count, struct gc_xfer **reqs);
/*
 * Whether *req finished (*done), without driving progress (gc_progress
 * does).  A finished transfer is freed and *req set to NULL; the result
 * is its status (MPI_SUCCESS while it runs), MPI_ERR_TRUNCATE when a
 * receive got another length than expected (its bytes are in: the
 * schedule engine finishes the collective, then reports it).
 */
int gc_xfer_test(struct gc_xfer **req, int *done);

#endif
