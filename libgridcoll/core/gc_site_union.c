/*
 * The unions of MPICH intercommunicators the layer made (gc_site_union.h),
 * kept as an attribute of the intercommunicator.
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/gc_site_union.h"

/* What an MPICH intercommunicator made here keeps (gc_site_union). */
struct site_union {
    MPI_Comm whole;
    int remote_offset;
};

/* Made under the library lock with the first union; read without it by
 * MPI_Comm_dup of an MPICH communicator (GC_FIND leaves the lock). */
static atomic_int union_keyval = MPI_KEYVAL_INVALID;

/* The intercommunicator's MPI_Comm_free: the union goes with it. */
static int union_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    struct site_union *u = value;
    PMPI_Comm_free(&u->whole);
    free(u);
    return MPI_SUCCESS;
}

int gc_site_union(MPI_Comm intercomm, MPI_Comm *whole, int *remote_offset)
{
    struct site_union *u;
    int found = 0, keyval = atomic_load(&union_keyval);
    if (keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(intercomm, keyval, &u, &found) != MPI_SUCCESS ||
        !found)
        return 0;
    *whole = u->whole;
    *remote_offset = u->remote_offset;
    return 1;
}

int gc_site_union_attach(MPI_Comm intercomm, MPI_Comm whole, int remote_offset)
{
    struct site_union *u = malloc(sizeof *u);
    int keyval = atomic_load(&union_keyval);
    int status = u != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (status == MPI_SUCCESS && keyval == MPI_KEYVAL_INVALID) {
        status = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, union_delete,
                                         &keyval, NULL);
        if (status == MPI_SUCCESS)
            atomic_store(&union_keyval, keyval);
    }
    if (status == MPI_SUCCESS) {
        u->whole = whole;
        u->remote_offset = remote_offset;
        status = PMPI_Comm_set_attr(intercomm, keyval, u);
    }
    if (status != MPI_SUCCESS) {
        free(u);
        return status;
    }
    PMPI_Comm_set_errhandler(whole, MPI_ERRORS_RETURN);
    return MPI_SUCCESS;
}
