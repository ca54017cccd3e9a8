! The distributed C API from Fortran through module tk_ckpt_dist, under mpirun: each
! rank saves its columns of a global (5, 3*size) array (a Fortran column is a row of
! the row-major tensor), then every rank restores the whole array and compares it bit
! for bit. Argument: a fresh checkpoint directory shared by the ranks.
program dckpt_fortran_test
  use mpi
  use tk_ckpt
  use tk_ckpt_dist
  implicit none
  integer, parameter :: n1 = 5, per = 3
  real(c_double), allocatable, target :: mine(:, :), whole(:, :)
  integer(c_int64_t), target :: global(2), offsets(2), box(2)
  character(kind=c_char, len=8), target :: name, f64
  type(tk_dckpt_slice) :: slices(1)
  type(tk_dckpt_stats) :: stats
  type(c_ptr) :: ckpt
  character(len=4096) :: dir
  integer(c_int64_t) :: step
  integer :: ierr, rank, nranks, i, j, failures, total

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  failures = 0
  call get_command_argument(1, dir)
  allocate(mine(n1, per), whole(n1, per * nranks))
  do j = 1, per
    do i = 1, n1
      mine(i, j) = real(i + 100 * (rank * per + j), c_double)
    end do
  end do
  name = "field" // c_null_char
  f64 = "F64" // c_null_char
  global = [int(per * nranks, c_int64_t), int(n1, c_int64_t)]
  offsets = [int(rank * per, c_int64_t), 0_c_int64_t]
  box = [int(per, c_int64_t), int(n1, c_int64_t)]
  slices(1) = tk_dckpt_slice(c_loc(name), c_loc(f64), 2, c_loc(global), c_loc(offsets), c_loc(box), &
                             c_loc(mine), int(size(mine) * 8, c_int64_t), 0)

  call check(tk_dckpt_open(trim(dir) // c_null_char, MPI_COMM_WORLD, ckpt=ckpt) == TK_CKPT_OK, "open")
  ! A lazy save: once the snapshot is taken the field may change; the step keeps it as saved.
  call check(tk_dckpt_save_lazy(ckpt, 3_c_int64_t, slices, 1_c_size_t) == TK_CKPT_OK, "save_lazy")
  call check(tk_dckpt_snapshot_wait(ckpt) == TK_CKPT_OK, "snapshot_wait")
  mine = -7
  call check(tk_dckpt_wait(ckpt, stats) == TK_CKPT_OK, "wait")
  call check(stats%step == 3, "stats step")
  call check(tk_dckpt_latest(ckpt, step) == TK_CKPT_OK .and. step == 3, "latest")

  whole = -1
  slices(1)%offsets = c_null_ptr
  slices(1)%shape = c_null_ptr
  slices(1)%data = c_loc(whole)
  slices(1)%nbytes = int(size(whole) * 8, c_int64_t)
  call check(tk_dckpt_restore(ckpt, 3_c_int64_t, slices, 1_c_size_t) == TK_CKPT_OK, "restore")
  do j = 1, per * nranks
    do i = 1, n1
      if (abs(whole(i, j) - real(i + 100 * j, c_double)) > 0) failures = failures + 1
    end do
  end do
  call check(tk_dckpt_close(ckpt) == TK_CKPT_OK, "close")
  deallocate(mine, whole)

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0)', "failures: ", total
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, i0, a, a, a, a)', "rank ", rank, ": ", what, " failed: ", tk_ckpt_error_message()
      failures = failures + 1
    end if
  end subroutine check

end program dckpt_fortran_test
