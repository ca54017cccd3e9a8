// One bare zstd frame of a whole file, written and read a piece at a time
// (zstd_file.h; the frame header's layout is RFC 8878, section 3.1.1.1).
#include "zstd_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <zstd.h>

#include "tk/core/error.h"

namespace tk::codec {
namespace {

constexpr size_t kPiece = size_t{1} << 20;

ZstdCCtxPtr compress_context(int level, int threads) {
  ZstdCCtxPtr c(ZSTD_createCCtx());
  if (!c) throw unavailable("zstd: out of memory");
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1);
  // The zstd command line compresses with worker threads (one by default), whose frames
  // differ from the single-threaded ones and are the same for any number of workers.
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_nbWorkers, std::max(threads, 1));
  return c;
}

// What the frame header says that the reader checks before decoding.
struct FrameHeader {
  uint64_t window = 0;  // bytes the decoder must keep
  uint32_t dictionary = 0;
  bool checksum = false;
};

// Parse the frame header at the start of `in`, or throw. A single-segment frame's
// window is its content size (the decoder then holds the whole output).
FrameHeader read_frame_header(io::InputStream& in) {
  constexpr size_t kMaxHeader = 18;
  const std::span<const uint8_t> h = in.peek(kMaxHeader);
  if (h.size() < 5 || !io::is_zstd_frame(h)) throw invalid_input("truncated zstd frame header", in.name());
  const uint8_t descriptor = h[4];
  if (descriptor & 0x08) throw invalid_input("zstd frame header sets a reserved bit", in.name());
  const bool single_segment = descriptor & 0x20;
  const size_t dict_bytes = (size_t{1} << (descriptor & 3)) >> 1;  // 0, 1, 2, 4
  const unsigned fcs_flag = descriptor >> 6;
  const size_t fcs_bytes = fcs_flag == 0 ? (single_segment ? 1 : 0) : size_t{1} << fcs_flag;
  const size_t size = 5 + !single_segment + dict_bytes + fcs_bytes;
  if (h.size() < size) throw invalid_input("truncated zstd frame header", in.name());
  FrameHeader f;
  f.checksum = descriptor & 0x04;
  size_t at = 5;
  if (!single_segment) {
    const unsigned exponent = h[at] >> 3, mantissa = h[at] & 7;
    const uint64_t base = uint64_t{1} << (10 + exponent);
    f.window = base + base / 8 * mantissa;
    ++at;
  }
  for (size_t i = 0; i < dict_bytes; ++i) f.dictionary |= uint32_t{h[at + i]} << (8 * i);
  at += dict_bytes;
  if (single_segment) {
    uint64_t content = 0;
    for (size_t i = 0; i < fcs_bytes; ++i) content |= uint64_t{h[at + i]} << (8 * i);
    f.window = content + (fcs_bytes == 2 ? 256 : 0);
  }
  return f;
}

// A tcompressed file is one frame; what zstd would take as a next frame is refused.
[[noreturn]] void refuse_trailing(std::span<const uint8_t> rest, const std::string& name) {
  if (io::is_zstd_frame(rest.subspan(0, std::min<size_t>(rest.size(), 4))))
    throw invalid_input("a second zstd frame after the first; a compressed file is one frame", name);
  throw invalid_input("bytes after the zstd frame", name);
}

}  // namespace

ZstdFileResult zstd_file_compress(io::InputStream& in, std::optional<uint64_t> content_size, io::OutputStream& out,
                                  int level, int threads,
                                  const std::function<void(uint64_t, std::optional<uint64_t>)>& progress) {
  auto c = compress_context(level, threads);
  const std::optional<uint64_t> total = content_size;
  if (total) ZSTD_CCtx_setPledgedSrcSize(c.get(), *total);
  std::vector<uint8_t> piece(ZSTD_CStreamInSize()), coded(ZSTD_CStreamOutSize());
  StreamDigest digest(DigestKind::kXxh3_128);
  ZstdFileResult r;
  const uint64_t out_begin = out.position();
  for (;;) {
    const size_t n = in.read(piece.data(), piece.size());
    digest.update(piece.data(), n);
    r.bytes_in += n;
    // The frame ends on an empty read, as the zstd command line ends it: ending it with
    // the first (short) read would record the size of piped input, which zstd does not.
    const ZSTD_EndDirective mode = n == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer src{piece.data(), n, 0};
    for (;;) {
      ZSTD_outBuffer dst{coded.data(), coded.size(), 0};
      const size_t left = ZSTD_compressStream2(c.get(), &dst, &src, mode);
      // A file that changed size while read breaks the pledged size.
      if (ZSTD_isError(left)) throw io_error(std::string("zstd: ") + ZSTD_getErrorName(left), in.name());
      out.write(coded.data(), dst.pos);
      if (mode == ZSTD_e_end ? left == 0 : src.pos == src.size) break;
    }
    if (progress) progress(r.bytes_in, total);
    if (mode == ZSTD_e_end) break;
  }
  r.bytes_out = out.position() - out_begin;
  r.digest = digest.finish();
  return r;
}

ZstdFileResult zstd_file_decompress(io::InputStream& in, io::OutputStream* out) {
  const FrameHeader f = read_frame_header(in);
  if (f.dictionary != 0)
    throw invalid_input(fmt::format("the zstd frame needs dictionary {}; only frames without a dictionary are read",
                                    f.dictionary),
                        in.name());
  if (!f.checksum) throw invalid_input("the zstd frame carries no checksum to verify the restored file", in.name());
  if (f.window > uint64_t{1} << kZstdFileWindowLogMax)
    throw invalid_input(fmt::format("the zstd frame asks for a {} MiB window, more than the {} MiB allowed",
                                    f.window >> 20, 1 << (kZstdFileWindowLogMax - 20)),
                        in.name());
  ZstdDCtxPtr d(ZSTD_createDCtx());
  if (!d) throw unavailable("zstd: out of memory");
  ZSTD_DCtx_setParameter(d.get(), ZSTD_d_windowLogMax, kZstdFileWindowLogMax);
  std::vector<uint8_t> piece(ZSTD_DStreamInSize()), decoded(kPiece);
  StreamDigest digest(DigestKind::kXxh3_128);
  ZstdFileResult r;
  size_t left = 1;  // zstd's hint: 0 once the frame is complete
  while (left != 0) {
    const size_t n = in.read(piece.data(), piece.size());
    if (n == 0) throw invalid_input("truncated zstd frame", in.name());
    r.bytes_in += n;
    ZSTD_inBuffer src{piece.data(), n, 0};
    while (src.pos < src.size || left != 0) {
      ZSTD_outBuffer dst{decoded.data(), decoded.size(), 0};
      left = ZSTD_decompressStream(d.get(), &dst, &src);
      if (ZSTD_isError(left))
        throw invalid_input(std::string("corrupt zstd frame: ") + ZSTD_getErrorName(left), in.name());
      digest.update(decoded.data(), dst.pos);
      r.bytes_out += dst.pos;
      if (out) out->write(decoded.data(), dst.pos);
      if (left == 0 && src.pos < src.size) refuse_trailing({piece.data() + src.pos, src.size - src.pos}, in.name());
      // Input used up and the output buffer not filled: zstd needs more input.
      if (src.pos == src.size && dst.pos < dst.size) break;
    }
  }
  if (const auto rest = in.peek(4); !rest.empty()) refuse_trailing(rest, in.name());
  r.digest = digest.finish();
  return r;
}

}  // namespace tk::codec
