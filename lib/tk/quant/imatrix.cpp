// llama.cpp's imatrix files (GGUF and legacy .dat) read as per-column importance.
#include "tk/quant/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "tk/core/error.h"

namespace tk::quant {

namespace {

// Little-endian reads that never pass the end of the bytes.
class LegacyCursor {
 public:
  explicit LegacyCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  size_t left() const { return bytes_.size() - pos_; }
  int32_t i32(const std::string& where) {
    const std::span<const uint8_t> b = take(4, where);
    return static_cast<int32_t>(uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24);
  }
  std::span<const uint8_t> take(size_t n, const std::string& where) {
    if (n > left()) throw invalid_input("imatrix ends inside an entry", where);
    std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

float f32_le(const uint8_t* p) {
  const uint32_t u = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::vector<float> read_f32(io::TensorReader& reader, size_t index) {
  Tensor t = reader.read(index);
  std::vector<float> v(t.numel());
  convert_to_f32(t.dtype(), t.data(), 0, t.numel(), v.data());
  reader.release(index);
  return v;
}

bool strip_suffix(std::string& name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  name.resize(name.size() - suffix.size());
  return true;
}

// Per-layer tensors of the llama architecture: llama.cpp's name part, then HF's.
constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
    {"attn_q", "self_attn.q_proj"},     {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},       {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"}};
constexpr std::pair<std::string_view, std::string_view> kModelNames[] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};

// Split "PREFIX<digits>.REST" into the digits and REST; false when it has no such form.
bool split_layer(std::string_view name, std::string_view prefix, std::string_view* layer, std::string_view* rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits == 0 || digits >= name.size() || name[digits] != '.') return false;
  *layer = name.substr(0, digits);
  *rest = name.substr(digits + 1);
  return true;
}

// Map "BASE.weight"/"BASE.bias" through `table` (from column `from` to `to`).
std::optional<std::string> map_base(std::string_view base_and_kind, bool to_hf,
                                    std::span<const std::pair<std::string_view, std::string_view>> table) {
  for (std::string_view kind : {".weight", ".bias"}) {
    if (base_and_kind.size() <= kind.size() || base_and_kind.substr(base_and_kind.size() - kind.size()) != kind) continue;
    const std::string_view base = base_and_kind.substr(0, base_and_kind.size() - kind.size());
    for (const auto& [llama, hf] : table) {
      if ((to_hf ? llama : hf) == base) return std::string(to_hf ? hf : llama) + std::string(kind);
    }
  }
  return std::nullopt;
}

}  // namespace

void importance_clip(std::vector<float>& importance, double ratio) {
  std::vector<float> positive;
  for (float v : importance) {
    if (v > 0) positive.push_back(v);
  }
  if (positive.empty()) return;
  const auto mid = positive.begin() + static_cast<std::ptrdiff_t>(positive.size() / 2);
  std::nth_element(positive.begin(), mid, positive.end());
  const float cap = static_cast<float>(static_cast<double>(*mid) * ratio);
  for (float& v : importance) v = std::min(v, cap);
}

ImportanceMap imatrix_parse_legacy(std::span<const uint8_t> bytes) {
  LegacyCursor in(bytes);
  const int32_t n_entries = in.i32("imatrix header");
  // Each entry takes at least 16 bytes (three counts, a 1-byte name, one value).
  if (n_entries < 1 || static_cast<uint64_t>(n_entries) > in.left() / 16) {
    throw invalid_input(fmt::format("imatrix claims {} entries in {} bytes", n_entries, bytes.size()), "imatrix header");
  }
  ImportanceMap out;
  for (int32_t i = 0; i < n_entries; ++i) {
    const std::string where = fmt::format("imatrix entry {}", i);
    const int32_t len = in.i32(where);
    if (len < 1 || static_cast<uint64_t>(len) > in.left()) {
      throw invalid_input(fmt::format("name length {} with {} bytes left", len, in.left()), where);
    }
    const std::span<const uint8_t> name_bytes = in.take(static_cast<size_t>(len), where);
    std::string name(name_bytes.begin(), name_bytes.end());
    const int32_t ncall = in.i32(where);
    const int32_t nval = in.i32(where);
    if (nval < 1 || static_cast<uint64_t>(nval) > in.left() / 4) {
      throw invalid_input(fmt::format("{} values with {} bytes left", nval, in.left()), where);
    }
    const std::span<const uint8_t> raw = in.take(static_cast<size_t>(nval) * 4, where);
    std::vector<float> values(static_cast<size_t>(nval));
    const float calls = ncall > 0 ? static_cast<float>(ncall) : 1.0f;
    for (size_t j = 0; j < values.size(); ++j) values[j] = f32_le(raw.data() + 4 * j) / calls;
    if (!out.emplace(std::move(name), std::move(values)).second) throw invalid_input("duplicate entry name", where);
  }
  // What follows (the last chunk and the dataset's name) does not weigh columns.
  return out;
}

bool imatrix_is_gguf(const io::TensorReader& reader) {
  for (const io::TensorInfo& info : reader.tensors()) {
    std::string name = info.name;
    if (strip_suffix(name, ".in_sum2")) return true;
  }
  return false;
}

ImportanceMap imatrix_read_gguf(io::TensorReader& reader) {
  std::map<std::string, std::pair<std::optional<size_t>, std::optional<size_t>>> parts;  // in_sum2, counts
  const std::vector<io::TensorInfo>& infos = reader.tensors();
  for (size_t i = 0; i < infos.size(); ++i) {
    std::string name = infos[i].name;
    if (strip_suffix(name, ".in_sum2")) {
      parts[name].first = i;
    } else if (strip_suffix(name, ".counts")) {
      parts[name].second = i;
    }
  }
  ImportanceMap out;
  for (const auto& [name, p] : parts) {
    const std::string where = "imatrix entry '" + name + "'";
    if (!p.first || !p.second) throw invalid_input(p.first ? "in_sum2 without counts" : "counts without in_sum2", where);
    const io::TensorInfo& sums_info = infos[*p.first];
    const io::TensorInfo& counts_info = infos[*p.second];
    if (!dtype_is_float(sums_info.dtype) || !dtype_is_float(counts_info.dtype)) {
      throw invalid_input("in_sum2 and counts must be float tensors", where);
    }
    const uint64_t n_mat = shape_numel(counts_info.shape);
    const uint64_t n_val = shape_numel(sums_info.shape);
    if (n_mat == 0 || n_val == 0 || n_val % n_mat != 0) {
      throw invalid_input(fmt::format("{} sums for {} matrices", n_val, n_mat), where);
    }
    // A pipe is read in storage order: the earlier of the two first.
    std::vector<float> counts, sums;
    if (*p.first < *p.second) {
      sums = read_f32(reader, *p.first);
      counts = read_f32(reader, *p.second);
    } else {
      counts = read_f32(reader, *p.second);
      sums = read_f32(reader, *p.first);
    }
    const uint64_t cols = n_val / n_mat;
    double total = 0;
    for (float c : counts) {
      if (!std::isfinite(c) || c < 0) throw invalid_input("counts must be finite and non-negative", where);
      total += c;
    }
    if (total == 0) continue;  // no activation met this matrix
    std::vector<double> pooled(cols, 0.0);
    for (uint64_t m = 0; m < n_mat; ++m) {
      if (counts[m] == 0) continue;
      for (uint64_t j = 0; j < cols; ++j) pooled[j] += sums[m * cols + j];
    }
    std::vector<float> values(cols);
    for (uint64_t j = 0; j < cols; ++j) values[j] = static_cast<float>(pooled[j] / total);
    out.emplace(name, std::move(values));
  }
  return out;
}

std::optional<std::string> llama_to_hf_name(std::string_view name) {
  std::string_view layer, rest;
  if (split_layer(name, "blk.", &layer, &rest)) {
    if (auto mapped = map_base(rest, true, kLayerNames)) return "model.layers." + std::string(layer) + "." + *mapped;
    return std::nullopt;
  }
  return map_base(name, true, kModelNames);
}

std::optional<std::string> hf_to_llama_name(std::string_view name) {
  std::string_view layer, rest;
  if (split_layer(name, "model.layers.", &layer, &rest)) {
    if (auto mapped = map_base(rest, false, kLayerNames)) return "blk." + std::string(layer) + "." + *mapped;
    return std::nullopt;
  }
  return map_base(name, false, kModelNames);
}

ImportanceMap importance_match(const ImportanceMap& importance, const std::vector<std::string>& names,
                               std::vector<std::string>* unmatched) {
  ImportanceMap out;
  std::set<std::string> used;
  for (const std::string& name : names) {
    for (const std::optional<std::string>& key : {std::optional<std::string>(name), llama_to_hf_name(name),
                                                  hf_to_llama_name(name)}) {
      if (!key) continue;
      auto it = importance.find(*key);
      if (it == importance.end()) continue;
      out[name] = it->second;
      used.insert(*key);
      break;
    }
  }
  if (unmatched) {
    for (const auto& [key, values] : importance)
      if (!used.count(key)) unmatched->push_back(key);
  }
  return out;
}

}  // namespace tk::quant
