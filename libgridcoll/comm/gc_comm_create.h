/*
 * Communicator constructors other floors of comm/ build on
 * (gc_comm_create.c).
 */
#ifndef GC_COMM_CREATE_H
#define GC_COMM_CREATE_H

#include "core/gc_comm.h"

/*
 * MPI_Comm_split of grid communicator c (gc_comm_create.c), for the
 * topology constructors: `own_error` is what this member found wrong with
 * its arguments (already reported); any member's error fails the call on
 * every member.  A result all of whose members are on this site is that
 * MPICH communicator, unregistered.
 */
int gc_comm_split_grid(struct gc_comm *c, int color, int key, int own_error,
                       MPI_Comm *newcomm, const char *function);

/*
 * Give the grid communicator behind `newcomm`, a duplicate of c, what c's
 * parts copy (gc_comm_dup_parts: its topology).  On failure the duplicate
 * is freed, *newcomm set to MPI_COMM_NULL and the error reported on c,
 * naming `function`.
 */
int gc_comm_dup_parts_of(struct gc_comm *c, MPI_Comm *newcomm,
                         const char *function);

#endif
