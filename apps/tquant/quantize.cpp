// tquant IN -o OUT: plan, (budget: measure every candidate and solve), quantize, write.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/provenance.h"
#include "cli/std_streams.h"
#include "plan.h"
#include "results.h"
#include "session.h"
#include "spill.h"
#include "tk/core/error.h"
#include "tk/io/gguf_kv_json.h"
#include "tk/io/gguf_rules.h"
#include "tk/quant/compressed_tensors.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/keep_rules.h"
#include "tk/quant/layout.h"
#include "tk/quant/measure.h"
#include "tk/quant/view.h"
#include "tquant.h"

namespace tk::tquant {

namespace {

void explain(Session& s, const std::vector<PlanEntry>& plan) {
  const QuantArgs& args = s.args;
  std::string text = fmt::format(
      "default keep rules{}: scalars, 1-D tensors, tensors under --min-elements {}; names {}; embeddings {}{}\n",
      args.no_default_keep ? " (off)" : "", args.min_elements, fmt::join(quant::default_keep_globs(), " "),
      fmt::join(quant::embedding_globs(), " "), args.quantize_embeddings ? " (quantized)" : "");
  if (args.keep_lm_head) text += fmt::format("kept output heads: {}\n", fmt::join(quant::lm_head_globs(), " "));
  if (args.budget || !args.size.empty()) {
    text += fmt::format("budget candidates: {}\n", fmt::join(candidate_list(args, s.gguf, s.ct), ","));
  }
  for (const PlanEntry& e : plan) {
    std::string name = cli::escape_text(e.info.name);
    if (!e.quantize) {
      text += fmt::format("{}: pass through ({}{})\n", name, e.reason,
                          e.unapplied_rule.empty() ? "" : fmt::format("; rule '{}' not applied", e.unapplied_rule));
      continue;
    }
    const int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
    const int64_t view = quant::choose_view_cols(s.scheme(e.scheme), e.info.shape, s.options_for(e));
    const std::string as = view == cols ? "" : fmt::format(", as [{}, {}]", shape_numel(e.info.shape) / view, view);
    text += fmt::format("{}: {} ({}{})\n", name, e.scheme, e.reason, as);
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

// Notices about the plan: non-float tensors passed through, and --rule patterns that
// matched tensors the default rules keep (a rule does not override them silently).
std::vector<std::string> plan_notices(const std::vector<PlanEntry>& plan) {
  std::vector<std::string> notices;
  std::map<std::string, std::pair<size_t, std::string>> unapplied;  // rule -> count, first name
  for (const PlanEntry& e : plan) {
    if (!dtype_is_float(e.info.dtype)) {
      notices.push_back(fmt::format("notice: {} ({}) is not a float tensor; passed through unchanged",
                                    cli::escape_text(e.info.name), dtype_name(e.info.dtype)));
    }
    if (!e.unapplied_rule.empty()) {
      auto& [count, first] = unapplied[e.unapplied_rule];
      if (count++ == 0) first = e.info.name;
    }
  }
  for (const auto& [rule, hit] : unapplied) {
    notices.push_back(fmt::format("notice: --rule '{}' matched {} kept by the default rules (e.g. '{}'); "
                                  "--no-default-keep applies it to them",
                                  rule, cli::count_noun(hit.first, "tensor", "tensors"), cli::escape_text(hit.second)));
  }
  return notices;
}

// A view whose rows are still padded (a tensor that no view fills exactly).
std::string padding_notice(const PlanEntry& e, const quant::Quantized& q) {
  auto padded = q.params.find("padded_cols");
  if (padded == q.params.end()) return {};
  auto view = q.params.find("view_cols");
  const std::string cols =
      view != q.params.end() ? view->second : std::to_string(e.info.shape.empty() ? 1 : e.info.shape.back());
  if (padded->second == cols) return {};
  return fmt::format("notice: {}: rows of {} values padded to {} (recorded in the metadata)",
                     cli::escape_text(e.info.name), cols, padded->second);
}

// GGUF output: ggml fixes each block type's layout, so the flags that change it are
// refused rather than ignored; the schemes named must have a ggml type.
void check_gguf_output(Session& s) {
  const QuantArgs& a = s.args;
  const char* flag = a.group_size ? "--group-size"
                     : !a.granularity.empty() && a.granularity != "group" ? "--granularity"
                     : !a.scale_dtype.empty() && a.scale_dtype != "f16"   ? "--scale-dtype"
                     : a.double_quant                                     ? "--double-quant"
                     : !a.outliers.empty()                                ? "--outliers"
                                                                          : nullptr;
  if (flag) {
    throw usage_error("GGUF's block types fix their groups and scales (groups of 32 or 256 with f16 scales); "
                      "leave this out for a .gguf output",
                      flag);
  }
  if (!a.scheme.empty()) s.gguf_type(a.scheme);
  for (const std::string& r : a.rules) s.gguf_type(parse_rule(r).second);
}

// compressed-tensors output: the flags and schemes it cannot hold are refused rather
// than ignored.
void check_ct_output(Session& s) {
  const QuantArgs& a = s.args;
  std::vector<std::string> specs = a.rules;
  for (std::string& r : specs) r = parse_rule(r).second;
  if (!a.scheme.empty()) specs.push_back(a.scheme);
  for (const std::string& spec : specs) {
    std::string why;
    if (!quant::ct_scheme_supported(s.scheme(spec).name(), s.base, &why)) throw usage_error(why, spec);
  }
}

// compressed-tensors quantizes the weights of modules (MODULE.weight, 2-D); the other
// tensors are kept.
void keep_ct_unquantizable(std::vector<PlanEntry>& plan) {
  for (PlanEntry& e : plan) {
    if (!e.quantize || (e.info.shape.size() == 2 && !quant::ct_module_of(e.info.name).empty())) continue;
    e.quantize = false;
    e.budgeted = false;
    e.reason = "kept: compressed-tensors quantizes 2-D MODULE.weight tensors";
  }
}

// A GGUF input's tensors that are already ggml blocks are kept as they are stored (their
// values read as f32 would be quantized twice).
void keep_gguf_blocks(const Source& src, std::vector<PlanEntry>& plan) {
  const io::GgufReader* g = src.gguf();
  if (!g) return;
  for (PlanEntry& e : plan) {
    const io::GgmlTypeTraits& t = io::ggml_traits(g->entry(e.index).type);
    if (!e.quantize || t.plain) continue;
    e.quantize = false;
    e.budgeted = false;
    e.reason = fmt::format("kept: stored as {}", t.name);
  }
}

// GGUF output: the tensors llama.cpp reads only as F32 (norms, biases, routers, ...)
// are not quantized whatever --scheme, --rule or --no-default-keep ask.
void keep_gguf_f32(std::vector<PlanEntry>& plan) {
  for (PlanEntry& e : plan) {
    if (!e.quantize || !io::gguf_keeps_f32(e.info.name, e.info.shape.size())) continue;
    e.quantize = false;
    e.budgeted = false;
    e.reason = "kept: llama.cpp reads it only as F32";
  }
}

}  // namespace

int run_quantize(cli::Tool& tool, const QuantArgs& given) {
  const cli::CommonOptions& common = tool.options();
  QuantArgs args = given;
  const bool budget = args.budget.has_value() || !args.size.empty();
  if (args.budget && !args.size.empty()) throw usage_error("--budget and --size exclude each other");
  if (budget && !args.scheme.empty()) throw usage_error("--scheme and --budget/--size exclude each other");
  if (!budget && args.scheme.empty()) throw usage_error("give --scheme NAME, or --budget BPW / --size BYTES");
  if (args.budget && !(*args.budget > 0)) throw usage_error("budget must be positive", "--budget");
  if (!args.candidates.empty() && !budget) throw usage_error("--candidates applies only with --budget/--size");
  const bool ct = args.format == kCompressedTensors;
  io::FileFormat format = ct ? io::FileFormat::kSafetensors : cli::output_format(args.output, args.format);
  // llama.cpp's recipes quantize token_embd (and a tied output head) too; a GGUF user
  // keeps it with --keep.
  if (format == io::FileFormat::kGguf) args.quantize_embeddings = true;
  cli::check_binary_input({args.input}, cli::stdin_is_terminal());
  if (!args.dry_run) {
    if (ct) {
      quant::ct_check_output_directory(cli::file_path(args.output));
    } else {
      tool.check_output(args.output, {args.input});
    }
    common.check_one_stdout(args.output);
  }
  Session session{tool, args, options_from_args(args), {}, {}, format == io::FileFormat::kGguf};
  session.base.seed = common.seed.value_or(0);
  if (!args.scheme.empty()) session.scheme(args.scheme);
  for (const std::string& r : args.rules) session.scheme(parse_rule(r).second);
  session.ct = ct;
  if (session.gguf) check_gguf_output(session);
  if (session.ct) check_ct_output(session);
  session.check_device();
  if (!args.importance.empty()) session.read_importance();

  Source src(cli::open_seekable_reader(tool, args.input));
  refuse_quantized_input(src.reader().metadata());
  if (!args.importance.empty()) session.match_importance(src.reader().tensors());
  cli::TensorSelection selection = common.selection();
  std::vector<PlanEntry> plan = plan_tensors(src.reader().tensors(), args, selection, budget);
  selection.check_all_patterns_used();
  keep_gguf_blocks(src, plan);
  if (session.gguf) keep_gguf_f32(plan);
  if (session.ct) keep_ct_unquantizable(plan);
  // Notices are said once the run has succeeded: a failing run prints its one error
  // line and nothing else (docs/ARCHITECTURE.md, "CLI contract").
  std::vector<std::string> notices = plan_notices(plan);
  if (session.gguf && !src.gguf() && !src.reader().metadata().count(io::kGgufPairsKey)) notices.push_back(std::string("notice: ") + cli::kGgufTensorsAlone);
  // One notice per fallback reason, with how many tensors it took and the first one.
  std::map<std::string, std::pair<size_t, std::string>> fallbacks;
  std::vector<std::string> fallback_order;
  for (PlanEntry& e : plan) {
    if (!e.quantize || e.budgeted) continue;
    std::string why = session.fit_fixed(e);
    if (why.empty()) continue;
    auto [it, added] = fallbacks.try_emplace(why, 0, e.info.name);
    if (added) fallback_order.push_back(why);
    ++it->second.first;
  }
  for (const std::string& why : fallback_order) {
    const auto& [count, first] = fallbacks.at(why);
    notices.push_back(count == 1 ? fmt::format("notice: {}: {}", first, why)
                                 : fmt::format("notice: {} tensors (first {}): {}", count, first, why));
  }
  cli::Progress progress(common.show_progress, tool.name());
  PartSpill spill;
  if (!args.dry_run) session.spill = &spill;
  if (budget) allocate(session, src, plan, progress, notices);
  if (args.explain) explain(session, plan);

  // Parts are held for writing up to kHeldBytes; past that they are set aside in a
  // temporary file, so memory stays flat in the model's size (at 64 MiB the held parts
  // made the peak grow up to a 2 GiB model: see BENCHMARKS, "tquant's memory").
  constexpr uint64_t kHeldBytes = uint64_t{4} << 20;
  uint64_t held = 0;
  std::vector<Result> results;
  cli::WorkMeter meter(weights_to_quantize(plan));
  LongRunWarning slow(tool, "");
  for (size_t k = 0; k < plan.size(); ++k) {
    PlanEntry& e = plan[k];
    if (!e.quantize) continue;
    progress.show(fmt::format("quantizing {}/{} tensors, {}: {}", k + 1, plan.size(), meter.text("weights"), e.info.name));
    slow.check(meter, "quantizing");
    if (auto kept = session.measured_whole.find(e.index); kept != session.measured_whole.end()) {
      if (auto it = kept->second.find(e.scheme); it != kept->second.end()) {  // the budget measured it whole
        meter.add(shape_numel(e.info.shape));
        if (std::string n = padding_notice(e, it->second.measured.q); !n.empty()) notices.push_back(std::move(n));
        results.push_back(std::move(it->second));
        results.back().entry = &e;
        continue;
      }
    }
    bool finite = true;
    std::vector<float> x = src.read_f32(e.index, &finite);
    if (!session.accept_values(e, finite)) continue;
    quant::QuantOptions o = session.options_for(e);
    quant::Measured m = session.on_device(o, [&](const quant::QuantOptions& on) {
      return quant::quantize_measure(session.scheme(e.scheme), x, e.info.shape, on, !args.dry_run);
    });
    meter.add(x.size());
    if (std::string n = padding_notice(e, m.q); !n.empty()) notices.push_back(std::move(n));
    held += m.q.stored_bytes();
    std::map<std::string, uint64_t> spilled;
    if (held > kHeldBytes) {
      for (const auto& [suffix, part] : m.q.parts) spilled[suffix] = spill.append(part);
      m.q.parts.clear();
    }
    results.push_back({&e, std::move(m), std::move(spilled), o.device});
  }
  progress.clear();

  std::optional<std::string> sha256;
  uint64_t out_bytes = 0;
  if (!args.dry_run) {
    InputAccess input{[&src](size_t index) { return src.read(index); },
                      [&src](size_t index) { src.release(index); }, &spill, src.gguf()};
    WriteOutcome w = write_quantized(tool, args, format, src.reader().metadata(), plan, results, input);
    sha256 = w.sha256;
    out_bytes = w.bytes;
    if (!args.size.empty() && sha256 && out_bytes > cli::bytes_parse(args.size, "--size")) {
      notices.push_back(fmt::format("warning: the output is {} bytes, over --size {}", out_bytes, args.size));
    }
  }
  if (!session.gpu_left.empty()) {
    notices.push_back("notice: the GPU could not take the work (" + session.gpu_left +
                      "); --device auto ran the rest on the CPU");
  }
  for (const std::string& n : notices) tool.summary(n);
  report_quantize(tool, args, plan, results, sha256, out_bytes);
  return cli::kExitOk;
}

}  // namespace tk::tquant
