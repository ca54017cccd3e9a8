// Facts about, and the closing of, the process's standard streams.
#pragma once

namespace tk::cli {

bool stdin_is_terminal();
bool stdout_is_terminal();
bool stderr_is_terminal();

// True when standard output is a pipe or socket whose reading end has been closed, so
// that writing to it fails with EPIPE.
bool stdout_pipe_broken();

// Flush and close standard output, so that a failure to write buffered output (a full
// disk behind a redirect) is reported: throws kIo "failed to write" naming "<stdout>".
// Call once, at the end of a successful run.
void close_stdout();

}  // namespace tk::cli
