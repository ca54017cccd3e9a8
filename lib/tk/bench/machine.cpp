#include "tk/bench/machine.h"

#include <omp.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tk::bench {
namespace {

std::string read_text_file(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  const char* kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

// Value of the first "key : value" line whose key is `key`, if any.
std::string_view field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == key)
      return trim(line.substr(colon + 1));
  }
  return {};
}

std::string compiler_name() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

std::string parse_cpu_model(std::string_view cpuinfo) {
  for (std::string_view key : {"model name", "Model", "Hardware", "cpu"}) {
    std::string_view value = field(cpuinfo, key);
    if (!value.empty()) return std::string(value);
  }
  return {};
}

uint64_t parse_mem_total(std::string_view meminfo) {
  std::string value(field(meminfo, "MemTotal"));  // "24576000 kB"
  if (value.empty()) return 0;
  char* end = nullptr;
  unsigned long long kib = std::strtoull(value.c_str(), &end, 10);
  if (end == value.c_str() || std::string_view(end).find("kB") == std::string_view::npos) return 0;
  if (kib > UINT64_MAX / 1024) return 0;
  return static_cast<uint64_t>(kib) * 1024;
}

MachineInfo describe_machine() {
  MachineInfo m;
  m.cpu_model = parse_cpu_model(read_text_file("/proc/cpuinfo"));
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  m.logical_cpus = online > 0 ? static_cast<int>(online) : 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  m.usable_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : m.logical_cpus;
  m.omp_threads = omp_get_max_threads();
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) m.omp_wait = policy;
  else if (const char* spin = std::getenv("GOMP_SPINCOUNT")) m.omp_wait = std::string("spincount ") + spin;
  else m.omp_wait = "default";
  m.memory_bytes = parse_mem_total(read_text_file("/proc/meminfo"));
  if (m.memory_bytes == 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  }
  struct utsname u;
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  m.compiler = compiler_name();
  return m;
}

}  // namespace tk::bench
