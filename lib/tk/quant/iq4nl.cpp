// iq4nl: llama.cpp's IQ4_NL, a non-uniform 4-bit scheme: 16 fixed integer levels
// (ggml's kvalues_iq4nl, denser near zero as trained weights are) in blocks of 32 along a
// row, each block with an f16 scale d: y = d * level[code]. tensorkit's nf4-like scheme
// with a ggml block type (gguf_blocks.h), where nf4's normal-quantile levels have none.
//
// The scale: for each of 15 trial scales around -max / 127 (max: the block's value of
// largest magnitude, which the level -127 then meets), every value takes its nearest
// level and the scale is refitted by least squares on those codes; the trial of least
// (weighted) squared error wins, is rounded to f16, and the codes are chosen again
// against the rounded scale. --fast takes the first trial alone. The search is
// iq4nl_math.h's, which the GPU path (cuda/groups.cu) runs too.
//
// Parts: "codes" U8 [rows, padded_cols / 2] (two codes per byte, low nibble first) and
// "scales" F16 [rows, groups]. Params: group_size (32), padded_cols.
#include <cmath>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/quant/decode_tables.h"
#include "tk/quant/iq4nl_math.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/schemes.h"
#ifdef TK_HAVE_CUDA
#include "tk/quant/cuda/groups.h"
#endif
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant {
namespace {

using namespace detail;

using iq4nl::kBlock;

#if TK_X86
TK_BEGIN_AVX2
// Two lanes' masks of 64 bits as the masks of their 32-bit halves: lanes 0-3 from `lo`,
// 4-7 from `hi`.
inline __m256 narrow_mask(__m256d lo, __m256d hi) {
  const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256i a = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(lo), pick);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(hi), pick);
  return _mm256_castsi256_ps(_mm256_permute2x128_si256(a, b, 0x20));
}

inline __m256d half_pd(__m256 v, int h) {
  return _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(v) : _mm256_extractf128_ps(v, 1));
}

// iq4nl::fit_scale for eight blocks side by side, block g in lane g (xt, wt: the blocks'
// values and weights through to_lanes): every lane makes the reference's operations in
// its order, in floats and doubles as it does, so each block gets the same scale.
void fit_scales_avx2(const nf4::Levels& t, const float* xt, const float* wt, bool fast, float* out) {
  const __m256 sign = _mm256_set1_ps(-0.0f), zero = _mm256_setzero_ps();
  __m256 max = zero;  // the first value of largest magnitude
  for (int64_t i = 0; i < kBlock; ++i) {
    const __m256 v = _mm256_loadu_ps(xt + i * kLanes);
    const __m256 take = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), _mm256_andnot_ps(sign, max), _CMP_GT_OQ);
    max = _mm256_blendv_ps(max, v, take);
  }
  __m256 mid[15];
  for (int k = 0; k < 15; ++k) mid[k] = _mm256_set1_ps(t.mid[k]);
  const __m256 level_lo = _mm256_loadu_ps(t.level), level_hi = _mm256_loadu_ps(t.level + 8);
  const __m256i seven = _mm256_set1_epi32(7);
  __m256d best_score[2] = {_mm256_set1_pd(-1.0), _mm256_set1_pd(-1.0)};
  __m256 best = zero;
  for (int trial = 0; trial <= (fast ? 0 : 2 * iq4nl::kTrials); ++trial) {
    const int step = trial == 0 ? 0 : (trial % 2 ? (trial + 1) / 2 : -trial / 2);
    const float den = 127.0f - 0.1f * static_cast<float>(step);
    const __m256 d = _mm256_div_ps(_mm256_xor_ps(max, sign), _mm256_set1_ps(den));
    const __m256 inv = _mm256_andnot_ps(_mm256_cmp_ps(d, zero, _CMP_EQ_OQ), _mm256_div_ps(_mm256_set1_ps(1.0f), d));
    __m256d sxl[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()}, sll[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    for (int64_t i = 0; i < kBlock; ++i) {
      const __m256 x = _mm256_loadu_ps(xt + i * kLanes), w = _mm256_loadu_ps(wt + i * kLanes);
      const __m256 v = _mm256_mul_ps(x, inv);
      __m256i code = _mm256_setzero_si256();
      for (int k = 0; k < 15; ++k)
        code = _mm256_sub_epi32(code, _mm256_castps_si256(_mm256_cmp_ps(v, mid[k], _CMP_GT_OQ)));
      const __m256 level = _mm256_blendv_ps(_mm256_permutevar8x32_ps(level_lo, code),
                                            _mm256_permutevar8x32_ps(level_hi, code),
                                            _mm256_castsi256_ps(_mm256_cmpgt_epi32(code, seven)));
      for (int h = 0; h < 2; ++h) {
        const __m256d xd = half_pd(x, h), wd = half_pd(w, h), ld = half_pd(level, h);
        sxl[h] = _mm256_add_pd(sxl[h], _mm256_mul_pd(_mm256_mul_pd(wd, xd), ld));
        sll[h] = _mm256_add_pd(sll[h], _mm256_mul_pd(_mm256_mul_pd(wd, ld), ld));
      }
    }
    __m256d take[2], positive[2], quotient[2];
    for (int h = 0; h < 2; ++h) {
      positive[h] = _mm256_cmp_pd(sll[h], _mm256_setzero_pd(), _CMP_GT_OQ);
      // sll > 0 ? sxl^2 / sll : 0 (the 0/0 of an empty lane is masked to 0)
      const __m256d score = _mm256_and_pd(positive[h], _mm256_div_pd(_mm256_mul_pd(sxl[h], sxl[h]), sll[h]));
      take[h] = _mm256_cmp_pd(score, best_score[h], _CMP_GT_OQ);
      best_score[h] = _mm256_blendv_pd(best_score[h], score, take[h]);
      quotient[h] = _mm256_div_pd(sxl[h], sll[h]);
    }
    const __m256 fitted = _mm256_set_m128(_mm256_cvtpd_ps(quotient[1]), _mm256_cvtpd_ps(quotient[0]));
    const __m256 candidate = _mm256_blendv_ps(d, fitted, narrow_mask(positive[0], positive[1]));
    best = _mm256_blendv_ps(best, candidate, narrow_mask(take[0], take[1]));
  }
  best = _mm256_blendv_ps(best, zero, _mm256_cmp_ps(max, zero, _CMP_EQ_OQ));
  _mm256_storeu_ps(out, best);
}

// The codes of one block at scale d, eight values at a time: Nearest16's compares.
void encode_avx2(const nf4::Levels& t, const float* x, float d, uint8_t* codes) {
  const __m256 inv = _mm256_set1_ps(d == 0 ? 0.0f : 1.0f / d);
  for (int64_t i = 0; i < kBlock; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv);
    __m256i code = _mm256_setzero_si256();
    for (int k = 0; k < 15; ++k)
      code = _mm256_sub_epi32(code, _mm256_castps_si256(_mm256_cmp_ps(v, _mm256_set1_ps(t.mid[k]), _CMP_GT_OQ)));
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(words, words));
  }
}
TK_END_TARGET
#endif

class Iq4nlScheme final : public GpuDecodedScheme<Iq4nlScheme> {
 public:
  Iq4nlScheme() : levels_(iq4nl::levels()), table_(4, levels_.level), nearest_(levels_.level) {}

  std::string name() const override { return "iq4nl"; }
  std::string description() const override {
    return "iq4nl: llama.cpp's IQ4_NL, 16 non-uniform levels in blocks of 32 with an f16 scale";
  }
  bool takes_group_size() const override { return false; }
  int64_t row_block(int64_t, const QuantOptions&) const override { return kBlock; }
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions&) const override {
    const Layout l = make_layout(Shape{rows, cols}, kBlock);
    const double bytes = static_cast<double>(l.rows * l.padded_cols / 2 + l.rows * l.groups_per_row * 2);
    return bytes * 8.0 / static_cast<double>(rows * cols);
  }

  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& o) const override {
    if (o.group_size != 0 && o.group_size != kBlock) throw usage_error("iq4nl uses blocks of 32");
    const Layout l = make_layout(shape, kBlock);
    Quantized q = new_quantized(name(), shape, l);
    const PaddedInput in = pad_input(x, l, o.importance);
    Tensor scales = new_part(DType::kF16, {l.rows, l.groups_per_row});
    Tensor codes = new_part(DType::kU8, {l.rows, l.padded_cols / 2});
    // Where AVX2 runs: the scales of eight blocks at a time in lanes (the blocks before
    // lanes_end), the codes eight values at a time; the reference's bytes either way.
#if TK_X86
    const bool vector = !o.reference && use_avx2();
#else
    const bool vector = false;
#endif
    const int64_t lanes_end = vector ? l.groups_per_row - l.groups_per_row % kLanes : 0;
#ifdef TK_HAVE_CUDA
    if (o.device >= 0) {
      // The scales there, their f16 rounding here, the codes from the rounded ones there.
      gpu::Groups groups(o.device, in.data, in.weights.data(), l.rows, l.padded_cols, kBlock);
      const std::vector<float> found = groups.iq4nl_scales(o.fast);
      std::vector<float> d(found.size());
      for (size_t g = 0; g < found.size(); ++g) {
        store_scale(scales, g, found[g]);
        d[g] = load_scale(scales, g);
      }
      groups.encode_table4(levels_, d.data(), codes.mutable_data());
    } else
#endif
      parallel_for(l.rows, [&](int64_t r) {
        std::vector<uint8_t> row(static_cast<size_t>(l.padded_cols));
        alignas(32) float xt[kLanes * kBlock], wt[kLanes * kBlock], found[kLanes];
        for (int64_t b = 0; b < l.groups_per_row; ++b) {
          const int64_t c0 = r * l.padded_cols + b * kBlock;
#if TK_X86
          if (b < lanes_end && b % kLanes == 0) {
            to_lanes(in.data + c0, kBlock, xt);
            to_lanes(in.weights.data() + b * kBlock, kBlock, wt);
            fit_scales_avx2(levels_, xt, wt, o.fast, found);
          }
#endif
          store_scale(scales, r * l.groups_per_row + b,
                      b < lanes_end ? found[b % kLanes]
                                    : iq4nl::fit_scale(levels_, in.data + c0, in.weights.data() + b * kBlock, o.fast));
          const float d = load_scale(scales, r * l.groups_per_row + b);
#if TK_X86
          if (vector) {
            encode_avx2(levels_, in.data + c0, d, row.data() + b * kBlock);
            continue;
          }
#endif
          encode(in.data + c0, d, row.data() + b * kBlock);
        }
        pack_bits(row.data(), l.padded_cols, 4, codes.mutable_data() + r * l.padded_cols / 2, o.reference);
      });
    q.parts["codes"] = codes;
    q.parts["scales"] = scales;
    return q;
  }

 private:
  friend class GpuDecodedScheme<Iq4nlScheme>;

  // The nearest level of each value x / d (ties to the lower level).
  void encode(const float* x, float d, uint8_t* codes) const {
    const float inv = d == 0 ? 0.0f : 1.0f / d;
    for (int64_t i = 0; i < kBlock; ++i) codes[i] = nearest_(x[i] * inv);
  }

  void decode(const Quantized& q, float* out, bool reference, [[maybe_unused]] int device = -1,
              [[maybe_unused]] const Measure* measure = nullptr) const {
    if (param_int(q, "group_size", kBlock, kBlock) != kBlock) throw invalid_input("group size is not 32", q.scheme);
    const Layout l = make_layout(q.shape, kBlock);
    check_shape_param(q, l);
    const Tensor& codes = part(q, "codes", DType::kU8, static_cast<uint64_t>(l.rows * l.padded_cols / 2));
    const Tensor& scales = part(q, "scales", DType::kF16, static_cast<uint64_t>(l.rows * l.groups_per_row));
#ifdef TK_HAVE_CUDA
    if (device >= 0) {
      std::vector<float> d(static_cast<size_t>(l.rows * l.groups_per_row));
      load_scales(scales, 0, d.size(), d.data());
      gpu::decode_table(device, codes.data(), 4, l.rows, l.padded_cols, l.cols, levels_.level, kBlock, d.data(), out,
                        measure);
      return;
    }
#endif
    const bool padded = l.cols != l.padded_cols;
    parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
      std::vector<float> d(static_cast<size_t>(l.groups_per_row)), row(padded ? static_cast<size_t>(l.padded_cols) : 0);
      for (int64_t r = begin; r < end; ++r) {
        load_scales(scales, static_cast<uint64_t>(r * l.groups_per_row), static_cast<uint64_t>(l.groups_per_row),
                    d.data());
        // y = level * d, one product as ggml's d * kvalues_iq4nl[q]; a padded row goes
        // through the scratch row.
        float* y = padded ? row.data() : out + r * l.cols;
        table_.decode_scaled(codes.data() + r * l.padded_cols / 2, l.padded_cols, kBlock, d.data(), y, reference);
        if (padded) std::copy(row.begin(), row.begin() + l.cols, out + r * l.cols);
      }
    });
  }

  nf4::Levels levels_;
  CodeTable table_;
  Nearest16 nearest_;
};

}  // namespace

std::unique_ptr<Scheme> make_iq4nl_scheme() { return std::make_unique<Iq4nlScheme>(); }

}  // namespace tk::quant
