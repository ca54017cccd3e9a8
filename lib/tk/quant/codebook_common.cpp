#include <algorithm>
#include <charconv>
#include <cstring>

#include "tk/core/error.h"
#include "tk/core/dtype_array.h"
#include "tk/quant/codebook_internal.h"

namespace tk::quant::cbdetail {

std::vector<std::string_view> split_spec(std::string_view spec) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) return parts;
    start = colon + 1;
  }
}

int parse_spec_int(std::string_view text, int lo, int hi, std::string_view spec) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    throw usage_error("bad scheme argument '" + std::string(text) + "' (expected " +
                          std::to_string(lo) + ".." + std::to_string(hi) + ")",
                      std::string(spec));
  }
  return value;
}

uint64_t SeededRandom::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SeededRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t SeededRandom::below(uint64_t n) {
  return static_cast<uint64_t>(uniform() * static_cast<double>(n)) % n;
}

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  SeededRandom mix(seed ^ (stream * 0xd1b54a32d192ed03ull));
  return mix.next();
}

uint64_t packed_bytes(uint64_t count, int bits) {
  return (count * static_cast<uint64_t>(bits) + 7) / 8;
}

uint32_t unpack_code(const uint8_t* codes, uint64_t bytes, int bits, uint64_t i) {
  return tk::detail::read_bits(codes, bytes, i * static_cast<uint64_t>(bits), bits);
}

const Tensor& require_part(const Quantized& q, const std::string& name, DType dtype,
                           const Shape& shape) {
  auto it = q.parts.find(name);
  if (it == q.parts.end()) throw invalid_input("missing part '" + name + "'", q.scheme);
  if (it->second.dtype() != dtype || it->second.shape() != shape) {
    throw invalid_input("part '" + name + "' should be " + dtype_name(dtype) + " " +
                            shape_to_string(shape) + ", is " + dtype_name(it->second.dtype()) +
                            " " + shape_to_string(it->second.shape()),
                        q.scheme);
  }
  return it->second;
}

int64_t require_param(const Quantized& q, const std::string& name, int64_t lo, int64_t hi) {
  auto it = q.params.find(name);
  if (it == q.params.end()) throw invalid_input("missing parameter '" + name + "'", q.scheme);
  int64_t value = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    throw invalid_input("bad parameter " + name + "='" + text + "'", q.scheme);
  }
  return value;
}

void rows_cols(const Shape& shape, int64_t* rows, int64_t* cols) {
  *cols = shape.empty() ? 1 : shape.back();
  *rows = *cols == 0 ? 0 : static_cast<int64_t>(shape_numel(shape)) / *cols;
}

Tensor make_u8(const std::vector<uint8_t>& bytes) {
  Tensor t = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(t.mutable_data(), bytes.data(), bytes.size());
  return t;
}

Tensor make_f16(const std::vector<float>& values, Shape shape) {
  Tensor t = Tensor::empty(DType::kF16, std::move(shape));
  uint16_t* dst = t.mutable_data_as<uint16_t>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = f32_to_f16(values[i]);
  return t;
}

}  // namespace tk::quant::cbdetail
