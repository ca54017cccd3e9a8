// The one scheme table: spec parsing, names for help, stored size and error measures.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/quant/codebook.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"
#include "tk/quant/schemes.h"

#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant {

uint64_t Quantized::stored_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, t] : parts) total += t.nbytes();
  return total;
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> names = {"int2..int8", "q2k", "q3k", "q4k", "q5k", "q6k", "q8k", "nf4", "iq4nl",
                                    "iq2xxs", "iq2xs", "iq2s", "iq3xxs", "iq3s", "iq4xs", "fp8_e4m3", "fp8_e5m2", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3",
                                    "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4", "trellis:BITS[:STATE_BITS]"};
  for (auto& n : codebook_scheme_names()) names.push_back(std::move(n));
  return names;
}

std::string gpu_schemes_text() {
  return "int2..int8 with group or channel scales, the k-quants, nf4, iq4nl, fp8, the MX types and nvfp4";
}

namespace {

[[noreturn]] void unknown_scheme(std::string_view spec) {
  std::string list;
  for (const auto& n : scheme_names()) list += (list.empty() ? "" : ", ") + n;
  throw usage_error("unknown scheme '" + std::string(spec) + "' (valid: " + list + ")");
}

}  // namespace

std::unique_ptr<Scheme> make_scheme(std::string_view spec) {
  const std::string s(spec);
  if (s.size() == 4 && s.rfind("int", 0) == 0 && s[3] >= '2' && s[3] <= '8') return make_int_scheme(s[3] - '0');
  if (s == "nf4") return make_nf4_scheme();
  if (s == "iq4nl") return make_iq4nl_scheme();
  if (s == "iq2xxs") return make_iq2xxs_scheme();
  if (s == "iq2xs") return make_iq2xs_scheme();
  if (s == "iq2s") return make_iq2s_scheme();
  if (s == "iq3xxs") return make_iq3xxs_scheme();
  if (s == "iq3s") return make_iq3s_scheme();
  if (s == "iq4xs") return make_iq4xs_scheme();
  if (auto k = make_kquant_scheme(s)) return k;
  if (s == "nvfp4") return make_nvfp4_scheme();
  if (auto f = make_fp8_scheme(s)) return f;
  if (auto m = make_mx_scheme(s)) return m;
  if (auto c = make_codebook_scheme(spec)) return c;
  if (auto t = make_trellis_scheme(spec)) return t;
  unknown_scheme(spec);
}

namespace {

#if TK_X86
TK_BEGIN_AVX2
// detail::row_sums with lanes 0-3 and 4-7 of each sum in two registers: the same IEEE
// operations per lane (no fused multiply-add), so the same bits.
detail::RowSums row_sums_avx2(const float* x, const float* y, int64_t n, const float* w, int64_t block) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d sig[2], noi[2], wei[2], top[2];
  for (int h = 0; h < 2; ++h) sig[h] = noi[h] = wei[h] = top[h] = _mm256_setzero_pd();
  const int64_t whole = n - n % 8;
  for (int64_t i = 0; i < whole; i += 8) {
    const __m256 xf = _mm256_loadu_ps(x + i), yf = _mm256_loadu_ps(y + i);
    for (int h = 0; h < 2; ++h) {
      const __m256d xd = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(xf) : _mm256_extractf128_ps(xf, 1));
      const __m256d yd = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(yf) : _mm256_extractf128_ps(yf, 1));
      const __m256d diff = _mm256_sub_pd(xd, yd);
      const __m256d d2 = _mm256_mul_pd(diff, diff);
      sig[h] = _mm256_add_pd(sig[h], _mm256_mul_pd(xd, xd));
      noi[h] = _mm256_add_pd(noi[h], d2);
      if (w) {
        const __m256d wd = _mm256_cvtps_pd(_mm_loadu_ps(w + i + 4 * h));
        wei[h] = _mm256_add_pd(wei[h], _mm256_mul_pd(_mm256_mul_pd(wd, diff), diff));
      }
      top[h] = _mm256_max_pd(_mm256_andnot_pd(sign, diff), top[h]);
    }
  }
  detail::RowLanes l;
  for (int h = 0; h < 2; ++h) {
    _mm256_storeu_pd(l.sig + 4 * h, sig[h]);
    _mm256_storeu_pd(l.noi + 4 * h, noi[h]);
    _mm256_storeu_pd(l.wei + 4 * h, wei[h]);
    _mm256_storeu_pd(l.top + 4 * h, top[h]);
  }
  for (int64_t i = whole; i < n; ++i) {
    const int k = static_cast<int>(i - whole);
    if (w) {
      detail::add_row_lane<true>(l, k, x[i], y[i], w[i]);
    } else {
      detail::add_row_lane<false>(l, k, x[i], y[i], 1.0f);
    }
  }
  detail::RowSums s;
  s.signal = detail::add_lanes8(l.sig);
  s.noise = detail::add_lanes8(l.noi);
  s.weighted = w ? detail::add_lanes8(l.wei) : s.noise;
  for (int k = 0; k < 8; ++k) s.max_abs = s.max_abs < l.top[k] ? l.top[k] : s.max_abs;
  const __m256 fsign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; block > 0 && b < n; b += block) {
    const int64_t len = std::min(block, n - b), body = len - len % 8;
    const float* xb = x + b;
    const float* yb = y + b;
    __m256 peak = _mm256_setzero_ps();
    for (int64_t c = 0; c < body; c += 8) peak = _mm256_max_ps(_mm256_andnot_ps(fsign, _mm256_loadu_ps(yb + c)), peak);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, peak);
    float top_b = 0;
    for (int64_t c = body; c < len; ++c) top_b = std::max(top_b, std::fabs(yb[c]));
    for (float v : lanes) top_b = std::max(top_b, v);
    const float limit = top_b * 1.001f;
    const __m256 lim = _mm256_set1_ps(limit);
    uint64_t count = 0;
    for (int64_t c = 0; c < body; c += 8) {
      const __m256 over = _mm256_cmp_ps(_mm256_andnot_ps(fsign, _mm256_loadu_ps(xb + c)), lim, _CMP_GT_OQ);
      count += static_cast<uint64_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(over))));
    }
    for (int64_t c = body; c < len; ++c) count += std::fabs(xb[c]) > limit ? 1 : 0;
    s.clipped += count;
  }
  return s;
}

TK_END_TARGET
#endif

}  // namespace

std::vector<detail::RowSums> row_errors(const float* x, const float* y, int64_t rows, int64_t cols,
                                        const float* weights, int64_t block) {
  std::vector<detail::RowSums> out(static_cast<size_t>(rows));
  // Tasks of whole rows, about 2^16 values each.
  const int64_t per_task = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, cols));
  detail::RowSums (*sums)(const float*, const float*, int64_t, const float*, int64_t) = detail::row_sums;
#if TK_X86
  if (use_avx2()) sums = row_sums_avx2;
#endif
  detail::parallel_for((rows + per_task - 1) / per_task, [&](int64_t t) {
    for (int64_t r = t * per_task; r < std::min(rows, (t + 1) * per_task); ++r)
      out[static_cast<size_t>(r)] = sums(x + r * cols, y + r * cols, cols, weights, block);
  });
  return out;
}

ErrorStats error_stats(const std::vector<detail::RowSums>& rows, int64_t n) {
  double signal = 0, noise = 0, weighted = 0, max_abs = 0;
  uint64_t clipped = 0;
  for (const detail::RowSums& r : rows) {
    signal += r.signal;
    noise += r.noise;
    weighted += r.weighted;
    max_abs = std::max(max_abs, r.max_abs);
    clipped += r.clipped;
  }
  ErrorStats e;
  e.rel_rmse = signal > 0 ? std::sqrt(noise / signal) : (noise > 0 ? std::numeric_limits<double>::infinity() : 0);
  e.sqnr_db = noise > 0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
  e.max_abs = max_abs;
  e.weighted_sse = weighted;
  e.clipped_share = n > 0 ? static_cast<double>(clipped) / static_cast<double>(n) : 0;
  e.signal = signal;
  return e;
}

ErrorStats measure_error(const float* x, const float* y, int64_t n, int64_t cols, const float* importance) {
  const int64_t len = (cols > 0 && n % cols == 0) ? cols : n;  // rows of `cols` values
  const int64_t rows = len > 0 ? n / len : 0;
  return error_stats(row_errors(x, y, rows, len, len == cols ? importance : nullptr, 0), n);
}

}  // namespace tk::quant
