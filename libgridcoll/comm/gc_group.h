/*
 * Groups across sites (gc_group.c), as the communicator constructors
 * (gc_comm_create.c) need them.
 *
 * MPICH's groups can only name this site's processes (its MPI_COMM_WORLD
 * is the site), so the group of a grid communicator is a list of grid
 * ranks behind a handle MPICH never produces: kind bits 00 (MPICH's
 * HANDLE_KIND_INVALID, so MPICH rejects one passed to it instead of
 * misreading it), object bits "group", and bit 25 set so that no value
 * equals MPI_GROUP_NULL (0x08000000) or another predefined null handle.
 * Groups of site-local communicators stay MPICH groups.
 */
#include "core/gc_comm.h"
#ifndef GC_GROUP_H
#define GC_GROUP_H

/* A group's members as grid ranks, in group-rank order. */
struct gc_ranks {
    int size;
    const int *rank;
    int *owned; /* what gc_ranks_free releases (a converted MPICH group) */
};

/* 1 when `group` is a grid group handle (also a freed one). */
int gc_group_is_grid(MPI_Group group);
/* A new grid group of these grid ranks (MPI_GROUP_EMPTY when size is 0);
 * MPI_ERR_NO_MEM unreported. */
int gc_group_new(const int *member, int size, MPI_Group *out);
/* 1 when every grid rank of r is on this site. */
int gc_ranks_on_site(const struct gc_ranks *r);

/*
 * The group constructors across sites (gc_comm_group.c): MPI_Comm_create_group
 * of grid communicator c, and MPI_Comm_create_from_group of a grid group
 * whose members are not all on this site.
 */
int gc_comm_create_group_grid(struct gc_comm *c, MPI_Group group, int tag,
                              MPI_Comm *newcomm);
int gc_comm_from_group_grid(MPI_Group group, const char *stringtag,
                            MPI_Info info, MPI_Errhandler errhandler,
                            MPI_Comm *newcomm);
/* The constructors' stringtag as a number (FNV-1a): equal strings, equal
 * numbers, on every process. */
uint32_t gc_stringtag_hash(const char *stringtag);

/*
 * Members of any group: a grid group's own list, or an MPICH group's
 * members translated to grid ranks.  Errors are reported (to report_to's
 * handler, naming `function`) before their code is returned.
 */
int gc_group_ranks(MPI_Group group, MPI_Comm report_to, const char *function,
                   struct gc_ranks *out);
void gc_ranks_free(struct gc_ranks *r);

/*
 * *result = MPI_IDENT (same members, same order), MPI_SIMILAR (same
 * members) or MPI_UNEQUAL.  MPI_SUCCESS or MPI_ERR_NO_MEM (not reported).
 */
int gc_ranks_compare(const struct gc_ranks *a, const struct gc_ranks *b,
                     int *result);

/*
 * The MPICH group of `r`, whose members must all be on this site
 * (MPI_ERR_GROUP otherwise); MPI_GROUP_EMPTY when r is empty.  Returns
 * MPI_ERR_GROUP or MPI_ERR_NO_MEM unreported, or an error MPICH reported.
 */
int gc_group_to_site(const struct gc_ranks *r, MPI_Group *group);

#endif
