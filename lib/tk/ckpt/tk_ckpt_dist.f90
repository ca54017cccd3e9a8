! Fortran interface to the distributed checkpointer: ISO_C_BINDING declarations of
! tk_ckpt_dist.h (see there for what each call does). Use together with module
! tk_ckpt (status codes, tk_ckpt_error_message); link with libtkckpt.
!
! - The communicator is the Fortran handle itself: an INTEGER (use mpi) or
!   comm%MPI_VAL (use mpi_f08).
! - Shapes, offsets and boxes are row-major: a Fortran array a(n1, n2) that holds rows
!   r0+1..r0+k of a global (N1, N2) array in its first index is the box with offsets
!   [0, r0] and shape [n2, k] of the global shape [N2, N1] (dimensions reversed).
module tk_ckpt_dist
  use, intrinsic :: iso_c_binding
  implicit none

  type, bind(c) :: tk_dckpt_options
    real(c_double) :: timeout_seconds
    integer(c_int32_t) :: threads
    type(c_ptr) :: local_dir = c_null_ptr  ! c_loc of a NUL-terminated character array
    integer(c_int32_t) :: keep_last = 0
    integer(c_int64_t) :: staging_bytes = 0
  end type tk_dckpt_options

  type, bind(c) :: tk_dckpt_slice
    type(c_ptr) :: name = c_null_ptr
    type(c_ptr) :: dtype = c_null_ptr
    integer(c_int32_t) :: ndim = 0
    type(c_ptr) :: global_shape = c_null_ptr
    type(c_ptr) :: offsets = c_null_ptr
    type(c_ptr) :: shape = c_null_ptr
    type(c_ptr) :: data = c_null_ptr
    integer(c_int64_t) :: nbytes = 0
    integer(c_int32_t) :: replicated = 0
  end type tk_dckpt_slice

  type, bind(c) :: tk_dckpt_stats
    integer(c_int64_t) :: step
    real(c_double) :: stall_seconds
    real(c_double) :: write_seconds
    real(c_double) :: commit_seconds
    integer(c_int64_t) :: written_bytes
    integer(c_int64_t) :: step_bytes
  end type tk_dckpt_stats

  interface
    subroutine tk_dckpt_options_init(options) bind(c, name="tk_dckpt_options_init")
      import :: tk_dckpt_options
      type(tk_dckpt_options), intent(out) :: options
    end subroutine

    function tk_dckpt_open(dir, comm, options, ckpt) bind(c, name="tk_dckpt_open")
      import :: c_int, c_char, c_ptr, tk_dckpt_options
      integer(c_int) :: tk_dckpt_open
      character(kind=c_char), intent(in) :: dir(*)
      integer(c_int), value :: comm
      type(tk_dckpt_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: ckpt
    end function

    function tk_dckpt_save_async(ckpt, step, slices, count) bind(c, name="tk_dckpt_save_async")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_dckpt_slice
      integer(c_int) :: tk_dckpt_save_async
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_dckpt_slice), intent(in) :: slices(*)
      integer(c_size_t), value :: count
    end function

    function tk_dckpt_save_lazy(ckpt, step, slices, count) bind(c, name="tk_dckpt_save_lazy")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_dckpt_slice
      integer(c_int) :: tk_dckpt_save_lazy
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_dckpt_slice), intent(in) :: slices(*)
      integer(c_size_t), value :: count
    end function

    function tk_dckpt_snapshot_wait(ckpt) bind(c, name="tk_dckpt_snapshot_wait")
      import :: c_int, c_ptr
      integer(c_int) :: tk_dckpt_snapshot_wait
      type(c_ptr), value :: ckpt
    end function

    function tk_dckpt_wait(ckpt, stats) bind(c, name="tk_dckpt_wait")
      import :: c_int, c_ptr, tk_dckpt_stats
      integer(c_int) :: tk_dckpt_wait
      type(c_ptr), value :: ckpt
      type(tk_dckpt_stats), intent(out), optional :: stats
    end function

    function tk_dckpt_flush(ckpt) bind(c, name="tk_dckpt_flush")
      import :: c_int, c_ptr
      integer(c_int) :: tk_dckpt_flush
      type(c_ptr), value :: ckpt
    end function

    function tk_dckpt_flush_status(ckpt, status) bind(c, name="tk_dckpt_flush_status")
      use tk_ckpt, only: tk_ckpt_flush_report
      import :: c_int, c_ptr
      integer(c_int) :: tk_dckpt_flush_status
      type(c_ptr), value :: ckpt
      type(tk_ckpt_flush_report), intent(out) :: status
    end function

    function tk_dckpt_step_lag(ckpt, step, seconds) bind(c, name="tk_dckpt_step_lag")
      import :: c_int, c_ptr, c_int64_t, c_double
      integer(c_int) :: tk_dckpt_step_lag
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      real(c_double), intent(out) :: seconds
    end function

    function tk_dckpt_latest(ckpt, step) bind(c, name="tk_dckpt_latest")
      import :: c_int, c_ptr, c_int64_t
      integer(c_int) :: tk_dckpt_latest
      type(c_ptr), value :: ckpt
      integer(c_int64_t), intent(out) :: step
    end function

    function tk_dckpt_step_world_size(ckpt, step, world_size) bind(c, name="tk_dckpt_step_world_size")
      import :: c_int, c_ptr, c_int64_t
      integer(c_int) :: tk_dckpt_step_world_size
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      integer(c_int64_t), intent(out) :: world_size
    end function

    function tk_dckpt_restore(ckpt, step, wanted, count) bind(c, name="tk_dckpt_restore")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_dckpt_slice
      integer(c_int) :: tk_dckpt_restore
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_dckpt_slice), intent(in) :: wanted(*)
      integer(c_size_t), value :: count
    end function

    function tk_dckpt_close(ckpt) bind(c, name="tk_dckpt_close")
      import :: c_int, c_ptr
      integer(c_int) :: tk_dckpt_close
      type(c_ptr), value :: ckpt
    end function
  end interface
end module tk_ckpt_dist
