! Fortran interface to the tensorkit checkpoint engine: ISO_C_BINDING declarations of
! tk_ckpt.h (see there for what each call does). Link with libtkckpt.
!
! - Status codes, flags and structs are those of tk_ckpt.h. C's unsigned integers
!   (steps, byte counts, uint32 options) are declared as signed integers of the same
!   width; values below 2**63 (2**31) read the same.
! - Strings passed in must end with c_null_char: trim(name) // c_null_char.
!   Strings coming back are C pointers; tk_ckpt_string() copies one into a Fortran
!   string and tk_ckpt_error_message() returns the last error.
! - Tensors are row-major: a Fortran array a(n1, n2) is saved with shape [n2, n1]
!   (tk_ckpt_tensor%shape points to the dimensions in reverse order).
module tk_ckpt
  use, intrinsic :: iso_c_binding
  implicit none

  integer(c_int), parameter :: TK_CKPT_VERSION_MAJOR = 1
  integer(c_int), parameter :: TK_CKPT_VERSION_MINOR = 0
  integer(c_int), parameter :: TK_CKPT_VERSION_PATCH = 0
  ! TK_CKPT_VERSION of tk_ckpt.h (Fortran names ignore case, so it cannot share the
  ! function's name).
  integer(c_int), parameter :: TK_CKPT_VERSION_CODE = &
      TK_CKPT_VERSION_MAJOR * 10000 + TK_CKPT_VERSION_MINOR * 100 + TK_CKPT_VERSION_PATCH

  integer(c_int), parameter :: TK_CKPT_OK = 0
  integer(c_int), parameter :: TK_CKPT_NONE = -1
  integer(c_int), parameter :: TK_CKPT_ERR_RUNTIME = 1
  integer(c_int), parameter :: TK_CKPT_ERR_USAGE = 2
  integer(c_int), parameter :: TK_CKPT_ERR_INVALID_INPUT = 3
  integer(c_int), parameter :: TK_CKPT_ERR_IO = 4
  integer(c_int), parameter :: TK_CKPT_ERR_UNAVAILABLE = 5
  integer(c_int), parameter :: TK_CKPT_ERR_INTERNAL = 70

  integer(c_int32_t), parameter :: TK_CKPT_COMPRESSION_NONE = 0
  integer(c_int32_t), parameter :: TK_CKPT_COMPRESSION_LOSSLESS = 1

  integer(c_int), parameter :: TK_CKPT_BORROW = 1

  type, bind(c) :: tk_ckpt_options
    integer(c_int32_t) :: read_only
    type(c_ptr) :: durable_dir
    integer(c_int32_t) :: keep_last
    integer(c_int32_t) :: keep_every
    integer(c_int32_t) :: compression
    integer(c_int32_t) :: incremental
    integer(c_int32_t) :: full_every
    real(c_double) :: delta_max_ratio
    integer(c_int64_t) :: staging_limit
    integer(c_int64_t) :: shard_bytes
    integer(c_int32_t) :: threads
  end type tk_ckpt_options

  type, bind(c) :: tk_ckpt_tensor
    type(c_ptr) :: name = c_null_ptr
    type(c_ptr) :: dtype = c_null_ptr
    integer(c_int32_t) :: ndim = 0
    type(c_ptr) :: shape = c_null_ptr
    ! c_loc of the array: host memory or, in a CUDA build, device memory (tk_ckpt.h)
    type(c_ptr) :: data = c_null_ptr
    integer(c_int64_t) :: nbytes = 0
  end type tk_ckpt_tensor

  type, bind(c) :: tk_ckpt_save_stats
    integer(c_int64_t) :: step
    real(c_double) :: stall_seconds
    real(c_double) :: write_seconds
    real(c_double) :: commit_seconds
    integer(c_int64_t) :: logical_bytes
    integer(c_int64_t) :: written_bytes
    integer(c_int64_t) :: tensors_stored
    integer(c_int64_t) :: tensors_referenced
    integer(c_int64_t) :: tensors_delta
  end type tk_ckpt_save_stats

  type, bind(c) :: tk_ckpt_step_summary
    integer(c_int64_t) :: step
    integer(c_int64_t) :: tensors
    integer(c_int64_t) :: logical_bytes
    integer(c_int64_t) :: stored_bytes
    integer(c_int32_t) :: has_parent
    integer(c_int64_t) :: parent
    integer(c_int32_t) :: durable
    type(c_ptr) :: created
  end type tk_ckpt_step_summary

  type, bind(c) :: tk_ckpt_gc_report
    integer(c_int64_t) :: removed_steps
    integer(c_int64_t) :: removed_temp_dirs
    integer(c_int64_t) :: bytes_freed
  end type tk_ckpt_gc_report

  type, bind(c) :: tk_ckpt_flush_report
    integer(c_int32_t) :: has_latest_committed
    integer(c_int64_t) :: latest_committed
    integer(c_int32_t) :: has_latest_durable
    integer(c_int64_t) :: latest_durable
    integer(c_int64_t) :: pending
    real(c_double) :: lag_seconds
  end type tk_ckpt_flush_report

  interface
    function tk_ckpt_version() bind(c, name="tk_ckpt_version")
      import :: c_int
      integer(c_int) :: tk_ckpt_version
    end function

    function tk_ckpt_last_error() bind(c, name="tk_ckpt_last_error")
      import :: c_ptr
      type(c_ptr) :: tk_ckpt_last_error
    end function

    subroutine tk_ckpt_options_init(options) bind(c, name="tk_ckpt_options_init")
      import :: tk_ckpt_options
      type(tk_ckpt_options), intent(out) :: options
    end subroutine

    function tk_ckpt_open(dir, options, ckpt) bind(c, name="tk_ckpt_open")
      import :: c_int, c_char, c_ptr, tk_ckpt_options
      integer(c_int) :: tk_ckpt_open
      character(kind=c_char), intent(in) :: dir(*)
      type(tk_ckpt_options), intent(in) :: options
      type(c_ptr), intent(out) :: ckpt
    end function

    function tk_ckpt_close(ckpt) bind(c, name="tk_ckpt_close")
      import :: c_int, c_ptr
      integer(c_int) :: tk_ckpt_close
      type(c_ptr), value :: ckpt
    end function

    ! meta_keys, meta_values: c_null_ptr, or c_loc of arrays of c_ptr to NUL-terminated
    ! strings.
    function tk_ckpt_save_async(ckpt, step, tensors, count, meta_keys, &
        meta_values, meta_count, flags, handle) bind(c, name="tk_ckpt_save_async")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_ckpt_tensor
      integer(c_int) :: tk_ckpt_save_async
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_ckpt_tensor), intent(in) :: tensors(*)
      integer(c_size_t), value :: count
      type(c_ptr), value :: meta_keys, meta_values
      integer(c_size_t), value :: meta_count
      integer(c_int), value :: flags
      integer(c_int64_t), intent(out) :: handle
    end function

    function tk_ckpt_wait(ckpt, handle, stats) bind(c, name="tk_ckpt_wait")
      import :: c_int, c_ptr, c_int64_t, tk_ckpt_save_stats
      integer(c_int) :: tk_ckpt_wait
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: handle
      type(tk_ckpt_save_stats), intent(out), optional :: stats
    end function

    function tk_ckpt_save(ckpt, step, tensors, count, meta_keys, meta_values, &
        meta_count, stats) bind(c, name="tk_ckpt_save")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_ckpt_tensor, tk_ckpt_save_stats
      integer(c_int) :: tk_ckpt_save
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_ckpt_tensor), intent(in) :: tensors(*)
      integer(c_size_t), value :: count
      type(c_ptr), value :: meta_keys, meta_values
      integer(c_size_t), value :: meta_count
      type(tk_ckpt_save_stats), intent(out), optional :: stats
    end function

    function tk_ckpt_wait_all(ckpt) bind(c, name="tk_ckpt_wait_all")
      import :: c_int, c_ptr
      integer(c_int) :: tk_ckpt_wait_all
      type(c_ptr), value :: ckpt
    end function

    function tk_ckpt_latest(ckpt, step) bind(c, name="tk_ckpt_latest")
      import :: c_int, c_ptr, c_int64_t
      integer(c_int) :: tk_ckpt_latest
      type(c_ptr), value :: ckpt
      integer(c_int64_t), intent(out) :: step
    end function

    function tk_ckpt_list(ckpt, steps, capacity, count) bind(c, name="tk_ckpt_list")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      integer(c_int) :: tk_ckpt_list
      type(c_ptr), value :: ckpt
      integer(c_int64_t), intent(out) :: steps(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: count
    end function

    function tk_ckpt_step_open(ckpt, step, info) bind(c, name="tk_ckpt_step_open")
      import :: c_int, c_ptr, c_int64_t
      integer(c_int) :: tk_ckpt_step_open
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(c_ptr), intent(out) :: info
    end function

    subroutine tk_ckpt_step_close(info) bind(c, name="tk_ckpt_step_close")
      import :: c_ptr
      type(c_ptr), value :: info
    end subroutine

    function tk_ckpt_step_info(info, summary) bind(c, name="tk_ckpt_step_info")
      import :: c_int, c_ptr, tk_ckpt_step_summary
      integer(c_int) :: tk_ckpt_step_info
      type(c_ptr), value :: info
      type(tk_ckpt_step_summary), intent(out) :: summary
    end function

    function tk_ckpt_step_tensor(info, index, tensor) bind(c, name="tk_ckpt_step_tensor")
      import :: c_int, c_ptr, c_size_t, tk_ckpt_tensor
      integer(c_int) :: tk_ckpt_step_tensor
      type(c_ptr), value :: info
      integer(c_size_t), value :: index
      type(tk_ckpt_tensor), intent(out) :: tensor
    end function

    function tk_ckpt_step_metadata(info, key, value) bind(c, name="tk_ckpt_step_metadata")
      import :: c_int, c_ptr, c_char
      integer(c_int) :: tk_ckpt_step_metadata
      type(c_ptr), value :: info
      character(kind=c_char), intent(in) :: key(*)
      type(c_ptr), intent(out) :: value
    end function

    function tk_ckpt_restore_into(ckpt, step, targets, count) &
        bind(c, name="tk_ckpt_restore_into")
      import :: c_int, c_ptr, c_int64_t, c_size_t, tk_ckpt_tensor
      integer(c_int) :: tk_ckpt_restore_into
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      type(tk_ckpt_tensor), intent(in) :: targets(*)
      integer(c_size_t), value :: count
    end function

    function tk_ckpt_verify(ckpt, step, problems, first_problem, capacity) &
        bind(c, name="tk_ckpt_verify")
      import :: c_int, c_ptr, c_int64_t, c_char, c_size_t
      integer(c_int) :: tk_ckpt_verify
      type(c_ptr), value :: ckpt
      integer(c_int64_t), value :: step
      integer(c_int64_t), intent(out) :: problems
      character(kind=c_char), intent(out) :: first_problem(*)
      integer(c_size_t), value :: capacity
    end function

    function tk_ckpt_gc(ckpt, report) bind(c, name="tk_ckpt_gc")
      import :: c_int, c_ptr, tk_ckpt_gc_report
      integer(c_int) :: tk_ckpt_gc
      type(c_ptr), value :: ckpt
      type(tk_ckpt_gc_report), intent(out), optional :: report
    end function

    function tk_ckpt_flush_status(ckpt, report) bind(c, name="tk_ckpt_flush_status")
      import :: c_int, c_ptr, tk_ckpt_flush_report
      integer(c_int) :: tk_ckpt_flush_status
      type(c_ptr), value :: ckpt
      type(tk_ckpt_flush_report), intent(out) :: report
    end function
  end interface

contains

  ! Copy the NUL-terminated C string at `ptr` into a Fortran string ("" for NULL).
  function tk_ckpt_string(ptr) result(text)
    type(c_ptr), intent(in) :: ptr
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    interface
      function c_strlen(s) bind(c, name="strlen")
        import :: c_size_t, c_ptr
        integer(c_size_t) :: c_strlen
        type(c_ptr), value :: s
      end function
    end interface
    if (.not. c_associated(ptr)) then
      text = ""
      return
    end if
    n = int(c_strlen(ptr))
    call c_f_pointer(ptr, chars, [n])
    allocate(character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function tk_ckpt_string

  ! The calling thread's last error message.
  function tk_ckpt_error_message() result(text)
    character(len=:), allocatable :: text
    text = tk_ckpt_string(tk_ckpt_last_error())
  end function tk_ckpt_error_message

end module tk_ckpt
