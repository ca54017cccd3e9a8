// tbench: benchmarks of tensorkit's areas on the user's own tensors and machine.
#include <memory>
#include <vector>

#include "cli/report.h"
#include "tbench.h"

namespace {

void add_run_flags(CLI::App* cmd, tk::tbench::RunOptions& o) {
  cmd->add_option("inputs", o.inputs, "Tensor files (default: seeded synthetic tensors)")->type_name("INPUT...");
  cmd->add_option("--methods", o.methods, "Methods to run, comma-separated (default: the area's set)")
      ->delimiter(',')
      ->type_name("LIST");
  cmd->add_option("--params", o.params, "Parameter values to sweep, KEY=V1,V2 (repeatable)")->type_name("KEY=LIST");
  cmd->add_option("--shape", o.shapes, "Synthetic tensor shape, e.g. 512x512 (repeatable)")->type_name("SHAPE");
  cmd->add_option("--dist", o.dists, "Synthetic distributions: gaussian, student-t, lowrank")
      ->delimiter(',')
      ->type_name("LIST");
  cmd->add_option("--warmup", o.warmup, "Untimed runs before the timed ones (default 1)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--reps", o.reps, "Timed runs; median, min and max are reported (default 3)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-seconds", o.max_seconds, "Stop starting cells after this long; the rest are skipped")
      ->check(CLI::NonNegativeNumber)
      ->type_name("S");
  cmd->add_option("--csv", o.csv, "Write the results as CSV (one row per metric) to PATH ('-': stdout, replacing the table)")
      ->type_name("PATH");
  cmd->add_option("--svg", o.svg, "Write plots (rate-distortion curves, throughput bars) to FILE")
      ->type_name("FILE")
      ->check(tk::cli::report_path("SVG"));
}

}  // namespace

int main(int argc, char** argv) {
  tk::cli::Tool tool("tbench", "Measure speed, ratio and error of tensorkit on your tensors and machine");
  tool.set_examples({
      {"tbench quant model.safetensors --methods int4,q4k", "Quantization schemes on your tensors"},
      {"tbench compress --params bits=2,3,4", "Compression on seeded tensors"},
      {"tbench compare old.json new.json --threshold 5%", "Exit 1 when a metric regressed"},
  });
  tool.app().require_subcommand(1);

  struct AreaCommand {
    CLI::App* cmd;
    tk::tbench::RunOptions options;
  };
  std::vector<std::unique_ptr<AreaCommand>> areas;
  for (const char* name : {"quant", "compress", "decomp", "io", "ckpt"}) {
    const tk::tbench::Area& area = tk::tbench::find_area(name);
    auto a = std::make_unique<AreaCommand>();
    a->options.area = name;
    a->cmd = tool.add_subcommand(name, area.description);
    add_run_flags(a->cmd, a->options);
    a->cmd->footer(tk::tbench::area_help(area));
    if (a->options.area == "io" || a->options.area == "ckpt")
      a->cmd->add_option("--dir", a->options.dir, "Directory to measure (default: $TMPDIR or /tmp)")
          ->type_name("DIR");
    areas.push_back(std::move(a));
  }

  tk::tbench::CompareOptions compare;
  CLI::App* compare_cmd =
      tool.add_subcommand("compare", "Compare two result files; exit 1 when a metric regressed past the threshold");
  compare_cmd->add_option("OLD", compare.old_path, "Baseline results (tbench --json)")->required();
  compare_cmd->add_option("NEW", compare.new_path, "New results")->required();
  compare_cmd->add_option("--threshold", compare.threshold, "Relative change that counts (default 5%)")
      ->type_name("PCT");

  return tool.run(argc, argv, [&] {
    if (compare_cmd->parsed()) return tk::tbench::run_compare(tool, compare);
    for (const auto& a : areas)
      if (a->cmd->parsed()) return tk::tbench::run_area(tool, a->options);
    return tk::cli::kExitUsage;
  });
}
