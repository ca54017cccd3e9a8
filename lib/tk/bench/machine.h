// Description of the machine a benchmark ran on, so that every reported figure carries
// its context (benchmarks are only comparable on the same machine).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tk::bench {

struct MachineInfo {
  std::string cpu_model;     // "AMD EPYC 7763 64-Core Processor"; "unknown" if not found
  int logical_cpus = 0;      // online logical processors
  int usable_cpus = 0;       // processors this process may run on (affinity mask)
  int omp_threads = 0;       // OpenMP threads a parallel region gets (omp_get_max_threads)
  std::string omp_wait;      // OMP_WAIT_POLICY as set ("passive", the tools' own), else
                             // "spincount N" (GOMP_SPINCOUNT), else "default"
  uint64_t memory_bytes = 0; // total physical memory; 0 if unknown
  std::string kernel;        // "Linux 6.1.0-18-amd64"
  std::string compiler;      // compiler that built the library, e.g. "GCC 12.2.0"
};

// Describe the machine this process runs on. Never throws: missing facts stay at their
// defaults.
MachineInfo describe_machine();

// The CPU model from the text of /proc/cpuinfo: the first "model name" line (x86),
// else "Model"/"Hardware"/"cpu" (Arm, POWER); empty when none is present.
std::string parse_cpu_model(std::string_view cpuinfo);

// Total memory in bytes from the text of /proc/meminfo ("MemTotal: N kB"); 0 if absent.
uint64_t parse_mem_total(std::string_view meminfo);

}  // namespace tk::bench
