// libFuzzer target for the zip layer (lib/tk/io/zip.cpp): each input is an archive. It
// must parse or be refused with kInvalidInput (kUnavailable only if zlib cannot start);
// a parsed archive's entries lie inside the file without overlapping, each is found by
// its name, and each of at most 16 MiB reads (checked against its CRC-32) to its
// declared size, its prefix and its pieces agreeing with the whole.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_util.h"
#include "tk/io/zip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tk::fuzz::check;
  const auto kinds = {tk::ErrorKind::kInvalidInput, tk::ErrorKind::kUnavailable};
  try {
    tk::io::ZipArchive zip(tk::fuzz::copy_of({data, size}), "fuzz.zip");
    const auto& entries = zip.entries();
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (size_t i = 0; i < entries.size(); ++i) {
      const tk::io::ZipEntry& e = entries[i];
      check(e.data_offset <= size && e.stored_bytes <= size - e.data_offset && e.header_offset < e.data_offset);
      ranges.emplace_back(e.header_offset, e.data_offset + e.stored_bytes);
      check(zip.find(e.name) == i);
      if (e.bytes > (uint64_t{16} << 20)) continue;
      try {
        tk::Buffer whole = zip.read(i);
        check(whole.size() == e.bytes);
        tk::Buffer head = zip.read_prefix(i, 100);
        check(head.size() <= whole.size() && std::memcmp(head.data(), whole.data(), head.size()) == 0);
        // The same bytes a piece at a time, from an offset.
        const uint64_t skip = std::min<uint64_t>(3, whole.size());
        uint64_t at = skip;
        zip.read_pieces(i, skip, whole.size() - skip, 1000, [&](std::span<const uint8_t> piece) {
          check(piece.size() <= whole.size() - at && std::memcmp(piece.data(), whole.data() + at, piece.size()) == 0);
          at += piece.size();
        });
        check(at == whole.size());
      } catch (const tk::Error& err) {
        tk::fuzz::expect_kind(err, kinds);
      }
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t k = 1; k < ranges.size(); ++k) check(ranges[k - 1].second <= ranges[k].first);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e, kinds);
  }
  return 0;
}
