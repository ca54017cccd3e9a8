// Decompositions <-> named tensors and the `tk` metadata that describes them.
#include "tk/decomp/format.h"

#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::decomp {

namespace {

using nlohmann::json;

int64_t checked_int(const json& j, const char* what) {
  if (!j.is_number_integer()) throw invalid_input(std::string("tdecomp metadata: '") + what + "' is not an integer");
  return j.get<int64_t>();
}

Shape shape_from_json(const json& j, const char* what) {
  if (!j.is_array()) throw invalid_input(std::string("tdecomp metadata: '") + what + "' is not a list");
  Shape s;
  for (const auto& e : j) {
    int64_t v = checked_int(e, what);
    if (v < 0) throw invalid_input(std::string("tdecomp metadata: negative extent in '") + what + "'");
    s.push_back(v);
  }
  shape_numel(s);  // overflow check
  return s;
}

Method method_parse(const std::string& text) {
  if (text == "cp") return Method::kCp;
  if (text == "tucker") return Method::kTucker;
  if (text == "tt") return Method::kTt;
  if (text == "rescal") return Method::kRescal;
  throw invalid_input("tdecomp metadata: unknown method '" + text + "'");
}

Part empty_part(std::string suffix, Shape shape) { return Part{std::move(suffix), std::move(shape), {}}; }

// The parts a decomposition of this method, shape and ranks must have (values empty).
std::vector<Part> expected_parts(const Decomposition& d) {
  std::vector<Part> parts;
  const int64_t order = static_cast<int64_t>(d.shape.size());
  auto need_ranks = [&](size_t n) {
    if (d.ranks.size() != n) throw invalid_input("tdecomp metadata: wrong number of ranks", d.name);
    for (int64_t r : d.ranks)
      if (r <= 0) throw invalid_input("tdecomp metadata: rank <= 0", d.name);
  };
  if (order < 2) throw invalid_input("tdecomp metadata: shape of order < 2", d.name);
  switch (d.method) {
    case Method::kCp:
      need_ranks(1);
      parts.push_back(empty_part("cp.lambda", {d.ranks[0]}));
      for (int64_t n = 0; n < order; ++n)
        parts.push_back(empty_part("cp.factor." + std::to_string(n), {d.shape[n], d.ranks[0]}));
      break;
    case Method::kTucker:
      need_ranks(d.shape.size());
      parts.push_back(empty_part("tucker.core", d.ranks));
      for (int64_t n = 0; n < order; ++n)
        parts.push_back(empty_part("tucker.factor." + std::to_string(n), {d.shape[n], d.ranks[n]}));
      break;
    case Method::kTt: {
      const size_t dims = d.tt_shape.size();
      need_ranks(dims + 1);
      if (d.ranks.front() != 1 || d.ranks.back() != 1) throw invalid_input("tdecomp metadata: TT ranks must start and end with 1", d.name);
      if (shape_numel(d.tt_shape) != shape_numel(d.shape))
        throw invalid_input("tdecomp metadata: TT shape does not match the tensor's size", d.name);
      for (size_t k = 0; k < dims; ++k)
        parts.push_back(empty_part("tt.core." + std::to_string(k), {d.ranks[k], d.tt_shape[k], d.ranks[k + 1]}));
      break;
    }
    case Method::kRescal:
      need_ranks(1);
      if (order != 3 || d.shape[0] != d.shape[1]) throw invalid_input("tdecomp metadata: RESCAL needs an n x n x m shape", d.name);
      parts.push_back(empty_part("rescal.A", {d.shape[0], d.ranks[0]}));
      if (d.notes.at("r_layout") == kRescalLegacyLayout)
        parts.push_back(empty_part("rescal.R", {d.shape[2], d.ranks[0], d.ranks[0]}));
      else
        parts.push_back(empty_part("rescal.R", {d.ranks[0], d.ranks[0], d.shape[2]}));
      break;
  }
  return parts;
}

Decomposition base(const std::string& name, Method method, const Shape& shape, DType dtype) {
  Decomposition d;
  d.name = name;
  d.method = method;
  d.shape = shape;
  d.dtype = dtype;
  return d;
}

json decomp_json(const Decomposition& d) {
  json j = {{"method", method_name(d.method)},
            {"shape", d.shape},
            {"dtype", dtype_name(d.dtype)},
            {"ranks", d.ranks},
            {"factor_dtype", dtype_name(d.factor_dtype)},
            {"rel_error", std::isfinite(d.rel_error) ? json(d.rel_error) : json(nullptr)},
            {"fit", std::isfinite(d.rel_error) ? json(d.fit()) : json(nullptr)},
            {"iterations", d.iterations},
            {"seconds", d.seconds},
            {"converged", d.converged}};
  if (d.seconds_per_iteration > 0) j["seconds_per_iteration"] = d.seconds_per_iteration;
  if (d.method == Method::kTt) j["tt_shape"] = d.tt_shape;
  if (d.seed) j["seed"] = *d.seed;
  for (const auto& [key, value] : d.notes) j[key] = value;
  return j;
}

// The tk value to merge into: anything but a JSON object within the policy counts as none.
json parse_object(const std::optional<std::string>& text) {
  if (!text) return json::object();
  std::optional<json> j = json_parse_if_valid(*text);
  return j && j->is_object() ? std::move(*j) : json::object();
}

// The tk value to read descriptions from (kInvalidInput when it is not JSON).
json parse_tk(const std::optional<std::string>& tk_value) {
  json tk = tk_value ? json_parse(*tk_value, "metadata value 'tk'") : json::object();
  return tk.is_object() ? tk : json::object();
}

std::vector<KeptTensor> kept_from(const json& tk) {
  std::vector<KeptTensor> kept;
  auto member = tk.find("decomp_kept");
  if (member == tk.end()) return kept;
  if (!member->is_object()) throw invalid_input("tdecomp metadata: 'decomp_kept' is not an object");
  for (const auto& [name, j] : member->items()) {
    if (!j.is_object() || !j.contains("method") || !j["method"].is_string())
      throw invalid_input("tdecomp metadata: malformed kept entry", name);
    kept.push_back({name, method_parse(j["method"].get<std::string>())});
  }
  return kept;
}

// RESCAL's R layout from an entry: the note, or the older layout where it is absent.
std::string rescal_layout(const json& j, const std::string& name) {
  auto it = j.find("r_layout");
  if (it == j.end()) return kRescalLegacyLayout;
  if (!it->is_string() || (*it != kRescalLayout && *it != kRescalLegacyLayout))
    throw invalid_input("tdecomp metadata: unknown RESCAL 'r_layout'", name);
  return it->get<std::string>();
}

}  // namespace

const char* method_name(Method method) {
  switch (method) {
    case Method::kCp: return "cp";
    case Method::kTucker: return "tucker";
    case Method::kTt: return "tt";
    case Method::kRescal: return "rescal";
  }
  return "?";
}

uint64_t Decomposition::stored_bytes() const {
  uint64_t total = 0;
  for (const auto& p : parts) total += dtype_storage_bytes(factor_dtype, shape_numel(p.shape));
  return total;
}

uint64_t Decomposition::original_bytes() const { return dtype_storage_bytes(dtype, shape_numel(shape)); }

Decomposition from_cp(const std::string& name, const Shape& shape, DType dtype, const CpResult& r) {
  Decomposition d = base(name, Method::kCp, shape, dtype);
  const int64_t rank = static_cast<int64_t>(r.lambda.size());
  d.ranks = {rank};
  d.parts.push_back({"cp.lambda", {rank}, r.lambda});
  for (size_t n = 0; n < r.factors.size(); ++n)
    d.parts.push_back({"cp.factor." + std::to_string(n), {shape[n], rank}, r.factors[n]});
  d.rel_error = r.rel_error;
  d.iterations = r.iterations;
  d.seconds = r.seconds;
  d.seconds_per_iteration = r.seconds_per_iteration;
  d.converged = r.converged;
  return d;
}

Decomposition from_tucker(const std::string& name, const Shape& shape, DType dtype, TuckerResult r) {
  Decomposition d = base(name, Method::kTucker, shape, dtype);
  d.ranks = r.ranks;
  d.parts.push_back({"tucker.core", r.ranks, std::move(r.core)});
  for (size_t n = 0; n < r.factors.size(); ++n)
    d.parts.push_back({"tucker.factor." + std::to_string(n), {shape[n], r.ranks[n]}, std::move(r.factors[n])});
  d.rel_error = r.rel_error;
  d.iterations = r.iterations;
  d.seconds = r.seconds;
  return d;
}

Decomposition from_tt(const std::string& name, const Shape& shape, DType dtype, const TtResult& r) {
  Decomposition d = base(name, Method::kTt, shape, dtype);
  d.tt_shape = r.shape;
  d.ranks = r.ranks;
  for (size_t k = 0; k < r.cores.size(); ++k)
    d.parts.push_back({"tt.core." + std::to_string(k), {r.ranks[k], r.shape[k], r.ranks[k + 1]}, r.cores[k]});
  d.rel_error = r.rel_error;
  d.seconds = r.seconds;
  return d;
}

Decomposition from_rescal(const std::string& name, const Shape& shape, DType dtype, const RescalResult& r) {
  Decomposition d = base(name, Method::kRescal, shape, dtype);
  const int64_t rank = r.n > 0 ? static_cast<int64_t>(r.a.size()) / r.n : 0;
  d.ranks = {rank};
  d.parts.push_back({"rescal.A", {r.n, rank}, r.a});
  // R_k = r[k*rank*rank ...] becomes R[:, :, k], the slice axis of the input.
  std::vector<double> stacked(r.r.size());
  for (int64_t k = 0; k < r.m; ++k)
    for (int64_t ab = 0; ab < rank * rank; ++ab) stacked[ab * r.m + k] = r.r[k * rank * rank + ab];
  d.parts.push_back({"rescal.R", {rank, rank, r.m}, std::move(stacked)});
  d.notes["r_layout"] = kRescalLayout;
  d.rel_error = r.rel_error;
  d.iterations = r.iterations;
  d.seconds = r.seconds;
  d.converged = r.converged;
  return d;
}

TtResult to_tt(const Decomposition& d) {
  if (d.method != Method::kTt) throw invalid_input("not a TT decomposition (method " + std::string(method_name(d.method)) + ")", d.name);
  TtResult t;
  t.shape = d.tt_shape;
  t.ranks = d.ranks;
  for (const auto& p : d.parts) t.cores.push_back(p.values);
  t.rel_error = d.rel_error;
  return t;
}

CpResult to_cp(const Decomposition& d) {
  if (d.method != Method::kCp) throw invalid_input("not a CP decomposition (method " + std::string(method_name(d.method)) + ")", d.name);
  CpResult r;
  r.lambda = d.parts.at(0).values;
  for (size_t p = 1; p < d.parts.size(); ++p) r.factors.push_back(d.parts[p].values);
  r.rel_error = d.rel_error;
  r.fit = d.fit();
  return r;
}

TuckerResult to_tucker(const Decomposition& d) {
  if (d.method != Method::kTucker)
    throw invalid_input("not a Tucker decomposition (method " + std::string(method_name(d.method)) + ")", d.name);
  TuckerResult r;
  r.ranks = d.ranks;
  r.core = d.parts.at(0).values;
  for (size_t p = 1; p < d.parts.size(); ++p) r.factors.push_back(d.parts[p].values);
  r.rel_error = d.rel_error;
  r.iterations = d.iterations;
  r.seconds = d.seconds;
  return r;
}

Decomposition slab_of(const Decomposition& d, size_t mode, int64_t lo, int64_t hi) {
  if (d.method != Method::kCp && d.method != Method::kTucker)
    throw usage_error(std::string("a ") + method_name(d.method) + " model has no slabs", d.name);
  if (mode >= d.shape.size() || lo < 0 || hi < lo || hi > d.shape[mode])
    throw internal_error("slab_of: rows outside the model", d.name);
  Decomposition s = d;
  Part& factor = s.parts.at(1 + mode);  // after CP's lambda or Tucker's core
  const int64_t cols = factor.shape.at(1);
  factor.values.assign(factor.values.begin() + lo * cols, factor.values.begin() + hi * cols);
  factor.shape[0] = hi - lo;
  s.shape[mode] = hi - lo;
  return s;
}

void round_parts(Decomposition& d, DType dtype) {
  for (auto& p : d.parts) {
    if (p.values.empty()) continue;
    std::vector<uint8_t> stored(dtype_storage_bytes(dtype, p.values.size()));
    cast_array(DType::kF64, p.values.data(), dtype, stored.data(), p.values.size());
    convert_to_f64(dtype, stored.data(), 0, p.values.size(), p.values.data());
  }
}

std::string decomp_metadata(const std::vector<Decomposition>& decomps, const std::vector<KeptTensor>& kept,
                            const std::optional<std::string>& previous) {
  json tk = parse_object(previous);
  json entries = json::object();
  for (const auto& d : decomps) entries[d.name] = decomp_json(d);
  tk["decomp"] = std::move(entries);
  tk.erase("decomp_kept");
  for (const auto& k : kept) tk["decomp_kept"][k.name] = {{"method", method_name(k.method)}};
  return tk.dump();
}

std::optional<std::string> metadata_without_decomp(const std::optional<std::string>& tk_value) {
  json tk = parse_object(tk_value);
  tk.erase("decomp");
  tk.erase("decomp_kept");
  if (tk.empty()) return std::nullopt;
  return tk.dump();
}

std::vector<io::TensorInfo> part_infos(const Decomposition& d) {
  std::vector<io::TensorInfo> infos;
  for (const auto& p : d.parts) {
    uint64_t bytes = dtype_storage_bytes(d.factor_dtype, shape_numel(p.shape));
    infos.push_back({d.part_name(p), d.factor_dtype, p.shape, bytes});
  }
  return infos;
}

Tensor part_tensor(const Decomposition& d, const Part& part) {
  Tensor t = Tensor::empty(d.factor_dtype, part.shape);
  if (part.values.size() != t.numel()) throw internal_error("part size does not match its shape", d.part_name(part));
  cast_array(DType::kF64, part.values.data(), d.factor_dtype, t.mutable_data(), t.numel());
  return t;
}

std::vector<Decomposition> parse_decomp_metadata(const std::optional<std::string>& tk_value) {
  json tk = parse_tk(tk_value);
  const bool described = tk.contains("decomp") && tk["decomp"].is_object() && !tk["decomp"].empty();
  if (!described) {
    if (kept_from(tk).empty()) throw invalid_input("no tdecomp metadata (not a tdecomp output)");
    return {};
  }
  std::vector<Decomposition> out;
  for (const auto& [name, j] : tk["decomp"].items()) {
    if (!j.is_object() || !j.contains("method") || !j["method"].is_string() || !j.contains("dtype") ||
        !j["dtype"].is_string())
      throw invalid_input("tdecomp metadata: malformed entry", name);
    Decomposition d;
    d.name = name;
    d.method = method_parse(j["method"].get<std::string>());
    d.shape = shape_from_json(j.value("shape", json()), "shape");
    d.ranks = shape_from_json(j.value("ranks", json()), "ranks");
    auto dtype = dtype_from_safetensors_name(j["dtype"].get<std::string>());
    auto factor_dtype = dtype_from_safetensors_name(j.value("factor_dtype", std::string("F64")));
    if (!dtype || !factor_dtype) throw invalid_input("tdecomp metadata: unknown dtype", name);
    d.dtype = *dtype;
    d.factor_dtype = *factor_dtype;
    if (d.method == Method::kTt) d.tt_shape = shape_from_json(j.value("tt_shape", json()), "tt_shape");
    if (d.method == Method::kRescal) d.notes["r_layout"] = rescal_layout(j, name);
    if (j.contains("rel_error") && j["rel_error"].is_number()) d.rel_error = j["rel_error"].get<double>();
    if (j.contains("iterations") && j["iterations"].is_number_integer()) d.iterations = j["iterations"].get<int>();
    if (j.contains("seconds") && j["seconds"].is_number()) d.seconds = j["seconds"].get<double>();
    if (j.contains("seed") && j["seed"].is_number_unsigned()) d.seed = j["seed"].get<uint64_t>();
    d.parts = expected_parts(d);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<KeptTensor> parse_kept_metadata(const std::optional<std::string>& tk_value) {
  return kept_from(parse_tk(tk_value));
}

void set_part(Decomposition& d, size_t part_index, const Tensor& stored) {
  Part& p = d.parts.at(part_index);
  if (stored.shape() != p.shape)
    throw invalid_input("stored shape " + shape_to_string(stored.shape()) + " does not match the metadata's " +
                            shape_to_string(p.shape),
                        d.part_name(p));
  if (!dtype_is_float(stored.dtype())) throw invalid_input("part is not a float tensor", d.part_name(p));
  p.values.resize(stored.numel());
  convert_to_f64(stored.dtype(), stored.data(), 0, stored.numel(), p.values.data());
}

}  // namespace tk::decomp
