// vq:DIM:BITS — vector quantization of DIM-long row sub-vectors with one learned
// codebook per tensor, optionally after normalising each row by its RMS.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#include "tk/linalg/blas.h"
#include "tk/quant/codebook.h"
#include "tk/quant/codebook_internal.h"
#include "tk/quant/decode_tables.h"

#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant {

namespace {

using namespace cbdetail;

constexpr int kTrainIterations = 25;
constexpr int64_t kTrainPerCodeword = 64;     // training vectors per codeword
constexpr int64_t kTrainMax = 1 << 17;        // ... at most
constexpr int64_t kChunk = 512;               // vectors per GEMM block

// Exact squared distance of a vector to a codeword, in double, in a fixed order.
[[gnu::always_inline]] inline double exact_d2(const float* xi, const float* cj, int dim) {
  double d2 = 0;
  for (int d = 0; d < dim; ++d) {
    double diff = static_cast<double>(xi[d]) - cj[d];
    d2 += diff * diff;
  }
  return d2;
}

// The score threshold of a vector's candidates: the GEMM's rounding margin above the best.
[[gnu::always_inline]] inline float candidate_limit(const float* xi, int dim, float best, float max_norm) {
  double x_norm = 0;
  for (int d = 0; d < dim; ++d) x_norm += static_cast<double>(xi[d]) * xi[d];
  return best + (1e-4f * static_cast<float>(x_norm + max_norm) + 1e-30f);
}

// The nearest codeword of each of the m vectors `xb` of one block, from their GEMM scores
// (m x k, -2 x.c; overwritten with ||c||^2 - 2 x.c). Candidates are the codewords whose
// score is within the margin of the best; the nearest by exact distance wins, the first
// on ties.
void pick_block(const float* xb, int64_t m, float* score, const float* c, const float* c_norm, float max_norm,
                int64_t k, int dim, uint16_t* code, double* dist) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = xb + i * dim;
    float* si = score + i * k;
    float best = HUGE_VALF;
    for (int64_t j = 0; j < k; ++j) {
      si[j] += c_norm[j];
      best = std::min(best, si[j]);
    }
    const float limit = candidate_limit(xi, dim, best, max_norm);
    int64_t pick = 0;
    double pick_d = HUGE_VAL;
    for (int64_t j = 0; j < k; ++j) {
      if (si[j] > limit) continue;
      double d2 = exact_d2(xi, c + j * dim, dim);
      if (d2 < pick_d) pick = j, pick_d = d2;
    }
    code[i] = static_cast<uint16_t>(pick);
    if (dist) dist[i] = pick_d;
  }
}

#if TK_X86
// pick_block with eight codewords a step: the same picks. The minimum is exact in any
// order (_mm256_min_ps keeps `best` where a score is NaN, as std::min does), and the
// candidates are visited in ascending order.
TK_BEGIN_AVX2
void pick_block_avx2(const float* xb, int64_t m, float* score, const float* c, const float* c_norm, float max_norm,
                     int64_t k, int dim, uint16_t* code, double* dist) {
  const int64_t k8 = k / 8 * 8;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = xb + i * dim;
    float* si = score + i * k;
    __m256 best8 = _mm256_set1_ps(HUGE_VALF);
    for (int64_t j = 0; j < k8; j += 8) {
      __m256 s = _mm256_add_ps(_mm256_loadu_ps(si + j), _mm256_loadu_ps(c_norm + j));
      _mm256_storeu_ps(si + j, s);
      best8 = _mm256_min_ps(s, best8);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, best8);
    float best = HUGE_VALF;
    for (float v : lanes) best = std::min(best, v);
    for (int64_t j = k8; j < k; ++j) {
      si[j] += c_norm[j];
      best = std::min(best, si[j]);
    }
    const float limit = candidate_limit(xi, dim, best, max_norm);
    int64_t pick = 0;
    double pick_d = HUGE_VAL;
    const __m256 limit8 = _mm256_set1_ps(limit);
    for (int64_t j0 = 0; j0 < k; j0 += 8) {
      // Bit b: codeword j0 + b is a candidate (the tail's scalar compare as the vector's).
      unsigned in = 0;
      if (j0 < k8) {
        in = ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(si + j0), limit8, _CMP_GT_OQ)));
      } else {
        for (int64_t j = j0; j < k; ++j) in |= si[j] > limit ? 0u : 1u << (j - j0);
      }
      for (in &= 0xffu; in != 0; in &= in - 1) {
        const int64_t j = j0 + __builtin_ctz(in);
        double d2 = exact_d2(xi, c + j * dim, dim);
        if (d2 < pick_d) pick = j, pick_d = d2;
      }
    }
    code[i] = static_cast<uint16_t>(pick);
    if (dist) dist[i] = pick_d;
  }
}
TK_END_TARGET
#endif

// Nearest codeword of every vector of `x` (n x dim) among `c` (k x dim): GEMM scores
// ||c||^2 - 2 x.c pick the candidates, and every candidate within the GEMM's rounding
// margin of the best is re-checked with exact double distances in a fixed order, so the
// choice does not depend on the BLAS kernel or thread count. `dist` (may be null) gets
// the exact squared distance.
void assign_nearest(const float* x, int64_t n, const float* c, int64_t k, int dim,
                    uint16_t* code, double* dist) {
  std::vector<float> c_norm(k);
  float max_norm = 0;
  for (int64_t j = 0; j < k; ++j) {
    double s = 0;
    for (int d = 0; d < dim; ++d) s += static_cast<double>(c[j * dim + d]) * c[j * dim + d];
    c_norm[j] = static_cast<float>(s);
    max_norm = std::max(max_norm, c_norm[j]);
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel
  {
    std::vector<float> score(kChunk * k);
#pragma omp for schedule(dynamic)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      int64_t first = ch * kChunk, m = std::min(kChunk, n - first);
      const float* xb = x + first * dim;
      linalg::gemm(linalg::Op::kNoTrans, linalg::Op::kTrans, m, k, dim, -2.0f, xb, dim, c, dim,
                   0.0f, score.data(), k);
      double* dist_b = dist ? dist + first : nullptr;
#if TK_X86
      if (use_avx2()) {
        pick_block_avx2(xb, m, score.data(), c, c_norm.data(), max_norm, k, dim, code + first, dist_b);
        continue;
      }
#endif
      pick_block(xb, m, score.data(), c, c_norm.data(), max_norm, k, dim, code + first, dist_b);
    }
  }
}

// k-means on a seeded subsample of the vectors; codebook rounded to f16.
std::vector<float> train_codebook(const std::vector<float>& vec, int64_t n, int dim, int64_t k,
                                  uint64_t seed) {
  SeededRandom random(seed);
  int64_t m = std::min(n, std::min(kTrainMax, kTrainPerCodeword * k));
  std::vector<float> train(m * dim);
  for (int64_t i = 0; i < m; ++i) {
    int64_t src = m == n ? i : static_cast<int64_t>(random.below(n));
    std::memcpy(&train[i * dim], &vec[src * dim], dim * sizeof(float));
  }
  std::vector<float> c(k * dim, 0.0f);
  for (int64_t j = 0; j < std::min(k, m); ++j) {
    int64_t src = m <= k ? j : static_cast<int64_t>(random.below(m));
    std::memcpy(&c[j * dim], &train[src * dim], dim * sizeof(float));
  }
  std::vector<uint16_t> code(m);
  std::vector<double> dist(m);
  for (int iter = 0; iter < kTrainIterations && m > k; ++iter) {
    assign_nearest(train.data(), m, c.data(), k, dim, code.data(), dist.data());
    std::vector<double> sum(k * dim, 0.0);
    std::vector<int64_t> count(k, 0);
    for (int64_t i = 0; i < m; ++i) {
      ++count[code[i]];
      for (int d = 0; d < dim; ++d) sum[code[i] * dim + d] += train[i * dim + d];
    }
    for (int64_t j = 0; j < k; ++j) {
      if (count[j] > 0) {
        for (int d = 0; d < dim; ++d) c[j * dim + d] = static_cast<float>(sum[j * dim + d] / count[j]);
        continue;
      }
      // An empty codeword takes the worst-served training vector.
      int64_t worst = std::max_element(dist.begin(), dist.end()) - dist.begin();
      std::memcpy(&c[j * dim], &train[worst * dim], dim * sizeof(float));
      dist[worst] = 0;
    }
  }
  for (float& v : c) v = f16_to_f32(f32_to_f16(v));
  return c;
}

class VqScheme final : public Scheme {
 public:
  bool takes_group_size() const override { return false; }
  VqScheme(int dim, int bits) : dim_(dim), bits_(bits) {}
  std::string name() const override {
    return "vq:" + std::to_string(dim_) + ":" + std::to_string(bits_);
  }
  std::string description() const override {
    return "vector codebook of " + std::to_string(1 << bits_) + " f16 vectors of " +
           std::to_string(dim_) + " values, rows scaled by their RMS (granularity channel)";
  }
  int64_t row_block(int64_t, const QuantOptions&) const override { return dim_; }
  bool rows_independent(const QuantOptions&) const override { return false; }  // one codebook
  double bits_per_weight(int64_t rows, int64_t cols, const QuantOptions& options) const override {
    if (rows * cols == 0) return 0;
    int64_t vectors = rows * padded(cols) / dim_;
    double bytes = static_cast<double>(packed_bytes(vectors, bits_)) +
                   2.0 * (int64_t{1} << bits_) * dim_ + (row_scaled(options) ? 2.0 * rows : 0.0);
    return bytes * 8 / static_cast<double>(rows * cols);
  }
  Quantized quantize(const float* x, const Shape& shape, const QuantOptions& options) const override;
  void dequantize(const Quantized& q, float* out) const override { decode(q, out, false); }
  void dequantize_reference(const Quantized& q, float* out) const override { decode(q, out, true); }

 private:
  void decode(const Quantized& q, float* out, bool reference) const;
  int64_t padded(int64_t cols) const { return (cols + dim_ - 1) / dim_ * dim_; }
  bool row_scaled(const QuantOptions& options) const {
    if (options.granularity == Granularity::kGroup) {
      throw usage_error("vq takes granularity tensor or channel", name());
    }
    return options.granularity != Granularity::kTensor;
  }
  int dim_, bits_;
};

Quantized VqScheme::quantize(const float* x, const Shape& shape, const QuantOptions& options) const {
  int64_t rows = 0, cols = 0;
  rows_cols(shape, &rows, &cols);
  const bool scaled = row_scaled(options);
  const int64_t pc = padded(cols), k = int64_t{1} << bits_;
  const int64_t n = rows * pc / dim_;
  std::vector<float> scale(scaled ? rows : 0);
  std::vector<float> vec(rows * pc, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float s = 1;
    if (scaled) {
      double ss = 0;
      for (int64_t c = 0; c < cols; ++c) ss += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
      scale[r] = f16_to_f32(f32_to_f16(static_cast<float>(std::sqrt(ss / cols))));
      s = scale[r] > 0 && std::isfinite(1.0f / scale[r]) ? scale[r] : 1.0f;
    }
    for (int64_t c = 0; c < cols; ++c) vec[r * pc + c] = x[r * cols + c] / s;
  }
  std::vector<float> book = train_codebook(vec, n, dim_, k, options.seed);
  std::vector<uint16_t> code(n);
  assign_nearest(vec.data(), n, book.data(), k, dim_, code.data(), nullptr);

  Quantized q;
  q.scheme = name();
  q.shape = shape;
  q.params["dim"] = std::to_string(dim_);
  q.params["bits"] = std::to_string(bits_);
  q.params["padded_cols"] = std::to_string(pc);
  q.params["row_scale"] = scaled ? "1" : "0";
  q.parts["codes"] = make_u8(codebook_pack(code, bits_));
  q.parts["codebook"] = make_f16(book, {k, dim_});
  if (scaled) q.parts["scales"] = make_f16(scale, {rows});
  return q;
}

void VqScheme::decode(const Quantized& q, float* out, bool reference) const {
  int64_t rows = 0, cols = 0;
  rows_cols(q.shape, &rows, &cols);
  require_param(q, "dim", dim_, dim_);
  require_param(q, "bits", bits_, bits_);
  const int64_t pc = padded(cols), k = int64_t{1} << bits_;
  if (require_param(q, "padded_cols", 0, INT64_MAX) != pc) {
    throw invalid_input("padded_cols does not match the shape and dimension", q.scheme);
  }
  const bool scaled = require_param(q, "row_scale", 0, 1) == 1;
  const uint64_t code_bytes = packed_bytes(rows * pc / dim_, bits_);
  const Tensor& codes = require_part(q, "codes", DType::kU8, {static_cast<int64_t>(code_bytes)});
  const Tensor& book16 = require_part(q, "codebook", DType::kF16, {k, dim_});
  // Eight floats of padding: the fast decoder stores whole registers per codeword.
  std::vector<float> book(k * dim_ + 8, 0.0f);
  convert_to_f32(DType::kF16, book16.data(), 0, k * dim_, book.data());
  std::vector<float> scale(rows, 1.0f);
  if (scaled) {
    const Tensor& s = require_part(q, "scales", DType::kF16, {rows});
    convert_to_f32(DType::kF16, s.data(), 0, rows, scale.data());
  }
  const int64_t per_row = pc / dim_;
#pragma omp parallel
  {
    std::vector<float> row(pc);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      // Unpadded rows decode in place: a copy through `row` would double the stores.
      float* dst = pc == cols ? out + r * cols : row.data();
      if (!reference && detail::decode_vectors(codes.data(), code_bytes, bits_, r * per_row, per_row, book.data(),
                                               dim_, scale[r], dst)) {
        if (dst != out + r * cols) std::memcpy(out + r * cols, row.data(), cols * sizeof(float));
        continue;
      }
      for (int64_t v = 0; v < per_row; ++v) {
        uint32_t code = bits_ == 8 ? codes.data()[r * per_row + v]
                                   : unpack_code(codes.data(), code_bytes, bits_, r * per_row + v);
        const float* cw = book.data() + code * dim_;
        for (int d = 0; d < dim_; ++d) row[v * dim_ + d] = cw[d] * scale[r];
      }
      std::memcpy(out + r * cols, row.data(), cols * sizeof(float));
    }
  }
}

}  // namespace

std::unique_ptr<Scheme> make_vq_scheme(int dim, int bits) {
  return std::make_unique<VqScheme>(dim, bits);
}

}  // namespace tk::quant
