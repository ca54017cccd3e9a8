// trellis:K[:L] — trellis-coded quantization with a "bitshift" trellis (QTIP, Tseng et
// al. 2024): each row is a bit stream of K bits per weight, the state at weight t is
// the L-bit window of the stream ending K bits after weight t's own bits start, and
// weight t decodes to codebook[state] * scale of its group. The encoder picks the
// stream by a Viterbi search (minimum weighted squared error over all streams), so a
// weight effectively gets more than 2^K levels to choose from while costing K bits.
//
// Layout (docs/QUANT.md): a row is cut into segments of at most `segment` weights, each
// an LSB-first bit stream of L - K + K * length bits padded to whole bytes; the state
// of weight t of a segment is bits [K t, K t + L). Parts: codes U8 [rows, row_bytes],
// scales (F16/BF16/F32) [rows, groups], codebook F16 [2^L].
//
// Decisions never depend on the thread count or the machine: each row is encoded alone,
// and the Viterbi costs are the same float operations (no fused multiply-add, the same
// tie rule) in the scalar reference and the AVX2 version.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "tk/core/error.h"
#include "tk/core/dtype_array.h"
#include "tk/core/float_format.h"
#include "tk/quant/codebook_internal.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"

#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant {
namespace {

using namespace detail;

constexpr int64_t kDefaultGroup = 256;
constexpr int64_t kSegment = 4096;  // weights per trellis: bounds the traceback memory
constexpr int64_t kPrefetchSteps = 8;
constexpr int kMaxStateBits = 14;
constexpr int kMaxPairWindow = 14;  // pair tables of at most 2^14 entries (64 KiB)

// The default state size: the largest L up to 12 whose decoder pair table (2^(L+K)
// entries, below) stays within 64 KiB, so the default decodes two weights a lookup:
// 12 for K = 1 and 2, 11 for K = 3, 10 for K = 4. A larger L gains a little SQNR for
// 2^L search time per weight (see docs/QUANT.md).
constexpr int default_state_bits(int bits) { return std::min(12, kMaxPairWindow - bits); }
constexpr int kTrainIterations = 6;
constexpr int64_t kTrainValuesPerState = 256;
constexpr int64_t kTrainShare = 8;
constexpr uint64_t kCodebookSeed = 0x7472656c6c6973ull;  // "trellis"

using tk::detail::read_bits;

void write_bits(uint8_t* stream, uint64_t bit, uint32_t value, int count) {
  for (int i = 0; i < count; ++i, ++bit) {
    if ((value >> i) & 1u) stream[bit >> 3] |= static_cast<uint8_t>(1u << (bit & 7));
  }
}

// Standard normal quantile by bisection on erfc: slow but only run for 2^L values.
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// The starting codebook: the 2^L quantiles of N(0, 1) dealt to the states in a fixed
// pseudo-random order, so every state's 2^K successors are an unstructured sample of
// the Gaussian (the random-code argument behind trellis coding), rounded to f16.
std::vector<float> gaussian_codebook(int state_bits) {
  const int64_t n = int64_t{1} << state_bits;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  cbdetail::SeededRandom random(kCodebookSeed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[random.below(i + 1)]);
  std::vector<float> book(n);
  for (int64_t i = 0; i < n; ++i) {
    const double q = normal_quantile((static_cast<double>(i) + 0.5) / static_cast<double>(n));
    book[order[i]] = f16_to_f32(f32_to_f16(static_cast<float>(q)));
  }
  return book;
}

// One trellis segment to encode: n targets y with error weights w and the scale a that
// multiplies the codebook at each step (the group's scale relative to the row's).
struct Targets {
  const float* y;
  const float* w;
  const float* a;
  int64_t n;
};

// Viterbi search of the L-bit bitshift trellis, K bits per step. States are the L-bit
// window; the predecessors of state s are ((s mod M) << K) | p for p < 2^K (M = 2^(L-K)),
// and the cheapest wins, the lowest p on a tie. Writes the state of every step.
class Viterbi {
 public:
  Viterbi(int bits, int state_bits, const float* book)
      : k_(bits), l_(state_bits), n_(int64_t{1} << state_bits), m_(n_ >> bits), book_(book),
        cost_(n_), next_(n_), scaled_(n_) {}

  void encode_reference(const Targets& t, uint32_t* states) {
    decisions_.assign(static_cast<size_t>(t.n * m_), 0);
    first_step(t);
    const int64_t p_count = int64_t{1} << k_;
    for (int64_t step = 1; step < t.n; ++step) {
      uint8_t* dec = decisions_.data() + step * m_;
      const float y = t.y[step], w = t.w[step], a = t.a[step];
      for (int64_t j = 0; j < m_; ++j) {
        float best = cost_[j * p_count];
        int choice = 0;
        for (int p = 1; p < p_count; ++p) {
          if (cost_[j * p_count + p] < best) best = cost_[j * p_count + p], choice = p;
        }
        dec[j] = static_cast<uint8_t>(choice);
        for (int64_t top = 0; top < p_count; ++top) {
          const int64_t s = top * m_ + j;
          const float d = y - a * book_[s];
          next_[s] = best + (d * d) * w;
        }
      }
      std::swap(cost_, next_);
    }
    uint32_t s = last_state();
    for (int64_t step = t.n - 1; step >= 0; --step) {
      states[step] = s;
      if (step == 0) break;
      const uint32_t j = s & static_cast<uint32_t>(m_ - 1);
      s = (j << k_) | decisions_[step * m_ + j];
    }
  }

#if TK_X86
  // K = 2, M a multiple of 8: eight predecessor groups of four at a time, transposed so
  // that the minimum is vertical; the decisions are kept as three comparison masks per
  // eight groups (lane order 0 2 4 6 1 3 5 7, undone at traceback).
  TK_TARGET_AVX2 void encode_avx2(const Targets& t, uint32_t* states) {
    const int64_t chunks = m_ / 8;
    decisions_.assign(static_cast<size_t>(t.n * chunks * 3), 0);
    first_step(t);
    const __m256i natural = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    // The members in locals: the vector stores may alias anything, *this included, so the
    // loops below would load every member again after each store. Inlined into its caller
    // (a -march=native build) the compiler sees that they cannot; here it is told.
    const int64_t m = m_, n = n_;
    float* scaled = scaled_.data();
    float* cost = cost_.data();
    float* next = next_.data();
    for (int64_t step = 1; step < t.n; ++step) {
      uint8_t* dec = decisions_.data() + step * chunks * 3;
      const __m256 y = _mm256_set1_ps(t.y[step]), w = _mm256_set1_ps(t.w[step]);
      // a * codebook changes only with the group: the same products the reference forms.
      if (step == 1 || t.a[step] != t.a[step - 1]) {
        const __m256 a = _mm256_set1_ps(t.a[step]);
        const float* book = book_;
        for (int64_t s = 0; s < n; s += 8) _mm256_storeu_ps(scaled + s, _mm256_mul_ps(a, _mm256_loadu_ps(book + s)));
      }
      // A weight of 1 leaves the squared error unchanged: skip the product.
      const bool unweighted = t.w[step] == 1.0f;
      const float* old = cost;
      for (int64_t c = 0; c < chunks; ++c) {
        const float* src = old + c * 32;
        const __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8);
        const __m256 v2 = _mm256_loadu_ps(src + 16), v3 = _mm256_loadu_ps(src + 24);
        const __m256 t0 = _mm256_unpacklo_ps(v0, v1), t1 = _mm256_unpackhi_ps(v0, v1);
        const __m256 t2 = _mm256_unpacklo_ps(v2, v3), t3 = _mm256_unpackhi_ps(v2, v3);
        const __m256 r0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 r1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
        const __m256 r2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 r3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
        const __m256 lt1 = _mm256_cmp_ps(r1, r0, _CMP_LT_OQ);
        const __m256 c01 = _mm256_blendv_ps(r0, r1, lt1);
        const __m256 lt3 = _mm256_cmp_ps(r3, r2, _CMP_LT_OQ);
        const __m256 c23 = _mm256_blendv_ps(r2, r3, lt3);
        const __m256 lt = _mm256_cmp_ps(c23, c01, _CMP_LT_OQ);
        const __m256 best = _mm256_permutevar8x32_ps(_mm256_blendv_ps(c01, c23, lt), natural);
        dec[3 * c] = static_cast<uint8_t>(_mm256_movemask_ps(lt1));
        dec[3 * c + 1] = static_cast<uint8_t>(_mm256_movemask_ps(lt3));
        dec[3 * c + 2] = static_cast<uint8_t>(_mm256_movemask_ps(lt));
        for (int64_t top = 0; top < 4; ++top) {
          const int64_t s = top * m + c * 8;
          const __m256 d = _mm256_sub_ps(y, _mm256_loadu_ps(scaled + s));
          const __m256 e = unweighted ? _mm256_mul_ps(d, d) : _mm256_mul_ps(_mm256_mul_ps(d, d), w);
          _mm256_storeu_ps(next + s, _mm256_add_ps(best, e));
        }
      }
      std::swap(cost, next);
      std::swap(cost_, next_);  // the vectors follow the pointers (no copy)
    }
    uint32_t s = last_state();
    for (int64_t step = t.n - 1; step >= 0; --step) {
      states[step] = s;
      if (step == 0) break;
      // The decisions of a step span several cache lines, read far apart: fetch ahead.
      if (step >= kPrefetchSteps) {
        const uint8_t* ahead = decisions_.data() + (step - kPrefetchSteps) * chunks * 3;
        for (int64_t b = 0; b < chunks * 3; b += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + b), _MM_HINT_T0);
      }
      const uint32_t j = s & static_cast<uint32_t>(m_ - 1);
      const uint8_t* dec = decisions_.data() + (step * chunks + (j >> 3)) * 3;
      const int lane = static_cast<int>(((j & 7) >> 1) + 4 * (j & 1));
      const uint32_t p = ((dec[2] >> lane) & 1) ? 2 + ((dec[1] >> lane) & 1) : (dec[0] >> lane) & 1;
      s = (j << 2) | p;
    }
  }
#endif

 private:
  void first_step(const Targets& t) {
    for (int64_t s = 0; s < n_; ++s) {
      const float d = t.y[0] - t.a[0] * book_[s];
      cost_[s] = (d * d) * t.w[0];
    }
  }
  uint32_t last_state() const {
    return static_cast<uint32_t>(std::min_element(cost_.begin(), cost_.end()) - cost_.begin());
  }

  int k_, l_;
  int64_t n_, m_;
  const float* book_;
  std::vector<float> cost_, next_, scaled_;  // scaled_: a * codebook (AVX2 path)
  std::vector<uint8_t> decisions_;
};


#if TK_X86
TK_BEGIN_AVX2
// The decoders of eight weights a step (f16 lookups, bextr).

// Runs step(t, scale) for t = 0, 8, ..., whole - 8 (whole a multiple of 8) with the
// scale of weight t's group broadcast. Groups are multiples of 8 weights, so the steps
// go by runs within one group: one scale register per run and no group test per step.
template <typename Step>
inline void steps_by_group(int64_t whole, int64_t first, int64_t group, const float* scales, Step&& step) {
  for (int64_t t = 0; t < whole;) {
    const int64_t g = (first + t) / group;
    const int64_t run_end = std::min(whole, (g + 1) * group - first);
    const __m256 scale = _mm256_set1_ps(scales[g]);
    for (; t < run_end; t += 8) step(t, scale);
  }
}

// Decode the n weights (a multiple of 8) of one K-bit segment starting at column `first`
// of its row into dst; `scales` are the row's group scales. Weights t..t+7 (t a multiple
// of 8) start at bit K t, a whole byte, and their windows end within 7 K + L <= 42 bits
// of it: eight(word) turns the Word there (64 bits, or 32 where the windows fit: a
// narrower word lies inside the segment for more steps, and K = 2 and 3 decode about
// 15% faster with it) into their eight f16 values, converted at once by F16C (exactly,
// so these are the scalar loop's products) and scaled. The last steps of the segment,
// whose word would run past it, go one weight at a time through the f16 codebook.
template <int kBits, typename Word, typename Eight>
inline void decode_segment(const uint16_t* book, int state_bits, const uint8_t* segment, uint64_t seg_bytes,
                           int64_t n, int64_t first, int64_t group, const float* scales, float* dst, Eight&& eight) {
  // The steps whose word lies inside the segment: K t / 8 + sizeof(Word) <= seg_bytes.
  constexpr auto kWordBytes = static_cast<int64_t>(sizeof(Word));
  const auto bytes = static_cast<int64_t>(seg_bytes);
  const int64_t whole = bytes < kWordBytes ? 0 : std::min(n, (bytes - kWordBytes) / kBits * 8 + 8);
  steps_by_group(whole, first, group, scales, [&](int64_t t, __m256 scale) {
    Word word = 0;
    std::memcpy(&word, segment + static_cast<uint64_t>(t) / 8 * kBits, sizeof(Word));
    _mm256_storeu_ps(dst + t, _mm256_mul_ps(_mm256_cvtph_ps(eight(word)), scale));
  });
  for (int64_t t = whole; t < n; ++t) {
    const uint32_t state = read_bits(segment, seg_bytes, static_cast<uint64_t>(kBits * t), state_bits);
    dst[t] = _cvtsh_ss(book[state]) * scales[(first + t) / group];
  }
}

// One f16 codebook lookup per weight: eight bextr and eight 16-bit loads fill the
// vector. The f16 codebook is half the f32 one's cache lines and its inserts fill one
// register: 5-15% faster than f32 lookups for K = 1, 3, 4. (The pair table is unused.)
template <int kBits>
void decode_segment_lookup(const uint16_t* book, const uint32_t*, int state_bits, const uint8_t* segment,
                           uint64_t seg_bytes, int64_t n, int64_t first, int64_t group, const float* scales,
                           float* dst) {
  const uint64_t length = static_cast<uint64_t>(state_bits) << 8;
  decode_segment<kBits, uint64_t>(book, state_bits, segment, seg_bytes, n, first, group, scales, dst, [&](uint64_t word) {
    // Four bextr controls serve both halves (the upper from the word shifted by 4 K):
    // eight distinct controls did not fit the registers and were reloaded every step.
    const uint64_t upper = word >> (4 * kBits);
    __m128i v = _mm_cvtsi32_si128(book[__builtin_ia32_bextr_u64(word, length)]);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(word, length | kBits)], 1);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(word, length | (2 * kBits))], 2);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(word, length | (3 * kBits))], 3);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(upper, length)], 4);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(upper, length | kBits)], 5);
    v = _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(upper, length | (2 * kBits))], 6);
    return _mm_insert_epi16(v, book[__builtin_ia32_bextr_u64(upper, length | (3 * kBits))], 7);
  });
}

// Entry w (an (L + K)-bit window) holds the f16 values of two consecutive weights:
// book[w mod 2^L] in its low half and book[w >> K] in its high half.
std::vector<uint32_t> pair_table(const uint16_t* book, int bits, int state_bits) {
  const uint32_t n = uint32_t{1} << (state_bits + bits), mask = (uint32_t{1} << state_bits) - 1;
  std::vector<uint32_t> pairs(n);
  for (uint32_t w = 0; w < n; ++w) pairs[w] = book[w & mask] | static_cast<uint32_t>(book[w >> bits]) << 16;
  return pairs;
}

// The table is a pure function of K and the codebook's bytes, yet callers decode one
// tensor in slices (row ranges streamed into a cache-resident buffer, the bench's 16-row
// block), and rebuilding it per call cost 10-20% of a 16-row call at L = 12 (64 KiB of
// table for 256 KiB of output) plus a zero-filled allocation. Each calling thread keeps
// its last table with a copy of the codebook it came from; comparing the 2^L f16
// entries (at most a quarter of the table's bytes, one linear pass) decides reuse, so a
// changed codebook, even at the same address, always gets a fresh table.
const uint32_t* cached_pair_table(const uint16_t* book, int bits, int state_bits) {
  struct Cache {
    int bits = -1, state_bits = -1;
    std::vector<uint16_t> book;
    std::vector<uint32_t> pairs;
  };
  thread_local Cache cache;
  const size_t n_states = size_t{1} << state_bits;
  if (cache.bits != bits || cache.state_bits != state_bits ||
      std::memcmp(cache.book.data(), book, n_states * sizeof(uint16_t)) != 0) {
    cache.state_bits = -1;  // stays invalid if building throws
    cache.book.assign(book, book + n_states);
    cache.pairs = pair_table(book, bits, state_bits);
    cache.bits = bits;
    cache.state_bits = state_bits;
  }
  return cache.pairs.data();
}

// Two weights a lookup through the pair table: weights t..t+7 are four pairs, pair j the
// (L + K)-bit window at bit 2 K j of the word (within 32 bits while 7 K + L <= 32); four bextr and four scalar loads fill the
// vector. Scalar loads beat AVX2 gathers on AMD Zen 3 (three load ports, slow gathers).
// Kept out of line (as every decoder here, called through a pointer): inlined into the
// row loop, its four bextr controls were spilled and reloaded every step.
template <int kBits>
void decode_segment_pairs(const uint16_t* book, const uint32_t* pairs, int state_bits, const uint8_t* segment,
                          uint64_t seg_bytes, int64_t n, int64_t first, int64_t group, const float* scales,
                          float* dst) {
  // 64-bit bextr: its result indexes the table without a zero-extending move.
  const uint64_t length = static_cast<uint64_t>(state_bits + kBits) << 8;
  auto eight = [&](uint64_t word) {
    __m128i v = _mm_cvtsi32_si128(static_cast<int>(pairs[__builtin_ia32_bextr_u64(word, length)]));
    v = _mm_insert_epi32(v, static_cast<int>(pairs[__builtin_ia32_bextr_u64(word, length | (2 * kBits))]), 1);
    v = _mm_insert_epi32(v, static_cast<int>(pairs[__builtin_ia32_bextr_u64(word, length | (4 * kBits))]), 2);
    return _mm_insert_epi32(v, static_cast<int>(pairs[__builtin_ia32_bextr_u64(word, length | (6 * kBits))]), 3);
  };
  if (7 * kBits + state_bits <= 32) {
    decode_segment<kBits, uint32_t>(book, state_bits, segment, seg_bytes, n, first, group, scales, dst, eight);
  } else {
    decode_segment<kBits, uint64_t>(book, state_bits, segment, seg_bytes, n, first, group, scales, dst, eight);
  }
}

using SegmentDecoder = void (*)(const uint16_t*, const uint32_t*, int, const uint8_t*, uint64_t, int64_t, int64_t,
                                int64_t, const float*, float*);

// The decoder for K (1..4) through the pair table or the codebook alone.
SegmentDecoder segment_decoder(int bits, bool pairs) {
  switch (bits) {
    case 1: return pairs ? decode_segment_pairs<1> : decode_segment_lookup<1>;
    case 2: return pairs ? decode_segment_pairs<2> : decode_segment_lookup<2>;
    case 3: return pairs ? decode_segment_pairs<3> : decode_segment_lookup<3>;
    case 4: return pairs ? decode_segment_pairs<4> : decode_segment_lookup<4>;
    default: return nullptr;
  }
}
TK_END_TARGET
#endif

class TrellisScheme final : public Scheme {
 public:
  TrellisScheme(int bits, int state_bits) : k_(bits), l_(state_bits) {}
  std::string name() const override {
    std::string spec = "trellis:";
    spec += std::to_string(k_);
    if (l_ != default_state_bits(k_)) spec.append(":").append(std::to_string(l_));
    return spec;
  }
  std::string description() const override {
    return std::to_string(k_) + "-bit trellis-coded quantization (" + std::to_string(l_) +
           "-bit bitshift trellis, Viterbi search), f16 codebook of 2^" + std::to_string(l_) +
           " values learned per tensor, one scale per group (default 256)";
  }
  int64_t row_block(int64_t cols, const QuantOptions& o) const override {
    return o.granularity == Granularity::kChannel ? 8 : group_of(o, cols);
  }
  bool rows_independent(const QuantOptions&) const override { return false; }  // one codebook
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& options) const override {
    if (rows * cols == 0) return 0;
    const Layout l = make_layout({rows, cols}, group_of(options, cols));
    const double bytes = static_cast<double>(rows * row_bytes(l.padded_cols)) +
                         static_cast<double>(rows * l.groups_per_row * (dtype_bits(options.scale_dtype) / 8)) +
                         2.0 * static_cast<double>(int64_t{1} << l_);
    return bytes * 8 / static_cast<double>(rows * cols);
  }
  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& options) const override;
  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  int64_t group_of(const QuantOptions& o, int64_t cols) const {
    if (o.granularity == Granularity::kTensor) throw usage_error("trellis takes granularity channel or group", name());
    if (!is_scale_dtype(o.scale_dtype)) throw usage_error("trellis scales are f16, bf16 or f32", name());
    if (o.granularity == Granularity::kChannel) return round_up(std::max<int64_t>(cols, 1), 8);
    const int64_t group = o.group_size == 0 ? kDefaultGroup : o.group_size;
    if (group <= 0 || group % 8 != 0) throw usage_error("trellis group size must be a positive multiple of 8", name());
    return group;
  }
  uint64_t segment_bytes(int64_t length) const {
    return cbdetail::packed_bytes(static_cast<uint64_t>(l_ - k_ + k_ * length), 1);
  }
  int64_t row_bytes(int64_t padded_cols) const {
    const int64_t full = padded_cols / kSegment, rest = padded_cols % kSegment;
    return static_cast<int64_t>(full * segment_bytes(kSegment) + (rest ? segment_bytes(rest) : 0));
  }
  // The Viterbi path (one state per padded column) and least-squares group scales of a
  // padded row `x` with column weights `w`.
  void search_row(const float* x, const float* w, const Layout& l, const float* book, bool reference,
                  uint32_t* states, float* scales) const;
  // The row's bit stream (row_bytes, zeroed) from its states.
  void write_row(const uint32_t* states, int64_t padded_cols, uint8_t* codes) const;
  // Refine the codebook on a spread of rows: Viterbi paths, then every state's value the
  // weighted mean of the (scale-normalised) values it codes, kTrainIterations times.
  void train_codebook(const PaddedInput& in, const Layout& l, bool reference, std::vector<float>& book) const;
  void decode(const Quantized& q, float* out, bool reference) const;

  int k_, l_;
};

void TrellisScheme::search_row(const float* x, const float* w, const Layout& l, const float* book, bool reference,
                               uint32_t* states, float* scales) const {
  const int64_t pc = l.padded_cols;
  // Work relative to the row's RMS, so the costs stay near 1 whatever the magnitude.
  double ss = 0;
  for (int64_t c = 0; c < pc; ++c) ss += static_cast<double>(x[c]) * x[c];
  const double rms = std::sqrt(ss / static_cast<double>(l.cols));
  std::vector<float> y(pc, 0.0f), a(pc, 0.0f), start(l.groups_per_row, 0.0f);
  if (rms > 0 && std::isfinite(1.0 / rms)) {
    const auto inv = static_cast<float>(1.0 / rms);
    for (int64_t c = 0; c < pc; ++c) y[c] = x[c] * inv;
    for (int64_t g = 0; g < l.groups_per_row; ++g) {
      double gs = 0;
      for (int64_t c = g * l.group; c < (g + 1) * l.group; ++c) gs += static_cast<double>(y[c]) * y[c];
      const auto rel = static_cast<float>(std::sqrt(gs / static_cast<double>(l.group)));
      std::fill(a.begin() + g * l.group, a.begin() + (g + 1) * l.group, rel);
    }
  }
  Viterbi viterbi(k_, l_, book);
  for (int64_t first = 0; first < pc; first += kSegment) {
    const Targets t{y.data() + first, w + first, a.data() + first, std::min(kSegment, pc - first)};
#if TK_X86
    if (!reference && k_ == 2 && use_avx2()) {
      viterbi.encode_avx2(t, states + first);
      continue;
    }
#endif
    viterbi.encode_reference(t, states + first);
  }
  // The path fixed, each group's scale is the least-squares fit to the original values.
  for (int64_t g = 0; g < l.groups_per_row; ++g) {
    double xc = 0, cc = 0;
    for (int64_t c = g * l.group; c < (g + 1) * l.group; ++c) {
      const double v = book[states[c]];
      xc += static_cast<double>(w[c]) * x[c] * v;
      cc += static_cast<double>(w[c]) * v * v;
    }
    scales[g] = cc > 0 ? static_cast<float>(xc / cc) : 0.0f;
  }
}

void TrellisScheme::write_row(const uint32_t* states, int64_t pc, uint8_t* codes) const {
  uint8_t* out = codes;
  for (int64_t first = 0; first < pc; first += kSegment) {
    const int64_t n = std::min(kSegment, pc - first);
    write_bits(out, 0, states[first], l_);
    for (int64_t t = 1; t < n; ++t) {
      write_bits(out, static_cast<uint64_t>(k_ * t + l_ - k_), states[first + t] >> (l_ - k_), k_);
    }
    out += segment_bytes(n);
  }
}

void TrellisScheme::train_codebook(const PaddedInput& in, const Layout& l, bool reference,
                                   std::vector<float>& book) const {
  const int64_t n_states = int64_t{1} << l_;
  // Enough training values that every state is used many times, but at most an eighth
  // of the rows (at least one), so training costs under the final encoding.
  const int64_t wanted = (kTrainValuesPerState * n_states + l.padded_cols - 1) / l.padded_cols;
  const int64_t rows = std::min({l.rows, wanted, std::max<int64_t>(1, l.rows / kTrainShare)});
  if (rows == 0) return;
  const int64_t pc = l.padded_cols;
  std::vector<uint32_t> states(static_cast<size_t>(rows * pc));
  std::vector<float> scales(static_cast<size_t>(rows * l.groups_per_row));
  for (int iter = 0; iter < kTrainIterations; ++iter) {
    parallel_for(rows, [&](int64_t i) {
      const int64_t r = i * l.rows / rows;  // spread over the tensor
      search_row(in.data + r * pc, in.weights.data(), l, book.data(), reference, states.data() + i * pc,
                 scales.data() + i * l.groups_per_row);
    });
    // In a fixed order, so the codebook does not depend on the thread count.
    std::vector<double> num(n_states, 0.0), den(n_states, 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      const float* x = in.data + (i * l.rows / rows) * pc;
      for (int64_t c = 0; c < pc; ++c) {
        const double scale = scales[i * l.groups_per_row + c / l.group];
        const uint32_t s = states[i * pc + c];
        num[s] += in.weights[c] * scale * x[c];
        den[s] += in.weights[c] * scale * scale;
      }
    }
    for (int64_t s = 0; s < n_states; ++s) {
      if (den[s] > 0) book[s] = f16_to_f32(f32_to_f16(static_cast<float>(num[s] / den[s])));
    }
  }
}

Quantized TrellisScheme::quantize(const float* x, const Shape& shape, const QuantOptions& options) const {
  const Layout l = make_layout(shape, group_of(options, shape.empty() ? 1 : shape.back()));
  const PaddedInput in = pad_input(x, l, options.importance);
  std::vector<float> book = gaussian_codebook(l_);
  if (!options.fast) train_codebook(in, l, options.reference, book);
  const int64_t bytes = row_bytes(l.padded_cols);
  Tensor codes = new_part(DType::kU8, {l.rows, bytes});
  Tensor scales = new_part(options.scale_dtype, {l.rows, l.groups_per_row});
  parallel_for(l.rows, [&](int64_t r) {
    std::vector<uint32_t> states(l.padded_cols);
    std::vector<float> row_scales(l.groups_per_row);
    search_row(in.data + r * l.padded_cols, in.weights.data(), l, book.data(), options.reference, states.data(),
               row_scales.data());
    write_row(states.data(), l.padded_cols, codes.mutable_data_as<uint8_t>() + r * bytes);
    for (int64_t g = 0; g < l.groups_per_row; ++g) {
      store_scale(scales, static_cast<uint64_t>(r * l.groups_per_row + g), row_scales[g]);
    }
  });
  Quantized q = new_quantized(name(), shape, l);
  q.params["bits"] = std::to_string(k_);
  q.params["state_bits"] = std::to_string(l_);
  q.params["segment"] = std::to_string(kSegment);
  q.parts["codes"] = std::move(codes);
  q.parts["scales"] = std::move(scales);
  q.parts["codebook"] = cbdetail::make_f16(book, {int64_t{1} << l_});
  return q;
}

void TrellisScheme::decode(const Quantized& q, float* out, bool reference) const {
  param_int(q, "bits", k_, k_);
  // The file's state size rules: a tensor written when the spec's default L was another
  // (12 for every K before it became 11 for K = 3 and 10 for K = 4) decodes by its own L.
  const int state_bits = static_cast<int>(param_int(q, "state_bits", k_ + 3, kMaxStateBits));
  if (state_bits != l_) {
    TrellisScheme(k_, state_bits).decode(q, out, reference);
    return;
  }
  param_int(q, "segment", kSegment, kSegment);
  const int64_t group = param_int(q, "group_size", 8, INT64_MAX / 64);
  if (group % 8 != 0) throw invalid_input("group_size must be a multiple of 8", q.scheme);
  const Layout l = make_layout(q.shape, group);
  check_shape_param(q, l);
  const int64_t bytes = row_bytes(l.padded_cols);
  const Tensor& codes = part(q, "codes", DType::kU8, static_cast<uint64_t>(l.rows * bytes));
  const int64_t n_states = int64_t{1} << l_;
  const Tensor& book16 = part(q, "codebook", DType::kF16, static_cast<uint64_t>(n_states));
  auto it = q.parts.find("scales");
  if (it == q.parts.end() || !is_scale_dtype(it->second.dtype())) {
    throw invalid_input("quantized tensor lacks an f16, bf16 or f32 'scales' part", q.scheme);
  }
  const Tensor& scales = part(q, "scales", it->second.dtype(), static_cast<uint64_t>(l.rows * l.groups_per_row));
  const bool direct = l.cols == l.padded_cols;
  // Without AVX2 (or for the reference), the scalar loop over the f32 codebook.
#if TK_X86
  const uint16_t* book_f16 = book16.data_as<uint16_t>();
  const uint32_t* pairs = nullptr;
  SegmentDecoder fast = nullptr;
  if (!reference && use_avx2()) {
    // The pair table (2^K times the codebook's entries) while it stays within 64 KiB
    // (L + K <= 14) and there are at least a quarter as many weights to decode as table
    // entries (a smaller call would spend more on a rebuild than the table saves);
    // otherwise one lookup per weight.
    const int64_t table_entries = int64_t{1} << (l_ + k_);
    if (l_ + k_ <= kMaxPairWindow && l.rows * l.padded_cols >= table_entries / 4) {
      pairs = cached_pair_table(book_f16, k_, l_);
    }
    fast = segment_decoder(k_, pairs != nullptr);
  }
  const bool scalar = fast == nullptr;
#else
  const bool scalar = true;
#endif
  std::vector<float> book(scalar ? n_states : 0);
  load_scales(book16, 0, static_cast<uint64_t>(book.size()), book.data());
  parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
    std::vector<float> row_scales(l.groups_per_row), padded(direct ? 0 : l.padded_cols);
    for (int64_t r = begin; r < end; ++r) {
      load_scales(scales, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                  row_scales.data());
      float* y = direct ? out + r * l.cols : padded.data();
      const uint8_t* segment = codes.data_as<uint8_t>() + r * bytes;
      for (int64_t first = 0; first < l.padded_cols; first += kSegment) {
        const int64_t n = std::min(kSegment, l.padded_cols - first);
        const uint64_t seg_bytes = segment_bytes(n);
#if TK_X86
        if (!scalar) {
          fast(book_f16, pairs, l_, segment, seg_bytes, n, first, group, row_scales.data(), y + first);
          segment += seg_bytes;
          continue;
        }
#endif
        // Groups and segments are multiples of 8 weights: eight weights share one scale.
        int64_t g = first / group, group_end = (g + 1) * group;
        for (int64_t t = 0; t < n; ++t) {
          if (first + t == group_end) ++g, group_end += group;
          const uint32_t state = read_bits(segment, seg_bytes, static_cast<uint64_t>(k_ * t), l_);
          y[first + t] = book[state] * row_scales[g];
        }
        segment += seg_bytes;
      }
      if (!direct) std::memcpy(out + r * l.cols, padded.data(), static_cast<size_t>(l.cols) * sizeof(float));
    }
  });
}

}  // namespace

std::unique_ptr<Scheme> make_trellis_scheme(std::string_view spec) {
  const auto args = cbdetail::split_spec(spec);
  if (args[0] != "trellis") return nullptr;
  if (args.size() < 2 || args.size() > 3) throw usage_error("expected trellis:BITS[:STATE_BITS]", std::string(spec));
  const int bits = cbdetail::parse_spec_int(args[1], 1, 4, spec);
  const int state_bits = args.size() == 3 ? cbdetail::parse_spec_int(args[2], bits + 3, kMaxStateBits, spec) : default_state_bits(bits);
  return std::make_unique<TrellisScheme>(bits, state_bits);
}

}  // namespace tk::quant
