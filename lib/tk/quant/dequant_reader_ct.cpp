// DequantReader over a compressed-tensors model: each quantized module's parameters
// (MODULE.weight_packed, MODULE.weight_scale, ...) read as the one tensor MODULE.weight.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/quant/dequant_reader.h"
#include "tk/quant/scheme.h"

namespace tk::quant {

namespace {

// A quantized module: its group and its parameters' indices in the file, root first.
struct CtModule {
  const CtGroup* group = nullptr;
  std::vector<size_t> params;
};

// The quantized modules of the file, by the index of their root parameter. A module is
// quantized when its group names it, or when any of the group's parameters but a plain
// "weight" is there; then every one must be: a missing one (the root included) is an
// error naming the module, never a weight silently absent. A plain "weight" alone (the
// root of float-quantized) is what every module has: under a class target ("Linear")
// or a pattern, such a module is dense.
std::map<size_t, CtModule> find_modules(const CtConfig& config, const std::vector<io::TensorInfo>& in,
                                        const std::string& where) {
  std::unordered_map<std::string_view, size_t> index;
  for (size_t i = 0; i < in.size(); ++i) index.emplace(in[i].name, i);
  std::map<size_t, CtModule> modules;
  std::set<std::string> seen;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& name = in[i].name;
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string module = name.substr(0, dot);
    if (seen.count(module)) continue;
    const CtGroup* group = ct_group_for(config, module);
    if (!group) continue;
    const std::vector<std::string> names = ct_param_names(group->scheme);
    const std::string param = name.substr(dot + 1);
    const bool named = std::find(group->targets.begin(), group->targets.end(), module) != group->targets.end();
    const bool is_param = std::find(names.begin(), names.end(), param) != names.end();
    if (!(named || (is_param && param != "weight"))) continue;
    seen.insert(module);
    CtModule m{group, {}};
    for (const std::string& p : names) {
      auto at = index.find(module + "." + p);
      if (at == index.end()) {
        throw invalid_input(fmt::format("missing parameter '{}'", p), where + ": module '" + module + "'");
      }
      m.params.push_back(at->second);
    }
    modules[m.params[0]] = std::move(m);
  }
  return modules;
}

}  // namespace

DequantReader::DequantReader(std::unique_ptr<io::TensorReader> inner, const std::string& where, CtConfig config,
                             DType dtype, std::optional<DType> cast)
    : inner_(std::move(inner)), where_(where), ct_(std::move(config)) {
  metadata_ = inner_->metadata();
  skipped_ = inner_->skipped();
  if (!inner_->random_access()) throw usage_error("a compressed-tensors model is read from its files", where_);
  const auto& in = inner_->tensors();
  const std::map<size_t, CtModule> modules = find_modules(ct_, in, where_);
  std::set<size_t> owned;
  for (const auto& [root, m] : modules) owned.insert(m.params.begin(), m.params.end());
  for (size_t i = 0; i < in.size(); ++i) {
    auto found = modules.find(i);
    if (found == modules.end()) {
      if (!owned.count(i)) add_dense(i, cast);
      continue;
    }
    const CtModule& m = found->second;
    const std::string module = in[i].name.substr(0, in[i].name.rfind('.'));
    const std::vector<std::string> names = ct_param_names(m.group->scheme);
    Shape shape;
    try {
      Tensor shape_param;
      for (size_t k = 0; k < names.size(); ++k)
        if (names[k] == "weight_shape") shape_param = inner_->read(m.params[k]);
      const bool has_shape = std::find(names.begin(), names.end(), "weight_shape") != names.end();
      shape = ct_weight_shape(m.group->scheme, in[i].shape, has_shape ? &shape_param : nullptr);
    } catch (const Error& e) {
      throw invalid_input(e.message(), where_ + ": module '" + module + "'");
    }
    const std::string name = module + ".weight";
    const LayoutRecord* record =
        &(records_[name] = LayoutRecord{ct_tensorkit_scheme(m.group->scheme), dtype, shape, {}, names});
    uint64_t stored = 0;
    for (size_t p : m.params) stored += in[p].nbytes;
    const DType out = cast.value_or(dtype);
    infos_.push_back({name, out, shape, dtype_storage_bytes(out, shape_numel(shape))});
    slots_.push_back({i, record, stored, m.params, m.group});
  }
}

}  // namespace tk::quant
