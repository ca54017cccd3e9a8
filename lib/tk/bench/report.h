// What every benchmark program shares beyond timing: the machine block of its JSON (the
// form tbench writes and the Python peers copy, scripts/bench/tbench_form.py) and the
// handling of a bad command line (CLI11 for the flags, exit status 2).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace tk::bench {

// The machine block: cpu_model, logical_cpus, usable_cpus, threads (`threads`, or
// OpenMP's count when 0), omp_wait_policy, memory_bytes, memory_bandwidth_gb_s (measured
// when `bandwidth`, else null), kernel, compiler.
nlohmann::json machine_json(int threads = 0, bool bandwidth = false);

// Parse a benchmark's command line with `app`. --help prints the options and exits 0; a
// bad command line prints "PROGRAM: error: WHY" in one line and exits 2.
void parse_or_exit(CLI::App& app, int argc, char** argv);

}  // namespace tk::bench
