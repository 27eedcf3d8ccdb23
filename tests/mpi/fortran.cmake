# Fortran programs across sites (tests/integration/test_fortran.py), built
# only where a Fortran compiler and MPICH's mpifort exist (FindMPI reads
# the compiler wrapper's flags; Debian: gfortran, libmpich-dev).  Each has
# a linked build and a plain one for gridrun --preload.  Not in the
# sanitizer builds: an instrumented libgridcoll cannot be loaded into
# these programs, and gfortran's sanitizer runtime is not clang's.
if(GRIDCOLL_SANITIZE OR GRIDCOLL_TSAN)
  return()
endif()
include(CheckLanguage)
check_language(Fortran)
find_program(GRIDCOLL_MPIFORT mpifort)
if(NOT CMAKE_Fortran_COMPILER OR NOT GRIDCOLL_MPIFORT)
  message(STATUS "Fortran tests: no Fortran compiler or mpifort, not built")
  return()
endif()
enable_language(Fortran)
find_package(MPI COMPONENTS Fortran)
if(NOT MPI_Fortran_FOUND)
  message(STATUS "Fortran tests: MPI for Fortran not found, not built")
  return()
endif()

# f_check in the `use mpi` style and, from the same source, the `mpif.h`
# style; f08_hello on `use mpi_f08` (stopped across sites).
set(_gc_fortran_programs f_check_use_mpi f_check_mpif_h)
if(MPI_Fortran_HAVE_F08_MODULE)
  list(APPEND _gc_fortran_programs f08_hello)
endif()
foreach(program ${_gc_fortran_programs})
  if(program STREQUAL "f08_hello")
    set(source f08_hello.f90)
  else()
    set(source f_check.F90)
  endif()
  add_executable(${program} ${source})
  add_executable(${program}_plain ${source})
  # libgridcoll ahead of MPICH's Fortran library, whose attribute and
  # mpi_f08 start-up entry points it replaces (libgridcoll/runtime/gc_fortran.c).
  target_link_libraries(${program} PRIVATE gridcoll MPI::MPI_Fortran)
  target_link_libraries(${program}_plain PRIVATE MPI::MPI_Fortran)
  if(program STREQUAL "f_check_mpif_h")
    target_compile_definitions(${program} PRIVATE F_CHECK_MPIF_H)
    target_compile_definitions(${program}_plain PRIVATE F_CHECK_MPIF_H)
  endif()
  # Instead of the project's C warning options: the implicit interfaces of
  # mpif.h pass buffers of every type to one routine, which gfortran 10 and
  # later reject unless told.
  set_target_properties(${program} ${program}_plain PROPERTIES
                        COMPILE_OPTIONS -fallow-argument-mismatch)
endforeach()
