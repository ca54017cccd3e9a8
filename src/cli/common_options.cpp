#include "cli/common_options.h"

#include <omp.h>

#include "cli/path_args.h"
#include "cli/report.h"
#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/io/stream.h"

namespace tk::cli {

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
                                       device_help({}))
      ->type_name("DEV");
  app.add_option_function<uint64_t>("--seed", [&o](uint64_t s) { o.seed = s; }, "Seed for randomised algorithms")
      ->type_name("N");
  app.add_option_function<std::string>("--json", [&o](const std::string& p) { o.json = p; },
                                       "Write a JSON report to PATH ('-': stdout, replacing the text report)")
      ->type_name("PATH|-")
      ->check([](const std::string& p) -> std::string {
        // Refused before any work, as data outputs are: a planted link, a directory.
        if (p == "-") return {};
        try {
          io::output_target(p);
        } catch (const Error& e) {
          return e.message() + " (" + p + ")";
        }
        return {};
      })
      ->check(report_path("JSON"));
  app.add_flag_function("-q,--quiet", [&o](int64_t) { o.quiet = true; }, "No summaries on stderr");
  app.add_flag_function("-v,--verbose", [&o](int64_t n) { o.verbose += static_cast<int>(n); },
                        "More detail on stderr; repeatable");
  app.add_flag_function("--progress,!--no-progress", [&o](int64_t n) { o.progress = n > 0; },
                        "Show progress on stderr (default: when stderr is a terminal)");
}

std::string device_help(const std::string& gpu_work) {
  if (gpu_work.empty()) return "Compute device: cpu or auto (the default), both the CPU here; cuda[:N] exits 5";
  return "Compute device: cpu, cuda[:N] (that GPU, or exit 5 without it) or auto (the default: the GPU when "
         "present and the work is large enough to gain, else the CPU). On the GPU: " +
         gpu_work;
}

void apply_common_options(CommonOptions& o, bool stderr_is_terminal) {
  o.device = device_parse(o.device_text);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  active_isa();  // a bad TK_ISA is a usage error before any work
  o.show_progress = o.progress.value_or(stderr_is_terminal && !o.quiet);
}

void CommonOptions::check_one_stdout(const std::string& output) const {
  if (!text_report() && is_std_stream(output))
    throw usage_error("--json - and -o - both want stdout; give one of them a file");
}

}  // namespace tk::cli
