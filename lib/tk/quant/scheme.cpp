// The one scheme table: spec parsing, names for help, stored size and error measures.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tk/core/error.h"
#include "tk/quant/codebook.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"
#include "tk/quant/schemes.h"

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

std::vector<detail::RowSums> row_errors(const float* x, const float* y, int64_t rows, int64_t cols,
                                        const float* weights, int64_t block) {
  std::vector<detail::RowSums> out(static_cast<size_t>(rows));
  // Tasks of whole rows, about 2^16 values each.
  const int64_t per_task = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, cols));
  detail::parallel_for((rows + per_task - 1) / per_task, [&](int64_t t) {
    for (int64_t r = t * per_task; r < std::min(rows, (t + 1) * per_task); ++r) {
      out[static_cast<size_t>(r)] = detail::row_sums(x + r * cols, y + r * cols, cols, weights, block);
    }
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
