! A Fortran program across sites (tests/integration/test_fortran.py), in
! the `use mpi` style, or the `mpif.h` style when built with
! -DF_CHECK_MPIF_H: point-to-point, bcast, allreduce (also in place),
! alltoall and a communicator split, every value checked exactly, and
! the predefined attributes through MPICH's Fortran attribute bindings,
! which libgridcoll replaces (libgridcoll/runtime/gc_fortran.c), against the
! deprecated MPI_Attr_get.  Each rank prints the attribute values (-1:
! not set), then "f_check ok"; any wrong value prints FAIL and aborts.
program f_check
#ifdef F_CHECK_MPIF_H
  implicit none
  include 'mpif.h'
#else
  use mpi
  implicit none
#endif
  integer, parameter :: n = 1000, m = 3
  integer :: ierr, rank, size

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call point_to_point()
  call collectives()
  call split()
  call attributes()
  print '(a)', 'f_check ok'
  call MPI_Finalize(ierr)

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,i0,a,a)', 'FAIL rank ', rank, ': ', what
    call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  end subroutine fail

  ! The value rank r puts at index i: distinct per rank and index.
  integer function pattern(r, i)
    integer, intent(in) :: r, i
    pattern = r * 65536 + i
  end function pattern

  subroutine point_to_point()
    integer :: out(n), in(n), i, left, right, count, request
    integer :: status(MPI_STATUS_SIZE)
    double precision :: dout(n), din(n)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)
    out = [(pattern(rank, i), i = 1, n)]
    in = -1
    call MPI_Isend(out, n, MPI_INTEGER, right, 7, MPI_COMM_WORLD, request, &
                   ierr)
    call MPI_Recv(in, n, MPI_INTEGER, left, 7, MPI_COMM_WORLD, status, ierr)
    call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    if (status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 7 .or. &
        count /= n) call fail('MPI_Recv status')
    if (any(in /= [(pattern(left, i), i = 1, n)])) call fail('MPI_Recv data')
    dout = [(pattern(rank, i) + 0.25d0, i = 1, n)]
    din = -1
    call MPI_Sendrecv(dout, n, MPI_DOUBLE_PRECISION, left, 8, din, n, &
                      MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 8, &
                      MPI_COMM_WORLD, status, ierr)
    if (status(MPI_SOURCE) /= right) call fail('MPI_Sendrecv source')
    if (any(din /= [(pattern(right, i) + 0.25d0, i = 1, n)])) &
        call fail('MPI_Sendrecv data')
  end subroutine point_to_point

  subroutine collectives()
    integer :: buf(n), sums(n), maxes(n), i, j, k, root
    integer :: sendbuf(m * size), recvbuf(m * size)
    double precision :: inplace(n)
    root = size - 1
    buf = -1
    if (rank == root) buf = [(pattern(root, i), i = 1, n)]
    call MPI_Bcast(buf, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (any(buf /= [(pattern(root, i), i = 1, n)])) call fail('MPI_Bcast')

    buf = [(rank * 1000 + i, i = 1, n)]
    call MPI_Allreduce(buf, sums, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                       ierr)
    if (any(sums /= [(1000 * (size * (size - 1) / 2) + size * i, &
                      i = 1, n)])) call fail('MPI_Allreduce MPI_SUM')
    call MPI_Allreduce(buf, maxes, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, &
                       ierr)
    if (any(maxes /= [((size - 1) * 1000 + i, i = 1, n)])) &
        call fail('MPI_Allreduce MPI_MAX')
    ! MPICH's binding turns Fortran's MPI_IN_PLACE into C's.
    inplace = [(rank + i * 0.5d0, i = 1, n)]
    call MPI_Allreduce(MPI_IN_PLACE, inplace, n, MPI_DOUBLE_PRECISION, &
                       MPI_SUM, MPI_COMM_WORLD, ierr)
    if (any(inplace /= [(size * (size - 1) / 2 + size * i * 0.5d0, &
                         i = 1, n)])) call fail('MPI_Allreduce MPI_IN_PLACE')

    ! Block j goes to rank j; block j received comes from rank j.
    sendbuf = [((rank * 10000 + j * 100 + k, k = 1, m), j = 0, size - 1)]
    recvbuf = -1
    call MPI_Alltoall(sendbuf, m, MPI_INTEGER, recvbuf, m, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
    if (any(recvbuf /= [((j * 10000 + rank * 100 + k, k = 1, m), &
                         j = 0, size - 1)])) call fail('MPI_Alltoall')
  end subroutine collectives

  ! Even and odd world ranks, each part ordered by descending world rank:
  ! on 2,1,2 and 1,3 both parts span sites.
  subroutine split()
    integer :: comm, sub_rank, sub_size, want_rank, want_size, r
    integer :: mine(1), total(1), root_rank(1)
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), size - rank, comm, &
                        ierr)
    call MPI_Comm_rank(comm, sub_rank, ierr)
    call MPI_Comm_size(comm, sub_size, ierr)
    want_size = count([(mod(r, 2) == mod(rank, 2), r = 0, size - 1)])
    want_rank = count([(mod(r, 2) == mod(rank, 2) .and. r > rank, &
                        r = 0, size - 1)])
    if (sub_size /= want_size .or. sub_rank /= want_rank) &
        call fail('MPI_Comm_split rank or size')
    mine = rank
    call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
    if (total(1) /= sum([(r, r = mod(rank, 2), size - 1, 2)])) &
        call fail('MPI_Allreduce on the split communicator')
    root_rank = rank
    call MPI_Bcast(root_rank, 1, MPI_INTEGER, 0, comm, ierr)
    if (root_rank(1) /= size - 1 - mod(size - 1 - mod(rank, 2), 2)) &
        call fail('MPI_Bcast on the split communicator')
    call MPI_Comm_free(comm, ierr)
  end subroutine split

  subroutine attributes()
    integer(kind=MPI_ADDRESS_KIND) :: universe, appnum, wtime_global, tag_ub
    integer(kind=MPI_ADDRESS_KIND) :: value, extra
    integer :: old_universe, old_tag_ub, keyval
    logical :: flag
    call get(MPI_UNIVERSE_SIZE, universe)
    call get(MPI_APPNUM, appnum)
    call get(MPI_WTIME_IS_GLOBAL, wtime_global)
    call get(MPI_TAG_UB, tag_ub)
    ! The deprecated MPI-1 call, with INTEGER values.
    call MPI_Attr_get(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, old_universe, flag, &
                      ierr)
    if (.not. flag) old_universe = -1
    if (old_universe /= universe) &
        call fail('MPI_Attr_get MPI_UNIVERSE_SIZE')
    call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, old_tag_ub, flag, ierr)
    if (.not. flag) old_tag_ub = -1
    if (old_tag_ub /= tag_ub) &
        call fail('MPI_Attr_get MPI_TAG_UB')
    ! A user attribute still goes through MPICH's binding.
    extra = 0
    call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &
                                MPI_COMM_NULL_DELETE_FN, keyval, extra, ierr)
    call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &
                           int(rank, MPI_ADDRESS_KIND) * 2_8**40 + 12345, ierr)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag, ierr)
    if (.not. flag .or. value /= int(rank, MPI_ADDRESS_KIND) * 2_8**40 + &
        12345) call fail('MPI_Comm_get_attr of a user keyval')
    call MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval, ierr)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag, ierr)
    if (flag) call fail('MPI_Comm_get_attr of a deleted attribute')
    call MPI_Comm_free_keyval(keyval, ierr)
    print '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0)', 'rank ', rank, ' of ', size, &
        ' universe=', universe, ' appnum=', appnum, ' wtime_is_global=', &
        wtime_global, ' tag_ub=', tag_ub
  end subroutine attributes

  ! -1 for an attribute that is not set (MPICH alone leaves
  ! MPI_UNIVERSE_SIZE unset under its mpiexec).
  subroutine get(keyval, value)
    integer, intent(in) :: keyval
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: value
    logical :: flag
    call MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag, ierr)
    if (.not. flag) value = -1
  end subroutine get

end program f_check
