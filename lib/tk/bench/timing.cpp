#include "tk/bench/timing.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "tk/core/error.h"

namespace tk::bench {
namespace {
// Bound on timed runs when a budget is set without max_repetitions, so that a callable
// too fast for the clock cannot repeat forever.
constexpr int kBudgetRunLimit = 1'000'000;
}  // namespace

double monotonic_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double Measurement::gb_per_s() const {
  if (bytes == 0 || summary.median <= 0) return 0;
  return static_cast<double>(bytes) / summary.median / 1e9;
}

TimingSummary summarize(std::vector<double> seconds) {
  TimingSummary s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  s.runs = static_cast<int>(n);
  s.min = seconds.front();
  s.max = seconds.back();
  s.median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(n);
  return s;
}

Measurement measure(const std::function<void()>& run, const TimingOptions& options,
                    uint64_t bytes, const std::function<void()>& before_each) {
  if (!run) throw usage_error("nothing to measure");
  if (options.warmup < 0) throw usage_error("warm-up runs must not be negative");
  if (options.repetitions < 1) throw usage_error("at least one repetition is needed");
  if (options.max_repetitions != 0 && options.max_repetitions < options.repetitions)
    throw usage_error("max_repetitions is below repetitions");
  if (options.budget_seconds < 0) throw usage_error("time budget must not be negative");

  for (int i = 0; i < options.warmup; ++i) {
    if (before_each) before_each();
    run();
  }
  Measurement m;
  m.bytes = bytes;
  double total = 0;
  auto more = [&] {
    const int done = static_cast<int>(m.seconds.size());
    if (done < options.repetitions) return true;
    const int limit = options.max_repetitions != 0 ? options.max_repetitions : kBudgetRunLimit;
    if (done >= limit) return false;
    return total < options.budget_seconds;
  };
  while (more()) {
    if (before_each) before_each();
    const double start = monotonic_seconds();
    run();
    const double elapsed = monotonic_seconds() - start;
    m.seconds.push_back(elapsed);
    total += elapsed;
  }
  m.summary = summarize(m.seconds);
  return m;
}

}  // namespace tk::bench
