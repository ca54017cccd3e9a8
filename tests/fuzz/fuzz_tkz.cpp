// libFuzzer target for the .tkz container reader. Each input is a whole container, read
// from memory (the sequential, pipe-like path): it is listed, each tensor of its
// header is extracted into a sink that only counts (so a container claiming a huge
// tensor costs a chunk batch, not the tensor), and a container whose listing says it
// restores at most 64 MiB is restored. tk::Error is the expected way to fail (invalid
// input; usage for a tensor the container does not hold); anything else (a crash, a
// sanitizer report, a listing and an extraction that disagree) is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tk/codec/container.h"
#include "tk/core/error.h"

namespace {

std::unique_ptr<tk::io::InputStream> open_memory(const uint8_t* data, size_t size) {
  tk::Buffer b = tk::Buffer::allocate(size);
  if (size) std::memcpy(b.mutable_data(), data, size);
  return tk::io::InputStream::from_buffer(std::move(b), "fuzz.tkz");
}

void check(bool ok) {
  if (!ok) std::abort();
}

void expect_error(const tk::Error& e) {
  check(e.kind() == tk::ErrorKind::kInvalidInput || e.kind() == tk::ErrorKind::kUsage);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tk::codec::TkzListing listing;
  try {
    listing = tk::codec::tkz_list(*open_memory(data, size));
  } catch (const tk::Error& e) {
    expect_error(e);
    return 0;
  }
  for (const auto& entry : listing.entries) {
    if (!entry.is_tensor) continue;
    uint64_t bytes = 0;
    tk::codec::TkzTensorSink sink;
    sink.begin = [&](const tk::io::TensorInfo& info) { check(info.nbytes == entry.bytes); };
    sink.piece = [&](std::span<const uint8_t> piece) { bytes += piece.size(); };
    try {
      tk::codec::tkz_extract_stream(*open_memory(data, size), entry.name, {}, sink);
      check(bytes == entry.bytes);
    } catch (const tk::Error& e) {
      expect_error(e);
    }
  }
  if (listing.original_bytes <= (uint64_t{64} << 20)) {
    std::vector<uint8_t> restored;
    try {
      auto out = tk::io::OutputStream::to_memory(&restored);
      tk::codec::TkzDecompressResult r = tk::codec::tkz_decompress(*open_memory(data, size), *out, {});
      check(r.bytes_out == listing.original_bytes);
    } catch (const tk::Error& e) {
      expect_error(e);
    }
  }
  return 0;
}
