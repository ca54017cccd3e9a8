// Peak resident memory of this process over a stretch of work, so that a benchmark can
// report what one cell needed rather than the high-water mark of the whole run.
#pragma once

#include <cstdint>

namespace tk::bench {

// Reset the kernel's peak-RSS counter (VmHWM) to the current RSS. Returns false where
// the kernel does not allow it (then peak_rss_bytes() reports the process-wide peak).
bool reset_peak_rss();

// Peak resident set size in bytes since the last reset (or since the process started):
// VmHWM of /proc/self/status, else getrusage's ru_maxrss; 0 when neither is available.
uint64_t peak_rss_bytes();

}  // namespace tk::bench
