/*
 * Fortran entry points that MPICH 4.0.2's Fortran library (libmpichfort)
 * does not route through the C interface libgridcoll interposes.
 *
 * MPICH's `mpif.h` and `use mpi` bindings (mpi_send_, mpi_init_, ...)
 * convert their arguments and call the C MPI_* function, so a Fortran
 * program reaches libgridcoll's grid versions.  The exceptions among the
 * calls libgridcoll implements (found by disassembling every mpi_*_
 * symbol of libmpichfort.so.12 and listing what each calls; MPICH's
 * src/binding/fortran/mpif_h generates them so) are the communicator
 * attribute getters: mpi_comm_get_attr_ and mpi_attr_get_ call MPICH's
 * internal MPII_Comm_get_attr, which answers MPI_UNIVERSE_SIZE and
 * MPI_WTIME_IS_GLOBAL for this site's MPICH job.  The other bindings that
 * bypass the C function (the set-attribute calls, the datatype and window
 * attribute calls) reach calls libgridcoll passes through to MPICH or
 * does not support on a grid communicator, so MPICH's answer is the
 * right one.
 *
 * MPICH's `use mpi_f08` bindings call PMPI_* for every call: nothing of a
 * mpi_f08 program would reach libgridcoll, and its ranks would run as one
 * MPI job per site.  Its start-up calls are defined here to stop such a
 * program, with a message naming the cause, in a job that spans sites.
 *
 * The definitions here take precedence over libmpichfort's because
 * libgridcoll comes first in the symbol search order, both when linked
 * (as docs/gridcoll.md says, ahead of MPICH) and when preloaded.  They
 * reach MPICH's own Fortran code through its profiling names (pmpi_*,
 * pmpir_*_f08_), referenced weakly: only a Fortran program calls the
 * functions below, and it has libmpichfort loaded; C programs need not.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/gc_settings.h"
#include "core/gc_world.h"

/* gfortran's LOGICAL .TRUE. and .FALSE., as MPICH's binding writes them
 * (MPIR_F_TRUE, MPIR_F_FALSE of Debian's gfortran build). */
#define FORTRAN_TRUE  1
#define FORTRAN_FALSE 0

/* Every spelling of one Fortran name that libmpichfort exports (upper
 * case, and lower case with no, one and two trailing underscores: the
 * manglings of the Fortran compilers MPICH supports), as aliases of the
 * one definition. */
#define FORTRAN_ALIASES(fn, upper, lower)                                      \
    __typeof__(fn) upper __attribute__((alias(#fn)));                          \
    __typeof__(fn) lower __attribute__((alias(#fn)));                          \
    __typeof__(fn) lower##_ __attribute__((alias(#fn)));                       \
    __typeof__(fn) lower##__ __attribute__((alias(#fn)))

void pmpi_comm_get_attr_(const MPI_Fint *comm, const MPI_Fint *keyval,
                         MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierror)
    __attribute__((weak));
void pmpi_attr_get_(const MPI_Fint *comm, const MPI_Fint *keyval,
                    MPI_Fint *value, MPI_Fint *flag, MPI_Fint *ierror)
    __attribute__((weak));
void pmpir_init_f08_(MPI_Fint *ierror) __attribute__((weak));
void pmpir_init_thread_f08_(const MPI_Fint *required, MPI_Fint *provided,
                            MPI_Fint *ierror) __attribute__((weak));
void pmpir_session_init_f08_(const MPI_Fint *info, const MPI_Fint *errhandler,
                             MPI_Fint *session, MPI_Fint *ierror)
    __attribute__((weak));

/* ---- attributes --------------------------------------------------------- */

/*
 * The predefined attributes are what libgridcoll's MPI_Comm_get_attr
 * answers (the grid's universe, no global clock on a grid communicator,
 * MPICH's value for the rest); in C their value comes by address, in
 * Fortran as the integer itself.  User attributes stay with MPICH's
 * binding, which converts between the C and Fortran forms of a value the
 * way MPI 4.1 section 19.3.7 says, depending on which language set it.
 */
static int c_keyval(MPI_Fint keyval)
{
    /* MPICH's Fortran constants of the predefined keyvals are the C ones
     * plus one (mpif.h: MPI_TAG_UB is 0x64400002, mpi.h 0x64400001). */
    static const int predefined[] = {
        MPI_TAG_UB,        MPI_HOST,         MPI_IO,    MPI_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE, MPI_APPNUM};
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++)
        if (keyval == predefined[i] + 1)
            return predefined[i];
    return MPI_KEYVAL_INVALID;
}

/* The C answer for a predefined keyval: *value untouched when unset. */
static MPI_Fint predefined_attr(const MPI_Fint *comm, int keyval, int *value,
                                MPI_Fint *flag)
{
    int *address = NULL;
    int set = 0;
    int status = MPI_Comm_get_attr(MPI_Comm_f2c(*comm), keyval, &address, &set);
    *flag = status == MPI_SUCCESS && set ? FORTRAN_TRUE : FORTRAN_FALSE;
    if (*flag == FORTRAN_TRUE)
        *value = *address;
    return status;
}

/* MPI_COMM_GET_ATTR(COMM, COMM_KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR) with
 * INTEGER(KIND=MPI_ADDRESS_KIND) ATTRIBUTE_VAL. */
static void comm_get_attr(const MPI_Fint *comm, const MPI_Fint *keyval,
                          MPI_Aint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    int keyval_c = c_keyval(*keyval);
    if (keyval_c == MPI_KEYVAL_INVALID) {
        pmpi_comm_get_attr_(comm, keyval, value, flag, ierror);
        return;
    }
    int answer = 0;
    *ierror = predefined_attr(comm, keyval_c, &answer, flag);
    if (*flag == FORTRAN_TRUE)
        *value = answer;
}
FORTRAN_ALIASES(comm_get_attr, MPI_COMM_GET_ATTR, mpi_comm_get_attr);

/* MPI_ATTR_GET(COMM, KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR), deprecated,
 * with an INTEGER ATTRIBUTE_VAL. */
static void attr_get(const MPI_Fint *comm, const MPI_Fint *keyval,
                     MPI_Fint *value, MPI_Fint *flag, MPI_Fint *ierror)
{
    int keyval_c = c_keyval(*keyval);
    if (keyval_c == MPI_KEYVAL_INVALID) {
        pmpi_attr_get_(comm, keyval, value, flag, ierror);
        return;
    }
    int answer = 0;
    *ierror = predefined_attr(comm, keyval_c, &answer, flag);
    if (*flag == FORTRAN_TRUE)
        *value = answer;
}
FORTRAN_ALIASES(attr_get, MPI_ATTR_GET, mpi_attr_get);

/* ---- use mpi_f08 -------------------------------------------------------- */

/*
 * Stops a mpi_f08 program in a job that spans sites, before MPICH starts
 * (so no rank waits for another); elsewhere (one site, or no gridrun) it
 * is an ordinary MPICH program.  gridrun sees the ranks exit and stops
 * the job; a program started some other way stops too.
 */
static void refuse_f08(const char *call)
{
    const struct gc_site *sites;
    /* A malformed setting is reported here and again by whatever reads
     * the settings next; only whether the job spans sites matters. */
    gc_settings_load();
    int site_count = gc_settings_sites(&sites);
    if (site_count < 2)
        return;
    int site = gc_settings_site_index();
    fprintf(stderr,
            "gridcoll: site %s: %s: the program uses the Fortran module "
            "mpi_f08, whose MPICH bindings bypass libgridcoll: its ranks "
            "would run as one MPI job per site. Not supported across sites; "
            "use 'use mpi' or mpif.h (docs/gridcoll.md, Fortran)\n",
            site >= 0 && site < site_count ? sites[site].name : "?", call);
    exit(EXIT_FAILURE);
}

void mpi_init_f08_(MPI_Fint *ierror)
{
    refuse_f08("MPI_Init");
    pmpir_init_f08_(ierror);
}

void mpi_init_thread_f08_(const MPI_Fint *required, MPI_Fint *provided,
                          MPI_Fint *ierror)
{
    refuse_f08("MPI_Init_thread");
    pmpir_init_thread_f08_(required, provided, ierror);
}

void mpi_session_init_f08_(const MPI_Fint *info, const MPI_Fint *errhandler,
                           MPI_Fint *session, MPI_Fint *ierror)
{
    refuse_f08("MPI_Session_init");
    pmpir_session_init_f08_(info, errhandler, session, ierror);
}
