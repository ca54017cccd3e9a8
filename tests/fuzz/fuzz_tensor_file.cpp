// libFuzzer target for the generic opener (lib/tk/io/tensor_file.cpp), as htslib's
// hts_open fuzzer: each input is a file of any format, detected by content and opened
// from memory, and every tensor it lists of at most 16 MiB is read (piece by piece
// too) and checked against its listing. tk::Error is the expected way to fail: invalid
// input, or unavailable for an HDF5 filter this process lacks.
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "tk/io/tensor_file.h"

namespace {

void expect_error(const tk::Error& e) {
  tk::fuzz::expect_kind(e, {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tk::fuzz::check;
  constexpr uint64_t kReadLimit = uint64_t{16} << 20;
  tk::io::ReadOptions options;
  options.allow_mmap = false;
  std::unique_ptr<tk::io::TensorReader> reader;
  try {
    reader = tk::io::open_reader(tk::fuzz::memory_stream({data, size}, "fuzz"), options);
  } catch (const tk::Error& e) {
    expect_error(e);
    return 0;
  }
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    const tk::io::TensorInfo& info = reader->tensors()[i];
    if (info.nbytes > kReadLimit) continue;
    try {
      tk::Tensor t = reader->read(i);
      check(t.dtype() == info.dtype && t.shape() == info.shape && t.nbytes() == info.nbytes);
      if (!reader->random_access()) continue;
      uint64_t at = 0;
      reader->read_pieces(i, 1000, [&](std::span<const uint8_t> piece) {
        check(piece.size() <= t.nbytes() - at && std::memcmp(piece.data(), t.data() + at, piece.size()) == 0);
        at += piece.size();
      });
      check(at == t.nbytes());
    } catch (const tk::Error& e) {
      expect_error(e);
    }
  }
  return 0;
}
