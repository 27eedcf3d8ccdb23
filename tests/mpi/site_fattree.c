/*
 * site_fattree: what libgridcoll made of GRIDCOLL_FATTREE, the fat tree
 * gridrun passes to each site's ranks.  One line per rank:
 *
 *   rank R site NAME fattree M1,...,ML    (or "fattree none")
 *
 * It reads the runtime's own accessor, gc_site_fattree(), so it is built
 * against libgridcoll's internal headers (tests/integration/
 * test_mpi_runtime.py).
 */
#include <mpi.h>
#include <stdio.h>

#include "core/gc_world.h"
#include "gridcoll.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, site, len;
    char name[GRIDCOLL_MAX_SITE_NAME + 1];
    char tree[GC_SCHED_FATTREE_TEXT_MAX] = "none";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    GridColl_Comm_site_of(MPI_COMM_WORLD, rank, &site);
    GridColl_Site_name(site, name, &len);
    const struct gc_sched_fattree *fattree = gc_site_fattree();
    if (fattree != NULL)
        gc_sched_fattree_format(fattree, tree, sizeof tree);
    printf("rank %d site %s fattree %s\n", rank, name, tree);
    MPI_Finalize();
    return 0;
}
