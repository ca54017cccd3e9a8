// tdecomp reconstruct and tdecomp tt-round: both start from a stored decomposition.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cli/device.h"
#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "input.h"
#include "settings.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::tdecomp {

namespace {

using decomp::Decomposition;
using nlohmann::json;

std::optional<std::string> tk_value(const io::TensorReader& reader) {
  auto it = reader.metadata().find(cli::kTkMetadataKey);
  if (it == reader.metadata().end()) return std::nullopt;
  return it->second;
}

// What a tdecomp output holds, as far as -t/--exclude select it: the decompositions, with
// their parts loaded, and the tensors stored unchanged.
struct Stored {
  std::vector<Decomposition> models;
  std::vector<decomp::KeptTensor> kept;
  std::vector<Tensor> kept_tensors;  // kept_tensors[i] is kept[i]'s
};

// Tensors are read in storage order, so that a pipe works.
Stored load_stored(const cli::Tool& tool, io::TensorReader& reader, const std::string& file) {
  std::vector<Decomposition> all;
  std::vector<decomp::KeptTensor> all_kept;
  try {
    all = decomp::parse_decomp_metadata(tk_value(reader));
    all_kept = decomp::parse_kept_metadata(tk_value(reader));
  } catch (const Error& e) {
    throw e.with_context(file);
  }
  cli::TensorSelection selection = tool.options().selection();
  Stored stored;
  for (auto& d : all)
    if (selection.selects(d.name)) stored.models.push_back(std::move(d));
  for (auto& k : all_kept)
    if (selection.selects(k.name)) stored.kept.push_back(std::move(k));
  selection.check_all_patterns_used();

  std::map<std::string, size_t> wanted;  // tensor name -> index in the file
  auto want = [&](const std::string& name) {
    auto index = reader.find(name);
    if (!index) throw invalid_input("tdecomp metadata names a missing tensor '" + name + "'", file);
    wanted[name] = *index;
  };
  for (const auto& d : stored.models)
    for (const auto& p : d.parts) want(d.part_name(p));
  for (const auto& k : stored.kept) want(k.name);
  std::vector<std::pair<size_t, std::string>> order;
  for (const auto& [name, index] : wanted) order.emplace_back(index, name);
  std::sort(order.begin(), order.end());
  std::map<std::string, Tensor> loaded;
  for (const auto& [index, name] : order) loaded[name] = reader.read(index);
  for (auto& d : stored.models) decomp::load_parts(d, [&](const std::string& name) { return loaded.at(name); });
  for (const auto& k : stored.kept) stored.kept_tensors.push_back(loaded.at(k.name));
  return stored;
}

// Tensor i of the output: the decompositions rebuilt, then the kept tensors as stored
// (cast only when --dtype asks for another dtype).
Tensor output_tensor(const Stored& stored, size_t i, const io::TensorInfo& info) {
  const bool rebuilt = i < stored.models.size();
  const Tensor* kept = rebuilt ? nullptr : &stored.kept_tensors[i - stored.models.size()];
  if (kept && kept->dtype() == info.dtype) return *kept;
  Tensor out = Tensor::empty(info.dtype, info.shape);
  if (kept) {
    cast_array(kept->dtype(), kept->data(), info.dtype, out.mutable_data(), out.numel());
  } else {
    std::vector<double> dense = decomp::reconstruct(stored.models[i]);
    cast_array(DType::kF64, dense.data(), info.dtype, out.mutable_data(), out.numel());
  }
  return out;
}

void check_output(const cli::Tool& tool, const std::string& input, const std::string& output) {
  cli::check_binary_input({input}, cli::stdin_is_terminal());
  tool.check_output(output, {input});
}

}  // namespace

int run_reconstruct(cli::Tool& tool, const ReconstructOptions& o) {
  const cli::CommonOptions& common = tool.options();
  cli::require_no_gpu(common.device, "tdecomp reconstruct");
  const io::FileFormat format = cli::output_format(o.output, o.format);
  check_output(tool, o.input, o.output);
  common.check_one_stdout(o.output);
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = float_dtype_parse(o.dtype, "--dtype");

  auto reader = cli::open_reader(tool, o.input);
  const std::string file = cli::input_display_name(o.input);
  Stored stored = load_stored(tool, *reader, file);
  const std::vector<Decomposition>& models = stored.models;
  io::Metadata metadata = reader->metadata();
  metadata.erase(cli::kTkMetadataKey);
  if (auto rest = decomp::metadata_without_decomp(tk_value(*reader))) metadata[cli::kTkMetadataKey] = *rest;
  tool.stamp(metadata);

  // The rebuilt tensors first, then the kept ones (passed through, or cast by --dtype).
  std::vector<io::TensorInfo> infos;
  for (const auto& d : models) {
    DType t = dtype.value_or(d.dtype);
    infos.push_back({d.name, t, d.shape, dtype_storage_bytes(t, shape_numel(d.shape))});
  }
  for (size_t k = 0; k < stored.kept.size(); ++k) {
    const Tensor& t = stored.kept_tensors[k];
    DType to = dtype.value_or(t.dtype());
    infos.push_back({stored.kept[k].name, to, t.shape(), dtype_storage_bytes(to, t.numel())});
  }
  io::WriteOptions write_options;
  write_options.format = format;
  auto writer = cli::open_writer(o.output, write_options);
  uint64_t bytes = 0;
  // Rebuilt one at a time, in the writer's order: memory holds one dense tensor.
  for (size_t i : writer->begin(infos, metadata)) {
    writer->write(i, output_tensor(stored, i, infos[i]));
    bytes += infos[i].nbytes;
  }
  writer->finish();

  const std::string copied = stored.kept.empty() ? "" : fmt::format(", {} stored unchanged", stored.kept.size());
  tool.summary(fmt::format("{} rebuilt{}, {}", cli::count_noun(models.size(), "tensor", "tensors"), copied,
                           cli::format_bytes(bytes)));
  if (common.json) {
    json tensors = json::array();
    for (size_t i = 0; i < infos.size(); ++i) {
      const bool kept = i >= models.size();
      const decomp::Method method = kept ? stored.kept[i - models.size()].method : models[i].method;
      tensors.push_back({{"name", infos[i].name},
                         {"method", decomp::method_name(method)},
                         {"stored", kept ? "kept" : "decomposition"},
                         {"shape", infos[i].shape},
                         {"dtype", dtype_name(infos[i].dtype)},
                         {"bytes", infos[i].nbytes},
                         {"rel_error", cli::json_number(kept ? 0.0 : models[i].rel_error)}});
    }
    cli::write_json({{"command", "reconstruct"}, {"input", o.input}, {"output", o.output}, {"tensors", tensors}},
                    *common.json);
  }
  return cli::kExitOk;
}

int run_tt_round(cli::Tool& tool, const DecompOptions& o) {
  cli::require_no_gpu(tool.options().device, "tdecomp tt-round");
  Settings s = settings_parse(tool, o);
  auto reader = cli::open_reader(tool, o.input);
  const std::string file = cli::input_display_name(o.input);
  std::vector<Outcome> outcomes;
  decomp::TtOptions options;
  if (o.tol) options.tol = *o.tol;
  options.max_rank = o.max_rank;
  Stored stored = load_stored(tool, *reader, file);
  for (Decomposition& d : stored.models) {
    const uint64_t bytes = d.stored_bytes();
    if (d.method == decomp::Method::kTt) {
      decomp::TtResult rounded = decomp::tt_round(decomp::to_tt(d), options);
      Decomposition r = decomp::from_tt(d.name, d.shape, d.dtype, rounded);
      r.factor_dtype = s.factor_dtype.value_or(d.factor_dtype);
      r.notes["rounded_from_ranks"] = fmt::format("{}", fmt::join(d.ranks, ","));
      d = std::move(r);
    }
    outcomes.push_back(Outcome{std::move(d), bytes, {}, {}});
  }
  // Kept tensors are copied.
  for (size_t k = 0; k < stored.kept.size(); ++k) {
    const Tensor& t = stored.kept_tensors[k];
    Decomposition d;
    d.name = stored.kept[k].name;
    d.method = stored.kept[k].method;
    d.shape = t.shape();
    d.dtype = t.dtype();
    outcomes.push_back(Outcome{std::move(d), t.nbytes(), {}, t});
  }
  io::Metadata metadata = reader->metadata();
  write_decompositions(tool, o.output, s.format, outcomes, std::move(metadata));
  report_decompositions(tool, "tt-round", o.input, o.output, outcomes);
  return cli::kExitOk;
}

}  // namespace tk::tdecomp
