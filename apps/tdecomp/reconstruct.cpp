// tdecomp reconstruct and tdecomp tt-round: both start from a stored decomposition.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
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

// The decompositions described in the file, those -t/--exclude select, with their parts
// loaded. Parts are read in storage order, so that a pipe works.
std::vector<Decomposition> load_decompositions(const cli::Tool& tool, io::TensorReader& reader, const std::string& file) {
  std::vector<Decomposition> all;
  try {
    all = decomp::parse_decomp_metadata(tk_value(reader));
  } catch (const Error& e) {
    throw e.with_context(file);
  }
  cli::TensorSelection selection = tool.options().selection();
  std::vector<Decomposition> picked;
  for (auto& d : all)
    if (selection.selects(d.name)) picked.push_back(std::move(d));
  selection.check_all_patterns_used();

  std::map<std::string, size_t> wanted;  // part name -> index in the file
  for (const auto& d : picked)
    for (const auto& p : d.parts) {
      auto index = reader.find(d.part_name(p));
      if (!index) throw invalid_input("tdecomp metadata names a missing tensor '" + d.part_name(p) + "'", file);
      wanted[d.part_name(p)] = *index;
    }
  std::vector<std::pair<size_t, std::string>> order;
  for (const auto& [name, index] : wanted) order.emplace_back(index, name);
  std::sort(order.begin(), order.end());
  std::map<std::string, Tensor> loaded;
  for (const auto& [index, name] : order) loaded[name] = reader.read(index);
  for (auto& d : picked) decomp::load_parts(d, [&](const std::string& name) { return loaded.at(name); });
  return picked;
}

void check_output(const std::string& input, const std::string& output) {
  cli::check_binary_input({input}, cli::stdin_is_terminal());
  cli::check_binary_output(output, cli::stdout_is_terminal());
  cli::check_output_not_directory(output);
  cli::check_output_not_input({input}, output);
}

}  // namespace

int run_reconstruct(cli::Tool& tool, const ReconstructOptions& o) {
  const cli::CommonOptions& common = tool.options();
  const io::FileFormat format = cli::output_format(o.output, o.format);
  check_output(o.input, o.output);
  if (common.json && *common.json == "-" && o.output == "-")
    throw usage_error("--json - and -o - both want stdout; give one of them a file");
  std::optional<DType> dtype;
  if (!o.dtype.empty()) dtype = float_dtype_parse(o.dtype, "--dtype");

  auto reader = cli::open_reader(tool, o.input);
  const std::string file = io::input_display_name(o.input);
  std::vector<Decomposition> models = load_decompositions(tool, *reader, file);
  io::Metadata metadata = reader->metadata();
  metadata.erase(cli::kTkMetadataKey);
  if (auto rest = decomp::metadata_without_decomp(tk_value(*reader))) metadata[cli::kTkMetadataKey] = *rest;
  cli::provenance_add(metadata, tool.provenance());

  std::vector<io::TensorInfo> infos;
  for (const auto& d : models) {
    DType t = dtype.value_or(d.dtype);
    infos.push_back({d.name, t, d.shape, dtype_storage_bytes(t, shape_numel(d.shape))});
  }
  io::WriteOptions write_options;
  write_options.format = format;
  auto writer = io::open_writer(o.output, write_options);
  uint64_t bytes = 0;
  // Rebuilt one at a time, in the writer's order: memory holds one dense tensor.
  for (size_t i : writer->begin(infos, metadata)) {
    std::vector<double> dense = decomp::reconstruct(models[i]);
    Tensor out = Tensor::empty(infos[i].dtype, infos[i].shape);
    cast_array(DType::kF64, dense.data(), infos[i].dtype, out.mutable_data(), out.numel());
    writer->write(i, out);
    bytes += out.nbytes();
  }
  writer->finish();

  tool.summary(fmt::format("{} rebuilt, {}", cli::count_noun(models.size(), "tensor", "tensors"), cli::format_bytes(bytes)));
  if (common.json) {
    json tensors = json::array();
    for (size_t i = 0; i < models.size(); ++i)
      tensors.push_back({{"name", infos[i].name},
                         {"method", decomp::method_name(models[i].method)},
                         {"shape", infos[i].shape},
                         {"dtype", dtype_name(infos[i].dtype)},
                         {"bytes", infos[i].nbytes},
                         {"rel_error", cli::json_number(models[i].rel_error)}});
    cli::write_json({{"command", "reconstruct"}, {"input", o.input}, {"output", o.output}, {"tensors", tensors}},
                    *common.json);
  }
  return cli::kExitOk;
}

int run_tt_round(cli::Tool& tool, const DecompOptions& o) {
  Settings s = settings_parse(tool, o);
  auto reader = cli::open_reader(tool, o.input);
  const std::string file = io::input_display_name(o.input);
  std::vector<Outcome> outcomes;
  decomp::TtOptions options;
  if (o.tol) options.tol = *o.tol;
  options.max_rank = o.max_rank;
  for (Decomposition& d : load_decompositions(tool, *reader, file)) {
    const uint64_t stored = d.stored_bytes();
    if (d.method == decomp::Method::kTt) {
      decomp::TtResult rounded = decomp::tt_round(decomp::to_tt(d), options);
      Decomposition r = decomp::from_tt(d.name, d.shape, d.dtype, rounded);
      r.factor_dtype = s.factor_dtype.value_or(d.factor_dtype);
      r.notes["rounded_from_ranks"] = fmt::format("{}", fmt::join(d.ranks, ","));
      d = std::move(r);
    }
    outcomes.push_back(Outcome{std::move(d), stored, {}});
  }
  io::Metadata metadata = reader->metadata();
  write_decompositions(tool, o.output, s.format, outcomes, std::move(metadata));
  report_decompositions(tool, "tt-round", o.input, o.output, outcomes);
  return cli::kExitOk;
}

}  // namespace tk::tdecomp
