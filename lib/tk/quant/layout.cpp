#include "tk/quant/layout.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "tk/core/json_parse_internal.h"
#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/imatrix.h"

namespace tk::quant {

namespace {

using nlohmann::json;

json record_json(const LayoutRecord& r) {
  json params = json::object();
  for (const auto& [k, v] : r.params) params[k] = v;
  return {{"scheme", r.scheme}, {"dtype", dtype_name(r.dtype)}, {"shape", r.shape},
          {"params", std::move(params)}, {"parts", r.parts}};
}

[[noreturn]] void bad_record(const std::string& name, const std::string& what) {
  throw invalid_input("quantization metadata: " + what, "tensor '" + name + "'");
}

LayoutRecord parse_record(const std::string& name, const json& j) {
  if (!j.is_object()) bad_record(name, "record is not an object");
  LayoutRecord r;
  auto scheme = j.find("scheme");
  if (scheme == j.end() || !scheme->is_string()) bad_record(name, "no scheme");
  r.scheme = scheme->get<std::string>();
  auto dtype = j.find("dtype");
  if (dtype == j.end() || !dtype->is_string()) bad_record(name, "no dtype");
  auto parsed = dtype_from_safetensors_name(dtype->get<std::string>());
  if (!parsed || !dtype_is_float(*parsed)) bad_record(name, "bad dtype " + dtype->dump());
  r.dtype = *parsed;
  auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array()) bad_record(name, "no shape");
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) bad_record(name, "bad shape " + shape->dump());
    r.shape.push_back(d.get<int64_t>());
  }
  try {
    shape_numel(r.shape);
  } catch (const Error&) {
    bad_record(name, "shape too large");
  }
  auto params = j.find("params");
  if (params == j.end() || !params->is_object()) bad_record(name, "no params");
  for (const auto& [k, v] : params->items()) {
    if (!v.is_string()) bad_record(name, "parameter " + k + " is not a string");
    r.params[k] = v.get<std::string>();
  }
  auto parts = j.find("parts");
  if (parts == j.end() || !parts->is_array()) bad_record(name, "no parts");
  for (const json& p : *parts) {
    if (!p.is_string()) bad_record(name, "bad part name");
    r.parts.push_back(p.get<std::string>());
  }
  return r;
}

// An imatrix's columns clipped to kImatrixColumnCap times their median.
ImportanceMap clipped(ImportanceMap importance) {
  for (auto& [name, values] : importance) importance_clip(values, kImatrixColumnCap);
  return importance;
}

}  // namespace

std::string layout_part_name(const std::string& tensor, const std::string& suffix) {
  return tensor + "." + suffix;
}

LayoutRecord layout_record(const Quantized& q, DType dtype) {
  LayoutRecord r;
  r.scheme = q.scheme;
  r.dtype = dtype;
  r.shape = q.shape;
  r.params = q.params;
  for (const auto& [suffix, tensor] : q.parts) r.parts.push_back(suffix);
  return r;
}

std::string layout_metadata_merge(const std::optional<std::string>& previous,
                                  const std::map<std::string, LayoutRecord>& records) {
  json doc = json::object();
  if (previous) {
    std::optional<json> parsed = json_parse_if_valid(*previous);
    if (parsed && parsed->is_object()) {
      doc = std::move(*parsed);
    } else {
      doc["previous"] = *previous;
    }
  }
  json tensors = json::object();
  for (const auto& [name, r] : records) tensors[name] = record_json(r);
  doc["quant"] = {{"version", kLayoutVersion}, {"tensors", std::move(tensors)}};
  try {
    return doc.dump();
  } catch (const json::type_error&) {
    // Names from HDF5 or .npz files may be any bytes; JSON holds only UTF-8.
    throw invalid_input("a tensor name or metadata value is not valid UTF-8, which the JSON metadata cannot hold");
  }
}

std::string layout_metadata_strip(const std::string& tk_value) {
  std::optional<json> doc = json_parse_if_valid(tk_value);
  if (!doc || !doc->is_object()) return tk_value;
  doc->erase("quant");
  return doc->dump();
}

std::map<std::string, LayoutRecord> layout_metadata_parse(const std::string& tk_value) {
  json doc = json_parse(tk_value, "metadata value 'tk'");
  if (!doc.is_object()) throw invalid_input("the tk metadata is not a JSON object");
  auto quant = doc.find("quant");
  if (quant == doc.end() || !quant->is_object()) {
    throw invalid_input("no quantization metadata (the tk metadata has no \"quant\" object)");
  }
  auto version = quant->find("version");
  if (version == quant->end() || !version->is_number_integer() || version->get<int>() != kLayoutVersion) {
    throw invalid_input("unsupported quantization metadata version");
  }
  auto tensors = quant->find("tensors");
  if (tensors == quant->end() || !tensors->is_object()) {
    throw invalid_input("quantization metadata has no \"tensors\" object");
  }
  std::map<std::string, LayoutRecord> records;
  for (const auto& [name, j] : tensors->items()) records[name] = parse_record(name, j);
  return records;
}

Error layout_missing_part(const std::string& name, const std::string& suffix) {
  return invalid_input("missing part '" + layout_part_name(name, suffix) + "'", "tensor '" + name + "'");
}

std::map<std::string, std::vector<float>> read_importance(const std::string& path) {
  {
    // llama.cpp's legacy .dat imatrix has no signature: it is what no format claims.
    std::unique_ptr<io::InputStream> in = io::InputStream::open(path);
    if (io::detect_format(*in) == io::FileFormat::kUnknown) {
      const Buffer bytes = Buffer::map_file(path);
      try {
        return clipped(imatrix_parse_legacy({bytes.data(), bytes.size()}));
      } catch (const Error& e) {
        throw e.with_context(path);
      }
    }
  }
  auto reader = io::open_reader(path);
  if (reader->format() == io::FileFormat::kGguf && imatrix_is_gguf(*reader)) {
    try {
      return clipped(imatrix_read_gguf(*reader));
    } catch (const Error& e) {
      throw e.with_context(path);
    }
  }
  std::map<std::string, std::vector<float>> out;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    const io::TensorInfo& info = reader->tensors()[i];
    if (!dtype_is_float(info.dtype)) continue;
    Tensor t = reader->read(i);
    std::vector<float> values(t.numel());
    convert_to_f32(t.dtype(), t.data(), 0, t.numel(), values.data());
    out[info.name] = std::move(values);
  }
  return out;
}

const float* importance_for(const std::map<std::string, std::vector<float>>& importance,
                            const std::string& name, int64_t cols) {
  auto it = importance.find(name);
  if (it == importance.end()) return nullptr;
  const std::vector<float>& w = it->second;
  if (static_cast<int64_t>(w.size()) != cols) {
    throw invalid_input("importance vector has " + std::to_string(w.size()) + " values, the tensor " +
                            std::to_string(cols) + " columns",
                        "tensor '" + name + "'");
  }
  for (float v : w) {
    if (!std::isfinite(v) || v < 0) {
      throw invalid_input("importance values must be finite and non-negative", "tensor '" + name + "'");
    }
  }
  return w.data();
}

}  // namespace tk::quant
