// Canonical length-limited Huffman coder for byte streams (see huffman.h for the layout).
// Encoding: one histogram pass over byte pairs gives both the pair and the byte counts;
// lengths come from the in-place minimum-redundancy algorithm of Moffat and Katajainen,
// limited to 14 bits by the JPEG (Annex K.3) adjustment, which keeps the code complete.
// Decoding: four segments decoded in lockstep for instruction-level parallelism; each
// 11-bit table lookup yields as many whole symbols as those bits hold (up to four
// bytes); the rare longer codes take a second lookup.
#include "tk/codec/huffman.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "tk/core/endian.h"
#include "tk/core/error.h"

namespace tk::codec {
namespace {

constexpr uint32_t kCodeSpace = 1u << kHuffmanMaxBits;  // Kraft sum of a complete code
constexpr uint32_t kTableSize = 1u << kHuffmanTableBits;
constexpr uint64_t kTableMask = kTableSize - 1;
constexpr int kLongBits = kHuffmanMaxBits - kHuffmanTableBits;
constexpr uint32_t kLongSize = 1u << kLongBits;
// Decode table entries: output bytes | bits consumed << 32 | bytes out << 56, laid out
// so that the fast loop stores the low half as it is and shifts by e >> 32 directly
// (x86 shifts use the low 6 bits of the count). The entry of an 11-bit prefix of longer
// codes holds kLongEntry | the offset of its second-level table in long_.
constexpr uint64_t kLongEntry = uint64_t{1} << 48;
inline uint64_t make_entry(uint32_t bytes, uint32_t bits, uint32_t out) {
  return bytes | static_cast<uint64_t>(bits) << 32 | static_cast<uint64_t>(out) << 56;
}
inline uint32_t entry_bytes(uint64_t e) { return static_cast<uint32_t>(e); }
inline uint32_t entry_bits(uint64_t e) { return (e >> 32) & 0xff; }
inline uint32_t entry_out(uint64_t e) { return static_cast<uint32_t>(e >> 56); }
// Pair symbols only while the pair alphabet stays small: the length table of k*k
// symbols stays at most 800 bytes.
constexpr uint32_t kMaxPairValues = 40;
// Shorter streams are not worth a 45-byte header.
constexpr size_t kMinStreamBytes = 64;
constexpr int kSegments = 4;
constexpr size_t kBitmapBytes = 32;
constexpr size_t kSegmentTableBytes = 4 * (kSegments - 1);
// Deepest code the unlimited construction can give for totals below 2^32.
constexpr int kMaxUnlimitedBits = 63;

uint32_t reverse_bits(uint32_t code, int length) {
  uint32_t r = 0;
  for (int i = 0; i < length; ++i) r |= ((code >> i) & 1u) << (length - 1 - i);
  return r;
}

// Code lengths of a minimum-redundancy code (Moffat & Katajainen, "In-place calculation
// of minimum-redundancy codes", 1995). On entry a[0..n) holds weights sorted ascending,
// n >= 2; on exit a[i] is the code length of the symbol of weight a[i].
void minimum_redundancy_lengths(uint32_t* a, uint32_t n) {
  // First pass, left to right: internal node weights and parent pointers.
  a[0] += a[1];
  uint32_t root = 0, leaf = 2;
  for (uint32_t next = 1; next < n - 1; ++next) {
    if (leaf >= n || a[root] < a[leaf]) {
      a[next] = a[root];
      a[root++] = next;
    } else {
      a[next] = a[leaf++];
    }
    if (leaf >= n || (root < next && a[root] < a[leaf])) {
      a[next] += a[root];
      a[root++] = next;
    } else {
      a[next] += a[leaf++];
    }
  }
  // Second pass, right to left: depths of internal nodes.
  a[n - 2] = 0;
  for (int64_t next = static_cast<int64_t>(n) - 3; next >= 0; --next) a[next] = a[a[next]] + 1;
  // Third pass, right to left: depths of leaves.
  int64_t avail = 1, used = 0, depth = 0, root_i = static_cast<int64_t>(n) - 2, next = n - 1;
  while (avail > 0) {
    while (root_i >= 0 && a[root_i] == depth) {
      ++used;
      --root_i;
    }
    while (avail > used) {
      a[next--] = static_cast<uint32_t>(depth);
      --avail;
    }
    avail = 2 * used;
    ++depth;
    used = 0;
  }
}

// Canonical codes (bit-reversed for LSB-first streams) from code lengths indexed by
// symbol; codes of equal length increase with the symbol index.
template <typename Emit>
void canonical_codes(const uint8_t* lengths, uint32_t symbols, Emit&& emit) {
  uint32_t count[kHuffmanMaxBits + 1] = {};
  for (uint32_t s = 0; s < symbols; ++s) ++count[lengths[s]];
  count[0] = 0;
  uint32_t next[kHuffmanMaxBits + 1] = {};
  uint32_t code = 0;
  for (int len = 1; len <= kHuffmanMaxBits; ++len) {
    code = (code + count[len - 1]) << 1;
    next[len] = code;
  }
  for (uint32_t s = 0; s < symbols; ++s) {
    const int len = lengths[s];
    if (len) emit(s, reverse_bits(next[len]++, len), len);
  }
}

// Symbol bounds of segment `s` of `symbols` symbols.
inline size_t segment_begin(size_t symbols, int s) {
  return std::min(symbols, static_cast<size_t>(s) * ((symbols + kSegments - 1) / kSegments));
}

// Add the byte values of q[0, len) to four tables of counts, in turn, so that a run of
// one value does not wait on one counter; their sum is the histogram.
void count_bytes(uint32_t (&counts)[4][256], const uint8_t* q, size_t len) {
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    ++counts[0][q[i]];
    ++counts[1][q[i + 1]];
    ++counts[2][q[i + 2]];
    ++counts[3][q[i + 3]];
  }
  for (; i < len; ++i) ++counts[0][q[i]];
}

}  // namespace

// ---- encoder ----

double sampled_entropy_bits(std::span<const uint8_t> src) {
  constexpr size_t kBlocks = 16, kBlockBytes = 1024;
  uint32_t counts[4][256] = {};
  auto add = [&](const uint8_t* q, size_t len) { count_bytes(counts, q, len); };
  size_t total = 0;
  if (src.size() < 2 * kBlocks * kBlockBytes) {
    add(src.data(), src.size());
    total = src.size();
  } else {
    const size_t step = src.size() / kBlocks;
    for (size_t b = 0; b < kBlocks; ++b) add(src.data() + b * step, kBlockBytes);
    total = kBlocks * kBlockBytes;
  }
  if (total == 0) return 0;
  double bits = 0;
  for (int v = 0; v < 256; ++v) {
    const uint32_t c = counts[0][v] + counts[1][v] + counts[2][v] + counts[3][v];
    if (c) bits -= c * std::log2(static_cast<double>(c) / total);
  }
  return bits / total;
}

HuffmanEncoder::HuffmanEncoder()
    : pair_counts_(65536, 0), codes_(65536, 0), counts_(kMaxPairValues * kMaxPairValues),
      weights_(kMaxPairValues * kMaxPairValues), sort_keys_(kMaxPairValues * kMaxPairValues),
      pair_lengths_(kMaxPairValues * kMaxPairValues) {}

// Code lengths, limited to kHuffmanMaxBits, for `symbols` counts (zero counts get length
// 0); sets *bits to the coded size in bits. At least two symbols always get a code, so
// that the code is complete even when one symbol occurs.
void HuffmanEncoder::plan_lengths(const uint32_t* counts, uint32_t symbols, uint8_t* lengths, uint64_t* bits) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < symbols; ++s) {
    lengths[s] = 0;
    if (counts[s]) sort_keys_[n++] = static_cast<uint64_t>(counts[s]) << 16 | s;
  }
  if (n < 2) {  // one symbol (a pair stream "abab..."): pair it with an unused one
    const uint32_t used = n ? static_cast<uint32_t>(sort_keys_[0] & 0xffff) : 0;
    lengths[used] = 1;
    lengths[used == 0 ? 1 : 0] = 1;
    *bits = n ? counts[used] : 0;
    return;
  }
  std::sort(sort_keys_.begin(), sort_keys_.begin() + n);
  uint32_t* a = weights_.data();
  for (uint32_t i = 0; i < n; ++i) a[i] = static_cast<uint32_t>(sort_keys_[i] >> 16);
  minimum_redundancy_lengths(a, n);
  // Codes per length; a[] is non-increasing, a[0] the deepest.
  uint32_t per_length[kMaxUnlimitedBits + 1] = {};
  const int deepest = static_cast<int>(std::min<uint32_t>(a[0], kMaxUnlimitedBits));
  for (uint32_t i = 0; i < n; ++i) ++per_length[std::min<uint32_t>(a[i], kMaxUnlimitedBits)];
  for (int len = deepest; len > kHuffmanMaxBits; --len) {
    while (per_length[len] > 0) {
      int j = len - 2;
      while (per_length[j] == 0) --j;
      per_length[len] -= 2;
      per_length[len - 1] += 1;
      per_length[j + 1] += 2;
      per_length[j] -= 1;
    }
  }
  // The most frequent symbols take the shortest codes.
  uint64_t total = 0;
  int len = 1;
  for (int64_t i = static_cast<int64_t>(n) - 1; i >= 0; --i) {
    while (per_length[len] == 0) ++len;
    --per_length[len];
    const uint32_t s = static_cast<uint32_t>(sort_keys_[i] & 0xffff);
    lengths[s] = static_cast<uint8_t>(len);
    total += static_cast<uint64_t>(sort_keys_[i] >> 16) * len;
  }
  *bits = total;
}

size_t HuffmanEncoder::plan(std::span<const uint8_t> src) {
  const uint8_t* p = src.data();
  const size_t n = src.size();
  // Byte counts first. The pair table costs a random access per pair into 256 KiB, and
  // is of use only when few values occur: most planes that reach here (a delta's
  // mantissa bytes) hold more than kMaxPairValues and never take pairs.
  uint32_t quarter[4][256] = {};
  count_bytes(quarter, p, n);
  for (int v = 0; v < 256; ++v) byte_counts_[v] = uint64_t{quarter[0][v]} + quarter[1][v] + quarter[2][v] + quarter[3][v];

  stats_ = {};
  k_ = 0;
  for (int v = 0; v < 256; ++v) {
    if (!byte_counts_[v]) continue;
    if (byte_counts_[v] > stats_.top_count) {
      stats_.top_count = byte_counts_[v];
      stats_.top_value = static_cast<uint8_t>(v);
    }
    values_[k_++] = static_cast<uint8_t>(v);
  }
  stats_.distinct = k_;

  // The pair alphabet: the values that occur inside pairs (an odd last byte travels
  // apart). Count the pairs only when that alphabet is small enough, copy their counts,
  // then clear the rows they used (only those can hold counts), so that the table is
  // zero for the next plan.
  pair_k_ = 0;
  const int tail = n & 1 ? p[n - 1] : -1;
  for (uint32_t r = 0; r < k_; ++r)
    if (byte_counts_[values_[r]] > (values_[r] == tail ? 1u : 0u)) pair_values_[pair_k_++] = values_[r];
  const bool pairs_possible = pair_k_ >= 2 && pair_k_ <= kMaxPairValues;
  if (pairs_possible) {
    uint32_t* h = pair_counts_.data();
    const size_t pairs = n / 2;
    size_t j = 0;
    for (; j + 4 <= pairs; j += 4) {
      ++h[load_le<uint16_t>(p + 2 * j)];
      ++h[load_le<uint16_t>(p + 2 * j + 2)];
      ++h[load_le<uint16_t>(p + 2 * j + 4)];
      ++h[load_le<uint16_t>(p + 2 * j + 6)];
    }
    for (; j < pairs; ++j) ++h[load_le<uint16_t>(p + 2 * j)];
    for (uint32_t r = 0; r < pair_k_; ++r)
      for (uint32_t c = 0; c < pair_k_; ++c) counts_[r * pair_k_ + c] = h[pair_values_[r] | pair_values_[c] << 8];
    for (uint32_t r = 0; r < pair_k_; ++r) std::memset(h + pair_values_[r] * 256, 0, 256 * sizeof(uint32_t));
  }

  planned_ = SIZE_MAX;
  if (k_ < 2 || n < kMinStreamBytes) return planned_;

  uint32_t byte_symbol_counts[256];
  for (uint32_t r = 0; r < k_; ++r) byte_symbol_counts[r] = static_cast<uint32_t>(byte_counts_[values_[r]]);
  uint64_t byte_bits = 0;
  plan_lengths(byte_symbol_counts, k_, byte_lengths_, &byte_bits);
  const size_t fixed = 1 + kBitmapBytes + kSegmentTableBytes + (kSegments - 1);
  const size_t byte_size = fixed + (k_ + 1) / 2 + (byte_bits + 7) / 8;

  width_ = 1;
  planned_ = byte_size;
  if (pairs_possible) {
    uint64_t pair_bits = 0;
    plan_lengths(counts_.data(), pair_k_ * pair_k_, pair_lengths_.data(), &pair_bits);
    const size_t pair_size = fixed + (n & 1) + (pair_k_ * pair_k_ + 1) / 2 + (pair_bits + 7) / 8;
    if (pair_size < byte_size) {
      width_ = 2;
      planned_ = pair_size;
    }
  }
  return planned_;
}

size_t HuffmanEncoder::encode(std::span<const uint8_t> src, uint8_t* dst) {
  const uint8_t* p = src.data();
  const size_t n = src.size();
  const uint32_t k = width_ == 1 ? k_ : pair_k_;
  const uint8_t* values = width_ == 1 ? values_ : pair_values_;
  const uint32_t symbols = width_ == 1 ? k : k * k;
  const uint8_t* lengths = width_ == 1 ? byte_lengths_ : pair_lengths_.data();
  uint8_t* out = dst;
  *out++ = static_cast<uint8_t>(width_);
  if (width_ == 2 && (n & 1)) *out++ = p[n - 1];
  std::memset(out, 0, kBitmapBytes);
  for (uint32_t r = 0; r < k; ++r) out[values[r] / 8] |= static_cast<uint8_t>(1u << (values[r] % 8));
  out += kBitmapBytes;
  for (uint32_t s = 0; s < symbols; s += 2) {
    const uint8_t hi = s + 1 < symbols ? lengths[s + 1] : 0;
    *out++ = static_cast<uint8_t>(lengths[s] | hi << 4);
  }
  canonical_codes(lengths, symbols, [&](uint32_t s, uint32_t code, int len) {
    const uint32_t key = width_ == 1 ? values[s] : values[s / k] | values[s % k] << 8;
    codes_[key] = code | static_cast<uint32_t>(len) << 16;
  });
  uint8_t* segment_table = out;
  out += kSegmentTableBytes;

  const size_t count = width_ == 1 ? n : n / 2;
  size_t lengths_out[kSegments];
  const uint8_t* coded =
      width_ == 2 ? encode_segments<2>(p, count, lengths_out) : encode_segments<1>(p, count, lengths_out);
  for (int s = 0; s < kSegments; ++s) {
    if (s < kSegments - 1) store_le<uint32_t>(segment_table + 4 * s, static_cast<uint32_t>(lengths_out[s]));
    std::memcpy(out, coded + s * segment_area_, lengths_out[s]);
    out += lengths_out[s];
  }
  return static_cast<size_t>(out - dst);
}

// Code the four segments into four areas of segments_, two at a time in lockstep (two
// independent dependency chains; four would not fit in the registers); set the byte
// length of each.
template <int W>
const uint8_t* HuffmanEncoder::encode_segments(const uint8_t* p, size_t count, size_t* lengths) {
  const size_t per = (count + kSegments - 1) / kSegments;
  segment_area_ = per * kHuffmanMaxBits / 8 + 16;
  if (segments_.size() < kSegments * segment_area_) segments_.resize(kSegments * segment_area_);
  const uint32_t* const codes = codes_.data();
  auto symbol = [](const uint8_t* q) -> uint32_t {
    if constexpr (W == 2) return load_le<uint16_t>(q);
    return *q;
  };
  constexpr int kTogether = 2;
  for (int first = 0; first < kSegments; first += kTogether) {
    uint8_t* out[kTogether];
    const uint8_t* in[kTogether];
    size_t left[kTogether];
    uint64_t acc[kTogether] = {};
    unsigned bits[kTogether] = {};
    for (int g = 0; g < kTogether; ++g) {
      const int s = first + g;
      out[g] = segments_.data() + s * segment_area_;
      in[g] = p + segment_begin(count, s) * W;
      left[g] = segment_begin(count, s + 1) - segment_begin(count, s);
    }
    // Four codes of at most 14 bits on top of at most 7 pending bits fit in 64.
    const size_t together = std::min(left[0], left[1]) / 4 * 4;
    for (size_t i = 0; i < together; i += 4) {
      for (int g = 0; g < kTogether; ++g) {
        for (int j = 0; j < 4; ++j) {
          const uint32_t c = codes[symbol(in[g] + (i + j) * W)];
          acc[g] |= static_cast<uint64_t>(c & 0xffff) << bits[g];
          bits[g] += c >> 16;
        }
        store_le<uint64_t>(out[g], acc[g]);
        out[g] += bits[g] >> 3;
        acc[g] >>= bits[g] & ~7u;
        bits[g] &= 7;
      }
    }
    for (int g = 0; g < kTogether; ++g) {
      const int s = first + g;
      for (size_t i = together; i < left[g]; ++i) {
        const uint32_t c = codes[symbol(in[g] + i * W)];
        acc[g] |= static_cast<uint64_t>(c & 0xffff) << bits[g];
        bits[g] += c >> 16;
        store_le<uint64_t>(out[g], acc[g]);
        out[g] += bits[g] >> 3;
        acc[g] >>= bits[g] & ~7u;
        bits[g] &= 7;
      }
      if (bits[g]) {
        store_le<uint64_t>(out[g], acc[g]);
        out[g] += 1;
      }
      lengths[s] = static_cast<size_t>(out[g] - (segments_.data() + s * segment_area_));
    }
  }
  return segments_.data();
}

// ---- decoder ----

HuffmanDecoder::HuffmanDecoder()
    : single_(kTableSize), multi_(kTableSize), long_(kTableSize * kLongSize),
      lengths_(kMaxPairValues * kMaxPairValues) {}

namespace {

[[noreturn]] void corrupt(const char* what) { throw invalid_input(std::string("corrupt Huffman stream: ") + what); }

// Up to 8 bytes of a segment from byte `at`, zero beyond its end.
inline uint64_t load_tail(const uint8_t* seg, size_t len, size_t at) {
  if (at + 8 <= len) return load_le<uint64_t>(seg + at);
  uint8_t buf[8] = {};
  if (at < len) std::memcpy(buf, seg + at, len - at);
  return load_le<uint64_t>(buf);
}

}  // namespace

void HuffmanDecoder::decode(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  const size_t n = dst.size();
  const uint8_t* p = src.data();
  const uint8_t* const end = p + src.size();
  auto need = [&](size_t bytes) {
    if (static_cast<size_t>(end - p) < bytes) corrupt("truncated header");
  };
  need(1);
  const int width = *p++;
  if (width != 1 && width != 2) corrupt("bad symbol width");
  uint8_t tail = 0;
  const bool has_tail = width == 2 && (n & 1);
  if (has_tail) {
    need(1);
    tail = *p++;
  }
  need(kBitmapBytes);
  uint8_t values[256];
  uint32_t k = 0;
  for (int v = 0; v < 256; ++v)
    if (p[v / 8] >> (v % 8) & 1) values[k++] = static_cast<uint8_t>(v);
  p += kBitmapBytes;
  if (width == 2 && k > kMaxPairValues) corrupt("pair alphabet too large");
  const uint32_t symbols = width == 1 ? k : k * k;
  need((symbols + 1) / 2);
  uint32_t kraft = 0;
  for (uint32_t s = 0; s < symbols; ++s) {
    const uint8_t len = (p[s / 2] >> (s % 2 * 4)) & 0xf;
    if (len > kHuffmanMaxBits) corrupt("code length above the limit");
    lengths_[s] = len;
    if (len) kraft += kCodeSpace >> len;
  }
  if ((symbols & 1) && (p[symbols / 2] >> 4)) corrupt("nonzero padding");
  // Every value listed must have a code (for pairs: in some pair), so that no bit of
  // the header can change without changing the decoded bytes or failing a check.
  for (uint32_t r = 0; r < k; ++r) {
    bool used = width == 1 && lengths_[r];
    for (uint32_t c = 0; width == 2 && c < k && !used; ++c) used = lengths_[r * k + c] || lengths_[c * k + r];
    if (!used) corrupt("value without a code");
  }
  p += (symbols + 1) / 2;
  if (kraft != kCodeSpace) corrupt("incomplete code");
  need(kSegmentTableBytes);
  const uint8_t* seg[kSegments];
  size_t seg_len[kSegments];
  size_t rest = static_cast<size_t>(end - p) - kSegmentTableBytes;
  const uint8_t* data = p + kSegmentTableBytes;
  for (int s = 0; s < kSegments; ++s) {
    seg_len[s] = s < kSegments - 1 ? load_le<uint32_t>(p + 4 * s) : rest;
    if (seg_len[s] > rest) corrupt("segment lengths exceed the stream");
    rest -= seg_len[s];
    seg[s] = data;
    data += seg_len[s];
  }
  build_tables(values, k, width, symbols);

  const size_t count = width == 1 ? n : n / 2;
  // Bit positions count from the start of segment 0, so that the four segments share
  // one base pointer (the fast loop is short of registers).
  const uint8_t* const base = seg[0];
  uint8_t* out[kSegments];
  uint8_t* out_end[kSegments];
  size_t pos[kSegments], pos_end[kSegments];
  for (int s = 0; s < kSegments; ++s) {
    out[s] = dst.data() + segment_begin(count, s) * width;
    out_end[s] = dst.data() + segment_begin(count, s + 1) * width;
    pos[s] = 8 * static_cast<size_t>(seg[s] - base);
    pos_end[s] = pos[s] + 8 * seg_len[s];
  }
  const uint64_t* multi = multi_.data();
  const uint64_t* second = long_.data();
  // Fast loop: one 8-byte load per segment gives at least 57 bits, enough for four
  // lookups of at most 14 bits, each writing 4 bytes and advancing by the bytes decoded.
  // A round thus reads at most 7 bytes past `pos` and writes at most 16 bytes; the
  // rounds that surely stay inside every segment run without checks. A marker bit at
  // the top of each loaded word, beyond the 56 bits a round can consume, counts the
  // bits consumed: its leading zeros afterwards.
  constexpr int kLookups = 4;
  constexpr uint64_t kMarker = uint64_t{1} << 63;
  for (;;) {
    size_t rounds = SIZE_MAX;
    for (int s = 0; s < kSegments; ++s) {
      const size_t at = pos[s] >> 3, stop = pos_end[s] >> 3;
      const size_t in = at + 8 <= stop ? (stop - at - 8) / 7 + 1 : 0;
      const size_t room = static_cast<size_t>(out_end[s] - out[s]) / (4 * kLookups);
      rounds = std::min(rounds, std::min(in, room));
    }
    if (rounds == 0) break;
    for (size_t r = 0; r < rounds; ++r) {
      uint64_t v[kSegments];
      for (int s = 0; s < kSegments; ++s) v[s] = (load_le<uint64_t>(base + (pos[s] >> 3)) >> (pos[s] & 7)) | kMarker;
      for (int l = 0; l < kLookups; ++l) {
        for (int s = 0; s < kSegments; ++s) {
          uint64_t e = multi[v[s] & kTableMask];
          if (e & kLongEntry) [[unlikely]]
            e = second[entry_bytes(e) + ((v[s] >> kHuffmanTableBits) & (kLongSize - 1))];
          store_le<uint32_t>(out[s], entry_bytes(e));
          out[s] += entry_out(e);
          v[s] >>= (e >> 32) & 63;
        }
      }
      for (int s = 0; s < kSegments; ++s) pos[s] += std::countl_zero(v[s]);
    }
  }
  // Tail: one symbol at a time, exact writes, zero bits beyond a segment's end.
  const uint64_t* single = single_.data();
  for (int s = 0; s < kSegments; ++s) {
    const size_t first = pos_end[s] - 8 * seg_len[s];
    size_t at = pos[s] - first;  // bits consumed in this segment
    while (out[s] < out_end[s]) {
      const uint64_t v = load_tail(seg[s], seg_len[s], at >> 3) >> (at & 7);
      uint64_t e = single[v & kTableMask];
      if (e & kLongEntry) e = second[entry_bytes(e) + ((v >> kHuffmanTableBits) & (kLongSize - 1))];
      out[s][0] = static_cast<uint8_t>(entry_bytes(e));
      if (width == 2) out[s][1] = static_cast<uint8_t>(entry_bytes(e) >> 8);
      out[s] += width;
      at += entry_bits(e);
      if (at > 8 * seg_len[s] + 64) corrupt("segment ends early");
    }
    // Every byte used, padding bits zero: the stream is exactly what the encoder wrote.
    if ((at + 7) / 8 != seg_len[s]) corrupt("segment length does not match its codes");
    if ((at & 7) && (seg[s][seg_len[s] - 1] >> (at & 7))) corrupt("nonzero padding bits");
  }
  if (has_tail) dst[n - 1] = tail;
}

// Decode tables from lengths_: single_ decodes one symbol per entry, multi_ as many as
// fit in kHuffmanTableBits bits and 4 bytes; codes longer than kHuffmanTableBits go
// through a second-level table of kLongSize entries per 11-bit prefix. The code is
// complete (checked by the caller), so every entry of every table gets filled.
void HuffmanDecoder::build_tables(const uint8_t* values, uint32_t k, int width, uint32_t symbols) {
  std::fill(single_.begin(), single_.end(), 0);
  uint32_t long_tables = 0;
  canonical_codes(lengths_.data(), symbols, [&](uint32_t s, uint32_t code, int len) {
    const uint64_t bytes = width == 1 ? values[s] : values[s / k] | static_cast<uint32_t>(values[s % k]) << 8;
    const uint64_t entry = make_entry(bytes, len, width);
    if (len <= kHuffmanTableBits) {
      for (uint32_t j = code; j < kTableSize; j += 1u << len) single_[j] = entry;
      return;
    }
    uint64_t& first = single_[code & kTableMask];
    if (!(first & kLongEntry)) first = kLongEntry | kLongSize * long_tables++;
    uint64_t* table = long_.data() + entry_bytes(first);
    for (uint32_t j = code >> kHuffmanTableBits; j < kLongSize; j += 1u << (len - kHuffmanTableBits)) table[j] = entry;
  });
  for (uint32_t idx = 0; idx < kTableSize; ++idx) {
    const uint64_t e = single_[idx];
    if (e & kLongEntry) {
      multi_[idx] = e;
      continue;
    }
    uint32_t bytes = entry_bytes(e);
    uint32_t used = entry_bits(e);
    uint32_t out = width;
    while (out + width <= 4) {
      const uint64_t next = single_[idx >> used];
      if (next & kLongEntry) break;
      const uint32_t len = entry_bits(next);
      if (used + len > kHuffmanTableBits) break;
      bytes |= entry_bytes(next) << (8 * out);
      used += len;
      out += width;
    }
    multi_[idx] = make_entry(bytes, used, out);
  }
}

}  // namespace tk::codec
