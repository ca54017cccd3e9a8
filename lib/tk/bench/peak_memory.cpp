#include "tk/bench/peak_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>

namespace tk::bench {

bool reset_peak_rss() {
  // Writing "5" to clear_refs resets VmHWM (Linux 4.0 and later).
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = std::fputs("5", f) >= 0;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

uint64_t peak_rss_bytes() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "VmHWM: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found) return static_cast<uint64_t>(kib) * 1024;
  }
  struct rusage usage;
  std::memset(&usage, 0, sizeof usage);
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

}  // namespace tk::bench
