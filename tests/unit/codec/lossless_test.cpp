// The lossless frame: bit-exact round trips for every dtype and awkward size, the method
// chosen per stream, identical frames for any thread count, and corruption (every
// truncation, every bit flip of small frames) rejected as invalid input.
#include "tk/codec/lossless.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"

namespace tk::codec {
namespace {

using test::kind_of;

constexpr size_t kHeaderBytes = 32;
enum Method : uint8_t { kRaw = 0, kConstant = 1, kZstd = 2, kHuffman = 3 };

// Trained-weight-like bytes for a dtype: N(0, 0.02) cast to float dtypes; for integers
// and the rest, small values around zero with occasional large ones.
std::vector<uint8_t> weights(DType dtype, uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> values(count);
  for (auto& v : values) v = dtype_is_float(dtype) || dtype == DType::kC64 ? normal(rng) : normal(rng) * 500;
  std::vector<uint8_t> bytes(dtype_storage_bytes(dtype, count));
  cast_array(DType::kF32, values.data(), dtype, bytes.data(), count, {.saturate = true});
  return bytes;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> round_trip(DType dtype, const std::vector<uint8_t>& bytes, const LosslessOptions& options = {}) {
  const std::vector<uint8_t> frame = lossless_compress(dtype, bytes, options);
  EXPECT_EQ(lossless_decoded_size(frame), bytes.size());
  std::vector<uint8_t> back(bytes.size(), 0xa5);
  lossless_decompress(frame, back, options.threads);
  EXPECT_TRUE(back == bytes) << dtype_name(dtype) << ", " << bytes.size() << " bytes";
  return frame;
}

int plane_width_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kF16: return 2;
    case DType::kF32:
    case DType::kC64: return 4;
    case DType::kF64: return 8;
    default: return 1;
  }
}

// Methods of every stream of every chunk, read from the chunk table.
std::vector<uint8_t> methods(const std::vector<uint8_t>& frame) {
  uint32_t chunks;
  std::memcpy(&chunks, frame.data() + 20, 4);
  const int streams = frame[6];
  std::vector<uint8_t> m;
  for (uint32_t c = 0; c < chunks; ++c)
    for (int s = 0; s < streams; ++s) m.push_back(frame[kHeaderBytes + c * (8 + 5 * streams) + 8 + 5 * s]);
  return m;
}

TEST(Lossless, RoundTripsEveryDTypeAndSize) {
  LosslessOptions small;
  small.chunk_bytes = 1024;
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    const DType dtype = static_cast<DType>(d);
    // Counts that fill whole bytes for every width (multiples of 4 for the 6-bit types),
    // including one element, an odd number, and sizes around and across chunk bounds.
    for (uint64_t count : {0, 4, 12, 100, 256, 1000, 4096, 12345 * 4}) {
      if (dtype_bits(dtype) % 8 == 0 || count % 4 == 0) {
        const auto bytes = weights(dtype, count, static_cast<uint32_t>(d * 1000 + count));
        round_trip(dtype, bytes, small);
        round_trip(dtype, bytes);
      }
    }
    if (dtype_bits(dtype) % 8 == 0) round_trip(dtype, weights(dtype, 1, 1), small);
    if (dtype_bits(dtype) % 8 == 0) round_trip(dtype, weights(dtype, 777, 2), small);
  }
}

TEST(Lossless, ChoosesAMethodPerStream) {
  LosslessOptions o;
  o.chunk_bytes = 64 * 1024;
  // bf16 weights: the exponent is Huffman-coded, sign+mantissa stored raw.
  const auto bf16 = weights(DType::kBF16, 100000, 1);
  const auto f = round_trip(DType::kBF16, bf16, o);
  for (size_t i = 0; i < methods(f).size(); i += 2) {
    EXPECT_EQ(methods(f)[i], kHuffman);
    EXPECT_EQ(methods(f)[i + 1], kRaw);
  }
  EXPECT_LT(f.size(), bf16.size() / 1.45);
  // All zero: every stream constant, a few bytes per chunk.
  const std::vector<uint8_t> zeros(400000, 0);
  const auto z = round_trip(DType::kF32, zeros, o);
  for (uint8_t m : methods(z)) EXPECT_EQ(m, kConstant);
  // Random bytes do not compress: raw, and the frame barely grows.
  const auto r = round_trip(DType::kF16, random_bytes(300000, 2), o);
  for (uint8_t m : methods(r)) EXPECT_EQ(m, kRaw);
  EXPECT_LT(r.size(), 300000 + 200u);
  const auto ru = round_trip(DType::kU8, random_bytes(300000, 3), o);
  for (uint8_t m : methods(ru)) EXPECT_EQ(m, kRaw);
  // A sparse f32 tensor (95% zeros): zstd beats Huffman on the skewed planes.
  std::vector<float> sparse(100000, 0.0f);
  std::mt19937 rng(4);
  for (size_t i = 0; i < sparse.size(); i += 20) sparse[i] = std::normal_distribution<float>(0, 1)(rng);
  std::vector<uint8_t> sb(sparse.size() * 4);
  std::memcpy(sb.data(), sparse.data(), sb.size());
  const auto s = round_trip(DType::kF32, sb, o);
  EXPECT_EQ(methods(s)[0], kZstd);
  // Integers go to zstd whole.
  const auto i32 = round_trip(DType::kI32, weights(DType::kI32, 100000, 5), o);
  EXPECT_EQ(methods(i32)[0], kZstd);
  EXPECT_EQ(i32[6], 1) << "one stream per chunk";
}

// The XOR of a fine-tune-like pair: base weights N(0, 0.02) and the same moved by
// N(0, 2e-4), except one element in 25 left as it was (rows no batch touched).
std::vector<uint8_t> xor_delta(DType dtype, uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> weight(0.0f, 0.02f), step(0.0f, 2e-4f);
  std::vector<float> base(count), tuned(count);
  for (uint64_t i = 0; i < count; ++i) {
    base[i] = weight(rng);
    tuned[i] = i % 25 == 0 ? base[i] : base[i] + step(rng);
  }
  std::vector<uint8_t> a(dtype_storage_bytes(dtype, count)), b(a.size());
  cast_array(DType::kF32, base.data(), dtype, a.data(), count, {});
  cast_array(DType::kF32, tuned.data(), dtype, b.data(), count, {});
  for (size_t i = 0; i < a.size(); ++i) a[i] ^= b[i];
  return a;
}

TEST(Lossless, DeltaFramesRoundTripAndCodeDeltasSmaller) {
  LosslessOptions delta;
  delta.delta = true;
  delta.chunk_bytes = 64 * 1024;
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32, DType::kF64, DType::kU8, DType::kI32}) {
    for (uint64_t count : {0, 1, 7, 1000, 40000}) {
      const auto bytes = xor_delta(dtype, count, static_cast<uint32_t>(count));
      const auto frame = round_trip(dtype, bytes, delta);
      EXPECT_EQ(frame[7], plane_width_of(dtype) > 1 ? 1 : 0) << dtype_name(dtype) << " flags";
    }
  }
  // The layout pays on deltas, at the default level and more from level 10, where every
  // plane gets a zstd try.
  LosslessOptions plain = delta;
  plain.delta = false;
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const auto bytes = xor_delta(dtype, 400000, 1);
    for (int level : {3, 19}) {
      delta.level = plain.level = level;
      const size_t with = round_trip(dtype, bytes, delta).size(), without = round_trip(dtype, bytes, plain).size();
      EXPECT_LT(static_cast<double>(with), 0.99 * static_cast<double>(without))
          << dtype_name(dtype) << " at level " << level;
    }
  }
}

TEST(Lossless, SameFrameForEveryThreadCount) {
  LosslessOptions o;
  o.chunk_bytes = 16 * 1024;
  const auto bytes = weights(DType::kBF16, 300001, 6);
  o.threads = 1;
  const auto one = lossless_compress(DType::kBF16, bytes, o);
  for (int threads : {2, 3, 0}) {
    o.threads = threads;
    EXPECT_EQ(lossless_compress(DType::kBF16, bytes, o), one) << threads << " threads";
    std::vector<uint8_t> back(bytes.size());
    lossless_decompress(one, back, threads);
    EXPECT_EQ(back, bytes);
  }
}

TEST(Lossless, LargeChunksAndChangingOptions) {
  // Chunks above the size kept in the buffer pool, then small ones again.
  const auto bytes = weights(DType::kBF16, 4'500'000, 14);
  LosslessOptions o;
  o.chunk_bytes = 8u << 20;
  round_trip(DType::kBF16, bytes, o);
  o.chunk_bytes = 4096;
  o.threads = 2;
  round_trip(DType::kBF16, bytes, o);
}

TEST(Lossless, ReportsTheFirstDamagedChunkForAnyThreadCount) {
  LosslessOptions o;
  o.chunk_bytes = 4096;
  const auto bytes = weights(DType::kBF16, 20000, 15);
  auto frame = lossless_compress(DType::kBF16, bytes, o);
  // Damage the last payload byte of chunks 1 and 3 (the end of their raw plane).
  const uint32_t chunks = static_cast<uint32_t>(bytes.size() / 4096 + 1);
  const size_t entry = 8 + 5 * 2;
  size_t offset = kHeaderBytes + chunks * entry;
  for (uint32_t c = 0; c < 4; ++c) {
    for (int s = 0; s < 2; ++s) {
      uint32_t len;
      std::memcpy(&len, frame.data() + kHeaderBytes + c * entry + 8 + 5 * s + 1, 4);
      offset += len;
    }
    if (c == 1 || c == 3) frame[offset - 1] ^= 0x10;
  }
  std::vector<uint8_t> back(bytes.size());
  for (int threads : {1, 2, 4}) {
    try {
      lossless_decompress(frame, back, threads);
      ADD_FAILURE() << "damage not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_EQ(e.where().rfind("chunk 1", 0), 0u) << e.where();
    }
  }
}

TEST(Lossless, DecodedSizeAndHeader) {
  const auto bytes = weights(DType::kF64, 1000, 7);
  const auto frame = lossless_compress(DType::kF64, bytes);
  EXPECT_EQ(lossless_decoded_size(frame), 8000u);
  EXPECT_EQ(std::memcmp(frame.data(), "TKLZ", 4), 0);
  EXPECT_EQ(frame[5], static_cast<uint8_t>(DType::kF64));
  EXPECT_EQ(frame[6], 8);
  const auto empty = lossless_compress(DType::kBF16, {});
  EXPECT_EQ(empty.size(), kHeaderBytes);
  EXPECT_EQ(lossless_decoded_size(empty), 0u);
  std::vector<uint8_t> none;
  lossless_decompress(empty, none);
  EXPECT_EQ(kind_of([] { lossless_decoded_size(std::vector<uint8_t>{'n', 'o', 'p', 'e', 0, 0}); }),
            ErrorKind::kInvalidInput);
  // Flags: bit 0 (the delta layout) only where there are planes; no other bit.
  for (auto [dtype, flags] : {std::pair{DType::kF64, 2}, {DType::kF64, 0x81}, {DType::kU8, 1}}) {
    auto bad = lossless_compress(dtype, weights(dtype, 1000, 8));
    bad[7] = static_cast<uint8_t>(flags);
    try {
      lossless_decoded_size(bad);
      ADD_FAILURE() << "flags " << flags << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find("unknown flags"), std::string::npos) << e.what();
    }
  }
}

TEST(Lossless, RejectsBadArguments) {
  const auto bytes = weights(DType::kBF16, 1000, 8);
  LosslessOptions o;
  o.chunk_bytes = 1000;  // not a multiple of 64
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kBF16, bytes, o); }), ErrorKind::kUsage);
  o.chunk_bytes = 128;
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kBF16, bytes, o); }), ErrorKind::kUsage);
  o = {};
  o.level = 1000;
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kBF16, bytes, o); }), ErrorKind::kUsage);
  o = {};
  o.threads = -1;
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kBF16, bytes, o); }), ErrorKind::kUsage);
  // 1001 bytes are not a whole number of bf16 elements, 1 byte not of F6.
  const std::vector<uint8_t> odd(1001, 0);
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kBF16, odd, {}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { lossless_compress(DType::kF6E2M3, {odd.data(), 1}, {}); }), ErrorKind::kInvalidInput);
  const auto frame = lossless_compress(DType::kBF16, bytes);
  std::vector<uint8_t> wrong(bytes.size() + 2);
  EXPECT_EQ(kind_of([&] { lossless_decompress(frame, wrong); }), ErrorKind::kUsage);
}

// Small frames covering every method: three chunks each, so that the chunk table,
// several payloads and the last (short) chunk are all hit.
std::vector<std::pair<DType, std::vector<uint8_t>>> small_inputs() {
  std::vector<std::pair<DType, std::vector<uint8_t>>> inputs;
  inputs.emplace_back(DType::kBF16, weights(DType::kBF16, 1200, 10));  // Huffman + raw
  std::vector<uint8_t> f32 = weights(DType::kBF16, 700, 11);           // bf16 widened: constant planes
  std::vector<uint8_t> wide(f32.size() * 2, 0);
  for (size_t i = 0; i < f32.size() / 2; ++i) std::memcpy(wide.data() + 4 * i + 2, f32.data() + 2 * i, 2);
  inputs.emplace_back(DType::kF32, wide);
  inputs.emplace_back(DType::kI16, weights(DType::kI16, 1200, 12));  // zstd
  return inputs;
}

TEST(Lossless, EveryTruncationIsInvalidInput) {
  LosslessOptions o;
  o.chunk_bytes = 1024;
  for (const auto& [dtype, bytes] : small_inputs()) {
    const auto frame = round_trip(dtype, bytes, o);
    std::vector<uint8_t> back(bytes.size());
    for (size_t len = 0; len < frame.size(); ++len) {
      const std::span<const uint8_t> cut(frame.data(), len);
      EXPECT_EQ(kind_of([&] { lossless_decoded_size(cut); }), ErrorKind::kInvalidInput) << len;
      EXPECT_EQ(kind_of([&] { lossless_decompress(cut, back, 1); }), ErrorKind::kInvalidInput) << len;
    }
    // Trailing garbage is corruption too.
    std::vector<uint8_t> longer = frame;
    longer.push_back(0);
    EXPECT_EQ(kind_of([&] { lossless_decompress(longer, back); }), ErrorKind::kInvalidInput);
  }
}

TEST(Lossless, EveryBitFlipIsInvalidInput) {
  LosslessOptions o;
  o.chunk_bytes = 1024;
  for (const auto& [dtype, bytes] : small_inputs()) {
    const auto frame = lossless_compress(dtype, bytes, o);
    std::vector<uint8_t> back(bytes.size());
    for (size_t bit = 0; bit < 8 * frame.size(); ++bit) {
      std::vector<uint8_t> bad = frame;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      const ErrorKind kind = kind_of([&] {
        back.assign(lossless_decoded_size(bad), 0);
        lossless_decompress(bad, back, 1);
      });
      ASSERT_EQ(kind, ErrorKind::kInvalidInput) << dtype_name(dtype) << ", bit " << bit << " of " << 8 * frame.size();
    }
  }
}

TEST(Lossless, RandomDamageNeverCrashes) {
  LosslessOptions o;
  o.chunk_bytes = 1024;
  std::mt19937 rng(13);
  for (bool delta : {false, true}) {
    o.delta = delta;
    for (const auto& [dtype, bytes] : small_inputs()) {
      const auto frame = lossless_compress(dtype, bytes, o);
      std::vector<uint8_t> back(bytes.size());
      for (int trial = 0; trial < 300; ++trial) {
        std::vector<uint8_t> bad = frame;
        // Overwrite a run of bytes after the header checksum, which would catch it first.
        const size_t at = kHeaderBytes + rng() % (bad.size() - kHeaderBytes);
        const size_t len = std::min<size_t>(1 + rng() % 16, bad.size() - at);
        for (size_t i = 0; i < len; ++i) bad[at + i] = static_cast<uint8_t>(rng());
        if (bad == frame) continue;
        EXPECT_EQ(kind_of([&] { lossless_decompress(bad, back, 1); }), ErrorKind::kInvalidInput)
            << dtype_name(dtype) << (delta ? ", delta layout" : "");
      }
    }
  }
}

// ---- bounded (streaming) decode and the claims checked before it ----

// Decode `frame` through lossless_decompress_stream from memory; `pieces` gets the size
// of every piece handed over.
std::vector<uint8_t> stream_decode(const std::vector<uint8_t>& frame, uint64_t expected, int threads,
                                   std::vector<size_t>* pieces = nullptr, size_t* read = nullptr) {
  size_t at = 0;
  std::vector<uint8_t> out;
  lossless_decompress_stream(
      [&](size_t n) {
        if (n > frame.size() - at) throw invalid_input("truncated");
        Buffer bytes = Buffer::allocate(n);
        std::memcpy(bytes.mutable_data(), frame.data() + at, n);
        at += n;
        if (read) *read = at;
        return bytes;
      },
      frame.size(), expected,
      [&](Buffer piece) {
        out.insert(out.end(), piece.data(), piece.data() + piece.size());
        if (pieces) pieces->push_back(piece.size());
      },
      threads);
  return out;
}

TEST(LosslessStream, DecodesLikeTheWholeFrameInBoundedPieces) {
  // 24 MiB of mostly zero bf16 (quick to code) with a noisy stretch, in 1 MiB chunks,
  // 4 KiB chunks and one chunk of 64 MiB. A batch is two chunks per thread, at most
  // 16 MiB, at least one chunk.
  std::vector<uint8_t> bytes((24u << 20) + 6, 0);
  const std::vector<uint8_t> noise = weights(DType::kBF16, 1 << 20, 5);
  std::memcpy(bytes.data() + (17u << 20), noise.data(), noise.size());
  for (uint32_t chunk : {1u << 20, 4096u, 64u << 20}) {
    LosslessOptions options;
    options.chunk_bytes = chunk;
    const std::vector<uint8_t> frame = lossless_compress(DType::kBF16, bytes, options);
    for (int threads : {1, 3, 0}) {
      const size_t workers = threads > 0 ? static_cast<size_t>(threads) : static_cast<size_t>(omp_get_max_threads());
      const size_t batch = std::max<size_t>(chunk, std::min<size_t>(16u << 20, 2 * workers * chunk));
      std::vector<size_t> pieces;
      EXPECT_TRUE(stream_decode(frame, bytes.size(), threads, &pieces) == bytes) << chunk;
      for (size_t p : pieces) EXPECT_LE(p, batch) << chunk;
      EXPECT_EQ(pieces.size(), (bytes.size() + batch - 1) / batch) << chunk << " x " << threads;
    }
  }
}

// Random access by byte range: ranges inside one chunk, across chunks, on chunk
// boundaries and the whole frame give the frame's bytes; a damaged chunk is found only
// by a range that touches it.
TEST(LosslessFrameReader, ReadsAnyRangeAndChecksTheChunksItTouches) {
  LosslessOptions o;
  o.chunk_bytes = 4096;
  const auto bytes = weights(DType::kBF16, 20000, 21);  // 40000 bytes: 10 chunks
  std::vector<uint8_t> frame = lossless_compress(DType::kBF16, bytes, o);
  const LosslessFrame reader(frame);
  EXPECT_EQ(reader.size(), bytes.size());
  EXPECT_EQ(reader.chunk_bytes(), 4096u);
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, bytes.size()}, {0, 4096}, {4096, 8192}, {100, 50}, {4000, 200}, {5, 39990}, {39999, 1}, {12288, 0}};
  for (auto [offset, n] : ranges) {
    std::vector<uint8_t> got(n);
    for (int threads : {1, 2}) {
      reader.read(offset, got, threads);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + static_cast<ptrdiff_t>(offset)))
          << offset << "+" << n;
    }
  }
  std::vector<uint8_t> past(2);
  EXPECT_EQ(test::kind_of([&] { reader.read(bytes.size() - 1, past); }), ErrorKind::kInternal);

  // Damage the last payload byte of chunk 2.
  const size_t entry = 8 + 5 * 2;
  size_t offset = kHeaderBytes + 10 * entry;
  for (uint32_t c = 0; c < 3; ++c)
    for (int s = 0; s < 2; ++s) {
      uint32_t len;
      std::memcpy(&len, frame.data() + kHeaderBytes + c * entry + 8 + 5 * s + 1, 4);
      offset += len;
    }
  frame[offset - 1] ^= 0x10;
  const LosslessFrame damaged(frame);
  std::vector<uint8_t> got(4096);
  damaged.read(0, got);      // chunk 0
  damaged.read(12288, got);  // chunk 3
  EXPECT_EQ(test::kind_of([&] { damaged.read(8190, got); }), ErrorKind::kInvalidInput);  // chunks 1-2
  frame[10] ^= 1;  // the header's element count: its checksum fails on construction
  EXPECT_EQ(test::kind_of([&] { LosslessFrame{frame}; }), ErrorKind::kInvalidInput);
}

TEST(LosslessStream, RefusesWhatTheCallerWasNotPromised) {
  const std::vector<uint8_t> bytes = weights(DType::kF32, 5000, 3);
  const std::vector<uint8_t> frame = lossless_compress(DType::kF32, bytes);
  size_t read = 0;
  EXPECT_EQ(kind_of([&] { stream_decode(frame, bytes.size() + 4, 1, nullptr, &read); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(read, kHeaderBytes);  // the header alone was read
  std::vector<uint8_t> bad = frame;
  bad[bad.size() - 1] ^= 1;
  EXPECT_EQ(kind_of([&] { stream_decode(bad, bytes.size(), 1); }), ErrorKind::kInvalidInput);
}

// A frame header claiming `elements` bytes of U8 in chunks of `chunk_bytes`.
std::vector<uint8_t> u8_header(uint64_t elements, uint32_t chunk_bytes, uint32_t chunks) {
  std::vector<uint8_t> h(kHeaderBytes, 0);
  std::memcpy(h.data(), "TKLZ", 4);
  h[4] = 1;
  h[5] = static_cast<uint8_t>(DType::kU8);
  h[6] = 1;
  std::memcpy(h.data() + 8, &elements, 8);
  std::memcpy(h.data() + 16, &chunk_bytes, 4);
  std::memcpy(h.data() + 20, &chunks, 4);
  return h;
}

TEST(LosslessClaims, AClaimMustFitTheFramesLength) {
  // 4 GiB in 64 chunks of 64 MiB: a table of 64 entries of 13 bytes, one constant
  // byte per chunk. The claim holds for a frame that long, not for one byte less.
  const std::vector<uint8_t> h = u8_header(uint64_t{4} << 30, 64u << 20, 64);
  const uint64_t table = 64 * (8 + 5);
  EXPECT_EQ(lossless_claimed_size(h, kHeaderBytes + table + 64), uint64_t{4} << 30);
  EXPECT_EQ(lossless_claimed_size(h, kHeaderBytes + table), uint64_t{4} << 30);
  EXPECT_EQ(kind_of([&] { lossless_claimed_size(h, kHeaderBytes + table - 1); }), ErrorKind::kInvalidInput);
  // The chunk count follows from the size; small chunks need a long table.
  EXPECT_EQ(kind_of([&] { lossless_claimed_size(u8_header(uint64_t{4} << 30, 64u << 20, 63), 1 << 20); }),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { lossless_claimed_size(u8_header(uint64_t{4} << 30, 256, 1u << 24), 1 << 20); }),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { lossless_claimed_size(u8_header(UINT64_MAX, 64u << 20, 0), 1 << 20); }),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([&] { lossless_claimed_size({h.data(), 31}, 1 << 20); }), ErrorKind::kInvalidInput);
  // And a stream decode of such a frame reads its header and nothing more.
  std::vector<uint8_t> frame = u8_header(uint64_t{4} << 30, 256, 1u << 24);
  frame.resize(4096, 0);
  size_t read = 0;
  EXPECT_EQ(kind_of([&] { stream_decode(frame, uint64_t{4} << 30, 1, nullptr, &read); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(read, kHeaderBytes);
}

}  // namespace
}  // namespace tk::codec
