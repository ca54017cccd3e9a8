#include "tk/quant/dequant_reader.h"

#include <set>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tk/core/dtype.h"
#include "tk/core/json_parse_internal.h"
#include "tk/core/error.h"
#include "tk/io/sharded.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/scheme.h"
#include "tk/quant/view.h"

namespace tk::quant {

namespace {

// The values of q as a tensor of `dtype`, decoded on `device` (-1: the CPU); errors of
// the data located at `where`.
Tensor dequantize_as(const Quantized& q, DType dtype, const std::string& where, int device) {
  std::unique_ptr<Scheme> scheme;
  try {
    scheme = make_scheme(q.scheme);
  } catch (const Error&) {
    throw invalid_input("unknown scheme '" + q.scheme + "' in the metadata", where);
  }
  uint64_t part_bits = 0;
  for (const auto& [name, t] : q.parts) part_bits += t.nbytes() * 8;
  const uint64_t n = shape_numel(q.shape);
  // No scheme stores less than 1/64 bit per value: a larger shape is a corrupt record,
  // not a reason to allocate.
  if (n > part_bits * 64 + 64) throw invalid_input("shape too large for its parts", where);
  std::vector<float> values(n);
  try {
    dequantize_view(*scheme, q, values.data(), false, device);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input(e.message(), where);
  }
  Tensor out = Tensor::empty(dtype, q.shape);
  cast_array(DType::kF32, values.data(), dtype, out.mutable_data(), n);
  return out;
}

// The layout records of every shard of a sharded model (each shard was quantized alone
// and records its own tensors; the merged metadata keeps one shard's), else the file's.
std::map<std::string, LayoutRecord> all_records(const io::TensorReader& reader, const std::string& where) {
  std::vector<io::Metadata> sources = io::sharded_shard_metadata(reader);
  if (sources.empty()) sources.push_back(reader.metadata());
  std::map<std::string, LayoutRecord> records;
  for (const io::Metadata& metadata : sources) {
    auto tk = metadata.find(kTkMetadataKey);
    if (tk == metadata.end()) continue;
    try {
      for (auto& [name, record] : layout_metadata_parse(tk->second)) {
        if (!records.emplace(name, std::move(record)).second) {
          throw invalid_input("quantization recorded by two shards", "tensor '" + name + "'");
        }
      }
    } catch (const Error& e) {
      throw e.with_context(where);
    }
  }
  return records;
}

}  // namespace

bool has_layout(const io::Metadata& metadata) {
  auto it = metadata.find(kTkMetadataKey);
  if (it == metadata.end()) return false;
  // Through the one JSON policy (depth, size, duplicate keys): a value it refuses has no layout.
  const std::optional<nlohmann::json> doc = json_parse_if_valid(it->second);
  return doc && doc->is_object() && doc->contains("quant");
}

bool has_layout(const io::TensorReader& reader) {
  if (has_layout(reader.metadata())) return true;
  for (const io::Metadata& shard : io::sharded_shard_metadata(reader))
    if (has_layout(shard)) return true;
  return false;
}

DequantReader::DequantReader(std::unique_ptr<io::TensorReader> inner, const std::string& where,
                             std::optional<DType> cast)
    : inner_(std::move(inner)), where_(where) {
  metadata_ = inner_->metadata();
  skipped_ = inner_->skipped();
  if (const auto* gguf = dynamic_cast<const io::GgufReader*>(inner_.get())) {
    init_gguf(*gguf, cast);
    return;
  }
  auto tk_value = metadata_.find(kTkMetadataKey);
  if (tk_value == metadata_.end() && !has_layout(*inner_)) {
    throw invalid_input("no quantization metadata (no tk metadata key)", where_);
  }
  records_ = all_records(*inner_, where_);
  if (tk_value != metadata_.end()) tk_value->second = layout_metadata_strip(tk_value->second);

  // Every part must exist; the record's tensor takes the place of its first part.
  const auto& in = inner_->tensors();
  std::unordered_map<std::string_view, size_t> index;  // the file's tensors by name
  for (size_t i = 0; i < in.size(); ++i) index.emplace(in[i].name, i);
  std::map<std::string, const std::string*> owner;
  std::map<const std::string*, std::vector<size_t>> parts_at;
  for (const auto& [name, record] : records_) {
    if (index.count(name)) throw invalid_input("tensor is both quantized and stored densely", "tensor '" + name + "'");
    for (const std::string& suffix : record.parts) {
      std::string part = layout_part_name(name, suffix);
      auto at = index.find(part);
      if (at == index.end()) throw layout_missing_part(name, suffix).with_context(where_);
      parts_at[&name].push_back(at->second);
      owner[part] = &name;
    }
    if (record.parts.empty()) throw invalid_input("quantized tensor without parts", "tensor '" + name + "'");
  }
  std::set<const std::string*> placed;
  for (size_t i = 0; i < in.size(); ++i) {
    auto it = owner.find(in[i].name);
    if (it == owner.end()) {
      add_dense(i, cast);
    } else if (placed.insert(it->second).second) {
      const LayoutRecord& r = records_.at(*it->second);
      const DType dtype = cast.value_or(r.dtype);
      infos_.push_back({*it->second, dtype, r.shape, dtype_storage_bytes(dtype, shape_numel(r.shape))});
      uint64_t stored = 0;
      for (size_t part : parts_at[it->second]) stored += in[part].nbytes;
      slots_.push_back({i, &r, stored, std::move(parts_at[it->second])});
    }
  }
}

Quantized DequantReader::collect(size_t index) {
  const Slot& s = slots_.at(index);
  const std::string where = "tensor '" + infos_.at(index).name + "'";
  if (!s.record) throw usage_error("stored densely, not quantized", where);
  if (s.parts.empty()) throw usage_error("a GGUF block type, not a tensorkit scheme", where);
  std::map<std::string, Tensor> parts;
  for (size_t k = 0; k < s.parts.size(); ++k) parts[s.record->parts[k]] = fetch(s.parts[k]);
  if (!s.ct) {
    return layout_collect(infos_[index].name, *s.record, [&](const std::string& part) -> const Tensor* {
      return &parts.at(part.substr(infos_[index].name.size() + 1));
    });
  }
  try {
    Quantized q = ct_quantized(s.ct->scheme, parts);
    if (q.shape != s.record->shape) throw invalid_input("parameters do not match weight_shape");
    return q;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input(e.message(), where);
  }
}

Quantized DequantReader::quantized(size_t index) {
  try {
    return collect(index);
  } catch (const Error& e) {
    if (e.where().rfind(where_, 0) == 0) throw;
    throw e.with_context(where_);
  }
}

std::unique_ptr<DequantReader> open_dequant_reader(std::unique_ptr<io::TensorReader>& inner, const std::string& path,
                                                   const std::string& name, std::optional<DType> cast, bool gguf) {
  const bool is_gguf = dynamic_cast<const io::GgufReader*>(inner.get()) != nullptr;
  if (has_layout(*inner) || (gguf && is_gguf)) {
    return std::make_unique<DequantReader>(std::move(inner), name, cast);
  }
  if (is_gguf || !inner->random_access()) return nullptr;
  std::optional<CtConfig> ct = ct_config_at(path);
  if (!ct) return nullptr;
  const DType dtype = ct->dtype.value_or(DType::kF32);
  return std::make_unique<DequantReader>(std::move(inner), name, std::move(*ct), dtype, cast);
}

void DequantReader::add_dense(size_t i, std::optional<DType> cast) {
  io::TensorInfo out = inner_->tensors()[i];
  slots_.push_back({i, nullptr, out.nbytes, {}});
  if (cast && dtype_is_float(out.dtype)) {
    out.dtype = *cast;
    out.nbytes = dtype_storage_bytes(*cast, shape_numel(out.shape));
  }
  infos_.push_back(std::move(out));
}

Tensor DequantReader::fetch(size_t i) {
  if (inner_->random_access()) return inner_->read(i);
  if (auto it = held_.find(i); it != held_.end()) {
    Tensor t = std::move(it->second);
    held_.erase(it);
    return t;
  }
  if (i < next_) throw usage_error("tensor was already read from this stream", where_);
  for (; next_ < i; ++next_) held_.emplace(next_, inner_->read(next_));
  ++next_;
  return inner_->read(i);
}

void DequantReader::init_gguf(const io::GgufReader& gguf, std::optional<DType> cast) {
  const auto& in = inner_->tensors();
  for (size_t i = 0; i < in.size(); ++i) {
    const io::GgmlTypeTraits& type = io::ggml_traits(gguf.entry(i).type);
    io::TensorInfo out = in[i];
    if (cast && dtype_is_float(out.dtype)) {
      out.dtype = *cast;
      out.nbytes = dtype_storage_bytes(*cast, shape_numel(out.shape));
    }
    const LayoutRecord* record = nullptr;
    if (!type.plain) record = &(records_[out.name] = LayoutRecord{type.name, DType::kF32, out.shape, {}, {}});
    infos_.push_back(std::move(out));
    slots_.push_back({i, record, gguf.entry(i).nbytes, {}});
  }
}

Tensor DequantReader::read(size_t index) {
  const Slot& s = slots_.at(index);
  const io::TensorInfo& info = infos_[index];
  try {
    if (s.record && !s.parts.empty()) {
      const int device = shape_numel(info.shape) >= device_min_values_ ? device_ : -1;
      return dequantize_as(collect(index), info.dtype, "tensor '" + info.name + "'", device);
    }
    Tensor t = fetch(s.input_index);
    if (t.dtype() == info.dtype) return t;
    Tensor out = Tensor::empty(info.dtype, t.shape());
    cast_array(t.dtype(), t.data(), info.dtype, out.mutable_data(), t.numel());
    return out;
  } catch (const Error& e) {
    if (e.where().rfind(where_, 0) == 0) throw;
    throw e.with_context(where_);
  }
}

void DequantReader::release(size_t index) {
  const Slot& s = slots_.at(index);
  if (!inner_->random_access()) return;
  if (!s.record || s.parts.empty()) return inner_->release(s.input_index);
  for (size_t part : s.parts) inner_->release(part);
}

}  // namespace tk::quant
