! A Fortran program on MPICH's `use mpi` bindings, which call the C
! MPI_Init, MPI_Comm_rank, ... that libgridcoll interposes: under gridrun
! it must see the grid world (tests/integration/test_join_check.py).  It
! references no symbol of libgridcoll itself, so only a link line that
! keeps libgridcoll under --as-needed (pkg-config gridcoll, the CMake
! package's GridColl::gridcoll) makes it one job across the sites.
program f_hello
  use mpi
  implicit none
  integer :: ierr, rank, size

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  print '(a,i0,a,i0)', 'rank ', rank, ' of ', size
  call MPI_Finalize(ierr)
end program f_hello
