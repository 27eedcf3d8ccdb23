/*
 * Datatypes as the layer uses them: packed sizes, packing that accepts
 * every buffer MPI allows, and references that keep a datatype alive
 * while an operation that names it is pending.
 *
 * Why these exist instead of calling MPICH directly:
 *   - MPI lets a program free a datatype while an operation using it is
 *     pending (MPI 4.1, 5.1.9: "the datatype will not be deallocated
 *     until the operation completes"). MPICH honours that for its own
 *     requests; an operation the layer keeps (a receive from another site
 *     unpacked at completion, a receive held back behind a wildcard) must
 *     hold a reference of its own, which is a duplicate of the type.
 *   - MPICH 4.0.2's MPI_Pack and MPI_Unpack reject a NULL buffer ("Null
 *     pointer in parameter inbuf"), so data described by absolute
 *     addresses from MPI_Get_address and sent from MPI_BOTTOM (MPI 4.1,
 *     5.1.12) could not be packed.  The same bytes are reached from a
 *     non-null anchor through a struct type displaced by minus the
 *     anchor's address.
 */
#include "core/gc_datatype.h"
#include "core/gc_world.h"
#include <stdint.h>

int gc_packed_size(MPI_Count count, MPI_Datatype type, size_t *bytes)
{
    MPI_Count size;
    int status = PMPI_Type_size_x(type, &size);
    if (status != MPI_SUCCESS)
        return status;
    /* MPICH packs homogeneous data as the bare type signature, so this is
     * exactly what PMPI_Pack writes (MPI_UNDEFINED: size overflowed). */
    if (count < 0 || size < 0 ||
        (size > 0 && (uint64_t)count > SIZE_MAX / (uint64_t)size))
        return MPI_ERR_COUNT;
    *bytes = (size_t)count * (size_t)size;
    return MPI_SUCCESS;
}

int gc_type_is_named(MPI_Datatype type)
{
    /* The _c form: the plain one refuses types built with large counts. */
    MPI_Count ints, addrs, large, types;
    int combiner;
    return PMPI_Type_get_envelope_c(type, &ints, &addrs, &large, &types,
                                    &combiner) == MPI_SUCCESS &&
           combiner == MPI_COMBINER_NAMED;
}

int gc_type_hold(MPI_Datatype type, MPI_Datatype *held)
{
    if (type == MPI_DATATYPE_NULL || gc_type_is_named(type)) {
        *held = type; /* predefined: never freed */
        return MPI_SUCCESS;
    }
    return PMPI_Type_dup(type, held);
}

void gc_type_release(MPI_Datatype *held)
{
    if (*held != MPI_DATATYPE_NULL && !gc_type_is_named(*held))
        PMPI_Type_free(held);
    *held = MPI_DATATYPE_NULL;
}

/* Any non-null address: packing starts there, the type's displacement
 * takes it back to absolute addresses. */
static char bottom_anchor;

/* count x type at absolute addresses, as one element seen from the anchor. */
static int bottom_type(MPI_Count count, MPI_Datatype type, MPI_Datatype *out)
{
    MPI_Aint displacement = -(MPI_Aint)(uintptr_t)&bottom_anchor;
    int status =
        PMPI_Type_create_struct_c(1, &count, &displacement, &type, out);
    if (status != MPI_SUCCESS)
        return status;
    status = PMPI_Type_commit(out);
    if (status != MPI_SUCCESS)
        PMPI_Type_free(out);
    return status;
}

int gc_pack(const void *buf, MPI_Count count, MPI_Datatype type, void *out,
            MPI_Count size, MPI_Count *position, MPI_Comm comm)
{
    if (buf != MPI_BOTTOM)
        return PMPI_Pack_c(buf, count, type, out, size, position, comm);
    if (count == 0)
        return MPI_SUCCESS;
    MPI_Datatype absolute;
    int status = bottom_type(count, type, &absolute);
    if (status != MPI_SUCCESS)
        return status;
    status =
        PMPI_Pack_c(&bottom_anchor, 1, absolute, out, size, position, comm);
    PMPI_Type_free(&absolute);
    return status;
}

int gc_unpack(const void *in, MPI_Count size, MPI_Count *position, void *buf,
              MPI_Count count, MPI_Datatype type, MPI_Comm comm)
{
    if (buf != MPI_BOTTOM)
        return PMPI_Unpack_c(in, size, position, buf, count, type, comm);
    if (count == 0)
        return MPI_SUCCESS;
    MPI_Datatype absolute;
    int status = bottom_type(count, type, &absolute);
    if (status != MPI_SUCCESS)
        return status;
    status =
        PMPI_Unpack_c(in, size, position, &bottom_anchor, 1, absolute, comm);
    PMPI_Type_free(&absolute);
    return status;
}

/* ---- argument checks ---------------------------------------------------
 *
 * The layer's own paths (a receive the engine keeps, a collective's WAN
 * phase) would meet an invalid datatype or operation late, on some ranks
 * only, while their peers wait: the checks MPICH makes at the call are
 * made here first, so every rank returns the error at once.
 */

int gc_type_check(MPI_Datatype type)
{
    int size;
    if (type == MPI_DATATYPE_NULL)
        return MPI_ERR_TYPE;
    /* MPICH refuses an uncommitted (or freed) type here, and nowhere
     * cheaper; count 0 never overflows. */
    return PMPI_Pack_size(0, type, gc_world.site_self, &size) == MPI_SUCCESS
               ? MPI_SUCCESS
               : MPI_ERR_TYPE;
}

static int op_is_predefined(MPI_Op op)
{
    static const MPI_Op predefined[] = {
        MPI_MAX,    MPI_MIN,    MPI_SUM,     MPI_PROD, MPI_LAND,
        MPI_BAND,   MPI_LOR,    MPI_BOR,     MPI_LXOR, MPI_BXOR,
        MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP};
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++)
        if (op == predefined[i])
            return 1;
    return 0;
}

int gc_op_check(MPI_Op op, MPI_Datatype type)
{
    if (op == MPI_OP_NULL)
        return MPI_ERR_OP;
    /* A predefined op on a predefined type it is not defined for (MPI_SUM
     * on MPI_BYTE): MPICH's reduction of nothing checks the pair. */
    if (op_is_predefined(op) && gc_type_is_named(type)) {
        char unused;
        if (PMPI_Reduce_local(&unused, &unused, 0, type, op) != MPI_SUCCESS)
            return MPI_ERR_OP;
    }
    return MPI_SUCCESS;
}
