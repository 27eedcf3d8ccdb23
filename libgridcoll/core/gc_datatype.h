/*
 * Datatypes as the layer moves them (gc_datatype.c).
 */
#ifndef GC_DATATYPE_H
#define GC_DATATYPE_H

#include <mpi.h>
#include <stddef.h>

/* Bytes of `count` elements of `type` once packed (PMPI_Pack_size exact). */
int gc_packed_size(MPI_Count count, MPI_Datatype type, size_t *bytes);
/* 1 for a predefined datatype (which is never freed). */
int gc_type_is_named(MPI_Datatype type);
/*
 * A reference to `type` for an operation that uses it after the call
 * returns (MPI lets the program free the type meanwhile): *held is `type`
 * itself when predefined, a duplicate otherwise.  gc_type_release drops it.
 */
int gc_type_hold(MPI_Datatype type, MPI_Datatype *held);
void gc_type_release(MPI_Datatype *held);
/*
 * PMPI_Pack_c / PMPI_Unpack_c that also take MPI_BOTTOM with a datatype
 * of absolute addresses (MPICH 4.0.2 rejects a NULL buffer).
 */
int gc_pack(const void *buf, MPI_Count count, MPI_Datatype type, void *out,
            MPI_Count size, MPI_Count *position, MPI_Comm comm);
int gc_unpack(const void *in, MPI_Count size, MPI_Count *position, void *buf,
              MPI_Count count, MPI_Datatype type, MPI_Comm comm);
/*
 * MPI_ERR_TYPE for MPI_DATATYPE_NULL or an uncommitted type, MPI_ERR_OP
 * for MPI_OP_NULL or a predefined op on a predefined type it is not
 * defined for; MPI_SUCCESS otherwise.  Nothing is reported.
 */
int gc_type_check(MPI_Datatype type);
int gc_op_check(MPI_Op op, MPI_Datatype type);

#endif
