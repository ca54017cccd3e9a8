! Save a Fortran array and a counter through module tk_ckpt, restore them into fresh
! variables and compare bit for bit; check the step's description and two error paths.
! Argument: the checkpoint directory. It may be reused: each run saves the steps after
! the newest, and retention keeps the last two.
program ckpt_fortran_test
  use tk_ckpt
  implicit none
  integer, parameter :: n1 = 3, n2 = 4
  real(c_float), target :: field(n1, n2), restored(n1, n2)
  integer(c_int64_t), target :: counter, restored_counter
  integer(c_int64_t), target :: field_shape(2), wrong_shape(2)
  character(kind=c_char, len=16), target :: field_name, counter_name, f32, i64
  character(kind=c_char, len=16), target :: meta_key, meta_value
  type(c_ptr), target :: meta_keys(1), meta_values(1)
  type(tk_ckpt_options) :: options
  type(tk_ckpt_tensor) :: tensors(2), targets(2), described
  type(tk_ckpt_save_stats) :: stats
  type(tk_ckpt_step_summary) :: summary
  type(tk_ckpt_gc_report) :: gc
  type(c_ptr) :: ckpt, info, value
  character(len=4096) :: dir
  character(kind=c_char, len=256) :: problem
  integer(c_int64_t) :: step, handle, problems
  integer :: failures, i, j

  failures = 0
  call get_command_argument(1, dir)
  if (len_trim(dir) == 0) stop "usage: ckpt_fortran_test DIR"
  call check(tk_ckpt_version() == TK_CKPT_VERSION_CODE, "version")

  field_name = "field" // c_null_char
  counter_name = "counter" // c_null_char
  f32 = "F32" // c_null_char
  i64 = "I64" // c_null_char
  meta_key = "code" // c_null_char
  meta_value = "fortran" // c_null_char
  meta_keys(1) = c_loc(meta_key)
  meta_values(1) = c_loc(meta_value)
  field_shape = [int(n2, c_int64_t), int(n1, c_int64_t)]  ! row-major: reversed

  call tk_ckpt_options_init(options)
  options%keep_last = 2
  call check_rc(tk_ckpt_open(trim(dir) // c_null_char, options, ckpt), TK_CKPT_OK, "open")
  step = 0
  i = tk_ckpt_latest(ckpt, step)
  call check(i == TK_CKPT_OK .or. i == TK_CKPT_NONE, "latest")

  tensors(1) = tk_ckpt_tensor(c_loc(field_name), c_loc(f32), 2, c_loc(field_shape), &
                              c_loc(field), int(c_sizeof(field), c_int64_t))
  tensors(2) = tk_ckpt_tensor(c_loc(counter_name), c_loc(i64), 0, c_null_ptr, &
                              c_loc(counter), int(c_sizeof(counter), c_int64_t))

  ! A synchronous save, then an asynchronous one that copies: the arrays change at once.
  do j = 1, n2
    do i = 1, n1
      field(i, j) = real(i * 10 + j, c_float) / 7.0_c_float
    end do
  end do
  counter = step + 1
  call check_rc(tk_ckpt_save(ckpt, step + 1, tensors, 2_c_size_t, c_loc(meta_keys), &
                             c_loc(meta_values), 1_c_size_t, stats), TK_CKPT_OK, "save")
  call check(stats%step == step + 1 .and. stats%logical_bytes == 4 * n1 * n2 + 8, "save stats")

  field = field * 2
  counter = step + 2
  call check_rc(tk_ckpt_save_async(ckpt, step + 2, tensors, 2_c_size_t, c_null_ptr, c_null_ptr, &
                                   0_c_size_t, 0, handle), TK_CKPT_OK, "save_async")
  field = -1
  counter = -1
  call check_rc(tk_ckpt_wait(ckpt, handle, stats), TK_CKPT_OK, "wait")
  call check(stats%step == step + 2, "wait stats")
  call check_rc(tk_ckpt_save(ckpt, step + 2, tensors, 2_c_size_t, c_null_ptr, c_null_ptr, &
                             0_c_size_t), TK_CKPT_ERR_USAGE, "save of an old step")
  call check(len(tk_ckpt_error_message()) > 0, "error message")
  call check_rc(tk_ckpt_wait_all(ckpt), TK_CKPT_OK, "wait_all")

  ! Describe the newest step, restore it into fresh variables and compare.
  call check_rc(tk_ckpt_step_open(ckpt, step + 2, info), TK_CKPT_OK, "step_open")
  call check_rc(tk_ckpt_step_info(info, summary), TK_CKPT_OK, "step_info")
  call check(summary%tensors == 2, "tensor count")
  do i = 0, 1
    call check_rc(tk_ckpt_step_tensor(info, int(i, c_size_t), described), TK_CKPT_OK, "step_tensor")
    if (tk_ckpt_string(described%name) == "field") then
      call check(tk_ckpt_string(described%dtype) == "F32" .and. described%ndim == 2, "field dtype")
      call check(described%nbytes == 4 * n1 * n2, "field bytes")
    end if
  end do
  call tk_ckpt_step_close(info)
  call check_rc(tk_ckpt_step_open(ckpt, step + 1, info), TK_CKPT_OK, "step_open")
  call check_rc(tk_ckpt_step_metadata(info, "code" // c_null_char, value), TK_CKPT_OK, "metadata")
  call check(tk_ckpt_string(value) == "fortran", "metadata value")
  call tk_ckpt_step_close(info)

  targets = tensors
  targets(1)%data = c_loc(restored)
  targets(2)%data = c_loc(restored_counter)
  restored = 0
  restored_counter = 0
  call check_rc(tk_ckpt_restore_into(ckpt, step + 2, targets, 2_c_size_t), TK_CKPT_OK, "restore_into")
  do j = 1, n2
    do i = 1, n1
      call check(transfer(restored(i, j), 0_c_int32_t) == &
                 transfer(real(i * 10 + j, c_float) / 7.0_c_float * 2, 0_c_int32_t), "restored value")
    end do
  end do
  call check(restored_counter == step + 2, "restored counter")

  ! The dimensions in Fortran order are the wrong shape.
  wrong_shape = [int(n1, c_int64_t), int(n2, c_int64_t)]
  targets(1)%shape = c_loc(wrong_shape)
  call check_rc(tk_ckpt_restore_into(ckpt, step + 2, targets, 2_c_size_t), &
                TK_CKPT_ERR_USAGE, "restore_into with a wrong shape")

  call check_rc(tk_ckpt_verify(ckpt, step + 2, problems, problem, int(len(problem), c_size_t)), &
                TK_CKPT_OK, "verify")
  call check(problems == 0, "no problems")
  call check_rc(tk_ckpt_gc(ckpt, gc), TK_CKPT_OK, "gc")
  call check_rc(tk_ckpt_close(ckpt), TK_CKPT_OK, "close")

  if (failures > 0) then
    print '(a, i0, a)', "FAIL: ", failures, " failed checks"
    error stop 1
  end if
  print '(a)', "ok"

contains

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      print '(a, a)', "check failed: ", what
      failures = failures + 1
    end if
  end subroutine check

  subroutine check_rc(rc, expected, what)
    integer(c_int), intent(in) :: rc, expected
    character(len=*), intent(in) :: what
    if (rc /= expected) then
      print '(a, a, a, i0, a, i0, a, a)', "check failed: ", what, " returned ", rc, &
          ", expected ", expected, ": ", tk_ckpt_error_message()
      failures = failures + 1
    end if
  end subroutine check_rc

end program ckpt_fortran_test
