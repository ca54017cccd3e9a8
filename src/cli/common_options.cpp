#include "cli/common_options.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>

#include "tk/linalg/blas.h"

namespace tk::cli {
namespace {

// OpenBLAS starts its worker threads while the program loads, and an idle worker spins
// (sched_yield) for about 2^28 cycles before it sleeps. The tools do all their parallel
// work in OpenMP loops that call BLAS on one thread (tk/decomp/modes.h), so those
// workers only take the cores from the loops: a 0.1 s Tucker run on two threads took
// 1.3x as long as on one. OpenBLAS reads OPENBLAS_NUM_THREADS in its initialiser, which
// runs before any constructor of the program. The executable's .preinit_array runs
// earlier still, but before the C library's own setup, so it cannot call setenv: it
// edits the environment block in place instead. An OPENBLAS_NUM_THREADS entry gets the
// value 1; without one, an entry that no library reads while loading (PATH, HOME or
// PWD, long enough) is overwritten with OPENBLAS_NUM_THREADS=1. A constructor, which
// runs after the libraries' initialisers and before main, restores the bytes, so the
// program and its child processes see the environment they were given. Should neither
// edit be possible, apply_common_options still keeps OpenBLAS to one thread from main on.
constexpr char kOneOpenblasThread[] = "OPENBLAS_NUM_THREADS=1";
constexpr size_t kEditBytes = sizeof(kOneOpenblasThread);  // with the terminating NUL
char* edited_entry = nullptr;
size_t edited_bytes = 0;
char saved_entry_bytes[kEditBytes];

// Overwrite the first `bytes` bytes of `entry` (bytes <= kEditBytes), keeping them.
void edit_entry(char* entry, const char* replacement, size_t bytes) {
  edited_entry = entry;
  edited_bytes = bytes;
  std::memcpy(saved_entry_bytes, entry, bytes);
  std::memcpy(entry, replacement, bytes);
}

void start_openblas_single_threaded(int, char**, char** envp) {
  constexpr size_t kNameBytes = sizeof(kOneOpenblasThread) - 2;  // "OPENBLAS_NUM_THREADS="
  for (char** e = envp; e && *e; ++e) {
    if (std::strncmp(*e, kOneOpenblasThread, kNameBytes) != 0) continue;
    if ((*e)[kNameBytes] != '\0') edit_entry(*e + kNameBytes, "1", 2);  // value "1"
    return;
  }
  for (const char* name : {"PATH=", "HOME=", "PWD="}) {
    for (char** e = envp; e && *e; ++e) {
      if (std::strncmp(*e, name, std::strlen(name)) == 0 && std::strlen(*e) + 1 >= kEditBytes) {
        edit_entry(*e, kOneOpenblasThread, kEditBytes);
        return;
      }
    }
  }
}

__attribute__((section(".preinit_array"), used)) void (*const preinit_openblas_threads)(int, char**, char**) =
    start_openblas_single_threaded;

// Priority 101: before the program's other constructors and static initialisers.
__attribute__((constructor(101))) void restore_environment_entry() {
  if (edited_entry == nullptr) return;
  std::memcpy(edited_entry, saved_entry_bytes, edited_bytes);
  edited_entry = nullptr;
}

}  // namespace

void add_common_options(CLI::App& app, CommonOptions& o) {
  auto append_to = [](std::vector<std::string>& dst) {
    return [&dst](const std::vector<std::string>& values) { dst.insert(dst.end(), values.begin(), values.end()); };
  };
  app.add_option_function<std::vector<std::string>>("-t,--tensors", append_to(o.tensors),
                                                     "Only the tensors whose name matches GLOB (* and ?); the others are left out of the output. Repeatable")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  app.add_option_function<std::vector<std::string>>("--exclude", append_to(o.exclude),
                                                     "Leave out tensors whose name matches GLOB; repeatable")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  app.add_option_function<int>("-j,--threads", [&o](int n) { o.threads = n; }, "Threads to use (default: OMP_NUM_THREADS or all cores)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  app.add_option_function<std::string>("--device", [&o](const std::string& d) { o.device_text = d; },
                                       "Compute device: cpu, cuda[:N] or auto (default)")
      ->type_name("DEV");
  app.add_option_function<uint64_t>("--seed", [&o](uint64_t s) { o.seed = s; }, "Seed for randomised algorithms")
      ->type_name("N");
  app.add_option_function<std::string>("--json", [&o](const std::string& p) { o.json = p; },
                                       "Write a JSON report to PATH ('-': stdout, replacing the text report)")
      ->type_name("PATH|-");
  app.add_flag_function("-q,--quiet", [&o](int64_t) { o.quiet = true; }, "No summaries on stderr");
  app.add_flag_function("-v,--verbose", [&o](int64_t n) { o.verbose += static_cast<int>(n); },
                        "More detail on stderr; repeatable");
  app.add_flag_function("--progress,!--no-progress", [&o](int64_t n) { o.progress = n > 0; },
                        "Show progress on stderr (default: when stderr is a terminal)");
}

void apply_common_options(CommonOptions& o, bool stderr_is_terminal) {
  o.device = device_parse(o.device_text);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  linalg::set_blas_threads(1);  // OpenMP is the only pool (see above)
  o.show_progress = o.progress.value_or(stderr_is_terminal && !o.quiet);
}

}  // namespace tk::cli
