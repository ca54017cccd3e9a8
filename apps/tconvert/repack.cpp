// A quantized model (tquant's layout, or compressed-tensors) written as GGUF or as a
// compressed-tensors directory without quantizing again: each quantized tensor's codes
// and scales repacked into the target's layout, the same values bit for bit.
#include <fmt/format.h>

#include "cli/number_format.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/rename.h"
#include "tconvert.h"
#include "tk/core/error.h"
#include "tk/io/gguf.h"
#include "tk/io/gguf_kv_json.h"
#include "tk/io/gguf_rules.h"
#include "tk/io/gguf_transfer.h"
#include "tk/io/stream.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/gguf_blocks.h"

namespace tk::tconvert {

namespace {

// The tensors to write: indices into the reader with their output names.
struct Selected {
  std::vector<size_t> index;
  std::vector<std::string> name;
};

Selected select(const cli::Tool& tool, const ConvertOptions& o, const quant::DequantReader& reader) {
  Selected s;
  cli::TensorSelection selection = tool.options().selection();
  const cli::Renamer renamer = cli::Renamer::parse(o.renames);
  const auto& infos = reader.tensors();
  for (size_t k = 0; k < infos.size(); ++k) {
    if (!selection.selects(infos[k].name)) continue;
    s.index.push_back(k);
    s.name.push_back(renamer.apply(infos[k].name));
  }
  selection.check_all_patterns_used();
  return s;
}

std::string tensor_where(const std::string& name) { return "tensor '" + name + "'"; }

size_t write_ct(const cli::Tool& tool, const ConvertOptions& o, quant::DequantReader& reader, const Selected& sel,
                const io::Metadata& metadata) {
  std::vector<quant::CtOutput> outputs;
  size_t repacked = 0;
  for (size_t j = 0; j < sel.index.size(); ++j) {
    const size_t k = sel.index[j];
    io::TensorInfo info = reader.tensors()[k];
    info.name = sel.name[j];
    quant::CtOutput out{info, std::nullopt, info.shape, DType::kF32};
    if (reader.record(k)) {
      const quant::Quantized q = reader.quantized(k);
      std::string why;
      out.scheme = quant::ct_scheme_for(q, &why);
      if (!out.scheme) {
        throw usage_error(why + "; quantize the original with 'tquant ... --format compressed-tensors'",
                          tensor_where(info.name));
      }
      if (quant::ct_module_of(info.name).empty()) {
        throw usage_error("compressed-tensors quantizes MODULE.weight tensors; rename it or leave it out",
                          tensor_where(info.name));
      }
      if (auto scales = q.parts.find("scales"); scales != q.parts.end()) out.scale_dtype = scales->second.dtype();
      ++repacked;
    }
    outputs.push_back(std::move(out));
  }
  quant::CtModelSources sources;
  sources.dense = [&](size_t j) { return reader.read(sel.index[j]); };
  sources.quantized = [&](size_t j) { return reader.quantized(sel.index[j]); };
  sources.release = [&](size_t j) { reader.release(sel.index[j]); };
  const std::string source_dir = quant::ct_source_directory(cli::file_path(o.inputs[0]));
  const quant::CtModelWritten written = quant::ct_write_model(o.output, source_dir, outputs, metadata, sources);
  if (!written.skipped.empty()) tool.warning(written.skipped_text());
  return repacked;
}

size_t write_gguf(const ConvertOptions& o, quant::DequantReader& reader, const Selected& sel,
                  const io::Metadata& metadata) {
  std::vector<io::GgufTensorDecl> decls;
  size_t repacked = 0;
  for (size_t j = 0; j < sel.index.size(); ++j) {
    const io::TensorInfo& info = reader.tensors()[sel.index[j]];
    std::optional<io::GgmlType> type;
    if (reader.record(sel.index[j])) {
      type = quant::ggml_type_for(reader.quantized(sel.index[j]));
      if (!type) {
        throw usage_error(quant::ggml_no_type_reason(reader.quantized(sel.index[j]), "--asym") +
                              "; quantize the original with 'tquant ... -o OUT.gguf'",
                          tensor_where(info.name));
      }
      ++repacked;
    } else {
      type = io::ggml_type_of(info.dtype);
      // Norms and biases widen to F32 (llama.cpp reads them so); the writer casts them.
      if (dtype_is_float(info.dtype) && io::gguf_keeps_f32(sel.name[j], info.shape.size())) type = io::GgmlType::kF32;
      if (!type) {
        throw usage_error(fmt::format("GGUF holds F32, F16, BF16, F64 and I8..I64 tensors, not {}",
                                      dtype_name(info.dtype)),
                          tensor_where(info.name));
      }
    }
    decls.push_back({sel.name[j], info.shape, *type});
  }
  std::vector<io::GgufKv> kvs = io::gguf_output_kvs(nullptr, metadata);
  std::erase_if(kvs, [](const io::GgufKv& kv) { return kv.key == "general.quantization_version"; });
  kvs.push_back(io::gguf_kv_u32("general.quantization_version", 2));
  auto writer = io::gguf_writer(cli::open_output(o.output));
  writer->begin_gguf(decls, kvs);
  for (size_t j = 0; j < sel.index.size(); ++j) {
    const size_t k = sel.index[j];
    if (reader.record(k)) {
      writer->write_stored(j, quant::ggml_blocks(reader.quantized(k), decls[j].type));
    } else {
      writer->write(j, reader.read(k));
    }
    reader.release(k);
  }
  writer->finish();
  return repacked;
}

}  // namespace

int run_repack(cli::Tool& tool, const ConvertOptions& o, quant::DequantReader& reader, bool ct) {
  for (const auto& [flag, set] : {std::pair{"--dtype", !o.dtype.empty()}, std::pair{"--saturate", o.saturate},
                                  std::pair{"--compress", !o.compress.empty()},
                                  std::pair{"--max-shard-size", !o.max_shard_size.empty()}}) {
    if (set) throw usage_error("does not apply when a quantized model is repacked", flag);
  }
  const Selected sel = select(tool, o, reader);
  io::Metadata metadata = reader.metadata();
  tool.stamp(metadata);
  const size_t repacked = ct ? write_ct(tool, o, reader, sel, metadata) : write_gguf(o, reader, sel, metadata);
  if (!ct && !metadata.count(io::kGgufPairsKey)) tool.summary(cli::kGgufTensorsAlone);
  tool.summary(fmt::format("{}, {} repacked without quantizing again -> {}", cli::count_noun(sel.index.size(), "tensor", "tensors"),
                           repacked, ct ? "compressed-tensors" : "gguf"));
  return cli::kExitOk;
}

}  // namespace tk::tconvert
