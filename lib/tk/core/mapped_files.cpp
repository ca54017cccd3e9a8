#include "tk/core/mapped_files.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tk/core/error.h"

namespace tk {

namespace {

// The handler reads the table without locks: a slot is in use while `begin` is non-zero,
// and `end` is written before `begin` is published. Registering and releasing take the
// mutex, which also guards the paths (the handler never reads them).
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> shrunk{false};
};

// A sharded model maps one file per shard, a restore one per checkpoint shard: 4096
// mappings at once is far more than either needs. Past it, files are read, not mapped.
constexpr size_t kSlots = 4096;

std::array<Slot, kSlots> g_slots;
struct SlotFile {
  std::string path;
  uint64_t device = 0;
  uint64_t inode = 0;
};
std::array<SlotFile, kSlots> g_files;
std::mutex g_mutex;
std::vector<std::string> g_shrunk_released;  // shrunk files no longer mapped, not yet reported
std::vector<std::string> g_shorter_released;  // no longer mapped, shorter then than mapped
std::once_flag g_install_once;
struct sigaction g_previous {};
uintptr_t g_page_mask = 0;

// Async-signal-safe: atomics, mmap and sigaction only.
void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin) continue;
    const uintptr_t end = s.end.load(std::memory_order_relaxed);
    if (addr >= end) continue;
    // Every page from the faulting one to the end lies past the file's new end: read
    // them as zeros from now on. The faulting access is retried when the handler returns.
    const uintptr_t page = addr & g_page_mask;
    void* p = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) break;
    s.shrunk.store(true, std::memory_order_release);
    return;
  }
  // Not a registered mapping: what would have happened without this handler.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);  // the access faults again, and the default action ends the process
}

void install_handler() {
  g_page_mask = ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous);
}

Error shrunk_error(const std::string& path) {
  return io_error("the file was truncated while it was being read", path);
}

// True when the file mapped in slot `i` (not one renamed over its name since) is now
// shorter than its mapping.
bool now_shorter(size_t i) {
  const SlotFile& f = g_files[i];
  const Slot& s = g_slots[i];
  struct stat st;
  return ::stat(f.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == f.device &&
         static_cast<uint64_t>(st.st_ino) == f.inode &&
         static_cast<uintptr_t>(st.st_size) < s.end.load() - s.begin.load();
}

}  // namespace

int mapped_files_register(const void* begin, size_t bytes, const std::string& path, uint64_t device,
                          uint64_t inode) {
  std::call_once(g_install_once, install_handler);
  const auto b = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.begin.load(std::memory_order_relaxed) != 0) continue;
    g_files[i] = {path, device, inode};
    s.shrunk.store(false, std::memory_order_relaxed);
    s.end.store(b + bytes, std::memory_order_relaxed);
    s.begin.store(b, std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

void mapped_files_release(int slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t i = static_cast<size_t>(slot);
  Slot& s = g_slots[i];
  // A page the kernel read for us (write(2) from the mapping) fails with EFAULT and
  // raises no SIGBUS: what failed then is told by the file's size (kept for a failure).
  // Only the first is reported: a few are kept, however many files shrink.
  constexpr size_t kKept = 8;
  if (s.shrunk.load(std::memory_order_acquire)) {
    if (g_shrunk_released.size() < kKept) g_shrunk_released.push_back(std::move(g_files[i].path));
  } else if (g_shorter_released.size() < kKept && now_shorter(i)) {
    g_shorter_released.push_back(std::move(g_files[i].path));
  }
  s.begin.store(0, std::memory_order_release);
  g_files[i] = {};
}

void check_mapped_files(bool after_failure) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < kSlots; ++i) {
    const Slot& s = g_slots[i];
    if (s.begin.load(std::memory_order_acquire) == 0) continue;
    if (s.shrunk.load(std::memory_order_acquire) || (after_failure && now_shorter(i)))
      throw shrunk_error(g_files[i].path);
  }
  std::vector<std::string>* lists[] = {&g_shrunk_released, after_failure ? &g_shorter_released : nullptr};
  for (std::vector<std::string>* list : lists) {
    if (!list || list->empty()) continue;
    std::string path = std::move(list->front());
    list->clear();
    throw shrunk_error(path);
  }
}

}  // namespace tk
