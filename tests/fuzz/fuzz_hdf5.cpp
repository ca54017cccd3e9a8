// libFuzzer target for the HDF5 reader (lib/tk/io/hdf5_reader.cpp). Each input is a
// whole file, handed to HDF5 as a file image (the core driver: what a memory stream
// opens as), so that the real reader runs every step after the open: the walk of the
// groups, the type mapping and the reads. Every tensor of at most 16 MiB is read and
// checked against what the listing says. tk::Error is the expected way to fail: invalid
// input, or unavailable for a filter this process lacks.
#include <cstdint>

#include "fuzz_util.h"
#include "tk/io/hdf5.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto kinds = {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable};
  try {
    auto reader = tk::io::hdf5_open(tk::fuzz::memory_stream({data, size}, "fuzz.h5"), {});
    tk::fuzz::read_every_tensor(*reader, kinds, false);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, kinds);
  }
  return 0;
}
