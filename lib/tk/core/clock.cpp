#include "tk/core/clock.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace tk {

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  // Reproducible builds' convention: a set, valid SOURCE_DATE_EPOCH replaces the clock.
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    long long seconds = 0;
    const char* last = epoch + std::strlen(epoch);
    auto [ptr, ec] = std::from_chars(epoch, last, seconds);
    if (ec == std::errc() && ptr == last && ptr != epoch && seconds >= 0) t = static_cast<std::time_t>(seconds);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tk
