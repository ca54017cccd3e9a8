// libFuzzer target for the .tkz container reader. Each input is a whole container (its
// structural checksums repaired, fuzz_util.h), or a file in the compact form (one zstd
// frame, seeds frame_*.tkz: the same entry points decode it, bounded by its window),
// read both from memory (the sequential,
// pipe-like path that scans the records) and from a regular file (the footer's index
// locates each record). It is listed, each tensor of its header is extracted into a
// sink that only counts (so a container claiming a huge tensor costs a chunk batch, not
// the tensor) and, when small, extracted whole and compared, and a container whose
// listing says it restores at most 64 MiB is restored. tk::Error is the expected way to
// fail (invalid input; usage for a tensor the container does not hold); anything else
// (a crash, a sanitizer report, two paths that disagree) is a bug.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "tk/codec/container.h"

namespace {

using tk::fuzz::check;

void expect_error(const tk::Error& e) { tk::fuzz::expect_kind(e, {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUsage}); }

// Tensors extracted whole at most this large; larger ones only through the counting sink.
constexpr uint64_t kWholeLimit = uint64_t{16} << 20;

// Every tensor of `listing` from streams that `open` makes; each extraction either
// delivers what the listing says or throws.
template <typename Open> void extract_all(const tk::codec::TkzListing& listing, Open&& open) {
  for (const auto& entry : listing.entries) {
    if (!entry.is_tensor) continue;
    uint64_t bytes = 0;
    std::vector<uint8_t> streamed;
    tk::codec::TkzTensorSink sink;
    sink.begin = [&](const tk::io::TensorInfo& info) { check(info.nbytes == entry.bytes); };
    sink.piece = [&](std::span<const uint8_t> piece) {
      bytes += piece.size();
      if (entry.bytes <= kWholeLimit) streamed.insert(streamed.end(), piece.begin(), piece.end());
    };
    bool ok = false;
    try {
      tk::codec::tkz_extract_stream(*open(), entry.name, {}, sink);
      check(bytes == entry.bytes);
      ok = true;
    } catch (const tk::Error& e) {
      expect_error(e);
    }
    if (!ok || entry.bytes > kWholeLimit) continue;
    // The whole-tensor path decodes the same record: the same bytes.
    tk::io::TensorInfo info;
    tk::Tensor t = tk::codec::tkz_extract(*open(), entry.name, {}, &info);
    check(info.nbytes == entry.bytes && t.nbytes() == entry.bytes && t.dtype() == entry.dtype);
    check(t.nbytes() == 0 || std::memcmp(t.data(), streamed.data(), t.nbytes()) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> input(data, data + size);
  tk::fuzz::fix_tkz(input);
  auto from_memory = [&] { return tk::fuzz::memory_stream(input, "fuzz.tkz"); };

  tk::codec::TkzListing listing;
  bool listed = false;
  try {
    listing = tk::codec::tkz_list(*from_memory());
    listed = true;
  } catch (const tk::Error& e) {
    expect_error(e);
  }
  extract_all(listing, from_memory);

  // The same container as a seekable file: the listing comes from the footer's index.
  const std::string& path = tk::fuzz::ScratchFile::write(input);
  try {
    tk::codec::TkzListing indexed = tk::codec::tkz_list(*tk::io::InputStream::open(path));
    if (listed) {
      check(indexed.original_bytes == listing.original_bytes && indexed.entries.size() == listing.entries.size());
      for (size_t i = 0; i < indexed.entries.size(); ++i)
        check(indexed.entries[i].name == listing.entries[i].name && indexed.entries[i].bytes == listing.entries[i].bytes &&
              indexed.entries[i].offset == listing.entries[i].offset);
    }
    extract_all(indexed, [&] { return tk::io::InputStream::open(path); });
  } catch (const tk::Error& e) {
    expect_error(e);
  }

  if (listed && listing.original_bytes <= (uint64_t{64} << 20)) {
    std::vector<uint8_t> restored;
    try {
      auto out = tk::io::OutputStream::to_memory(&restored);
      tk::codec::TkzDecompressResult r = tk::codec::tkz_decompress(*from_memory(), *out, {});
      check(r.bytes_out == listing.original_bytes);
    } catch (const tk::Error& e) {
      expect_error(e);
    }
  }
  return 0;
}
