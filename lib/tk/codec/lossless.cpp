// The byte-grouped lossless frame. Layout, all integers little-endian:
//
//   offset size
//   0      4    magic "TKLZ"
//   4      1    version (1)
//   5      1    dtype (tk::DType value)
//   6      1    streams per chunk: the plane width of the dtype (bf16/f16 2, f32/c64 4,
//               f64 8), 1 for every other dtype (its bytes as they are)
//   7      1    flags: bit 0 = delta layout (XOR deltas, LosslessOptions::delta; only with
//               2+ streams): planes of plain bytes, high to low, and plane 0 sorted by
//               the top bit of plane 1 (byte_planes.h); else the regrouped planes
//   8      8    element count
//   16     4    chunk bytes: decoded bytes per chunk (the last chunk may be shorter)
//   20     4    chunk count
//   24     8    header checksum: XXH3-64 of the chunk table seeded with XXH3-64 of [0, 24)
//   32          chunk table, per chunk: u64 checksum (XXH3-64 of the chunk's decoded bytes;
//               xor a hash of its zstd streams if any, see ChunkChecksum), then per
//               stream u8 method and u32 coded length
//               payload: the coded streams, chunk by chunk, stream by stream
//
// The checksum is kept per chunk rather than over the whole tensor so that it is
// computed while the chunk is in cache and by the thread that coded it; together the
// chunk checksums cover every decoded byte, and the header checksum covers the rest.
#include "tk/codec/lossless.h"

#include <omp.h>
#include <sys/mman.h>
// Inlined: the chunk is hashed while in cache, and the inline SSE2 code ran the codec
// faster there than libxxhash's AVX-512 dispatch (decompress 3.7 against 2.8 GB/s).
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "tk/codec/byte_planes.h"
#include "tk/codec/huffman.h"
#include "tk/core/buffer.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"

#include "zstd_file.h"  // ZstdCCtxPtr, ZstdDCtxPtr

namespace tk::codec {
namespace {

constexpr uint8_t kMagic[4] = {'T', 'K', 'L', 'Z'};
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = kLosslessHeaderBytes;
constexpr size_t kChunkHashBytes = 8;
constexpr size_t kStreamEntryBytes = 5;
constexpr uint32_t kMinChunkBytes = 256;
constexpr uint32_t kMaxChunkBytes = 64u << 20;
constexpr uint32_t kChunkAlignment = 64;  // a multiple of every plane width
constexpr uint8_t kFlagDelta = 1;
// Levels from which a delta's planes all get a zstd try (see LosslessOptions::delta).
constexpr int kDeltaTryAllLevel = 10;
// Decoded bytes a streaming decode holds at once: two chunks per thread, at most this
// many, and one chunk when chunks are larger. Small batches stay in cache until the
// sink has used them: a restore that wrote 16 MiB batches spent 45% of its samples
// copying them into the page cache from memory, and took 0.47 s per GB against 0.31 s
// with 2 MiB batches (-j 1, docs/BENCHMARKS.md).
constexpr uint64_t kStreamBatchBytes = 16 << 20;
constexpr uint64_t kStreamChunksPerThread = 2;

enum class Method : uint8_t { kRaw = 0, kConstant = 1, kZstd = 2, kHuffman = 3 };
constexpr uint8_t kMethodCount = 4;

// Bytes per element split into planes; 1 for dtypes whose bytes are coded as they are.
int plane_width(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kF32:
    case DType::kC64: return 4;
    case DType::kF64: return 8;
    default: return 1;
  }
}

// Coded streams reach at most this many bytes, else they are stored raw.
size_t coded_limit(size_t raw) { return raw - (raw + 19) / 20; }
// Sampled entropy (bits per byte) above which a plane is stored raw untried: Huffman
// needs at least the entropy, and 0.95 x 8 = 7.6 bits is the most it may spend; the
// margin covers the sampling error.
constexpr double kRawEntropyBits = 7.7;

// Ask for transparent huge pages over the 2 MiB pages inside [p, p + bytes): a large
// frame is written once into fresh memory, and 4 KiB page faults would otherwise cost
// a good part of the compression time. A hint; failure is harmless.
void hint_huge_pages(void* p, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (bytes < 4 * kHugePage) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

int thread_count(int requested, size_t chunks) {
  const size_t t = requested > 0 ? static_cast<size_t>(requested) : static_cast<size_t>(omp_get_max_threads());
  return static_cast<int>(std::max<size_t>(1, std::min(t, chunks)));
}

// Keeps the error of the lowest failing chunk, so that the error reported does not
// depend on the thread count or scheduling: chunks above a failed one are skipped,
// chunks below it still run.
class FirstError {
 public:
  void record(size_t chunk, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_ || chunk < chunk_) {
      chunk_ = chunk;
      error_ = std::move(error);
      first_failed_.store(chunk, std::memory_order_relaxed);
    }
  }
  bool skip(size_t chunk) const { return first_failed_.load(std::memory_order_relaxed) < chunk; }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::atomic<size_t> first_failed_{SIZE_MAX};
  size_t chunk_ = 0;
  std::exception_ptr error_;
};

// ---- the frame header and chunk table ----

struct Frame {
  DType dtype = DType::kU8;
  int width = 1;
  bool delta = false;  // the delta layout
  uint64_t elements = 0;
  uint64_t bytes = 0;
  uint32_t chunk_bytes = 0;
  uint64_t chunks = 0;
  const uint8_t* table = nullptr;
  const uint8_t* payload = nullptr;
  std::vector<uint64_t> offsets;  // payload offset of each chunk, and the payload size last

  size_t entry_bytes() const { return kChunkHashBytes + kStreamEntryBytes * width; }
  size_t chunk_size(uint64_t c) const {
    return static_cast<size_t>(std::min<uint64_t>(chunk_bytes, bytes - c * chunk_bytes));
  }
};

[[noreturn]] void corrupt(const std::string& what) { throw invalid_input("corrupt lossless frame: " + what); }

uint64_t header_checksum(const uint8_t* header, const uint8_t* table, size_t table_bytes) {
  return XXH3_64bits_withSeed(table, table_bytes, XXH3_64bits(header, 24));
}

// Check the 32-byte header `h` of a frame of `frame_bytes` bytes: every claim it makes
// must fit in the frame before anything is allocated for it. The chunk count follows
// from the element count and the chunk size, and each chunk takes a table entry of
// 8 + 5 x width bytes, so a frame of F bytes decodes to at most
// (F - 32) / (8 + 5 x width) x 64 MiB: a constant stream (1 byte) stands for a whole
// plane of a chunk, nothing stands for more.
Frame parse_header(const uint8_t* h, uint64_t frame_bytes) {
  if (frame_bytes < kHeaderBytes) {
    if (frame_bytes >= 4 && std::memcmp(h, kMagic, 4) != 0) throw invalid_input("not a lossless frame (bad magic)");
    corrupt("truncated header");
  }
  if (std::memcmp(h, kMagic, 4) != 0) throw invalid_input("not a lossless frame (bad magic)");
  if (h[4] != kVersion) throw invalid_input("unsupported lossless frame version " + std::to_string(h[4]));
  Frame f;
  if (h[5] >= static_cast<uint8_t>(DType::kCount)) corrupt("unknown dtype " + std::to_string(h[5]));
  f.dtype = static_cast<DType>(h[5]);
  f.width = plane_width(f.dtype);
  if (h[6] != f.width) corrupt("stream count does not match the dtype");
  if ((h[7] & ~kFlagDelta) != 0 || (h[7] != 0 && f.width == 1)) corrupt("unknown flags");
  f.delta = (h[7] & kFlagDelta) != 0;
  f.elements = load_le<uint64_t>(h + 8);
  f.bytes = dtype_storage_bytes(f.dtype, f.elements);
  f.chunk_bytes = load_le<uint32_t>(h + 16);
  if (f.chunk_bytes < kMinChunkBytes || f.chunk_bytes > kMaxChunkBytes || f.chunk_bytes % kChunkAlignment)
    corrupt("bad chunk size " + std::to_string(f.chunk_bytes));
  f.chunks = load_le<uint32_t>(h + 20);
  if (f.chunks != f.bytes / f.chunk_bytes + (f.bytes % f.chunk_bytes != 0))
    corrupt("chunk count does not match the size");
  if (f.chunks * f.entry_bytes() > frame_bytes - kHeaderBytes) corrupt("truncated chunk table");
  return f;
}

// Check the chunk table (its checksum, each stream's method and length) against the
// `payload_bytes` that follow it, and lay out the payload.
void parse_table(Frame& f, const uint8_t* header, const uint8_t* table, uint64_t payload_bytes) {
  const uint64_t table_bytes = f.chunks * f.entry_bytes();
  f.table = table;
  if (header_checksum(header, f.table, table_bytes) != load_le<uint64_t>(header + 24))
    corrupt("header checksum mismatch");
  f.offsets.resize(f.chunks + 1);
  uint64_t offset = 0;
  for (uint64_t c = 0; c < f.chunks; ++c) {
    f.offsets[c] = offset;
    const uint8_t* entry = f.table + c * f.entry_bytes() + kChunkHashBytes;
    const size_t stream_bytes = f.chunk_size(c) / f.width;
    for (int s = 0; s < f.width; ++s, entry += kStreamEntryBytes) {
      const uint8_t method = entry[0];
      const uint32_t length = load_le<uint32_t>(entry + 1);
      if (method >= kMethodCount) corrupt("unknown method " + std::to_string(method));
      const bool ok = static_cast<Method>(method) == Method::kRaw        ? length == stream_bytes
                      : static_cast<Method>(method) == Method::kConstant ? length == 1
                                                                          : length >= 1 && length <= stream_bytes;
      if (!ok) corrupt("bad stream length in chunk " + std::to_string(c));
      if (length > payload_bytes - offset) corrupt("truncated payload");
      offset += length;
    }
  }
  if (offset != payload_bytes) corrupt("trailing bytes after the payload");
  f.offsets[f.chunks] = offset;
}

Frame parse_frame(std::span<const uint8_t> frame) {
  Frame f = parse_header(frame.data(), frame.size());
  const uint64_t table_bytes = f.chunks * f.entry_bytes();
  parse_table(f, frame.data(), frame.data() + kHeaderBytes, frame.size() - kHeaderBytes - table_bytes);
  f.payload = f.table + table_bytes;
  return f;
}

// ---- compression ----

// Per-thread coding state, kept between calls (OpenMP threads persist), so that many
// small tensors do not pay for tables and contexts each time; buffers only grow.
struct CompressState {
  CompressState() : cctx(ZSTD_createCCtx()) {
    if (!cctx) throw unavailable("cannot create a zstd context");
  }
  HuffmanEncoder huffman;
  ZstdCCtxPtr cctx;
  std::vector<uint8_t> scratch;  // zstd output when a Huffman coding already sits in place
};

CompressState& compress_state(size_t chunk_bytes) {
  thread_local std::unique_ptr<CompressState> state;
  if (!state) state = std::make_unique<CompressState>();
  if (state->scratch.size() < chunk_bytes) state->scratch.resize(chunk_bytes);
  return *state;
}

// A coded chunk until it joins the frame: its planes, from which raw planes are
// appended as they are (no copy), and its coded streams.
struct ChunkOutput {
  std::vector<uint8_t> planes;
  std::vector<uint8_t> coded;
  std::span<const uint8_t> streams[8];  // in frame order; may point into the input
  int stream_count = 0;

  void reserve(size_t chunk_bytes) {
    if (planes.size() < chunk_bytes) {
      planes.resize(chunk_bytes);
      coded.resize(chunk_bytes + kHuffmanSlack);
    }
  }
};

// ChunkOutputs are kept across calls: fresh chunk-sized buffers would cost page faults
// on every call. The pool keeps a bounded number of buffers of bounded size.
class OutputPool {
 public:
  std::unique_ptr<ChunkOutput> take(size_t chunk_bytes) {
    std::unique_ptr<ChunkOutput> out;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        out = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!out) out = std::make_unique<ChunkOutput>();
    out->reserve(chunk_bytes);
    out->stream_count = 0;
    return out;
  }
  void give(std::unique_ptr<ChunkOutput> out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kKept && out->planes.size() <= kKeptBytes) free_.push_back(std::move(out));
  }

 private:
  static constexpr size_t kKept = 16;  // at most 2 x 4 MiB each: 128 MiB kept at worst
  static constexpr size_t kKeptBytes = size_t{4} << 20;
  std::mutex mutex_;
  std::vector<std::unique_ptr<ChunkOutput>> free_;
};

OutputPool& output_pool() {
  static OutputPool pool;
  return pool;
}

struct Coded {
  Method method;
  const uint8_t* data;
  size_t length;
};

// zstd into dst of `capacity` bytes; 0 when it does not fit.
size_t try_zstd(CompressState& st, std::span<const uint8_t> src, uint8_t* dst, size_t capacity, int level) {
  if (capacity == 0) return 0;
  const size_t r = ZSTD_compressCCtx(st.cctx.get(), dst, capacity, src.data(), src.size(), level);
  return ZSTD_isError(r) ? 0 : r;
}

// Code one byte plane of a float chunk: constant, Huffman or zstd into `out` (room for
// the plane plus kHuffmanSlack), or the plane itself (raw), whichever is smallest of
// those tried. zstd is tried only when one byte value covers more than half the plane
// (zeros, sparse tensors): there runs and matches beat Huffman's floor of one bit per
// symbol, elsewhere zstd codes literals with Huffman anyway, only slower. With
// `try_all`, every plane gets a zstd try and any saving is kept.
Coded code_plane(CompressState& st, std::span<const uint8_t> plane, uint8_t* out, int level, bool try_all) {
  const size_t raw = plane.size();
  const Coded as_is{Method::kRaw, plane.data(), raw};
  // Planes of nearly random bytes (the low mantissa bytes of trained weights) cannot
  // reach 0.95 bits per bit: a sample tells without a full histogram.
  if (!try_all && sampled_entropy_bits(plane) > kRawEntropyBits) return as_is;
  const size_t limit = try_all ? raw - 1 : coded_limit(raw);
  const size_t planned = st.huffman.plan(plane);
  const ByteStreamStats& stats = st.huffman.stats();
  if (stats.distinct == 1) {
    out[0] = stats.top_value;
    return {Method::kConstant, out, 1};
  }
  Coded best = as_is;
  if (planned <= limit) best = {Method::kHuffman, out, st.huffman.encode(plane, out)};
  if (try_all || stats.top_count * 2 > raw) {
    uint8_t* dst = best.method == Method::kRaw ? out : st.scratch.data();
    const size_t z = try_zstd(st, plane, dst, std::min(limit, best.length - 1), level);
    if (z) {
      if (dst != out) std::memcpy(out, dst, z);
      best = {Method::kZstd, out, z};
    }
  }
  return best;
}

// Code the bytes of a dtype without planes: zstd into `out`, or the bytes as they are.
Coded code_bytes(CompressState& st, std::span<const uint8_t> bytes, uint8_t* out, int level) {
  const size_t z = try_zstd(st, bytes, out, coded_limit(bytes.size()), level);
  if (z) return {Method::kZstd, out, z};
  return {Method::kRaw, bytes.data(), bytes.size()};
}

// The chunk checksum: XXH3-64 of the decoded bytes, xor a hash of the chunk's
// zstd-coded streams when it has any. The zstd format has bits its decoder ignores (an
// unused header flag, spare bits of table descriptions); hashing those streams makes
// every damaged bit count. Huffman streams need no such help: their decoder checks
// every bit.
class ChunkChecksum {
 public:
  void add_stream(Method method, const uint8_t* coded, size_t length) {
    if (method == Method::kZstd) zstd_ = XXH3_64bits_withSeed(coded, length, zstd_);
  }
  uint64_t finish(uint64_t decoded_hash) const { return decoded_hash ^ zstd_; }

 private:
  uint64_t zstd_ = 0;
};

// Code one chunk into `out` and fill its table entry.
void compress_chunk(CompressState& st, ChunkOutput& out, int width, std::span<const uint8_t> chunk, uint8_t* entry,
                    const LosslessOptions& options) {
  const int level = options.level;
  const bool try_all = options.delta && level >= kDeltaTryAllLevel;
  // Hashed first: this reads the chunk into the cache for the split that follows.
  const uint64_t decoded_hash = XXH3_64bits(chunk.data(), chunk.size());
  uint8_t* const checksum = entry;
  entry += kChunkHashBytes;
  ChunkChecksum sum;
  size_t used = 0;  // bytes of out.coded taken
  auto record = [&](const Coded& c) {
    entry[0] = static_cast<uint8_t>(c.method);
    store_le<uint32_t>(entry + 1, static_cast<uint32_t>(c.length));
    entry += kStreamEntryBytes;
    sum.add_stream(c.method, c.data, c.length);
    out.streams[out.stream_count++] = {c.data, c.length};
    if (c.method != Method::kRaw) used += c.length;
  };
  if (width == 1) {
    record(code_bytes(st, chunk, out.coded.data(), level));
  } else {
    const size_t count = chunk.size() / width;
    uint8_t* planes[8];
    for (int s = 0; s < width; ++s) planes[s] = out.planes.data() + s * count;
    if (options.delta) {
      // Plane 0 is split into scratch (free until code_plane) and sorted into place.
      uint8_t* const high = planes[0];
      planes[0] = st.scratch.data();
      split_planes(width, chunk.data(), count, planes, PlaneOrder::kBytes);
      sort_high_plane(planes[0], planes[1], count, high);
      planes[0] = high;
    } else {
      split_planes(width, chunk.data(), count, planes);
    }
    for (int s = 0; s < width; ++s)
      record(code_plane(st, {planes[s], count}, out.coded.data() + used, level, try_all));
  }
  store_le<uint64_t>(checksum, sum.finish(decoded_hash));
}

// Appends coded chunks to the frame in chunk order while threads finish them in any
// order: a finished chunk waits until every chunk before it is in, and the thread that
// completes the run appends it. No thread waits for another to finish a chunk (an
// OpenMP `ordered` loop does, and spinning there starves a busy machine).
class FrameAssembler {
 public:
  FrameAssembler(std::vector<uint8_t>& frame, size_t chunks) : frame_(frame), pending_(chunks) {}
  ~FrameAssembler() {
    for (auto& p : pending_)
      if (p) output_pool().give(std::move(p));
  }

  // Hand over chunk `c` (no streams when it failed).
  void deliver(size_t c, std::unique_ptr<ChunkOutput> out) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_[c] = std::move(out);
    for (; next_ < pending_.size() && pending_[next_]; ++next_) {
      const ChunkOutput& done = *pending_[next_];
      for (int s = 0; s < done.stream_count; ++s)
        frame_.insert(frame_.end(), done.streams[s].begin(), done.streams[s].end());
      output_pool().give(std::move(pending_[next_]));
    }
  }

 private:
  std::mutex mutex_;
  std::vector<uint8_t>& frame_;
  std::vector<std::unique_ptr<ChunkOutput>> pending_;  // by chunk: coded, not yet appended
  size_t next_ = 0;                                    // the next chunk to append
};

// ---- decompression ----

struct DecompressState {
  DecompressState() : dctx(ZSTD_createDCtx()) {
    if (!dctx) throw unavailable("cannot create a zstd context");
  }
  HuffmanDecoder huffman;
  ZstdDCtxPtr dctx;
  std::vector<uint8_t> planes;
  std::vector<uint8_t> high;  // a delta's plane 0 in element order
};

DecompressState& decompress_state(size_t chunk_bytes) {
  thread_local std::unique_ptr<DecompressState> state;
  if (!state) state = std::make_unique<DecompressState>();
  if (state->planes.size() < chunk_bytes) state->planes.resize(chunk_bytes);
  if (state->high.size() < chunk_bytes / 2) state->high.resize(chunk_bytes / 2);
  return *state;
}

// Decode one coded stream into exactly dst.size() bytes.
void decode_stream(DecompressState& st, Method method, std::span<const uint8_t> src, std::span<uint8_t> dst) {
  switch (method) {
    case Method::kRaw: std::memcpy(dst.data(), src.data(), dst.size()); return;
    case Method::kConstant: std::memset(dst.data(), src[0], dst.size()); return;
    case Method::kZstd: {
      const size_t r = ZSTD_decompressDCtx(st.dctx.get(), dst.data(), dst.size(), src.data(), src.size());
      if (ZSTD_isError(r)) corrupt(std::string("zstd: ") + ZSTD_getErrorName(r));
      if (r != dst.size()) corrupt("zstd stream decodes to the wrong size");
      return;
    }
    case Method::kHuffman: st.huffman.decode(src, dst); return;
  }
}

// Decode chunk `c`, whose coded streams are at `src`, into `out`.
void decompress_chunk(DecompressState& st, const Frame& f, uint64_t c, const uint8_t* src, uint8_t* out) {
  const size_t size = f.chunk_size(c);
  const uint8_t* entry = f.table + c * f.entry_bytes();
  const uint64_t expected = load_le<uint64_t>(entry);
  entry += kChunkHashBytes;
  const size_t count = size / f.width;
  const uint8_t* planes[8];
  ChunkChecksum sum;
  for (int s = 0; s < f.width; ++s, entry += kStreamEntryBytes) {
    const Method method = static_cast<Method>(entry[0]);
    const uint32_t length = load_le<uint32_t>(entry + 1);
    sum.add_stream(method, src, length);
    try {
      if (f.width == 1) {
        decode_stream(st, method, {src, length}, {out, size});
      } else if (method == Method::kRaw) {
        planes[s] = src;  // merged straight from the frame
      } else {
        uint8_t* plane = st.planes.data() + s * count;
        decode_stream(st, method, {src, length}, {plane, count});
        planes[s] = plane;
      }
    } catch (const Error& e) {
      throw e.with_context("chunk " + std::to_string(c) + ", stream " + std::to_string(s));
    }
    src += length;
  }
  if (f.delta) {
    unsort_high_plane(planes[0], planes[1], count, st.high.data());
    planes[0] = st.high.data();
  }
  if (f.width > 1) merge_planes(f.width, planes, count, out, f.delta ? PlaneOrder::kBytes : PlaneOrder::kRegrouped);
  if (sum.finish(XXH3_64bits(out, size)) != expected)
    throw invalid_input("corrupt lossless frame: checksum mismatch", "chunk " + std::to_string(c));
}

// Decode chunks [first, first + count) of `f` into `out` (the first one's bytes at
// out[0]); their coded streams are at `coded`, which holds the payload from the
// first one's offset on.
void decompress_chunks(const Frame& f, uint64_t first, uint64_t count, const uint8_t* coded, uint8_t* out,
                       int threads) {
  FirstError error;
  const size_t chunk_bytes = static_cast<size_t>(std::min<uint64_t>(f.chunk_bytes, f.bytes));
  const int team = thread_count(threads, count);
#pragma omp parallel num_threads(team)
  {
    DecompressState* st = nullptr;
    try {
      st = &decompress_state(chunk_bytes);
    } catch (...) {
      error.record(0, std::current_exception());
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
      if (!st || error.skip(static_cast<size_t>(i))) continue;
      const uint64_t c = first + static_cast<uint64_t>(i);
      try {
        decompress_chunk(*st, f, c, coded + (f.offsets[c] - f.offsets[first]),
                         out + static_cast<size_t>(i) * f.chunk_bytes);
      } catch (...) {
        error.record(static_cast<size_t>(i), std::current_exception());
      }
    }
  }
  error.rethrow();
}

}  // namespace

std::vector<uint8_t> lossless_compress(DType dtype, std::span<const uint8_t> bytes, const LosslessOptions& options) {
  if (options.chunk_bytes < kMinChunkBytes || options.chunk_bytes > kMaxChunkBytes ||
      options.chunk_bytes % kChunkAlignment)
    throw usage_error("chunk size must be a multiple of 64 bytes between 256 B and 64 MiB, not " +
                      std::to_string(options.chunk_bytes));
  if (options.level < ZSTD_minCLevel() || options.level > ZSTD_maxCLevel())
    throw usage_error("zstd level must be between " + std::to_string(ZSTD_minCLevel()) + " and " +
                      std::to_string(ZSTD_maxCLevel()) + ", not " + std::to_string(options.level));
  if (options.threads < 0) throw usage_error("threads must be >= 0");
  if (static_cast<uint8_t>(dtype) >= static_cast<uint8_t>(DType::kCount)) throw usage_error("unknown dtype");
  const int bits = dtype_bits(dtype);
  const uint64_t elements = static_cast<uint64_t>(bytes.size()) * 8 / bits;
  if (dtype_storage_bytes(dtype, elements) != bytes.size())
    throw invalid_input(std::to_string(bytes.size()) + " bytes are not a whole number of " + dtype_name(dtype) +
                        " elements");

  const int width = plane_width(dtype);
  const size_t n = bytes.size();
  const uint32_t chunk_bytes = options.chunk_bytes;
  const uint64_t chunks = (n + chunk_bytes - 1) / chunk_bytes;
  if (chunks > UINT32_MAX) throw usage_error("too many chunks; use a larger chunk size");
  const size_t entry_bytes = kChunkHashBytes + kStreamEntryBytes * width;
  std::vector<uint8_t> table(chunks * entry_bytes);

  // Chunks are coded in parallel and appended to the frame in chunk order. Every chunk
  // codes to at most its raw size, so the reserved capacity is never exceeded and the
  // frame is written once, without reallocation.
  std::vector<uint8_t> frame;
  frame.reserve(kHeaderBytes + table.size() + n);
  hint_huge_pages(frame.data(), frame.capacity());
  frame.resize(kHeaderBytes + table.size());
  FrameAssembler assembler(frame, chunks);
  FirstError error;
  const int threads = thread_count(options.threads, chunks);
#pragma omp parallel num_threads(threads)
  {
    CompressState* st = nullptr;
    try {
      st = &compress_state(std::min<size_t>(chunk_bytes, n));
    } catch (...) {
      error.record(0, std::current_exception());
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
      try {
        std::unique_ptr<ChunkOutput> out = output_pool().take(std::min<size_t>(chunk_bytes, n));
        if (st && !error.skip(static_cast<size_t>(c))) {
          try {
            const size_t begin = static_cast<size_t>(c) * chunk_bytes;
            const size_t size = std::min<size_t>(chunk_bytes, n - begin);
            compress_chunk(*st, *out, width, bytes.subspan(begin, size), table.data() + c * entry_bytes, options);
          } catch (...) {
            out->stream_count = 0;
            error.record(static_cast<size_t>(c), std::current_exception());
          }
        }
        assembler.deliver(static_cast<size_t>(c), std::move(out));
      } catch (...) {  // no memory for the chunk's buffers
        error.record(static_cast<size_t>(c), std::current_exception());
      }
    }
  }
  error.rethrow();

  uint8_t* header = frame.data();
  std::memcpy(header, kMagic, 4);
  header[4] = kVersion;
  header[5] = static_cast<uint8_t>(dtype);
  header[6] = static_cast<uint8_t>(width);
  header[7] = options.delta && width > 1 ? kFlagDelta : 0;
  store_le<uint64_t>(header + 8, elements);
  store_le<uint32_t>(header + 16, chunk_bytes);
  store_le<uint32_t>(header + 20, static_cast<uint32_t>(chunks));
  if (!table.empty()) std::memcpy(header + kHeaderBytes, table.data(), table.size());
  store_le<uint64_t>(header + 24, header_checksum(header, table.data(), table.size()));
  return frame;
}

uint64_t lossless_decoded_size(std::span<const uint8_t> frame) { return parse_frame(frame).bytes; }

uint64_t lossless_claimed_size(std::span<const uint8_t> head, uint64_t frame_bytes) {
  if (head.size() < kHeaderBytes || frame_bytes < kHeaderBytes) corrupt("truncated header");
  return parse_header(head.data(), frame_bytes).bytes;
}

void lossless_decompress(std::span<const uint8_t> frame, std::span<uint8_t> out, int threads) {
  if (threads < 0) throw usage_error("threads must be >= 0");
  const Frame f = parse_frame(frame);
  if (out.size() != f.bytes)
    throw usage_error("output holds " + std::to_string(out.size()) + " bytes; the frame decodes to " +
                      std::to_string(f.bytes));
  decompress_chunks(f, 0, f.chunks, f.payload, out.data(), threads);
}

void lossless_decompress_stream(const LosslessSource& source, uint64_t frame_bytes, uint64_t expected_bytes,
                                const LosslessSink& sink, int threads, BufferPool* pool) {
  if (threads < 0) throw usage_error("threads must be >= 0");
  if (frame_bytes < kHeaderBytes) corrupt("truncated header");
  const Buffer head = source(kHeaderBytes);
  const uint8_t* header = head.data();
  Frame f = parse_header(header, frame_bytes);
  if (f.bytes != expected_bytes)
    throw invalid_input("frame decodes to " + std::to_string(f.bytes) + " bytes, expected " +
                        std::to_string(expected_bytes));
  // The table is read in pieces as it arrives, so a frame that claims a long table
  // costs memory only for the bytes it really has.
  const uint64_t table_bytes = f.chunks * f.entry_bytes();
  std::vector<uint8_t> table;
  constexpr uint64_t kTablePiece = 1 << 20;
  for (uint64_t at = 0; at < table_bytes;) {
    const uint64_t n = std::min(kTablePiece, table_bytes - at);
    table.resize(at + n);
    const Buffer piece = source(n);
    std::memcpy(table.data() + at, piece.data(), n);
    at += n;
  }
  parse_table(f, header, table.data(), frame_bytes - kHeaderBytes - table_bytes);

  // A batch of chunks at a time: their coded bytes (at most their decoded size) in,
  // their decoded bytes out in a buffer that the sink may keep (from `pool` when given).
  auto take = [pool](size_t n) { return pool != nullptr ? pool->take(n) : Buffer::allocate(n); };
  const uint64_t workers = threads > 0 ? static_cast<uint64_t>(threads) : static_cast<uint64_t>(omp_get_max_threads());
  const uint64_t batch =
      std::max<uint64_t>(1, std::min(kStreamBatchBytes / f.chunk_bytes, kStreamChunksPerThread * workers));
  for (uint64_t first = 0; first < f.chunks; first += batch) {
    const uint64_t count = std::min(batch, f.chunks - first);
    const uint64_t coded_bytes = f.offsets[first + count] - f.offsets[first];
    Buffer coded = coded_bytes > 0 ? source(coded_bytes) : Buffer();
    const uint64_t begin = first * f.chunk_bytes;
    const uint64_t end = std::min(f.bytes, (first + count) * f.chunk_bytes);
    Buffer out = take(end - begin);
    decompress_chunks(f, first, count, coded.data(), out.mutable_data(), threads);
    coded = Buffer();
    sink(std::move(out));
  }
}

struct LosslessFrame::Parsed {
  Frame frame;
};

LosslessFrame::LosslessFrame(std::span<const uint8_t> frame) : f_(std::make_unique<Parsed>(Parsed{parse_frame(frame)})) {}
LosslessFrame::~LosslessFrame() = default;
LosslessFrame::LosslessFrame(LosslessFrame&&) noexcept = default;
LosslessFrame& LosslessFrame::operator=(LosslessFrame&&) noexcept = default;

uint64_t LosslessFrame::size() const { return f_->frame.bytes; }
uint32_t LosslessFrame::chunk_bytes() const { return f_->frame.chunk_bytes; }

void LosslessFrame::read(uint64_t offset, std::span<uint8_t> out, int threads) const {
  const Frame& f = f_->frame;
  if (offset > f.bytes || out.size() > f.bytes - offset)
    throw internal_error("lossless frame read past its " + std::to_string(f.bytes) + " bytes");
  if (out.empty()) return;
  const uint64_t first = offset / f.chunk_bytes, last = (offset + out.size() - 1) / f.chunk_bytes;
  const uint64_t begin = first * f.chunk_bytes, end = std::min(f.bytes, (last + 1) * f.chunk_bytes);
  const uint8_t* coded = f.payload + f.offsets[first];
  if (begin == offset && end == offset + out.size()) {
    decompress_chunks(f, first, last - first + 1, coded, out.data(), threads);
    return;
  }
  // A range that starts or ends inside a chunk: decode the chunks whole, keep the range.
  std::vector<uint8_t> chunks(end - begin);
  decompress_chunks(f, first, last - first + 1, coded, chunks.data(), threads);
  std::memcpy(out.data(), chunks.data() + (offset - begin), out.size());
}

}  // namespace tk::codec
