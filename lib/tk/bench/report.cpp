#include "tk/bench/report.h"

#include <cstdio>
#include <cstdlib>

#include "tk/bench/machine.h"
#include "tk/bench/memory_bandwidth.h"

namespace tk::bench {

nlohmann::json machine_json(int threads, bool bandwidth) {
  const MachineInfo m = describe_machine();
  const double gb_s = bandwidth ? measure_memory_bandwidth(uint64_t(64) << 20, 3, threads) : 0;
  return {{"cpu_model", m.cpu_model},
          {"logical_cpus", m.logical_cpus},
          {"usable_cpus", m.usable_cpus},
          {"threads", threads > 0 ? threads : m.omp_threads},
          {"omp_wait_policy", m.omp_wait},
          {"memory_bytes", m.memory_bytes},
          {"memory_bandwidth_gb_s", gb_s > 0 ? nlohmann::json(gb_s) : nlohmann::json(nullptr)},
          {"kernel", m.kernel},
          {"compiler", m.compiler}};
}

void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s (--help lists the options)\n", app.get_name().c_str(), e.what());
    std::exit(2);
  }
}

}  // namespace tk::bench
