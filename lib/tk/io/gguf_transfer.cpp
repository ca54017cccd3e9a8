// Transfers into GGUF: what a GGUF input stores goes out as stored (block types stay
// blocks, the typed pairs stay typed); everything else is written as plain tensors.
#include "tk/io/gguf_transfer.h"

#include <set>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/gguf_kv_json.h"
#include "tk/io/gguf_rules.h"

namespace tk::io {

namespace {

const GgufReader* gguf_source(const TransferSource& s) { return dynamic_cast<const GgufReader*>(s.reader); }

// Whether item `k` is copied as stored: from a GGUF source and not cast.
bool as_stored(const std::vector<TransferSource>& sources, const TransferItem& item) {
  return gguf_source(sources[item.source]) && !item.cast_to;
}

}  // namespace

void gguf_keep_pairs(const TensorReader& reader, Metadata& metadata) {
  const auto* g = dynamic_cast<const GgufReader*>(&reader);
  if (g && !metadata.count(kGgufPairsKey)) metadata[kGgufPairsKey] = gguf_kvs_to_json(g->kvs());
}

std::vector<GgufKv> gguf_output_kvs(const GgufReader* source, const Metadata& metadata) {
  std::vector<GgufKv> kvs;
  std::set<std::string, std::less<>> keys;
  keys.insert(kGgufPairsKey);
  std::vector<GgufKv> carried;  // the typed pairs a GGUF input left in string metadata
  if (!source) {
    if (auto it = metadata.find(kGgufPairsKey); it != metadata.end()) carried = gguf_kvs_from_json(it->second);
  }
  if (source || !carried.empty()) {
    for (const auto& kv : source ? source->kvs() : carried) {
      keys.insert(kv.key);
      auto it = metadata.find(kv.key);
      if (it == metadata.end()) continue;
      // Padding is layout, not content: an alignment past what the writer pads to is not
      // carried over (the output gets the default), so a tiny file cannot make a huge one.
      if (kv.key == "general.alignment" && gguf_kv_uint_value(kv).value_or(0) > kGgufMaxAlignment) continue;
      kvs.push_back(it->second == gguf_value_text(kv) ? kv : gguf_kv_string(kv.key, it->second));
    }
  }
  for (const auto& [key, value] : metadata)
    if (key.rfind("general.", 0) != 0 && key != "format" && !keys.count(key)) kvs.push_back(gguf_kv_string(key, value));
  return kvs;
}

namespace {

const GgufReader* gguf_first_source(const std::vector<TransferSource>& sources) {
  for (const auto& s : sources)
    if (const GgufReader* g = gguf_source(s)) return g;
  return nullptr;
}

}  // namespace

void gguf_keep_f32_items(const std::vector<TransferSource>& sources, std::vector<TransferItem>& items) {
  for (TransferItem& item : items) {
    const TensorInfo& in = sources[item.source].reader->tensors()[item.index];
    if (!dtype_is_float(in.dtype) || !gguf_keeps_f32(item.output_name, in.shape.size())) continue;
    const GgufReader* g = gguf_source(sources[item.source]);
    const bool stored_f32 = g ? g->entry(item.index).type == GgmlType::kF32 : in.dtype == DType::kF32;
    if (item.cast_to || !stored_f32) item.cast_to = DType::kF32;
  }
}

bool gguf_transfer_has_model_metadata(const std::vector<TransferSource>& sources) {
  return gguf_first_source(sources) != nullptr;
}

TransferResult gguf_transfer(const std::vector<TransferSource>& sources, const std::vector<TransferItem>& requested,
                             GgufWriter& writer, const Metadata& metadata, const TransferOptions& options) {
  std::vector<TransferItem> items = requested;
  gguf_keep_f32_items(sources, items);
  const std::vector<TensorInfo> out_infos = transfer_output_infos(sources, items);
  std::vector<GgufTensorDecl> decls;
  for (size_t k = 0; k < items.size(); ++k) {
    const TensorInfo& out = out_infos[k];
    if (as_stored(sources, items[k])) {
      decls.push_back({out.name, out.shape, gguf_source(sources[items[k].source])->entry(items[k].index).type});
      continue;
    }
    std::optional<GgmlType> type = ggml_type_of(out.dtype);
    if (!type)
      throw usage_error(fmt::format("GGUF holds F32, F16, BF16, F64 and I8..I64 tensors, not {}",
                                    dtype_name(out.dtype)),
                        sources[items[k].source].name + " '" + out.name + "'")
          .with_option("io.gguf_transfer_dtype");
    decls.push_back({out.name, out.shape, *type});
  }
  writer.begin_gguf(decls, gguf_output_kvs(gguf_first_source(sources), metadata));

  TransferResult result;
  result.losses.resize(items.size());
  TransferProgress progress{0, items.size(), 0, 0};
  for (const auto& d : decls) progress.bytes_total += ggml_storage_bytes(d.type, shape_numel(d.shape));
  for (size_t k = 0; k < items.size(); ++k) {
    TensorReader& reader = *sources[items[k].source].reader;
    const size_t index = items[k].index;
    uint64_t stored = 0;
    if (as_stored(sources, items[k])) {
      Buffer bytes = dynamic_cast<GgufReader&>(reader).read_stored(index);
      writer.write_stored(k, {bytes.data(), bytes.size()});
      stored = bytes.size();
    } else {
      Tensor t = reader.read(index);
      if (items[k].cast_to && *items[k].cast_to != t.dtype()) {
        Tensor cast = Tensor::empty(*items[k].cast_to, t.shape());
        cast_array(t.dtype(), t.data(), cast.dtype(), cast.mutable_data(), t.numel(), CastOptions{options.saturate});
        result.losses[k] += cast_losses(t.dtype(), t.data(), cast.dtype(), cast.data(), t.numel());
        t = std::move(cast);
      }
      writer.write(k, t);
      stored = t.nbytes();
    }
    reader.release(index);
    result.tensors += 1;
    result.bytes_in += reader.tensors()[index].nbytes;
    result.bytes_out += stored;
    progress.tensors_done = k + 1;
    progress.bytes_done += stored;
    if (options.progress) options.progress(progress);
  }
  writer.finish();
  return result;
}

}  // namespace tk::io
