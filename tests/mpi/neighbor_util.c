/*
 * What nbc_check and topo_check expect of the neighbourhood collectives
 * (neighbor_util.h).
 */
#include "neighbor_util.h"

#include <gridcoll.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

int nb_bundles(MPI_Comm comm, int outdeg, const int *dests)
{
    int me, n;
    MPI_CHECK(MPI_Comm_rank(comm, &me));
    MPI_CHECK(MPI_Comm_size(comm, &n));
    int *site = xmalloc((size_t)n * sizeof *site);
    int *blocks = xmalloc((size_t)n * (size_t)n * sizeof *blocks);
    int *all = xmalloc((size_t)n * (size_t)n * sizeof *all);
    for (int r = 0; r < n; r++)
        MPI_CHECK(GridColl_Comm_site_of(comm, r, &site[r]));
    for (int i = 0; i < n * n; i++)
        blocks[i] = 0;
    for (int i = 0; i < outdeg; i++)
        if (dests[i] != MPI_PROC_NULL && site[dests[i]] != site[me])
            blocks[site[me] * n + site[dests[i]]]++;
    MPI_CHECK(MPI_Allreduce(blocks, all, n * n, MPI_INT, MPI_SUM, comm));
    int most = 0;
    for (int i = 0; i < n * n; i++)
        most = all[i] > most ? all[i] : most;
    free(site);
    free(blocks);
    free(all);
    return most >= 2;
}

void nb_expect(MPI_Comm comm, int indeg, const int *srcs, int outdeg,
               const int *dests, int *in_order, int *reversed)
{
    int me, n;
    MPI_CHECK(MPI_Comm_rank(comm, &me));
    MPI_CHECK(MPI_Comm_size(comm, &n));
    int mine[NB_MAX + 1] = {outdeg};
    memcpy(mine + 1, dests, (size_t)outdeg * sizeof *dests);
    int *all = xmalloc((size_t)n * (NB_MAX + 1) * sizeof *all);
    MPI_CHECK(MPI_Allgather(mine, NB_MAX + 1, MPI_INT, all, NB_MAX + 1, MPI_INT,
                            comm));
    for (int j = 0; j < indeg; j++) {
        int p = srcs[j], blocks[NB_MAX], count = 0, nth = 0;
        if (p == MPI_PROC_NULL)
            continue;
        const int *p_dests = all + (size_t)p * (NB_MAX + 1);
        for (int k = 0; k < p_dests[0]; k++)
            if (p_dests[1 + k] == me)
                blocks[count++] = k;
        for (int i = 0; i < j; i++)
            nth += srcs[i] == p;
        if (nth >= count)
            fail("slot %d from %d has no block", j, p);
        in_order[j] = blocks[nth];
        reversed[j] = blocks[count - 1 - nth];
    }
    free(all);
}
