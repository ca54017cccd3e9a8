#include "cli/signals.h"

#include <signal.h>
#include <unistd.h>

#include "tk/io/stream.h"

namespace tk::cli {

namespace {

// Only async-signal-safe calls here: unlink, sigaction, raise.
void remove_temporaries_and_die(int sig) {
  constexpr size_t kMax = 64;
  const char* paths[kMax];
  size_t n = io::pending_temp_paths(paths, kMax);
  for (size_t i = 0; i < n; ++i) ::unlink(paths[i]);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // The signal is blocked while its handler runs; it is delivered, with the default
  // action, as soon as the handler returns.
  ::raise(sig);
}

}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = remove_temporaries_and_die;
  sigemptyset(&sa.sa_mask);
  // Block the other terminating signals while cleaning up, so cleanup runs once.
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    // A signal ignored by the parent (nohup, background jobs) stays ignored.
    if (old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGPIPE, &ign, nullptr);
}

}  // namespace tk::cli
