// Signal handling shared by every tool.
//
// SIGINT, SIGTERM and SIGHUP remove the temporary files of outputs not yet committed
// (tk::io::pending_temp_paths) and then terminate the process by the same signal, so a
// killed run leaves neither a partial output nor a stray temporary, and the parent sees
// the usual "killed by signal" status.
//
// SIGPIPE is ignored: a write to a closed pipe fails with EPIPE instead, the output
// stream throws, and Tool::run ends the process quietly with exit status 141
// (128 + SIGPIPE, what a shell reports for a process killed by SIGPIPE), after the
// normal cleanup. A consumer such as `head` closing the pipe early is not an error
// worth a message, but a pipeline with `set -o pipefail` still sees that the output was
// cut short.
#pragma once

namespace tk::cli {

inline constexpr int kExitBrokenPipe = 141;

// Install the handlers above. Idempotent.
void install_signal_handlers();

}  // namespace tk::cli
