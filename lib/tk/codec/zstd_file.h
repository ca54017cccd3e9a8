// The compact form of a tcompressed file (docs/TKZ.md, "Files kept whole"): one bare
// zstd frame of the whole file, with its content size when known and its checksum, as
// `zstd` itself writes it. A file that holds no tensors gains nothing from the
// container's records and index, whose fixed bytes would make a small file larger than
// `zstd -3` makes it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <span>

#include <zstd.h>

#include "tk/codec/file_digest.h"
#include "tk/io/stream.h"
#include "tk/io/tensor_file.h"  // io::is_zstd_frame

namespace tk::codec {

// zstd's contexts, freed with their owner (the codec's lossless frames use them too).
struct ZstdContextFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
using ZstdCCtxPtr = std::unique_ptr<ZSTD_CCtx, ZstdContextFree>;
using ZstdDCtxPtr = std::unique_ptr<ZSTD_DCtx, ZstdContextFree>;

// The largest window a frame may ask for: zstd's own default limit (`zstd -d` refuses
// more without --memory), what the writer's highest level (22) uses.
inline constexpr int kZstdFileWindowLogMax = 27;

struct ZstdFileResult {
  uint64_t bytes_in = 0, bytes_out = 0;
  FileDigest digest;  // XXH3-128 of the file (compress: the input; decompress: the output)
};

// Compress the rest of `in` into `out` as one zstd frame at `level`, with a checksum,
// and `content_size` in its header when given (zstd records it for a file, not for a
// pipe): the bytes `zstd -LEVEL` writes, which compresses on worker threads; `threads`
// of them (at least 1) give the same bytes. Memory: zstd's context and its jobs'
// buffers (a few windows per worker). Throws kIo when `in` does not hold content_size.
ZstdFileResult zstd_file_compress(io::InputStream& in, std::optional<uint64_t> content_size, io::OutputStream& out,
                                  int level, int threads,
                                  const std::function<void(uint64_t done, std::optional<uint64_t> total)>& progress);

// Decode the one zstd frame that is the rest of `in` into `out` (or only count it when
// `out` is null), a piece at a time. Throws kInvalidInput, before allocating for it,
// for a frame that needs a dictionary, carries no checksum or asks for a window over
// 2^kZstdFileWindowLogMax; and for a truncated or corrupt frame, a checksum or content
// size that does not match, or bytes after the frame.
ZstdFileResult zstd_file_decompress(io::InputStream& in, io::OutputStream* out);

}  // namespace tk::codec
