! Opens, read-only, the checkpoint directory ckpt_c wrote and prints its newest step.
! Usage: ckpt_fortran DIR. Exit code 0 when the library answers as the module declares.
program ckpt_fortran
  use tk_ckpt
  implicit none
  type(tk_ckpt_options) :: options
  type(c_ptr) :: ckpt
  character(len=4096) :: dir
  integer(c_int64_t) :: step

  call get_command_argument(1, dir)
  if (len_trim(dir) == 0) stop "usage: ckpt_fortran DIR"
  if (tk_ckpt_version() /= TK_CKPT_VERSION_CODE) error stop "ckpt_fortran: version mismatch"
  call tk_ckpt_options_init(options)
  options%read_only = 1
  if (tk_ckpt_open(trim(dir) // c_null_char, options, ckpt) /= TK_CKPT_OK) then
    print '(a)', "ckpt_fortran: open: " // tk_ckpt_error_message()
    error stop 1
  end if
  if (tk_ckpt_latest(ckpt, step) /= TK_CKPT_OK) error stop "ckpt_fortran: no step"
  if (tk_ckpt_close(ckpt) /= TK_CKPT_OK) error stop "ckpt_fortran: close"
  print '(a, i0)', "fortran: newest step ", step
end program ckpt_fortran
