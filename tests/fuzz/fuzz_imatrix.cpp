// libFuzzer target for llama.cpp's imatrix files (lib/tk/quant/imatrix.cpp). An input
// that starts with "GGUF" is opened as a GGUF file from memory and read as an imatrix
// when it holds *.in_sum2 tensors; any other input is parsed as a legacy .dat. An
// accepted file gives non-empty vectors whose values fit in the input, and the names
// mapped to Hugging Face's and back come home.
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "tk/io/gguf.h"
#include "tk/quant/imatrix.h"

namespace {

void check_names(const tk::quant::ImportanceMap& m, size_t input_size, bool legacy) {
  using tk::fuzz::check;
  std::vector<std::string> names;
  for (const auto& [name, values] : m) {
    check(!values.empty());
    if (legacy) check(values.size() <= input_size / 4);
    if (auto hf = tk::quant::llama_to_hf_name(name)) check(tk::quant::hf_to_llama_name(*hf) == name);
    names.push_back(name);
  }
  std::vector<std::string> unmatched;
  check(tk::quant::importance_match(m, names, &unmatched).size() == m.size() && unmatched.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool gguf = size >= 4 && std::memcmp(data, "GGUF", 4) == 0;
  try {
    if (!gguf) {
      check_names(tk::quant::imatrix_parse_legacy({data, size}), size, true);
      return 0;
    }
    tk::io::ReadOptions options;
    auto reader = tk::io::gguf_open(tk::fuzz::memory_stream({data, size}, "fuzz.gguf"), options);
    if (!tk::quant::imatrix_is_gguf(*reader)) return 0;
    check_names(tk::quant::imatrix_read_gguf(*reader), size, false);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable});
  }
  return 0;
}
