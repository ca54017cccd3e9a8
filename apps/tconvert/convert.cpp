// The conversion: check the request, open the inputs, plan the transfer, write.
#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/input.h"
#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/rename.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tconvert.h"
#include "tk/core/error.h"
#include "tk/io/gguf_kv_json.h"
#include "tk/io/gguf_transfer.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/dequant_reader.h"
#include "tk/io/sharded.h"
#include "tk/io/transfer.h"

namespace tk::tconvert {

namespace {

using nlohmann::json;

struct Plan {
  std::vector<std::unique_ptr<io::TensorReader>> readers;
  std::vector<io::TransferSource> sources;
  std::vector<io::TransferItem> items;
  io::Metadata metadata;
};

// Metadata of all inputs; on a key present in several, the first input's value wins.
io::Metadata merged_metadata(const std::vector<std::unique_ptr<io::TensorReader>>& readers) {
  io::Metadata merged;
  for (const auto& r : readers) {
    merged.insert(r->metadata().begin(), r->metadata().end());
    io::gguf_keep_pairs(*r, merged);  // typed, for outputs whose metadata holds strings
  }
  return merged;
}

std::string formats_text(const std::vector<std::unique_ptr<io::TensorReader>>& readers) {
  std::vector<std::string> names;
  for (const auto& r : readers) {
    std::string n = io::format_name(r->format());
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return fmt::format("{}", fmt::join(names, "+"));
}

Plan make_plan(cli::Tool& tool, const ConvertOptions& o, std::optional<DType> cast) {
  Plan plan;
  if (std::count(o.inputs.begin(), o.inputs.end(), "-") > 1) throw usage_error("standard input can be read only once");
  for (const auto& path : o.inputs) {
    plan.readers.push_back(cli::open_reader(tool, path));
    plan.sources.push_back({plan.readers.back().get(), cli::input_display_name(path)});
  }
  cli::TensorSelection selection = tool.options().selection();
  cli::Renamer renamer = cli::Renamer::parse(o.renames);
  for (size_t s = 0; s < plan.readers.size(); ++s) {
    const auto& infos = plan.readers[s]->tensors();
    for (size_t i = 0; i < infos.size(); ++i) {
      if (!selection.selects(infos[i].name)) continue;
      io::TransferItem item{s, i, renamer.apply(infos[i].name), std::nullopt};
      if (cast && dtype_is_float(infos[i].dtype)) item.cast_to = cast;
      plan.items.push_back(std::move(item));
    }
  }
  selection.check_all_patterns_used();
  plan.metadata = merged_metadata(plan.readers);
  tool.stamp(plan.metadata);
  return plan;
}

json report_json(const ConvertOptions& o, const Plan& plan, const std::vector<io::TensorInfo>& out_infos,
                 io::FileFormat format, const io::TransferResult& result) {
  json tensors = json::array();
  for (size_t k = 0; k < plan.items.size(); ++k) {
    const auto& item = plan.items[k];
    const auto& in = plan.readers[item.source]->tensors()[item.index];
    tensors.push_back({{"name", out_infos[k].name},
                       {"input", o.inputs[item.source]},
                       {"input_name", in.name},
                       {"dtype_in", dtype_name(in.dtype)},
                       {"dtype", dtype_name(out_infos[k].dtype)},
                       {"shape", in.shape},
                       {"bytes_in", in.nbytes},
                       {"bytes", out_infos[k].nbytes}});
    const CastLosses& lost = result.losses[k];
    if (dtype_is_float(in.dtype) && in.dtype != out_infos[k].dtype) {
      json& t = tensors.back();
      if (dtype_is_float(out_infos[k].dtype)) {
        t["overflowed"] = lost.overflowed;
      } else {
        t["rounded"] = lost.rounded;
        t["clamped"] = lost.clamped;
      }
    }
  }
  return {{"inputs", o.inputs},       {"output", o.output},          {"format", io::format_name(format)},
          {"tensors", std::move(tensors)}, {"bytes_in", result.bytes_in}, {"bytes_out", result.bytes_out}};
}

// One warning per kind of loss, summed over the tensors, with what to do instead.
void warn_losses(const cli::Tool& tool, const Plan& plan, const std::vector<io::TensorInfo>& out_infos,
                 const io::TransferResult& result, std::optional<DType> cast, bool saturate) {
  if (!cast) return;
  CastLosses total;
  uint64_t values = 0;
  for (size_t k = 0; k < plan.items.size(); ++k) {
    if (!plan.items[k].cast_to) continue;
    total += result.losses[k];
    values += shape_numel(out_infos[k].shape);
  }
  const std::string dtype = dtype_name(*cast);
  if (total.rounded + total.clamped != 0) {
    tool.warning(fmt::format("--dtype {} rounded {} and clamped {} of {} float values; to quantize float tensors "
                             "with scales, use tquant (tquant IN --scheme int8 -o OUT)",
                             dtype, total.rounded, total.clamped, values));
  }
  if (total.overflowed != 0 && !saturate) {
    tool.warning(fmt::format("{} of {} values overflowed {} and became Inf or NaN; --saturate clamps them to its "
                             "largest finite value",
                             total.overflowed, values, dtype));
  }
}

}  // namespace

int run_convert(cli::Tool& tool, const ConvertOptions& o) {
  const cli::CommonOptions& common = tool.options();
  // Everything that can be checked without reading comes first.
  const bool ct = o.format == kCompressedTensors;
  io::FileFormat format = ct ? io::FileFormat::kSafetensors : cli::output_format(o.output, o.format);
  cli::check_binary_input(o.inputs, cli::stdin_is_terminal());
  if (ct) {
    quant::ct_check_output_directory(cli::file_path(o.output));
  } else {
    tool.check_output(o.output, o.inputs);
  }
  common.check_one_stdout(o.output);
  std::optional<DType> cast;
  if (!o.dtype.empty()) {
    cast = dtype_parse(o.dtype);
    if (!cast) throw usage_error("unknown dtype '" + o.dtype + "'", "--dtype");
  }
  if (o.saturate && !cast) throw usage_error("--saturate applies only with --dtype");
  io::WriteOptions write_options;
  write_options.format = format;
  if (!o.compress.empty()) {
    if (format != io::FileFormat::kHdf5) throw usage_error("--compress applies only to HDF5 output");
    write_options.hdf5_zstd_level = cli::zstd_level_parse(o.compress);
  }

  // A quantized model bound for GGUF or compressed-tensors is repacked, not transferred.
  if ((ct || format == io::FileFormat::kGguf) && o.inputs.size() == 1 && !cli::is_std_stream(o.inputs[0])) {
    std::unique_ptr<io::TensorReader> reader = cli::open_reader(tool, o.inputs[0]);
    const std::string& input = o.inputs[0];
    if (auto quantized = quant::open_dequant_reader(reader, cli::file_path(input), cli::input_display_name(input),
                                                    std::nullopt, false)) {
      return run_repack(tool, o, *quantized, ct);
    }
  }
  if (ct) {
    throw usage_error("tconvert writes compressed-tensors from one quantized model (tquant's or compressed-tensors'); "
                      "quantize others with 'tquant ... --format compressed-tensors'");
  }

  std::unique_ptr<io::TensorWriter> writer;  // a sharded one is checked before any reading
  if (!o.max_shard_size.empty()) {
    if (format != io::FileFormat::kSafetensors) throw usage_error("--max-shard-size writes safetensors shards");
    writer = io::sharded_writer(o.output, {cli::bytes_parse(o.max_shard_size, "--max-shard-size"), false,
                                           tool.output_options().force});
  }

  Plan plan = make_plan(tool, o, cast);
  if (format == io::FileFormat::kGguf) io::gguf_keep_f32_items(plan.sources, plan.items);
  std::vector<io::TensorInfo> out_infos = io::transfer_output_infos(plan.sources, plan.items);
  io::GgufWriter* gguf = nullptr;
  if (!writer && format == io::FileFormat::kGguf) {
    // tquant's parts (NAME.codes, NAME.scales) are not ggml blocks; repacking them is
    // tquant's GGUF output, from the original tensors.
    for (const io::TransferSource& s : plan.sources) {
      if (quant::has_layout(*s.reader)) {
        throw usage_error("a tquant output converts to GGUF by its path alone, not merged or from a pipe; or "
                          "quantize the original with 'tquant ... -o OUT.gguf'",
                          s.name);
      }
    }
    auto w = io::gguf_writer(cli::open_output(o.output, {write_options.durable}));
    gguf = w.get();
    writer = std::move(w);
  }
  if (!writer) writer = cli::open_writer(o.output, write_options);
  cli::Progress progress(common.show_progress, tool.name());
  io::TransferOptions transfer_options;
  transfer_options.saturate = o.saturate;
  transfer_options.progress = [&progress](const io::TransferProgress& p) {
    progress.update(p.tensors_done, p.tensors_total, p.bytes_done, p.bytes_total);
  };
  io::TransferResult result =
      gguf ? io::gguf_transfer(plan.sources, plan.items, *gguf, plan.metadata, transfer_options)
           : io::transfer(plan.sources, plan.items, *writer, plan.metadata, transfer_options);
  progress.clear();
  warn_losses(tool, plan, out_infos, result, cast, o.saturate);
  if (gguf && !io::gguf_transfer_has_model_metadata(plan.sources) && !plan.metadata.count(io::kGgufPairsKey)) {
    tool.summary(cli::kGgufTensorsAlone);
  }

  tool.summary(fmt::format("{}, {} -> {} ({} -> {})", cli::count_noun(result.tensors, "tensor", "tensors"),
                           cli::format_bytes(result.bytes_in), cli::format_bytes(result.bytes_out),
                           formats_text(plan.readers), io::format_name(format)));
  if (common.json) cli::write_json(report_json(o, plan, out_infos, format, result), *common.json);
  return cli::kExitOk;
}

}  // namespace tk::tconvert
