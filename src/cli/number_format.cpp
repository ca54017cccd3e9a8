#include "cli/number_format.h"

#include <cmath>
#include <cstdio>
#include <iterator>

#include <fmt/format.h>

namespace tk::cli {

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  // Move up a unit when the value would print as "1024.0".
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

nlohmann::json json_number(double value, bool keep_infinity) {
  if (std::isfinite(value)) return value;
  if (keep_infinity && std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return nullptr;
}

std::string count_noun(uint64_t n, const char* singular, const char* plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

}  // namespace tk::cli
