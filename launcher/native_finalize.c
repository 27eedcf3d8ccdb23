/*
 * libgridrun-native.so, preloaded into the ranks of `gridrun --native`
 * (docs/gridrun.md, NATIVE BASELINE).
 *
 * MPICH 4.0's MPI_Finalize closes every UCX endpoint with ucp_disconnect_nb,
 * waits for the closes, then waits in a PMI barrier, where it no longer
 * progresses UCX.  Over TCP, completing a close can need an answer from
 * the peer; a peer that finished its own closes first is already in that
 * barrier and never answers, so with a WAN delay between two ranks
 * MPI_Finalize hangs in most runs (MPICH later removed the barrier,
 * pmodels/mpich#6596).  Here a close completes at once and leaves the
 * endpoint open; ucp_worker_destroy closes it after the barrier without
 * waiting for anyone.  Nothing the program needs is lost: a rank enters
 * MPI_Finalize only once its own communication has completed, so when the
 * barrier lets any rank go on, every message has been received.
 */
#include <ucp/api/ucp.h>

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep);

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    (void)ep;
    return NULL; /* UCS_OK: done, no request to wait for */
}
