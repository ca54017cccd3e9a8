#include "cli/std_streams.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "tk/core/error.h"

namespace tk::cli {

bool stdin_is_terminal() { return ::isatty(STDIN_FILENO) == 1; }
bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

namespace {

// Set when close_stdout's final flush found the pipe without readers: the descriptor is
// closed by then, so the check below can no longer ask it.
bool g_flush_hit_broken_pipe = false;

}  // namespace

bool stdout_pipe_broken() {
  if (g_flush_hit_broken_pipe) return true;
  struct stat st;
  if (::fstat(STDOUT_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return false;
  // The writing end of a pipe without readers polls as POLLERR.
  struct pollfd p {STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

void close_stdout() {
  errno = 0;
  bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  int err = errno;
  // Close the descriptor itself: a failed close (NFS, a full disk) is an I/O error too.
  // EBADF: stdout was closed by the caller (`>&-`) and nothing was written to it.
  if (std::fclose(stdout) != 0 && !failed && errno != EBADF) {
    failed = true;
    err = errno;
  }
  g_flush_hit_broken_pipe = failed && err == EPIPE;
  if (failed) throw errno_error("failed to write", "<stdout>", err != 0 ? err : EIO);
}

}  // namespace tk::cli
