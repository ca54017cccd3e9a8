#include "session.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "tk/core/error.h"
#include "tk/io/gguf_rules.h"
#include "tk/quant/sensitivity.h"
#include "tk/quant/compressed_tensors.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/imatrix.h"
#include "tk/quant/layout.h"
#include "tk/quant/measure.h"
#include "tk/quant/view.h"

namespace tk::tquant {

std::vector<float> Source::read_f32(size_t index, bool* finite) {
#ifdef __GLIBC__
  // glibc gives freed heap memory back only from the heap's top: the buffers of the
  // tensors before, freed below long-lived bookkeeping, stayed resident, and the peak grew
  // with the number of tensors (24 MiB more for 128 than for 32, with 9 MiB in use).
  malloc_trim(0);
#endif
  Tensor t = read(index);
  std::vector<float> x(t.numel());
  convert_to_f32(t.dtype(), t.data(), 0, t.numel(), x.data());
  reader_->release(index);
  bool ok = true;
  for (float v : x) ok &= std::isfinite(v);
  *finite = ok;
  return x;
}

const quant::Scheme& Session::scheme(const std::string& spec) {
  auto& s = schemes[spec];
  if (!s) s = quant::make_scheme(scheme_spec(spec));
  return *s;
}

// Below this many weights the GPU does not gain: copying a tensor there and back and
// launching the kernels take longer than the CPU's search of it (and a first use pays
// for the CUDA context, a few hundred ms).
constexpr uint64_t kGpuMinWeights = uint64_t{1} << 18;

device::Placement Session::place(const quant::Scheme& sc, const quant::QuantOptions& o, uint64_t numel) const {
  device::Request request = tool.options().device;
  if (!gpu_left.empty()) request.kind = device::Request::Kind::kCpu;  // auto left the GPU (on_device)
  const bool has_path = sc.gpu_path(o);
  if (request.kind == device::Request::Kind::kCuda && !has_path) request.kind = device::Request::Kind::kCpu;
  return device::place(request, numel, kGpuMinWeights, has_path, "scheme " + sc.name());
}

void Session::check_device() {
  if (tool.options().device.kind != device::Request::Kind::kCuda) return;
  std::vector<std::string> named;
  if (!args.scheme.empty()) named.push_back(args.scheme);
  for (const std::string& r : args.rules) named.push_back(parse_rule(r).second);
  for (const std::string& spec : named) {
    const quant::Scheme& sc = scheme(spec);
    if (!sc.gpu_path(base)) {
      throw unavailable("no GPU code path for scheme " + sc.name() + " under these options (the GPU runs " +
                            quant::gpu_schemes_text() + "); --device cpu or auto runs it on the CPU",
                        "--device " + device::request_name(tool.options().device));
    }
  }
}

quant::QuantOptions Session::options_for(const PlanEntry& e, const std::string& spec) {
  quant::QuantOptions o = base;
  if (e.group_size > 0) o.group_size = e.group_size;
  int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
  o.importance = quant::importance_for(importance, e.info.name, cols);
  if (gguf && !spec.empty()) {
    const io::GgmlType type = e.gguf_type && spec == e.scheme ? *e.gguf_type : gguf_type(spec);
    const quant::QuantOptions twin = quant::tensorkit_twin(type)->options;
    o.group_size = twin.group_size;
    o.granularity = twin.granularity;
    o.symmetric = twin.symmetric;
    o.scale_dtype = twin.scale_dtype;
  }
  if (ct) {  // the scales in the tensor's dtype, which compressed-tensors decodes to
    const DType d = e.info.dtype;
    if (args.scale_dtype.empty() && (d == DType::kF16 || d == DType::kBF16 || d == DType::kF32)) o.scale_dtype = d;
  }
  if (!spec.empty()) {  // a budgeted tensor has no scheme until the allocation
    const device::Placement where = place(scheme(spec), o, shape_numel(e.info.shape));
    o.device = where.cuda ? where.index : -1;
  }
  return o;
}

io::GgmlType Session::gguf_type(const std::string& spec) {
  const std::string name = scheme(spec).name();
  if (auto type = quant::ggml_type_for_scheme(name, base.symmetric && !asymmetric_candidate(spec))) return *type;
  throw usage_error(fmt::format("GGUF has no block type for {}{}; it holds {}", name, base.symmetric ? "" : " --asym",
                                quant::ggml_schemes_text("--asym")),
                    spec);
}

bool Session::fits(const std::string& spec, const PlanEntry& e) {
  if (gguf) {
    const int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
    if (cols % io::ggml_traits(gguf_type(spec)).block != 0) return false;
  }
  if (ct) {
    const quant::Scheme& sc = scheme(spec);
    const quant::QuantOptions o = options_for(e, spec);
    // Only integer rows with one scale per row or tensor may be padded (they are repacked).
    const bool padded_ok = sc.name().rfind("int", 0) == 0 && (o.granularity == quant::Granularity::kChannel ||
                                                              o.granularity == quant::Granularity::kTensor);
    const int64_t cols = e.info.shape.size() == 2 ? e.info.shape[1] : 0;
    if (cols == 0 || !quant::ct_scheme_supported(sc.name(), o)) return false;
    if (!padded_ok && cols % sc.row_block(cols, o) != 0) return false;
    return quant::choose_view_cols(sc, e.info.shape, o) == cols;
  }
  return quant::fills_blocks(scheme(spec), e.info.shape, options_for(e, spec));
}

std::string Session::fit_fixed(PlanEntry& e) {
  if (fits(e.scheme, e)) return {};
  const std::string original = e.scheme;
  const int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
  if (gguf) {
    // llama-quantize's fallback type, so that the file holds what llama.cpp would.
    const io::GgmlType type = gguf_type(original);
    const std::string why = fmt::format("rows of {} values are not whole {} blocks of {}", cols,
                                        io::ggml_traits(type).name, io::ggml_traits(type).block);
    const std::optional<io::GgmlType> to = io::gguf_fallback_type(type, cols);
    const std::optional<quant::GgufTwin> twin = to ? quant::tensorkit_twin(*to) : std::nullopt;
    if (twin) {
      e.scheme = twin->scheme;
      e.group_size = twin->options.group_size;
      e.gguf_type = to;
      e.reason += fmt::format(", fallback {} ({})", io::ggml_traits(*to).name, why);
      return fmt::format("{}; stored as {} instead (llama-quantize's fallback)", why, io::ggml_traits(*to).name);
    }
    e.quantize = false;
    e.reason = "kept: " + why;
    return fmt::format("{}; kept in their dtype", why);
  }
  const int64_t block = scheme(original).row_block(cols, options_for(e));
  const std::string why = fmt::format("{} cannot fill {}'s blocks of {}", cli::count_noun(shape_numel(e.info.shape), "value", "values"),
                                      original, block);
  if (int bits = quant::fallback_int_bits(original); bits > 0) {
    PlanEntry trial = e;
    trial.scheme = "int" + std::to_string(bits);
    for (int64_t group : {32, 16, 8}) {
      trial.group_size = group;
      if (!fits(trial.scheme, trial)) continue;
      e.scheme = trial.scheme;
      e.group_size = group;
      e.reason += fmt::format(", fallback {} g{} ({})", e.scheme, group, why);
      return fmt::format("{}; quantized with {} g{} instead", why, e.scheme, group);
    }
  }
  e.quantize = false;
  e.reason = "kept: " + why;
  return fmt::format("{}; kept in {}", why, dtype_name(e.info.dtype));
}

void Session::read_importance() {
  if (cli::is_std_stream(args.importance)) throw usage_error("--importance reads a file, not standard input");
  importance = quant::read_importance(args.importance);
}

void Session::match_importance(const std::vector<io::TensorInfo>& infos) {
  std::vector<std::string> names;
  for (const io::TensorInfo& info : infos) names.push_back(info.name);
  std::vector<std::string> unmatched;
  quant::ImportanceMap matched = quant::importance_match(importance, names, &unmatched);
  if (matched.empty()) {
    throw invalid_input(fmt::format("none of its {} entries weighs a tensor of the input (e.g. '{}'); the names "
                                    "must be the input's, or llama.cpp's and Hugging Face's for a llama model",
                                    importance.size(), importance.empty() ? "" : cli::escape_text(unmatched.at(0))),
                        "--importance " + args.importance);
  }
  if (!unmatched.empty()) {
    tool.warning(fmt::format("{} of {} --importance entries match no tensor of the input (e.g. '{}'); they are unused",
                             unmatched.size(), importance.size(), cli::escape_text(unmatched[0])));
  }
  importance = std::move(matched);
}

bool Session::accept_values(PlanEntry& e, bool finite) {
  if (finite) return true;
  if (!args.allow_nonfinite) {
    throw invalid_input("tensor holds NaN or Inf (--allow-nonfinite keeps such tensors unquantized)",
                        "tensor '" + e.info.name + "'");
  }
  tool.warning(fmt::format("{}: holds NaN or Inf, passed through unquantized", e.info.name));
  e.quantize = false;
  e.reason = "NaN or Inf (--allow-nonfinite)";
  return false;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> candidate_list(const QuantArgs& args, bool gguf, bool ct) {
  std::vector<std::string> c = args.candidates.empty() ? default_candidates() : split_list(args.candidates);
  // llama.cpp's Q4_1 and Q5_1 (a minimum per block) beside Q4_0 and Q5_0: the budget
  // takes them where they pay, as on weights that sit on an asymmetric grid already.
  if (gguf && args.candidates.empty() && !args.asym) c.insert(c.end(), {"int4+asym", "int5+asym"});
  if (!gguf)
    for (const std::string& spec : c)
      if (asymmetric_candidate(spec)) throw usage_error("'+asym' candidates are GGUF's (Q4_1, Q5_1)", "--candidates");
  if (gguf || ct) {
    // The output holds only some schemes: given ones it cannot hold are refused, defaults
    // it cannot hold are left out.
    const quant::QuantOptions options = options_from_args(args);
    std::vector<std::string> held;
    for (const std::string& spec : c) {
      const std::string name = quant::make_scheme(scheme_spec(spec))->name();
      std::string why;
      const bool holds = ct ? quant::ct_scheme_supported(name, options, &why) && !asymmetric_candidate(spec)
                            : quant::ggml_type_for_scheme(name, !args.asym && !asymmetric_candidate(spec)).has_value();
      if (!holds && !args.candidates.empty()) {
        throw usage_error(ct ? why
                             : fmt::format("GGUF has no block type for {}; it holds {}", name,
                                           quant::ggml_schemes_text("--asym")),
                          "--candidates");
      }
      // The compressed-tensors package decompresses nvfp4 to bf16 whatever the model's
      // dtype, which the layers of an f32 or f16 model refuse: nvfp4 only when asked for.
      const bool asked_for = !args.candidates.empty();
      if (holds && (asked_for || !(ct && name == "nvfp4"))) held.push_back(spec);
    }
    c = std::move(held);
  }
  if (c.empty()) throw usage_error("no candidate schemes", "--candidates");
  return c;
}

namespace {

double weighted_signal(const std::vector<float>& x, int64_t cols, const float* importance) {
  double s = 0;
  if (!importance) {
    for (float v : x) s += 1.0 * v * v;
    return s;
  }
  // Row by row, in the same order as one pass (no division per value).
  const size_t width = static_cast<size_t>(cols);
  for (size_t r = 0; r < x.size(); r += width) {
    for (size_t c = 0; c < width && r + c < x.size(); ++c) {
      s += static_cast<double>(importance[c]) * x[r + c] * x[r + c];
    }
  }
  return s;
}

}  // namespace

uint64_t weights_to_quantize(const std::vector<PlanEntry>& plan) {
  uint64_t n = 0;
  for (const PlanEntry& e : plan) n += e.quantize ? shape_numel(e.info.shape) : 0;
  return n;
}

void LongRunWarning::check(const cli::WorkMeter& meter, const char* phase) {
  if (said_ || meter.seconds() < 10 || meter.eta_seconds() < kWarnSeconds) return;
  said_ = true;
  tool_.warning(fmt::format("{} will take about {} more at {:.2g} weights/s{}", phase,
                            cli::format_duration(meter.eta_seconds()), meter.rate(), hint_));
}

namespace {

// Tensor e's (values x) candidates that fit it, each with its estimated error.
struct TensorCandidates {
  quant::BudgetItem item;
  std::vector<std::string> usable;
  std::vector<quant::Estimate> estimates;
  std::map<std::pair<int64_t, int64_t>, quant::RowSample> samples;  // most candidates share one
};

// Estimate tensor e's error under each of `candidates` that fits it, on a sample of
// rows (`sample`, shared by the candidates of one view) or whole.
void estimate_candidates(Session& s, const PlanEntry& e, const std::vector<float>& x,
                         const std::vector<std::string>& candidates, bool sample, TensorCandidates& out) {
  const int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
  for (const std::string& c : candidates) {
    try {
      if (!s.fits(c, e)) continue;
      const quant::Scheme& scheme = s.scheme(c);
      quant::QuantOptions oc = s.options_for(e, c);
      const quant::RowSample* rows = nullptr;
      if (sample) {
        const int64_t view = quant::choose_view_cols(scheme, e.info.shape, oc);
        const std::pair<int64_t, int64_t> key{view, quant::kSampleShare};
        auto it = out.samples.find(key);
        if (it == out.samples.end()) it = out.samples.emplace(key, quant::sample_rows(x, view, cols, oc.importance)).first;
        rows = &it->second;
      }
      const quant::Estimate est = s.on_device(oc, [&](const quant::QuantOptions& on) {
        return quant::estimate_error(scheme, x, e.info.shape, on, rows);
      });
      out.item.bytes.push_back(est.bytes);
      out.item.error.push_back(est.error);
      out.estimates.push_back(est);
      out.usable.push_back(c);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kUsage) throw;
    }
  }
}

}  // namespace

CandidateTable measure_candidates(Session& s, Source& src, std::vector<PlanEntry>& plan,
                                  const std::vector<std::string>& candidates, cli::Progress& progress, bool sample,
                                  const std::vector<std::string>& deferred) {
  for (const auto& c : candidates) s.scheme(c);
  for (const auto& c : deferred) s.scheme(c);
  CandidateTable table;
  cli::WorkMeter meter(weights_to_quantize(plan));
  LongRunWarning slow(s.tool, "; fewer --candidates shorten it");
  for (size_t k = 0; k < plan.size(); ++k) {
    PlanEntry& e = plan[k];
    progress.show(fmt::format("measuring {}/{} tensors, {}: {}", k + 1, plan.size(), meter.text("weights"), e.info.name));
    slow.check(meter, "measuring the candidates");
    bool finite = true;
    std::vector<float> x;
    if (e.quantize) x = src.read_f32(e.index, &finite);
    if (!e.quantize || !s.accept_values(e, finite)) {
      table.pass_bytes += e.info.nbytes;
      continue;
    }
    meter.add(x.size());
    quant::QuantOptions o = s.options_for(e);
    int64_t cols = e.info.shape.empty() ? 1 : e.info.shape.back();
    double signal = weighted_signal(x, cols, o.importance);
    if (!e.budgeted) {
      quant::Measured m = s.on_device(o, [&](const quant::QuantOptions& on) {
        return quant::quantize_measure(s.scheme(e.scheme), x, e.info.shape, on, false);
      });
      table.weights += x.size();
      table.fixed_bytes += m.bytes;
      table.fixed_error += m.stats.weighted_sse;
      table.fixed_signal += signal;
      continue;
    }
    TensorCandidates tc;
    estimate_candidates(s, e, x, candidates, sample, tc);
    // Deferred candidates wait for the first solve, unless nothing else fits.
    const bool none_fit = tc.usable.empty();
    if (none_fit) estimate_candidates(s, e, x, deferred, sample, tc);
    const bool defer =
        !none_fit && std::any_of(deferred.begin(), deferred.end(), [&](const std::string& c) { return s.fits(c, e); });
    if (tc.usable.empty()) {
      e.quantize = false;
      e.budgeted = false;
      e.reason = "kept: no candidate fills its blocks";
      table.pass_bytes += e.info.nbytes;
      continue;
    }
    table.weights += x.size();
    table.items.push_back(std::move(tc.item));
    table.entries.push_back(&e);
    table.usable.push_back(std::move(tc.usable));
    table.estimates.push_back(std::move(tc.estimates));
    for (auto& [view, rows] : tc.samples) quant::release_values(rows);  // only the energies are needed now
    table.samples.push_back(std::move(tc.samples));
    table.signal.push_back(signal);
    table.deferred_left.push_back(defer);
  }
  return table;
}

namespace {

// What the output file holds besides tensor data, over-estimated: the header entries of
// every stored tensor, the layout records, the input's metadata and the provenance.
uint64_t overhead_estimate(const Session& s, const std::vector<PlanEntry>& plan, const Source& src) {
  const bool hdf5 = !s.ct && cli::output_format(s.args.output, s.args.format) == io::FileFormat::kHdf5;
  const uint64_t per_tensor = hdf5 ? 2048 : 96;
  uint64_t bytes = 4096;
  for (const auto& [key, value] : src.reader().metadata()) bytes += key.size() + value.size() + 8;
  // A GGUF input's pairs are copied as stored: its tokenizer's arrays are far longer
  // than their text in the metadata.
  if (const io::GgufReader* g = src.gguf(); g && s.gguf)
    for (const io::GgufKv& kv : g->kvs()) bytes += kv.key.size() + kv.value.size() + 12;
  for (const PlanEntry& e : plan) {
    const uint64_t stored = e.quantize ? 4 : 1;  // parts of a quantized tensor: at most 4
    bytes += stored * (e.info.name.size() + 16 + per_tensor) + (e.quantize ? e.info.name.size() + 320 : 0);
  }
  return bytes;
}

// A candidate measured whole, kept for the final pass with its parts in the spill.
void keep_whole(Session& s, const PlanEntry& e, const std::string& spec, quant::Measured m, int device) {
  Result r{&e, std::move(m), {}, device};
  if (s.spill) {
    for (const auto& [suffix, part] : r.measured.q.parts) r.spilled[suffix] = s.spill->append(part);
  }
  r.measured.q.parts.clear();
  s.measured_whole[e.index][spec] = std::move(r);
}

// "-vv": tensor i's candidates as estimated, each with its bits per weight and SQNR.
std::string candidates_line(const CandidateTable& t, size_t i) {
  const double weights = static_cast<double>(shape_numel(t.entries[i]->info.shape));
  std::string line = cli::escape_text(t.entries[i]->info.name) + ": estimated";
  for (size_t j = 0; j < t.usable[i].size(); ++j) {
    line += fmt::format(" {} {:.2f}bpw {:.2f}dB", t.usable[i][j], 8.0 * static_cast<double>(t.items[i].bytes[j]) / weights,
                        10 * std::log10(t.signal[i] / t.items[i].error[j]));
  }
  return line;
}

// Tensor i's candidates that cannot win go: first those near a grid the values sit
// close to (returned), then those beaten beyond the estimates' margin (counted).
std::vector<std::string> drop_losers(CandidateTable& t, size_t i, size_t* dominated) {
  const PlanEntry& e = *t.entries[i];
  std::vector<std::string> snaps =
      quant::allocation_drop_snaps(t, i, t.signal[i], shape_numel(e.info.shape), e.info.dtype);
  *dominated += quant::allocation_drop_dominated(t, i);
  return snaps;
}

// The objective's weight of each budgeted tensor (see allocate).
std::vector<double> tensor_weights(Session& s, Source& src, const CandidateTable& t) {
  std::vector<std::string_view> model, budgeted;
  for (const io::TensorInfo& info : src.reader().tensors()) model.push_back(info.name);
  std::vector<bool> weighted;
  for (const PlanEntry* e : t.entries) {
    budgeted.push_back(e->info.name);
    weighted.push_back(s.options_for(*e).importance != nullptr);
  }
  return quant::objective_weights(model, budgeted, t.signal, weighted);
}

quant::BudgetResult solve_weighted(const CandidateTable& t, const std::vector<double>& weight, uint64_t capacity) {
  std::vector<quant::BudgetItem> items = t.items;
  for (size_t i = 0; i < items.size(); ++i) for (double& e : items[i].error) e *= weight[i];
  return quant::budget_solve(items, capacity);
}

// Estimate the deferred candidates on the tensors that need them and merge them into
// t, in the order of `all`. A tensor needs them when the solve without them (the same
// drops, the estimates as they are) gives it less than kDeferredBelowBpw, and every
// tensor does when `capacity` (the tensors' share of the budget) is below what the
// others reach. Returns on how many tensors they were estimated.
size_t add_deferred(Session& s, Source& src, CandidateTable& t, const std::vector<std::string>& all,
                    const std::vector<std::string>& deferred, const std::vector<double>& weight,
                    std::optional<uint64_t> capacity, bool sample, cli::Progress& progress) {
  std::vector<char> want = t.deferred_left;
  if (capacity) {
    CandidateTable first = t;
    size_t dominated = 0;
    for (size_t i = 0; i < first.items.size(); ++i) drop_losers(first, i, &dominated);
    if (*capacity >= quant::budget_min_bytes(first.items)) {
      const quant::BudgetResult r = solve_weighted(first, weight, *capacity);
      for (size_t i = 0; i < first.items.size(); ++i) {
        const double bytes = static_cast<double>(first.items[i].bytes[r.choice[i]]);
        const double bpw = 8 * bytes / static_cast<double>(shape_numel(first.entries[i]->info.shape));
        want[i] = want[i] && bpw < kDeferredBelowBpw;
      }
    }
  }
  auto rank = [&](const std::string& c) { return std::find(all.begin(), all.end(), c) - all.begin(); };
  size_t done = 0;
  for (size_t i = 0; i < t.items.size(); ++i) {
    if (!want[i]) continue;
    PlanEntry& e = *t.entries[i];
    progress.show(fmt::format("measuring the IQ2 and IQ3 candidates: {}", e.info.name));
    bool finite = true;
    const std::vector<float> x = src.read_f32(e.index, &finite);
    TensorCandidates more;
    estimate_candidates(s, e, x, deferred, sample, more);
    // Merged in the order of `all`, as if measured in one pass.
    const size_t n = t.usable[i].size(), m = more.usable.size();
    std::vector<std::pair<ptrdiff_t, size_t>> order;  // (rank, index: < n in t, else in more)
    for (size_t j = 0; j < n; ++j) order.emplace_back(rank(t.usable[i][j]), j);
    for (size_t j = 0; j < m; ++j) order.emplace_back(rank(more.usable[j]), n + j);
    std::stable_sort(order.begin(), order.end());
    quant::BudgetItem item;
    std::vector<std::string> usable;
    std::vector<quant::Estimate> estimates;
    for (const auto& [r, j] : order) {
      const bool old = j < n;
      item.bytes.push_back(old ? t.items[i].bytes[j] : more.item.bytes[j - n]);
      item.error.push_back(old ? t.items[i].error[j] : more.item.error[j - n]);
      usable.push_back(old ? t.usable[i][j] : more.usable[j - n]);
      estimates.push_back(old ? std::move(t.estimates[i][j]) : std::move(more.estimates[j - n]));
    }
    t.items[i] = std::move(item), t.usable[i] = std::move(usable), t.estimates[i] = std::move(estimates);
    for (auto& [key, rows] : more.samples) {
      quant::release_values(rows);
      t.samples[i].emplace(key, std::move(rows));  // the same rows where the key is there already
    }
    t.deferred_left[i] = 0;
    ++done;
  }
  return done;
}

}  // namespace

bool deferred_candidate(const std::string& spec) { return spec.starts_with("iq2") || spec.starts_with("iq3"); }

void allocate(Session& s, Source& src, std::vector<PlanEntry>& plan, cli::Progress& progress,
              std::vector<std::string>& notices) {
  // The deferred candidates wait for a first solve (--exact-budget estimates them all).
  const std::vector<std::string> all = candidate_list(s.args, s.gguf, s.ct);
  std::vector<std::string> first, deferred;
  for (const std::string& c : all) (!s.args.exact_budget && deferred_candidate(c) ? deferred : first).push_back(c);
  if (first.empty()) first.swap(deferred);
  const bool sampled = !s.args.exact_budget;
  CandidateTable t = measure_candidates(s, src, plan, first, progress, sampled, deferred);
  if (t.items.empty()) return;
  const bool by_bpw = s.args.budget.has_value();
  uint64_t capacity = by_bpw ? static_cast<uint64_t>(std::floor(*s.args.budget * static_cast<double>(t.weights) / 8))
                             : cli::bytes_parse(s.args.size, "--size");
  // --size is the output file's size: pass-through tensors and the header count too.
  uint64_t reserved =
      t.fixed_bytes + (by_bpw ? 0 : t.pass_bytes + overhead_estimate(s, plan, src));
  // The objective. In a language model (tensors with roles, sensitivity.h): each
  // tensor's relative error (importance-weighted where an importance matrix covers it)
  // times its role's weight, which predicts llama.cpp's KL divergence far better than
  // squared errors summed across tensors (docs/QUANT.md). Otherwise: the squared errors.
  const std::vector<double> weight = tensor_weights(s, src, t);
  if (!deferred.empty()) {
    const size_t later = static_cast<size_t>(std::count(t.deferred_left.begin(), t.deferred_left.end(), 1));
    const size_t added = add_deferred(s, src, t, all, deferred, weight,
                                      capacity >= reserved ? std::optional<uint64_t>(capacity - reserved) : std::nullopt,
                                      sampled, progress);
    if (later > 0) {
      s.tool.verbose(1, fmt::format("budget: the IQ2 and IQ3 candidates estimated on {} of {} tensors; a first solve "
                                    "gave the others {} bpw or more",
                                    added, later, kDeferredBelowBpw));
    }
  }
  size_t estimated = 0, refined = 0, measured = 0, dropped = 0, snaps = 0, snapped_tensors = 0;
  for (size_t i = 0; i < t.items.size(); ++i) {
    for (const quant::Estimate& e : t.estimates[i]) estimated += !e.exact;
    if (s.tool.options().verbose >= 2) s.tool.verbose(2, candidates_line(t, i));
    const std::vector<std::string> left_out = drop_losers(t, i, &dropped);
    if (!left_out.empty()) {
      snaps += left_out.size(), snapped_tensors += 1;
      std::string which;
      for (const std::string& c : left_out) which += " " + c;
      s.tool.verbose(1, fmt::format("{}: left out{}: near a grid the values sit close to, not on",
                                    cli::escape_text(t.entries[i]->info.name), which));
    }
  }
  if (snaps > 0) {
    // A fine-tune of a model that was quantized once: the old grid is close, and landing
    // on it would undo the fine-tune in every tensor at once (docs/QUANT.md).
    notices.push_back(fmt::format("notice: budget: {} candidates on {} tensors left out: they land near a grid the "
                                  "values sit close to but not on (a fine-tune of a quantized model?), which would "
                                  "revert the change",
                                  snaps, snapped_tensors));
  }
  uint64_t min_bytes = quant::budget_min_bytes(t.items) + reserved;
  if (capacity < min_bytes) {
    if (by_bpw) {
      throw usage_error(fmt::format("budget {} bpw is below the smallest reachable {:.4f} bpw", *s.args.budget,
                                    static_cast<double>(min_bytes) * 8 / static_cast<double>(t.weights)),
                        "--budget");
    }
    throw usage_error(fmt::format("size {} is below the smallest reachable {} bytes", s.args.size, min_bytes),
                      "--size");
  }
  auto solve = [&] { return solve_weighted(t, weight, capacity - reserved); };
  quant::BudgetResult r = solve();
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < t.items.size(); ++i) {
      const std::vector<size_t> todo = quant::allocation_undecided(t, i, r.choice[i]);
      if (todo.empty()) continue;
      PlanEntry& e = *t.entries[i];
      progress.show(fmt::format("measuring again: {} ({} candidates)", e.info.name, todo.size()));
      bool finite = true;
      const std::vector<float> x = src.read_f32(e.index, &finite);
      for (size_t j : todo) {
        const quant::Estimate was = t.estimates[i][j];
        const quant::QuantOptions o = s.options_for(e, t.usable[i][j]);
        quant::Measured whole;
        const quant::Estimate again =
            quant::allocation_refine(t, i, j, s.scheme(t.usable[i][j]), x, e.info.shape, o, &whole);
        if (again.exact) keep_whole(s, e, t.usable[i][j], std::move(whole), o.device);
        s.tool.verbose(1, fmt::format("{} {}: estimated error {:.6g} (standard error {:.3g}, bias allowance {:.3g}) "
                                      "on 1/{} of the rows; {} {:.6g} ({:+.2f}%)",
                                      cli::escape_text(e.info.name), t.usable[i][j], was.error, was.se, was.bias,
                                      was.share, again.exact ? "whole" : fmt::format("on 1/{}", again.share),
                                      again.error, 100 * (was.error / again.error - 1)));
        (again.exact ? measured : refined) += 1;
      }
      for (auto& [key, sample] : t.samples[i]) quant::release_values(sample);
      again = true;
    }
    if (again) r = solve();
  }
  for (size_t i = 0; i < t.entries.size(); ++i) {
    PlanEntry& e = *t.entries[i];
    e.scheme = t.usable[i][r.choice[i]];
    if (s.gguf && asymmetric_candidate(e.scheme)) e.gguf_type = s.gguf_type(e.scheme);
  }
  if (estimated == 0) return;
  notices.push_back(fmt::format("notice: budget: {} candidate errors estimated on samples of rows, {} dropped as beaten beyond the "
                     "estimates' margin; where the estimate did not decide, {} estimated again on larger samples "
                     "and {} measured whole (--exact-budget measures all)",
                     estimated, dropped, refined, measured));
}

}  // namespace tk::tquant
