#include "tk/bench/memory_bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "tk/bench/timing.h"
#include "tk/core/buffer.h"

namespace tk::bench {

double measure_memory_bandwidth(uint64_t bytes, int repetitions, int threads) {
  if (bytes == 0 || repetitions < 1) return 0;
  Buffer src, dst;
  try {
    src = Buffer::allocate(bytes);
    dst = Buffer::allocate(bytes);
  } catch (...) {
    return 0;
  }
  int team = threads > 0 ? threads : omp_get_max_threads();
  uint8_t* s = src.mutable_data();
  uint8_t* d = dst.mutable_data();
  // Each thread touches its own slice first, so pages land near the thread that copies
  // them, and the timed copies measure bandwidth rather than page faults.
  auto copy = [&](bool fill) {
#pragma omp parallel num_threads(team)
    {
      uint64_t n = static_cast<uint64_t>(omp_get_num_threads());
      uint64_t t = static_cast<uint64_t>(omp_get_thread_num());
      uint64_t begin = bytes * t / n, end = bytes * (t + 1) / n;
      if (fill) std::memset(s + begin, static_cast<int>(t + 1), end - begin);
      std::memcpy(d + begin, s + begin, end - begin);
    }
  };
  copy(true);
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    double t0 = monotonic_seconds();
    copy(false);
    double seconds = monotonic_seconds() - t0;
    if (seconds > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds / 1e9);
  }
  return best;
}

}  // namespace tk::bench
