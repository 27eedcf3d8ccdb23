/*
 * TEST DOUBLE for tests/unit/test_wrappers.c, not the real runtime
 * (libgridcoll/core/): gc_comm_is_grid() reports exactly one chosen
 * communicator as multi-site, and gc_unsupported() records its arguments
 * and returns MPI_ERR_UNSUPPORTED_OPERATION without calling an error
 * handler.  The library lock counts its depth, and gc_comm_is_grid()
 * counts the calls made without it (a wrapper missing GC_ENTER).
 */
#include "core/gc_comm.h"
#include "core/gc_error.h"
#include "core/gc_lock.h"

#include <stdio.h>
#include <string.h>

extern MPI_Comm wtd_grid_comm;
extern int wtd_is_grid_calls;
extern int wtd_unsupported_calls;
extern char wtd_last_function[64];
extern MPI_Comm wtd_last_comm;
extern int wtd_lock_depth;
extern int wtd_unlocked_calls;

MPI_Comm wtd_grid_comm = MPI_COMM_NULL;
int wtd_is_grid_calls;
int wtd_unsupported_calls;
char wtd_last_function[64];
MPI_Comm wtd_last_comm = MPI_COMM_NULL;
int wtd_lock_depth;
int wtd_unlocked_calls;

int gc_lock_enter(void)
{
    wtd_lock_depth++;
    return 1;
}

void gc_lock_leave(const int *entered)
{
    wtd_lock_depth -= *entered;
}

void gc_lock_leave_early(int *entered)
{
    gc_lock_leave(entered);
    *entered = 0;
}

int gc_comm_is_grid(MPI_Comm comm)
{
    wtd_is_grid_calls++;
    wtd_unlocked_calls += wtd_lock_depth == 0;
    return comm != MPI_COMM_NULL && comm == wtd_grid_comm;
}

int gc_unsupported(MPI_Comm comm, const char *function)
{
    wtd_unsupported_calls++;
    wtd_last_comm = comm;
    snprintf(wtd_last_function, sizeof(wtd_last_function), "%s", function);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}
