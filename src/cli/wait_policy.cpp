#include "cli/wait_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tk::cli {
namespace {

char passive_entry[] = "OMP_WAIT_POLICY=passive";
char** lent_slot = nullptr;  // the environment slot lent to passive_entry
char* lent_value = nullptr;  // what it held

bool names(const char* entry, const char* name) {
  size_t n = std::strlen(name);
  return std::strncmp(entry, name, n) == 0 && entry[n] == '=';
}

// Before the program's own constructors and static initialisers could read the
// environment, after every library's.
[[gnu::constructor(101)]] void restore_environment() {
  if (lent_slot == nullptr) return;
  *lent_slot = lent_value;
  lent_slot = nullptr;
  ::setenv("OMP_WAIT_POLICY", "passive", 0);
}

}  // namespace

void set_passive_waiting(int, char** argv, char** envp) {
  if (argv == nullptr || argv[0] == nullptr || envp == nullptr) return;
  char** underscore = nullptr;
  size_t n = 0;
  for (; envp[n] != nullptr; ++n) {
    if (names(envp[n], "OMP_WAIT_POLICY") || names(envp[n], "GOMP_SPINCOUNT")) return;
    if (names(envp[n], "_")) underscore = &envp[n];
  }
  if (underscore != nullptr) {
    lent_slot = underscore;
    lent_value = *underscore;
    *underscore = passive_entry;
    return;
  }
  // No allocation here: the C library is not initialised yet.
  constexpr size_t kMaxVariables = 4096;
  static char* env[kMaxVariables + 2];
  if (n > kMaxVariables) return;
  std::copy(envp, envp + n, env);
  env[n] = passive_entry;
  env[n + 1] = nullptr;
  ::execve("/proc/self/exe", argv, env);
  // Not executed again (no /proc, a seccomp policy): run on with libgomp's default.
}

}  // namespace tk::cli
