// Measured memory bandwidth, reported with every benchmark: a figure in GB/s only means
// something next to what the machine's memory can move.
#pragma once

#include <cstdint>

namespace tk::bench {

// Copy bandwidth in GB/s (1e9 bytes/s, read and written bytes both counted, as STREAM
// "Copy" counts them): `bytes` copied between two buffers by `threads` OpenMP threads
// (0: the OpenMP default), best of `repetitions` after one warm-up copy. Returns 0 when
// the buffers cannot be allocated. Takes about repetitions * bytes / bandwidth.
double measure_memory_bandwidth(uint64_t bytes = uint64_t(64) << 20, int repetitions = 3,
                                int threads = 0);

}  // namespace tk::bench
