/*
 * MPI-4 sessions across sites (MPI 4.1 §11.3): a session joins the grid
 * the layer runs for MPI_Init (gc_runtime.c starts it for whichever comes
 * first), and its process sets name grid processes:
 *   mpi://WORLD      every grid rank (MPICH's own would be this site);
 *   mpi://SELF       this process, MPICH's;
 *   gridcoll://site  this process's site: MPICH's mpi://WORLD, which is
 *                    exactly the site's processes.
 * A group of mpi://WORLD is a grid group, and MPI_Comm_create_from_group
 * makes a grid communicator of it (gc_comm_group.c).  Without several
 * sites every call is MPICH's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/gc_group.h"
#include "core/gc_lock.h"
#include "core/gc_world.h"
#include "runtime/gc_runtime.h"

#define PSET_SITE "gridcoll://site"

/* Process set names are compared without regard to case, as MPICH's
 * MPI_Group_from_session_pset does ("mpi://self" works); its
 * MPI_Session_get_pset_info does not, so it is given the canonical name. */
static int is_pset(const char *name, const char *pset)
{
    return name != NULL && strcasecmp(name, pset) == 0;
}

/*
 * The level MPICH gave the session (its "thread_level" info, MPI 4.1
 * §11.3.1).  At MPI_THREAD_MULTIPLE the layer takes its lock from now on,
 * as after MPI_Init_thread: the program's threads may call MPI once the
 * session exists.
 */
static void adopt_thread_level(MPI_Session session)
{
    MPI_Info info;
    char level[32];
    int len = (int)sizeof level, flag = 0;
    if (PMPI_Session_get_info(session, &info) != MPI_SUCCESS)
        return;
    PMPI_Info_get_string(info, "thread_level", &len, level, &flag);
    PMPI_Info_free(&info);
    if (flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0 &&
        gc_world.thread_level != MPI_THREAD_MULTIPLE) {
        gc_world.thread_level = MPI_THREAD_MULTIPLE;
        gc_lock_enable();
    }
}

int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler,
                     MPI_Session *session)
{
    GC_ENTER();
    int status = PMPI_Session_init(info, errhandler, session);
    if (status != MPI_SUCCESS)
        return status;
    status = gc_runtime_session_join();
    if (status != MPI_SUCCESS) {
        PMPI_Session_finalize(session);
        *session = MPI_SESSION_NULL;
    } else if (gc_world.active) {
        adopt_thread_level(*session);
    }
    return status;
}

int MPI_Session_finalize(MPI_Session *session)
{
    GC_ENTER();
    if (gc_world.active && session != NULL && *session != MPI_SESSION_NULL)
        gc_runtime_leave(0);
    return PMPI_Session_finalize(session);
}

int MPI_Session_get_num_psets(MPI_Session session, MPI_Info info,
                              int *npset_names)
{
    GC_ENTER();
    int status = PMPI_Session_get_num_psets(session, info, npset_names);
    if (status == MPI_SUCCESS && gc_world.active)
        ++*npset_names; /* gridcoll://site, after MPICH's */
    return status;
}

int MPI_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n,
                             int *pset_len, char *pset_name)
{
    GC_ENTER();
    int mpich_count = 0;
    if (!gc_world.active ||
        PMPI_Session_get_num_psets(session, info, &mpich_count) !=
            MPI_SUCCESS ||
        n != mpich_count)
        return PMPI_Session_get_nth_pset(session, info, n, pset_len, pset_name);
    /* MPI 4.1 §11.3.2: a *pset_len of 0 asks for the length (with the
     * terminating null); otherwise at most *pset_len - 1 characters. */
    int len = (int)sizeof PSET_SITE;
    if (*pset_len > 0)
        snprintf(pset_name, (size_t)*pset_len, "%s", PSET_SITE);
    *pset_len = len;
    return MPI_SUCCESS;
}

int MPI_Session_get_pset_info(MPI_Session session, const char *pset_name,
                              MPI_Info *info)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Session_get_pset_info(session, pset_name, info);
    if (is_pset(pset_name, PSET_SITE))
        return PMPI_Session_get_pset_info(session, "mpi://WORLD", info);
    if (!is_pset(pset_name, "mpi://WORLD"))
        return PMPI_Session_get_pset_info(session, pset_name, info);
    int status = PMPI_Session_get_pset_info(session, "mpi://WORLD", info);
    if (status == MPI_SUCCESS) {
        char size[16];
        snprintf(size, sizeof size, "%d", gc_world.size);
        status = PMPI_Info_set(*info, "mpi_size", size);
    }
    return status;
}

int MPI_Group_from_session_pset(MPI_Session session, const char *pset_name,
                                MPI_Group *newgroup)
{
    GC_ENTER();
    if (!gc_world.active)
        return PMPI_Group_from_session_pset(session, pset_name, newgroup);
    if (is_pset(pset_name, PSET_SITE))
        return PMPI_Group_from_session_pset(session, "mpi://WORLD", newgroup);
    if (!is_pset(pset_name, "mpi://WORLD"))
        return PMPI_Group_from_session_pset(session, pset_name, newgroup);
    /* MPICH checks the session. */
    int status = PMPI_Group_from_session_pset(session, "mpi://WORLD", newgroup);
    if (status != MPI_SUCCESS)
        return status;
    PMPI_Group_free(newgroup);
    int *all = malloc((size_t)gc_world.size * sizeof *all);
    if (all == NULL)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < gc_world.size; r++)
        all[r] = r;
    status = gc_group_new(all, gc_world.size, newgroup);
    free(all);
    return status;
}
