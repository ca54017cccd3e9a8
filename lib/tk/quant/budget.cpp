#include "tk/quant/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "tk/core/error.h"
#include "tk/core/isa.h"
#if TK_X86
#include <immintrin.h>
#endif

namespace tk::quant {

namespace {

constexpr uint64_t kMaxTableBytes = uint64_t{1} << 26;  // choice table of the DP

// One candidate (w units, error `err`, index c) over states first..last (first >= w):
// next[u] = prev[u - w] + err where that is less, and ch[u - base] = c there.
void relax(const double* prev, double* next, uint8_t* ch, size_t base, size_t first, size_t last, size_t w,
           double err, uint8_t c) {
  for (size_t u = first; u <= last; ++u) {
    const double e = prev[u - w] + err;
    if (e < next[u]) next[u] = e, ch[u - base] = c;
  }
}

#if TK_X86
TK_BEGIN_AVX2
// relax() four states at a time: the same sums and comparisons.
void relax_avx2(const double* prev, double* next, uint8_t* ch, size_t base, size_t first, size_t last, size_t w,
                double err, uint8_t c) {
  const __m256d verr = _mm256_set1_pd(err);
  size_t u = first;
  for (; u + 3 <= last; u += 4) {
    const __m256d e = _mm256_add_pd(_mm256_loadu_pd(prev + u - w), verr);
    const __m256d cur = _mm256_loadu_pd(next + u);
    const __m256d less = _mm256_cmp_pd(e, cur, _CMP_LT_OQ);
    const int mask = _mm256_movemask_pd(less);
    if (mask == 0) continue;
    _mm256_storeu_pd(next + u, _mm256_blendv_pd(cur, e, less));
    for (int k = 0; k < 4; ++k)
      if (mask >> k & 1) ch[u + k - base] = c;
  }
  if (u <= last) relax(prev, next, ch, base, u, last, w, err, c);
}
TK_END_TARGET
#endif

uint64_t cheapest(const BudgetItem& item) {
  return *std::min_element(item.bytes.begin(), item.bytes.end());
}

// Spend what the DP's rounding left: take the single change with the largest error
// reduction that still fits, until none does.
void fill_exact(const std::vector<BudgetItem>& items, uint64_t capacity, BudgetResult& r) {
  while (true) {
    double best_gain = 0;
    size_t best_item = 0;
    int best_c = -1;
    for (size_t i = 0; i < items.size(); ++i) {
      int cur = r.choice[i];
      for (int c = 0; c < static_cast<int>(items[i].bytes.size()); ++c) {
        uint64_t bytes = r.bytes - items[i].bytes[cur] + items[i].bytes[c];
        double gain = items[i].error[cur] - items[i].error[c];
        if (bytes <= capacity && gain > best_gain) best_gain = gain, best_item = i, best_c = c;
      }
    }
    if (best_c < 0) return;
    int cur = r.choice[best_item];
    r.bytes = r.bytes - items[best_item].bytes[cur] + items[best_item].bytes[best_c];
    r.choice[best_item] = best_c;
  }
}

}  // namespace

uint64_t budget_min_bytes(const std::vector<BudgetItem>& items) {
  uint64_t total = 0;
  for (const BudgetItem& item : items) {
    if (item.bytes.empty() || item.bytes.size() != item.error.size()) {
      throw usage_error("budget: a tensor has no candidate scheme");
    }
    total += cheapest(item);
  }
  return total;
}

BudgetResult budget_solve(const std::vector<BudgetItem>& items, uint64_t capacity, uint64_t max_units) {
  uint64_t min_bytes = budget_min_bytes(items);
  if (capacity < min_bytes) {
    throw usage_error("budget below the smallest reachable size of " + std::to_string(min_bytes) + " bytes");
  }
  const size_t n = items.size();
  for (const BudgetItem& item : items) {
    if (item.bytes.size() > 255) throw usage_error("budget: more than 255 candidate schemes");
  }
  // Units: capacity / unit <= the table the memory allows.
  uint64_t units_cap = std::max<uint64_t>(1024, std::min(max_units, kMaxTableBytes / std::max<size_t>(n, 1)));
  uint64_t unit = std::max<uint64_t>(1, (capacity + units_cap - 1) / units_cap);
  const size_t units = static_cast<size_t>(capacity / unit);
  const double kInf = std::numeric_limits<double>::infinity();

  // Only the states a solution can pass through are computed: after item i at least
  // lo[i] units are spent (the cheapest candidates so far), and at most units - the
  // cheapest of the items after it, else those could not fit. Between the two lies the
  // slack of the capacity over the smallest size, a fraction of the whole table; the
  // states outside it are never read, so the choice is the full table's.
  std::vector<size_t> lo(n), hi(n), offset{0};  // offset[i]: item i's first state in `choice`
  {
    size_t spent = 0, after = 0;
    std::vector<size_t> least(n);
    for (size_t i = 0; i < n; ++i) {
      size_t m = units + 1;
      for (uint64_t b : items[i].bytes) m = std::min<size_t>(m, static_cast<size_t>((b + unit - 1) / unit));
      least[i] = m;
    }
    for (size_t i = 0; i < n; ++i) lo[i] = spent = std::min(units + 1, spent + least[i]);
    for (size_t i = n; i-- > 0;) {
      hi[i] = units >= after ? units - after : 0;
      after = std::min(units + 1, after + least[i]);
    }
    for (size_t i = 0; i < n; ++i) offset.push_back(offset[i] + (lo[i] <= hi[i] ? hi[i] - lo[i] + 1 : 0));
  }
  // prev[u]: the least error of the items so far within u units (infinity: unreachable).
  std::vector<double> prev(units + 1, 0.0), next(units + 1, kInf);
  std::unique_ptr<uint8_t[]> choice(new uint8_t[std::max<size_t>(offset[n], 1)]);
  size_t stale = 0;  // next[u] below lo[i - 2] is already infinite
  for (size_t i = 0; i < n; ++i) {
    const BudgetItem& item = items[i];
    if (lo[i] > hi[i]) continue;  // no solution: prev[units] stays infinite below
    std::fill(next.begin() + static_cast<std::ptrdiff_t>(std::min(stale, lo[i])),
              next.begin() + static_cast<std::ptrdiff_t>(hi[i]) + 1, kInf);
    stale = i == 0 ? 0 : lo[i - 1];
    uint8_t* ch = choice.get() + offset[i];  // state u at ch[u - lo[i]]
    // Each state depends only on the previous item's, so the band is cut into slices
    // that threads fill independently (the same values in any order).
    constexpr size_t kSlice = size_t{1} << 14;
    const auto slices = static_cast<int64_t>((hi[i] - lo[i]) / kSlice + 1);
#pragma omp parallel for schedule(static) if (slices > 1)
    for (int64_t k = 0; k < slices; ++k) {
      const size_t first = lo[i] + static_cast<size_t>(k) * kSlice, last = std::min(hi[i], first + kSlice - 1);
      for (size_t c = 0; c < item.bytes.size(); ++c) {
        uint64_t w = (item.bytes[c] + unit - 1) / unit;
        if (w > last) continue;
        const size_t from = std::max<size_t>(w, first);
#if TK_X86
        if (use_avx2()) {
          relax_avx2(prev.data(), next.data(), ch, lo[i], from, last, w, item.error[c], static_cast<uint8_t>(c));
          continue;
        }
#endif
        relax(prev.data(), next.data(), ch, lo[i], from, last, w, item.error[c], static_cast<uint8_t>(c));
      }
    }
    std::swap(prev, next);
  }
  BudgetResult r;
  r.choice.assign(n, 0);
  const bool solved = n == 0 || (lo[n - 1] <= hi[n - 1] && !std::isinf(prev[units]));
  if (!solved) {
    // Rounding up made the cheapest choice exceed the units: start from it exactly.
    for (size_t i = 0; i < n; ++i) {
      const auto& b = items[i].bytes;
      r.choice[i] = static_cast<int>(std::min_element(b.begin(), b.end()) - b.begin());
    }
  } else {
    size_t u = units;
    for (size_t i = n; i-- > 0;) {
      int c = choice[offset[i] + u - lo[i]];
      r.choice[i] = c;
      u -= static_cast<size_t>((items[i].bytes[c] + unit - 1) / unit);
    }
  }
  for (size_t i = 0; i < n; ++i) r.bytes += items[i].bytes[r.choice[i]];
  fill_exact(items, capacity, r);
  for (size_t i = 0; i < n; ++i) r.error += items[i].error[r.choice[i]];
  return r;
}

}  // namespace tk::quant
