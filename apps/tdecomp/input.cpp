// Reading the tensors to decompose.
#include "input.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "cli/display_text.h"
#include "cli/number_format.h"
#include "cli/path_args.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"

namespace tk::tdecomp {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

template <typename T> constexpr DType kComputeDType = sizeof(T) == 8 ? DType::kF64 : DType::kF32;

bool is_real_number_type(DType dtype) {
  const DTypeClass cls = dtype_traits(dtype).cls;
  return cls != DTypeClass::kBool && cls != DTypeClass::kComplex;
}

// Why `method` cannot take a tensor: `group` for the notice, `reason` for --explain.
struct Unfit {
  std::string group;
  std::string reason;
};

std::optional<Unfit> unfit(const io::TensorInfo& info, const std::string& method, const Shape& reshape) {
  if (!is_real_number_type(info.dtype))
    return Unfit{"of a non-numeric dtype", fmt::format("dtype {} is not a real number type", dtype_name(info.dtype))};
  const Shape& shape = reshape.empty() ? info.shape : reshape;
  if (method == "rescal") {
    if (shape.size() != 3 || shape[0] != shape[1])
      return Unfit{"not n x n x m", fmt::format("shape {}, rescal needs n x n x m", shape_to_string(shape))};
  } else if (shape.size() < 2) {
    return Unfit{"of order below 2", fmt::format("order {}, {} needs >= 2", shape.size(), method)};
  }
  return std::nullopt;
}

// The skipped tensors by group: "3 tensors of order below 2 (e.g. 'a.bias'), ...".
struct Skipped {
  std::string group;
  size_t count = 0;
  std::string example;
};

std::string skipped_text(const std::vector<Skipped>& skipped) {
  std::vector<std::string> parts;
  for (const Skipped& s : skipped)
    parts.push_back(
        fmt::format("{} {} (e.g. '{}')", cli::count_noun(s.count, "tensor", "tensors"), s.group, s.example));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

Input::Input(const std::string& path) : stream_(cli::open_input(path)) {
  tns_ = (!cli::is_std_stream(path) && (ends_with(path, ".tns") || ends_with(path, ".tns.gz"))) ||
         io::stream_holds_tns(*stream_);
}

io::SparseTensor Input::read_tns(const io::TnsReadOptions& options) {
  if (!stream_) throw internal_error("the input was read already");
  std::unique_ptr<io::InputStream> in = std::move(stream_);
  return io::read_tns(*in, options);
}

std::unique_ptr<io::TensorReader> Input::open_reader() {
  if (!stream_) throw internal_error("the input was read already");
  return io::open_reader(std::move(stream_));
}

std::string tns_tensor_name(const std::string& path) {
  if (cli::is_std_stream(path)) return "tensor";
  std::string base = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".tns"})
    if (ends_with(base, ext)) base.resize(base.size() - std::strlen(ext));
  return base.empty() ? std::string("tensor") : base;
}

std::vector<size_t> tensors_to_decompose(const cli::Tool& tool, const io::TensorReader& reader,
                                         const std::string& method, const Shape& reshape, bool explain, bool report) {
  explain = explain && report;
  cli::TensorSelection selection = tool.options().selection();
  const bool chosen = !tool.options().tensors.empty();
  const auto& infos = reader.tensors();
  std::vector<size_t> picked;
  std::vector<Skipped> skipped;
  std::string decisions;
  for (size_t i = 0; i < infos.size(); ++i) {
    const std::string& name = infos[i].name;
    std::string decision = "decompose";
    if (!selection.selects(name)) {
      decision = "not selected (-t/--exclude)";
    } else if (auto u = chosen ? std::nullopt : unfit(infos[i], method, reshape)) {
      decision = "skipped (" + u->reason + ")";
      auto group = std::find_if(skipped.begin(), skipped.end(), [&](const Skipped& s) { return s.group == u->group; });
      if (group == skipped.end()) group = skipped.insert(skipped.end(), Skipped{u->group, 0, name});
      ++group->count;
    } else {
      picked.push_back(i);
    }
    if (explain) decisions += cli::escape_text(name) + ": " + decision + "\n";
  }
  std::fputs(decisions.c_str(), stderr);
  selection.check_all_patterns_used();
  if (infos.empty()) throw invalid_input("no tensor to decompose");
  if (picked.empty() && skipped.empty()) throw usage_error("every tensor is excluded; -t and --exclude select tensors");
  if (picked.empty())
    throw usage_error("no tensor left to decompose: skipped " + skipped_text(skipped) + "; -t selects tensors");
  if (!skipped.empty() && report) tool.summary("notice: skipped " + skipped_text(skipped) + "; -t selects tensors");
  return picked;
}

Source read_source(io::TensorReader& reader, size_t index, const std::string& file) {
  Source s = named_source(reader.tensors()[index], file);
  s.tensor = reader.read(index);
  return s;
}

Source named_source(const io::TensorInfo& info, const std::string& file) {
  Source s{info.name, fmt::format("{}: tensor '{}'", file, info.name), {}};
  if (!is_real_number_type(info.dtype))
    throw invalid_input(fmt::format("dtype {} is not a real number type", dtype_name(info.dtype)), s.where);
  return s;
}

void check_order(const Shape& shape, const std::string& where) {
  if (shape.size() < 2)
    throw invalid_input(fmt::format("tensor of order {}; decompositions need order >= 2", shape.size()), where);
}

Source densify(const io::SparseTensor& sparse, const std::string& name, const std::string& file) {
  Source s{name, fmt::format("{}: tensor '{}'", file, name), {}};
  const uint64_t numel = shape_numel(sparse.shape);
  if (numel > kMaxDensifyElements)
    throw usage_error(fmt::format("a sparse tensor of {} elements is too large to densify; only cp works on "
                                  ".tns input of this size",
                                  numel),
                      s.where);
  s.tensor = Tensor::zeros(DType::kF64, sparse.shape);
  double* x = s.tensor.mutable_data_as<double>();
  const int order = sparse.order();
  for (int64_t e = 0; e < sparse.nnz(); ++e) {
    int64_t offset = 0;
    for (int n = 0; n < order; ++n) offset = offset * sparse.shape[n] + sparse.indices[e * order + n];
    x[offset] += sparse.values[e];  // duplicates add up, as in COO
  }
  return s;
}

template <typename T> ComputeData<T>::ComputeData(const Source& source, const uint8_t* mask) {
  const Tensor& t = source.tensor;
  const uint64_t n = t.numel();
  const bool aligned = reinterpret_cast<uintptr_t>(t.data()) % alignof(T) == 0;
  if (t.dtype() == kComputeDType<T> && aligned) {
    data_ = t.data_as<T>();
  } else {
    owned_.resize(n);
    if constexpr (sizeof(T) == 8)
      convert_to_f64(t.dtype(), t.data(), 0, n, owned_.data());
    else
      convert_to_f32(t.dtype(), t.data(), 0, n, owned_.data());
    data_ = owned_.data();
  }
  // Element i of a slab as an element of the whole tensor.
  auto element = [&](uint64_t i) {
    if (!source.slab) return i;
    const SlabPlace& p = *source.slab;
    uint64_t inner = 1;
    for (size_t k = p.mode + 1; k < p.whole.size(); ++k) inner *= static_cast<uint64_t>(p.whole[k]);
    const uint64_t run = static_cast<uint64_t>(t.shape()[p.mode]) * inner;
    return i / run * static_cast<uint64_t>(p.whole[p.mode]) * inner + static_cast<uint64_t>(p.lo) * inner + i % run;
  };
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isfinite(data_[i])) continue;
    if (!mask || mask[i])
      throw invalid_input(fmt::format("non-finite value ({}) at element {}; mask it with --mask or clean the data",
                                      std::isnan(data_[i]) ? "NaN" : "Inf", element(i)),
                          source.where);
    if (owned_.empty()) owned_.assign(data_, data_ + n);
    owned_[i] = 0;
    data_ = owned_.data();
  }
}

template class ComputeData<double>;
template class ComputeData<float>;

std::vector<uint8_t> read_mask(const std::string& path, const Source& source) {
  auto reader = cli::open_tensor_file(path);
  const std::string file = cli::input_display_name(path);
  auto index = reader->find(source.name);
  if (!index) {
    if (reader->tensors().size() != 1)
      throw invalid_input(fmt::format("no mask tensor named '{}' (and not exactly one tensor)", source.name), file);
    index = 0;
  }
  Tensor m = reader->read(*index);
  if (m.shape() != source.tensor.shape())
    throw invalid_input(fmt::format("mask shape {} differs from the tensor's {}", shape_to_string(m.shape()),
                                    shape_to_string(source.tensor.shape())),
                        fmt::format("{}: tensor '{}'", file, reader->tensors()[*index].name));
  std::vector<double> values(m.numel());
  convert_to_f64(m.dtype(), m.data(), 0, m.numel(), values.data());
  std::vector<uint8_t> mask(m.numel());
  for (size_t i = 0; i < values.size(); ++i) mask[i] = values[i] != 0 ? 1 : 0;
  return mask;
}

}  // namespace tk::tdecomp
