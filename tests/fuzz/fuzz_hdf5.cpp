// libFuzzer target for the HDF5 reader (lib/tk/io/hdf5_reader.cpp). Each input is a
// whole file, handed to HDF5 as a file image (the core driver: what a memory stream
// opens as), so that the real reader runs every step after the open: the walk of the
// groups, the type mapping and the reads. Every tensor of at most 16 MiB is read and
// checked against what the listing says; larger ones are skipped (a chunked dataset
// may legitimately claim gigabytes from a few bytes of fill value). tk::Error is the
// expected way to fail: invalid input, or unavailable for a filter this process lacks.
#include <cstdint>

#include "fuzz_util.h"
#include "tk/io/hdf5.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tk::fuzz::check;
  constexpr uint64_t kReadLimit = uint64_t{16} << 20;
  try {
    auto reader = tk::io::hdf5_open(tk::fuzz::memory_stream({data, size}, "fuzz.h5"), {});
    for (size_t i = 0; i < reader->tensors().size(); ++i) {
      const tk::io::TensorInfo& info = reader->tensors()[i];
      if (info.nbytes > kReadLimit) continue;
      try {
        tk::Tensor t = reader->read(i);
        check(t.dtype() == info.dtype && t.shape() == info.shape && t.nbytes() == info.nbytes);
      } catch (const tk::Error& e) {
        tk::fuzz::expect_kind(e, {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable});
      }
    }
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable});
  }
  return 0;
}
