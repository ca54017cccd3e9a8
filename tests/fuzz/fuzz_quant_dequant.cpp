// libFuzzer target for what 'tquant dequant' reads (lib/tk/quant/layout.cpp and each
// scheme's dequantize): each input is a quantized safetensors file, read from memory.
// The records of its `tk` metadata are parsed and each is dequantized from its parts,
// by the optimised path and by the scalar reference, which must give the same bits.
// A record whose shape its parts cannot hold (no scheme stores less than 1/64 bit per
// value, as the tool checks) or of more than 4 Mi values is not dequantized.
// tk::Error is the expected way to fail: invalid input, or usage for an unknown or
// malformed scheme name (the tool turns it into invalid input).
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "fuzz_util.h"
#include "tk/io/safetensors.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/layout.h"
#include "tk/quant/view.h"

namespace {

using tk::fuzz::check;

constexpr uint64_t kMaxValues = uint64_t{4} << 20;

using Tensors = std::map<std::string, tk::Tensor>;

void dequantize(const Tensors& tensors, const std::string& name, const tk::quant::LayoutRecord& record) {
  std::unique_ptr<tk::quant::Scheme> scheme;
  try {
    scheme = tk::quant::make_scheme(record.scheme);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, {tk::ErrorKind::kUsage});
    return;
  }
  uint64_t part_bits = 0;
  for (const std::string& suffix : record.parts) {
    auto it = tensors.find(tk::quant::layout_part_name(name, suffix));
    if (it != tensors.end()) part_bits += it->second.nbytes() * 8;  // layout_collect names a missing one
  }
  const uint64_t n = tk::shape_numel(record.shape);
  if (n > part_bits * 64 + 64 || n > kMaxValues) return;
  tk::quant::Quantized q = tk::quant::layout_collect(name, record, [&](const std::string& part) -> const tk::Tensor* {
    auto it = tensors.find(part);
    return it == tensors.end() ? nullptr : &it->second;
  });
  std::vector<float> fast(n), reference(n);
  bool fast_ok = true;
  try {
    tk::quant::dequantize_view(*scheme, q, fast.data());
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    fast_ok = false;
  }
  try {
    tk::quant::dequantize_view(*scheme, q, reference.data(), true);
    check(fast_ok);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    check(!fast_ok);
    return;
  }
  check(n == 0 || std::memcmp(fast.data(), reference.data(), n * sizeof(float)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  std::map<std::string, tk::quant::LayoutRecord> records;
  Tensors tensors;
  try {
    auto reader = tk::io::safetensors_open(tk::fuzz::memory_stream({data, size}, "fuzz.safetensors"), options);
    auto tk_value = reader->metadata().find("tk");
    if (tk_value == reader->metadata().end()) return 0;
    records = tk::quant::layout_metadata_parse(tk_value->second);
    // A memory stream is read in order: every part first, then the records in any order.
    for (size_t i = 0; i < reader->tensors().size(); ++i) tensors[reader->tensors()[i].name] = reader->read(i);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    return 0;
  }
  for (const auto& [name, record] : records) {
    try {
      dequantize(tensors, name, record);
    } catch (const tk::Error& e) {
      tk::fuzz::expect_kind(e);
    }
  }
  return 0;
}
