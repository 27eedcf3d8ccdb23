/*
 * MPICH's own allgather inside a site: one PMPI_Allgatherv_c of the
 * packed blocks on the site's members, in place.
 *
 * Phases: whatever MPICH 4.0 selects for Allgatherv (recursive doubling
 * for short totals on powers of two, Bruck otherwise, ring for long
 * ones; Thakur, Rabenseifner and Gropp, IJHPCA 2005, section 4.1), with
 * its shared-memory and network transports.
 *
 * Cost: MPICH's, between log2(P) α + (P-1) m β (recursive doubling) and
 * (P-1)(α + m β) (ring).
 *
 * When it wins: a baseline to compare the other strategies with, and the
 * choice where MPICH knows the site's network better than a fixed
 * schedule (for instance shared-memory collectives within a node).
 */
#include <stdlib.h>

#include "coll/allgather/allgather_site.h"

int allgather_site_mpich(const struct site_blocks *b)
{
    MPI_Count *counts = malloc((size_t)b->size * sizeof *counts);
    MPI_Aint *displs = malloc((size_t)b->size * sizeof *displs);
    int status = MPI_ERR_NO_MEM;
    if (counts == NULL || displs == NULL)
        goto cleanup;
    for (int k = 0; k < b->size; k++) {
        displs[k] = b->off[k];
        counts[k] = b->off[k + 1] - b->off[k];
    }
    status = PMPI_Allgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->buf,
                               counts, displs, MPI_BYTE, b->comm);
cleanup:
    free(counts);
    free(displs);
    return status;
}
