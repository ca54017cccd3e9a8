// tquant IN -o OUT: plan, (budget: measure every candidate and solve), quantize, write.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/input.h"
#include "cli/output.h"
#include "cli/provenance.h"
#include "cli/progress.h"
#include "cli/std_streams.h"
#include "cli/display_text.h"
#include "cli/number_format.h"
#include "measure.h"
#include "plan.h"
#include "results.h"
#include "session.h"
#include "tk/core/error.h"
#include "tk/quant/layout.h"
#include "tquant.h"

namespace tk::tquant {

namespace {

void explain(const QuantArgs& args, const std::vector<PlanEntry>& plan) {
  std::string text = fmt::format("default --keep globs{}: {}\n", args.no_default_keep ? " (off)" : "",
                                 fmt::join(default_keep_globs(), " "));
  if (args.budget || !args.size.empty()) {
    text += fmt::format("budget candidates: {}\n",
                        args.candidates.empty() ? fmt::format("{}", fmt::join(default_candidates(), ","))
                                                : args.candidates);
  }
  for (const PlanEntry& e : plan) {
    std::string name = cli::escape_text(e.info.name);
    text += e.quantize ? fmt::format("{}: {} ({})\n", name, e.scheme, e.reason)
                       : fmt::format("{}: pass through ({})\n", name, e.reason);
  }
  std::fputs(text.c_str(), stderr);
}

// Quantizing a quantized file would treat its float parts (scales, codebooks) as
// weights and leave records that no longer match.
void refuse_quantized_input(const io::Metadata& metadata) {
  auto tk = metadata.find(cli::kTkMetadataKey);
  if (tk == metadata.end()) return;
  try {
    quant::layout_metadata_parse(tk->second);
  } catch (const Error&) {
    return;
  }
  throw usage_error("the input is already quantized; run 'tquant dequant' first");
}

}  // namespace

int run_quantize(cli::Tool& tool, const QuantArgs& args) {
  const cli::CommonOptions& common = tool.options();
  const bool budget = args.budget.has_value() || !args.size.empty();
  if (args.budget && !args.size.empty()) throw usage_error("--budget and --size exclude each other");
  if (budget && !args.scheme.empty()) throw usage_error("--scheme and --budget/--size exclude each other");
  if (!budget && args.scheme.empty()) throw usage_error("give --scheme NAME, or --budget BPW / --size BYTES");
  if (args.budget && !(*args.budget > 0)) throw usage_error("budget must be positive", "--budget");
  if (!args.candidates.empty() && !budget) throw usage_error("--candidates applies only with --budget/--size");
  io::FileFormat format = cli::output_format(args.output, args.format);
  cli::check_binary_input({args.input}, cli::stdin_is_terminal());
  if (!args.dry_run) {
    cli::check_binary_output(args.output, cli::stdout_is_terminal());
    cli::check_output_not_directory(args.output);
    cli::check_output_not_input({args.input}, args.output);
    if (common.json && *common.json == "-" && args.output == "-") {
      throw usage_error("--json - and -o - both want stdout; give one of them a file");
    }
  }
  Session session{tool, args, options_from_args(args), {}, {}};
  session.base.seed = common.seed.value_or(0);
  if (!args.scheme.empty()) session.scheme(args.scheme);
  for (const std::string& r : args.rules) session.scheme(parse_rule(r).second);
  if (!args.importance.empty()) session.importance = quant::read_importance(args.importance);

  Source src(cli::open_reader(tool, args.input));
  refuse_quantized_input(src.reader().metadata());
  cli::TensorSelection selection = common.selection();
  std::vector<PlanEntry> plan = plan_tensors(src.reader().tensors(), args, selection, budget);
  selection.check_all_patterns_used();
  // Notices are said once the run has succeeded: a failing run prints its one error
  // line and nothing else (DESIGN.md, "CLI contract").
  std::vector<std::string> notices;
  for (const PlanEntry& e : plan) {
    if (!dtype_is_float(e.info.dtype) && e.reason != "not selected") {
      notices.push_back(fmt::format("notice: {} ({}) is not a float tensor; passed through unchanged", e.info.name,
                                    dtype_name(e.info.dtype)));
    }
  }
  cli::Progress progress(common.show_progress, tool.name());
  if (budget) allocate(session, src, plan, progress);
  if (args.explain) explain(args, plan);

  std::vector<Result> results;
  for (size_t k = 0; k < plan.size(); ++k) {
    PlanEntry& e = plan[k];
    if (!e.quantize) continue;
    progress.show(fmt::format("quantizing {}/{}: {}", k + 1, plan.size(), e.info.name));
    bool finite = true;
    std::vector<float> x = src.read_f32(e.index, &finite);
    if (!session.accept_values(e, finite)) continue;
    Measured m = quantize_measure(session.scheme(e.scheme), x, e.info.shape, session.options_for(e), true);
    auto padded = m.q.params.find("padded_cols");
    int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
    if (padded != m.q.params.end() && padded->second != std::to_string(cols)) {
      notices.push_back(
          fmt::format("{}: {} columns padded to {} (recorded in the metadata)", e.info.name, cols, padded->second));
    }
    results.push_back({&e, std::move(m)});
  }
  progress.clear();

  std::optional<std::string> sha256;
  uint64_t out_bytes = 0;
  if (!args.dry_run) {
    WriteOutcome w = write_quantized(tool, args, format, src.reader().metadata(), plan, results,
                                     [&src](size_t index) { return src.read(index); });
    sha256 = w.sha256;
    out_bytes = w.bytes;
  }
  for (const std::string& n : notices) tool.summary(n);
  report_quantize(tool, args, plan, results, sha256, out_bytes);
  return cli::kExitOk;
}

}  // namespace tk::tquant
