#include <filesystem>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "cli/path_args.h"
#include "cli/progress.h"
#include "cli/provenance.h"
#include "results.h"
#include "spill.h"
#include "tk/codec/sha256.h"
#include "tk/core/error.h"
#include "tk/io/gguf_rules.h"
#include "tk/io/gguf_transfer.h"
#include "tk/io/stream.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/gguf_blocks.h"
#include "tk/quant/layout.h"

namespace tk::tquant {

namespace {

// What goes into output tensor k: an input tensor, or a part of a result.
struct OutputSlot {
  size_t input_index = 0;
  const Result* result = nullptr;
  std::string suffix;
};

// Read in pieces, not mapped: a mapping's pages would count in the resident size until
// unmapped, so hashing a large output raised the tool's peak with the model's size.
std::optional<std::string> file_sha256(const std::string& path) {
  std::error_code ec;
  if (cli::is_std_stream(path) || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  auto in = io::InputStream::open(path);
  codec::Sha256 hash;
  std::vector<uint8_t> piece(size_t{1} << 20);
  while (size_t n = in->read(piece.data(), piece.size())) hash.update({piece.data(), n});
  return codec::sha256_hex(hash.finish());
}

// The result of each plan entry, in plan order; null for an entry passed through.
std::vector<const Result*> result_per_entry(const std::vector<PlanEntry>& plan, const std::vector<Result>& results) {
  std::map<const PlanEntry*, const Result*> by_entry;
  for (const Result& r : results) by_entry[r.entry] = &r;
  std::vector<const Result*> out;
  for (const PlanEntry& e : plan) {
    auto it = by_entry.find(&e);
    out.push_back(it == by_entry.end() ? nullptr : it->second);
  }
  return out;
}

// The result's quantized tensor with its parts, read back from the spill if set aside.
quant::Quantized with_parts(const Result& r, const InputAccess& input) {
  quant::Quantized q = r.measured.q;
  for (const auto& [suffix, offset] : r.spilled) {
    const auto& [dtype, shape] = r.measured.part_infos.at(suffix);
    q.parts[suffix] = input.spill->read(offset, dtype, shape);
  }
  return q;
}

// GGUF output: each quantized tensor as the blocks of its ggml twin, every other tensor
// as the input stores it (a GGUF input's stored bytes and type; else its dtype, which
// GGUF must hold) but the tensors llama.cpp reads only as F32, which are widened to F32,
// and the input's pairs with general.quantization_version = 2 (the writer makes
// general.file_type name the output's types, not the input's).
WriteOutcome write_gguf(const cli::Tool& tool, const QuantArgs& args, const io::Metadata& input_metadata,
                        const std::vector<PlanEntry>& plan, const std::vector<Result>& results,
                        const InputAccess& input) {
  const std::vector<const Result*> slots = result_per_entry(plan, results);
  std::vector<io::GgufTensorDecl> decls;
  for (size_t k = 0; k < plan.size(); ++k) {
    const PlanEntry& e = plan[k];
    const Result* r = slots[k];
    io::GgmlType type = io::GgmlType::kF32;
    if (r) {
      type = r->entry->gguf_type ? *r->entry->gguf_type : *quant::ggml_type_for_scheme(r->measured.q.scheme, !args.asym);
    } else if (dtype_is_float(e.info.dtype) && io::gguf_keeps_f32(e.info.name, e.info.shape.size())) {
      type = io::GgmlType::kF32;  // norms, biases: llama.cpp reads them only as F32
    } else if (input.gguf) {
      type = input.gguf->entry(e.index).type;
    } else if (auto plain = io::ggml_type_of(e.info.dtype)) {
      type = *plain;
    } else {
      throw usage_error(fmt::format("GGUF holds F32, F16, BF16, F64 and I8..I64 tensors, not {}; leave it out with "
                                    "--exclude, or convert it with tconvert --dtype",
                                    dtype_name(e.info.dtype)),
                        "tensor '" + e.info.name + "'");
    }
    decls.push_back({e.info.name, e.info.shape, type});
  }
  io::Metadata metadata = input_metadata;
  tool.stamp(metadata);
  std::vector<io::GgufKv> kvs = io::gguf_output_kvs(input.gguf, metadata);
  std::erase_if(kvs, [](const io::GgufKv& kv) { return kv.key == "general.quantization_version"; });
  kvs.push_back(io::gguf_kv_u32("general.quantization_version", 2));

  io::WriteOptions options;
  options.format = io::FileFormat::kGguf;
  auto opened = cli::open_writer(args.output, options);
  auto& writer = dynamic_cast<io::GgufWriter&>(*opened);
  writer.begin_gguf(decls, kvs);
  WriteOutcome outcome;
  uint64_t total = 0;
  for (const io::GgufTensorDecl& d : decls) total += io::ggml_storage_bytes(d.type, shape_numel(d.shape));
  cli::Progress progress(tool.options().show_progress, tool.name());
  cli::WorkMeter meter(total);
  for (size_t k = 0; k < plan.size(); ++k) {
    const PlanEntry& e = plan[k];
    progress.show(fmt::format("writing {}/{} tensors, {}", k + 1, plan.size(), meter.text("bytes")));
    uint64_t bytes = 0;
    if (const Result* r = slots[k]) {
      const std::vector<uint8_t> blocks = quant::ggml_blocks(with_parts(*r, input), decls[k].type);
      writer.write_stored(k, blocks);
      bytes = blocks.size();
    } else if (input.gguf && input.gguf->entry(e.index).type == decls[k].type) {
      const Buffer stored = input.gguf->read_stored(e.index);
      writer.write_stored(k, {stored.data(), stored.size()});
      bytes = stored.size();
      input.release(e.index);
    } else {
      const Tensor t = input.read(e.index);
      writer.write(k, t);
      bytes = t.nbytes();
      input.release(e.index);
    }
    meter.add(bytes);
    outcome.bytes += bytes;
  }
  writer.finish();
  outcome.sha256 = file_sha256(args.output);
  if (outcome.sha256) outcome.bytes = std::filesystem::file_size(args.output);
  return outcome;
}

// compressed-tensors output: a model directory whose quantized weights are their
// compressed-tensors parameters (quant/ct_model.h).
WriteOutcome write_compressed_tensors(const cli::Tool& tool, const QuantArgs& args, const io::Metadata& input_metadata,
                                      const std::vector<PlanEntry>& plan, const std::vector<Result>& results,
                                      const InputAccess& input) {
  const std::vector<const Result*> slots = result_per_entry(plan, results);
  std::vector<quant::CtOutput> outputs;
  for (size_t k = 0; k < plan.size(); ++k) {
    const PlanEntry& e = plan[k];
    quant::CtOutput o{e.info, std::nullopt, e.info.shape, DType::kF32};
    if (const Result* r = slots[k]) {
      std::string why;
      o.scheme = quant::ct_scheme_for(with_parts(*r, input), &why);
      if (!o.scheme) throw internal_error("no compressed-tensors twin for '" + e.info.name + "': " + why);
      if (auto scales = r->measured.part_infos.find("scales"); scales != r->measured.part_infos.end()) {
        o.scale_dtype = scales->second.first;
      }
    }
    outputs.push_back(std::move(o));
  }
  io::Metadata metadata = input_metadata;
  tool.stamp(metadata);
  quant::CtModelSources sources;
  sources.dense = [&](size_t k) { return input.read(plan[k].index); };
  sources.quantized = [&](size_t k) { return with_parts(*slots[k], input); };
  sources.release = [&](size_t k) {
    if (!slots[k]) input.release(plan[k].index);
  };
  const std::string source_dir = quant::ct_source_directory(cli::file_path(args.input));
  const quant::CtModelWritten written = quant::ct_write_model(args.output, source_dir, outputs, metadata, sources);
  if (!written.skipped.empty()) tool.warning(written.skipped_text());
  WriteOutcome outcome;
  outcome.sha256 = file_sha256(written.weights);
  outcome.bytes = std::filesystem::file_size(written.weights);
  return outcome;
}

}  // namespace

WriteOutcome write_quantized(const cli::Tool& tool, const QuantArgs& args, io::FileFormat format,
                             const io::Metadata& input_metadata, const std::vector<PlanEntry>& plan,
                             const std::vector<Result>& results, const InputAccess& input) {
  if (format == io::FileFormat::kGguf) return write_gguf(tool, args, input_metadata, plan, results, input);
  if (args.format == kCompressedTensors) {
    return write_compressed_tensors(tool, args, input_metadata, plan, results, input);
  }
  const std::vector<const Result*> per_entry = result_per_entry(plan, results);

  std::vector<io::TensorInfo> infos;
  std::vector<OutputSlot> slots;
  std::map<std::string, quant::LayoutRecord> records;
  for (size_t k = 0; k < plan.size(); ++k) {
    const PlanEntry& e = plan[k];
    const Result* r = per_entry[k];
    if (!r) {
      infos.push_back(e.info);
      slots.push_back({e.index, nullptr, {}});
      continue;
    }
    const quant::Measured& m = r->measured;
    quant::LayoutRecord record = quant::layout_record(m.q, e.info.dtype);
    record.parts.clear();
    for (const auto& [suffix, part] : m.part_infos) {
      const auto& [dtype, shape] = part;
      infos.push_back({quant::layout_part_name(e.info.name, suffix), dtype, shape,
                       dtype_storage_bytes(dtype, shape_numel(shape))});
      slots.push_back({e.index, r, suffix});
      record.parts.push_back(suffix);
    }
    records[e.info.name] = std::move(record);
  }
  io::Metadata metadata = input_metadata;
  if (input.gguf) io::gguf_keep_pairs(*input.gguf, metadata);
  std::optional<std::string> previous;
  if (auto tk = metadata.find(cli::kTkMetadataKey); tk != metadata.end()) previous = tk->second;
  metadata[cli::kTkMetadataKey] = quant::layout_metadata_merge(previous, records);
  tool.stamp(metadata);

  io::WriteOptions options;
  options.format = format;
  auto writer = cli::open_writer(args.output, options);
  WriteOutcome outcome;
  uint64_t total = 0;
  for (const io::TensorInfo& info : infos) total += info.nbytes;
  cli::Progress progress(tool.options().show_progress, tool.name());
  cli::WorkMeter meter(total);
  size_t written = 0;
  for (size_t k : writer->begin(infos, metadata)) {
    const OutputSlot& s = slots[k];
    progress.show(fmt::format("writing {}/{} tensors, {}", ++written, infos.size(), meter.text("bytes")));
    meter.add(infos[k].nbytes);
    if (!s.result) {
      writer->write(k, input.read(s.input_index));
      input.release(s.input_index);
    } else if (!s.result->measured.q.parts.empty()) {
      writer->write(k, s.result->measured.q.parts.at(s.suffix));
    } else {
      const auto& [dtype, shape] = s.result->measured.part_infos.at(s.suffix);
      writer->write(k, input.spill->read(s.result->spilled.at(s.suffix), dtype, shape));
    }
    outcome.bytes += infos[k].nbytes;
  }
  writer->finish();
  outcome.sha256 = file_sha256(args.output);
  if (outcome.sha256) outcome.bytes = std::filesystem::file_size(args.output);
  return outcome;
}

}  // namespace tk::tquant
