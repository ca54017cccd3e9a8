#include "session.h"

#include <malloc.h>

#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "tk/core/error.h"
#include "tk/io/gguf_rules.h"
#include "tk/quant/keep_rules.h"
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
  std::vector<std::string> c = args.candidates.empty() ? quant::default_candidates() : split_list(args.candidates);
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

// The plan's tensors as the library's allocation sees them, read from `src` and stored
// as the session's output stores them.
class PlanHost final : public quant::AllocationHost {
 public:
  PlanHost(Session& s, Source& src, std::vector<PlanEntry>& plan, cli::Progress& progress)
      : s_(s), src_(src), plan_(plan), progress_(progress), meter_(weights_to_quantize(plan)),
        slow_(s.tool, "; fewer --candidates shorten it") {}

  std::vector<quant::AllocationTensor> tensors() const {
    std::vector<quant::AllocationTensor> out;
    for (const PlanEntry& e : plan_)
      out.push_back({e.info.name, e.info.shape, e.info.dtype, e.info.nbytes, e.quantize, e.budgeted ? "" : e.scheme});
    return out;
  }
  bool read(size_t i, std::vector<float>& x, bool first) override {
    bool finite = true;
    x = src_.read_f32(plan_[i].index, &finite);
    if (!first) return true;
    if (!s_.accept_values(plan_[i], finite)) return false;
    meter_.add(x.size());
    return true;
  }
  const quant::Scheme& scheme(const std::string& spec) override { return s_.scheme(spec); }
  bool fits(size_t i, const std::string& spec) override { return s_.fits(spec, plan_[i]); }
  quant::QuantOptions options(size_t i, const std::string& spec) override {
    return spec.empty() ? s_.options_for(plan_[i]) : s_.options_for(plan_[i], spec);
  }
  void run(quant::QuantOptions& o, const std::function<void(const quant::QuantOptions&)>& work) override {
    s_.on_device(o, [&](const quant::QuantOptions& on) {
      work(on);
      return 0;
    });
  }
  // A candidate measured whole, kept for the final pass with its parts in the spill.
  void measured_whole(size_t i, const std::string& spec, quant::Measured m, int device) override {
    const PlanEntry& e = plan_[i];
    Result r{&e, std::move(m), {}, device};
    if (s_.spill) {
      for (const auto& [suffix, part] : r.measured.q.parts) r.spilled[suffix] = s_.spill->append(part);
    }
    r.measured.q.parts.clear();
    s_.measured_whole[e.index][spec] = std::move(r);
  }
  void unfit(size_t i) override {
    PlanEntry& e = plan_[i];
    e.quantize = false;
    e.budgeted = false;
    e.reason = "kept: no candidate fills its blocks";
  }
  uint64_t overhead() override { return overhead_estimate(s_, plan_, src_); }
  void progress(const quant::AllocationProgress& p) override {
    const PlanEntry& e = plan_[p.tensor];
    switch (p.phase) {
      case quant::AllocationProgress::Phase::kMeasure:
        progress_.show(fmt::format("measuring {}/{} tensors, {}: {}", p.tensor + 1, plan_.size(), meter_.text("weights"),
                                   e.info.name));
        slow_.check(meter_, "measuring the candidates");
        break;
      case quant::AllocationProgress::Phase::kDeferred:
        progress_.show(fmt::format("measuring the IQ2 and IQ3 candidates: {}", e.info.name));
        break;
      case quant::AllocationProgress::Phase::kRefine:
        progress_.show(fmt::format("measuring again: {} ({} candidates)", e.info.name, p.candidates));
        break;
    }
  }
  int verbosity() const override { return s_.tool.options().verbose; }
  void note(int level, const std::string& text) override { s_.tool.verbose(level, cli::escape_text(text)); }

 private:
  Session& s_;
  Source& src_;
  std::vector<PlanEntry>& plan_;
  cli::Progress& progress_;
  cli::WorkMeter meter_;
  LongRunWarning slow_;
};

}  // namespace

quant::CandidateTable measure_candidates(Session& s, Source& src, std::vector<PlanEntry>& plan,
                                         const std::vector<std::string>& candidates, cli::Progress& progress) {
  PlanHost host(s, src, plan, progress);
  return quant::measure_candidates(host, host.tensors(), candidates, false);
}

void allocate(Session& s, Source& src, std::vector<PlanEntry>& plan, cli::Progress& progress,
              std::vector<std::string>& notices) {
  PlanHost host(s, src, plan, progress);
  quant::AllocationRequest request;
  request.candidates = candidate_list(s.args, s.gguf, s.ct);
  request.sampled = !s.args.exact_budget;
  request.bpw = s.args.budget;
  if (!request.bpw) request.size = cli::bytes_parse(s.args.size, "--size");
  for (const io::TensorInfo& info : src.reader().tensors()) request.model.push_back(info.name);
  const quant::AllocationResult r = quant::allocate(host, host.tensors(), request);
  if (r.snaps > 0) {
    // A fine-tune of a model that was quantized once: the old grid is close, and landing
    // on it would undo the fine-tune in every tensor at once (docs/QUANT.md).
    notices.push_back(fmt::format("notice: budget: {} candidates on {} tensors left out: they land near a grid the "
                                  "values sit close to but not on (a fine-tune of a quantized model?), which would "
                                  "revert the change",
                                  r.snaps, r.snapped_tensors));
  }
  if (!r.feasible) {
    if (request.bpw) {
      throw usage_error(fmt::format("budget {} bpw is below the smallest reachable {:.4f} bpw", *s.args.budget,
                                    static_cast<double>(r.min_bytes) * 8 / static_cast<double>(r.table.weights)),
                        "--budget");
    }
    throw usage_error(fmt::format("size {} is below the smallest reachable {} bytes", s.args.size, r.min_bytes),
                      "--size");
  }
  for (size_t k = 0; k < plan.size(); ++k) {
    if (r.choice[k].empty()) continue;
    PlanEntry& e = plan[k];
    e.scheme = r.choice[k];
    if (s.gguf && asymmetric_candidate(e.scheme)) e.gguf_type = s.gguf_type(e.scheme);
  }
  if (r.estimated == 0) return;
  notices.push_back(fmt::format("notice: budget: {} candidate errors estimated on samples of rows, {} dropped as beaten beyond the "
                     "estimates' margin; where the estimate did not decide, {} estimated again on larger samples "
                     "and {} measured whole (--exact-budget measures all)",
                     r.estimated, r.dropped, r.refined, r.measured));
}

}  // namespace tk::tquant
