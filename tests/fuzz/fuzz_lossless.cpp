// libFuzzer target for the lossless frame decoder (lib/tk/codec/lossless.cpp). Each
// input is a frame (its header checksum repaired, fuzz_util.h) decoded three ways:
// whole into memory, by byte ranges through LosslessFrame, and streamed from a source.
// They must agree: the same bytes, or all refuse with kInvalidInput. A frame that
// decodes must survive compress / decompress unchanged. Frames claiming more than
// 16 MiB are only parsed: the claim itself is bounded by the frame's size, and an
// honest 16 MiB claim already covers every code path.
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_util.h"
#include "tk/codec/lossless.h"

namespace {

using tk::fuzz::check;

constexpr uint64_t kDecodeLimit = uint64_t{16} << 20;

// The decoded bytes, or nullopt when the decode refused the frame.
template <typename Decode> std::optional<std::vector<uint8_t>> attempt(Decode&& decode) {
  try {
    return decode();
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame(data, data + size);
  tk::fuzz::fix_lossless_frame(frame);

  uint64_t decoded = 0;
  try {
    decoded = tk::codec::lossless_decoded_size(frame);
    if (size >= tk::codec::kLosslessHeaderBytes) check(tk::codec::lossless_claimed_size(frame, size) == decoded);
  } catch (const tk::Error& e) {
    tk::fuzz::expect_kind(e);
    return 0;
  }
  if (decoded > kDecodeLimit) return 0;

  auto whole = attempt([&] {
    std::vector<uint8_t> out(decoded);
    tk::codec::lossless_decompress(frame, out, 1);
    return out;
  });
  auto ranged = attempt([&] {
    tk::codec::LosslessFrame f(frame);
    check(f.size() == decoded);
    std::vector<uint8_t> out(decoded);
    // Two ranges that split a chunk where there are several: the partial-chunk path.
    const uint64_t cut = std::min<uint64_t>(decoded, f.chunk_bytes() + f.chunk_bytes() / 2);
    f.read(0, {out.data(), cut}, 1);
    f.read(cut, {out.data() + cut, decoded - cut}, 1);
    return out;
  });
  auto streamed = attempt([&] {
    std::vector<uint8_t> out;
    size_t at = 0;
    tk::codec::lossless_decompress_stream(
        [&](size_t n) {
          if (n > frame.size() - at) throw tk::invalid_input("read past the frame");
          tk::Buffer bytes = tk::Buffer::allocate(n);
          std::memcpy(bytes.mutable_data(), frame.data() + at, n);
          at += n;
          return bytes;
        },
        frame.size(), decoded, [&](tk::Buffer piece) { out.insert(out.end(), piece.data(), piece.data() + piece.size()); },
        1);
    return out;
  });
  check(whole.has_value() == ranged.has_value() && whole.has_value() == streamed.has_value());
  if (!whole) return 0;
  check(*whole == *ranged && *whole == *streamed);

  const auto dtype = static_cast<tk::DType>(frame[5]);
  tk::codec::LosslessOptions options;
  options.chunk_bytes = 4096;
  options.threads = 1;
  std::vector<uint8_t> again = tk::codec::lossless_compress(dtype, *whole, options);
  std::vector<uint8_t> restored(tk::codec::lossless_decoded_size(again));
  check(restored.size() == whole->size());
  tk::codec::lossless_decompress(again, restored, 1);
  check(restored == *whole);
  return 0;
}
