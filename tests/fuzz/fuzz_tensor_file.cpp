// libFuzzer target for the generic opener (lib/tk/io/tensor_file.cpp), as htslib's
// hts_open fuzzer: each input is a file of any format, detected by content and opened
// from memory, and every tensor it lists of at most 16 MiB is read (piece by piece
// too) and checked against its listing. tk::Error is the expected way to fail: invalid
// input, or unavailable for an HDF5 filter this process lacks.
#include <cstdint>

#include "fuzz_util.h"
#include "tk/io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto kinds = {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable};
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  try {
    auto reader = tk::io::open_reader(tk::fuzz::memory_stream({data, size}, "fuzz"), options);
    tk::fuzz::read_every_tensor(*reader, kinds, true);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, kinds);
  }
  return 0;
}
