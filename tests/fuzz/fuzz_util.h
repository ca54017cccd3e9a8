// What the fuzz targets share: inputs as memory streams or a scratch file, the one way
// a target may refuse an input (a tk::Error of an expected kind), and the repair of the
// checksums that guard the formats' headers.
//
// Checksums: a mutated header almost never keeps its XXH3, so without help the fuzzer
// would spend its time on "checksum mismatch" and never reach the code behind it. The
// targets recompute the header checksums of lossless frames and .tkz containers before
// the library sees the input (the checks of decoded bytes against their checksums stay:
// they run after the decoders). Replays apply the same repair, so a saved input
// reproduces what the fuzzer saw.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tk/codec/container_format.h"
#include "tk/codec/lossless.h"
#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"

namespace tk::fuzz {

inline void check(bool ok) {
  if (!ok) std::abort();
}

// A bad input is refused with a tk::Error of one of `kinds`; any other kind is a bug.
inline void expect_kind(const Error& e, std::initializer_list<ErrorKind> kinds = {ErrorKind::kInvalidInput}) {
  for (ErrorKind k : kinds)
    if (e.kind() == k) return;
  std::abort();
}

// Read every tensor of `reader` of at most 16 MiB and check it against its listing
// (larger ones are skipped: a chunked HDF5 dataset may legitimately claim gigabytes from a
// few bytes of fill value); `pieces` reads each also piece by piece, where the reader
// allows it. A read may fail only with an Error of `kinds`.
inline void read_every_tensor(io::TensorReader& reader, std::initializer_list<ErrorKind> kinds, bool pieces) {
  constexpr uint64_t kReadLimit = uint64_t{16} << 20;
  for (size_t i = 0; i < reader.tensors().size(); ++i) {
    const io::TensorInfo& info = reader.tensors()[i];
    if (info.nbytes > kReadLimit) continue;
    try {
      Tensor t = reader.read(i);
      check(t.dtype() == info.dtype && t.shape() == info.shape && t.nbytes() == info.nbytes);
      if (!pieces || !reader.random_access()) continue;
      uint64_t at = 0;
      reader.read_pieces(i, 1000, [&](std::span<const uint8_t> piece) {
        check(piece.size() <= t.nbytes() - at && std::memcmp(piece.data(), t.data() + at, piece.size()) == 0);
        at += piece.size();
      });
      check(at == t.nbytes());
    } catch (const Error& e) {
      expect_kind(e, kinds);
    }
  }
}

inline Buffer copy_of(std::span<const uint8_t> bytes) {
  Buffer b = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}

inline std::unique_ptr<io::InputStream> memory_stream(std::span<const uint8_t> bytes, const std::string& name) {
  return io::InputStream::from_buffer(copy_of(bytes), name);
}

// One regular file per process, rewritten for each input: for the paths a reader takes
// only on a seekable file (a container's footer index). Removed at exit.
class ScratchFile {
 public:
  static const std::string& write(std::span<const uint8_t> bytes) {
    static ScratchFile file;
    int fd = ::open(file.path_.c_str(), O_WRONLY | O_TRUNC);
    check(fd >= 0);
    for (size_t at = 0; at < bytes.size();) {
      ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
      check(n > 0);
      at += static_cast<size_t>(n);
    }
    ::close(fd);
    return file.path_;
  }

 private:
  ScratchFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/tk-fuzz-XXXXXX";
    int fd = ::mkstemp(path_.data());
    check(fd >= 0);
    ::close(fd);
  }
  ~ScratchFile() { ::unlink(path_.c_str()); }

  std::string path_;
};

template <typename T> T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T> void store_le(uint8_t* p, T v) { std::memcpy(p, &v, sizeof v); }

// The header checksum of a lossless frame (lossless.cpp): XXH3 of the chunk table,
// seeded with XXH3 of the first 24 bytes, at offset 24. Left alone when the table
// the header describes does not fit.
inline void fix_lossless_frame(std::span<uint8_t> frame) {
  constexpr size_t kHeader = codec::kLosslessHeaderBytes;
  if (frame.size() < kHeader || std::memcmp(frame.data(), "TKLZ", 4) != 0) return;
  const uint64_t chunks = load_le<uint32_t>(frame.data() + 20);
  const uint64_t table = chunks * (8 + 5 * uint64_t{frame[6]});
  if (table > frame.size() - kHeader) return;
  store_le<uint64_t>(frame.data() + 24,
                     XXH3_64bits_withSeed(frame.data() + kHeader, table, XXH3_64bits(frame.data(), 24)));
}

// The checksums of a .tkz container's structure (container_format.h): the file header,
// each record header (and the lossless frame of its payload), and the index with the
// footer, each wherever the bytes before it say it is.
inline void fix_tkz(std::span<uint8_t> c) {
  using namespace codec::tkz;
  if (c.size() < kFileHeaderBytes + 8 || std::memcmp(c.data(), "TKZ", 3) != 0) return;
  const uint64_t original = load_le<uint64_t>(c.data() + 8);
  if (original > c.size() - kFileHeaderBytes - 8) return;
  uint64_t at = kFileHeaderBytes + original;
  store_le<uint64_t>(c.data() + at, hash({c.data(), at}));
  at += 8;
  while (c.size() - at >= kRecordHeaderBytes) {
    uint8_t* r = c.data() + at;
    store_le<uint64_t>(r + 40, hash({r, 40}));
    at += kRecordHeaderBytes;
    if (r[0] == static_cast<uint8_t>(Kind::kEnd)) break;
    const uint64_t stored = load_le<uint64_t>(r + 16);
    if (stored > c.size() - at) break;
    if (r[1] != static_cast<uint8_t>(codec::TkzCodec::kLossy)) fix_lossless_frame(c.subspan(at, stored));
    at += stored;
  }
  if (c.size() < kFooterBytes) return;
  uint8_t* footer = c.data() + c.size() - kFooterBytes;
  const uint64_t index_offset = load_le<uint64_t>(footer), index_bytes = load_le<uint64_t>(footer + 8);
  const uint64_t before_footer = c.size() - kFooterBytes;
  if (index_offset > before_footer || index_bytes > before_footer - index_offset) return;
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, c.data() + index_offset, index_bytes);
  XXH3_64bits_update(&state, footer, 64);
  store_le<uint64_t>(footer + 64, XXH3_64bits_digest(&state));
}

}  // namespace tk::fuzz
