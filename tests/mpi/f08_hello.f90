! The same on MPICH's `use mpi_f08` bindings, which call MPICH's PMPI_*
! functions directly and so bypass libgridcoll even when it is linked in:
! across sites libgridcoll's mpi_init_f08_ stops it with a message, and
! gridrun ends the job (tests/integration/test_fortran.py,
! test_join_check.py).
program f08_hello
  use mpi_f08
  implicit none
  integer :: rank, size

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  print '(a,i0,a,i0)', 'rank ', rank, ' of ', size
  call MPI_Finalize()
end program f08_hello
