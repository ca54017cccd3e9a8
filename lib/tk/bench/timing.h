// Timing harness for benchmarks and tbench: run a callable a few times untimed (to warm
// caches, page tables and allocators), then time repetitions with a monotonic clock and
// summarise them. Nothing is printed; callers format the returned data.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace tk::bench {

struct TimingOptions {
  int warmup = 1;            // untimed runs before the first timed one (>= 0)
  int repetitions = 5;       // timed runs always made (>= 1)
  int max_repetitions = 0;   // with a budget: stop after this many runs (0: 1,000,000)
  double budget_seconds = 0; // > 0: keep repeating until the timed runs add up to this
};

// Order statistics of a set of run times, in seconds.
struct TimingSummary {
  int runs = 0;
  double min = 0, median = 0, max = 0, mean = 0;
};

struct Measurement {
  std::vector<double> seconds;  // each timed run, in order
  TimingSummary summary;
  uint64_t bytes = 0;           // bytes processed per run (0: unknown)

  // Throughput of the median run in GB/s (1e9 bytes per second); 0 when bytes is 0.
  double gb_per_s() const;
};

// Summarise run times; the median of an even count is the mean of the two middle ones.
// An empty list gives a summary of zeros.
TimingSummary summarize(std::vector<double> seconds);

// Run `run` options.warmup times untimed, then at least options.repetitions times timed;
// with a budget, continue until the timed total reaches options.budget_seconds or
// options.max_repetitions runs are done. `before_each`, if set, runs untimed before
// every run (warm-up included), e.g. to drop the previous run's output. Exceptions from
// either callable propagate. Throws tk::Error(kUsage) for invalid options.
Measurement measure(const std::function<void()>& run, const TimingOptions& options = {},
                    uint64_t bytes = 0, const std::function<void()>& before_each = {});

// Seconds elapsed on the monotonic clock since an unspecified origin.
double monotonic_seconds();

}  // namespace tk::bench
