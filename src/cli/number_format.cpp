#include "cli/number_format.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <iterator>

#include <fmt/format.h>

#include "tk/core/error.h"

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

nlohmann::json json_number(double value) {
  if (std::isfinite(value)) return value;
  return nullptr;
}

std::string count_noun(uint64_t n, const char* singular, const char* plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

}  // namespace tk::cli

namespace tk::cli {

uint64_t bytes_parse(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw usage_error("not a byte count: '" + text + "'", flag);
  }
  std::string unit = text.substr(used);
  double base = 1024;  // "K", "KiB"
  if (unit.size() == 2 && unit[1] == 'B') {
    base = 1000;  // "KB", "kB"
    unit.resize(1);
  } else if (unit.size() == 3 && unit.ends_with("iB")) {
    unit.resize(1);
  }
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "k") scale = base;
  else if (unit == "M") scale = base * base;
  else if (unit == "G") scale = base * base * base;
  else if (unit == "T") scale = base * base * base * base;
  else throw usage_error("not a byte count: '" + text + "' (use a number with KB, MB, GB, KiB, MiB, GiB, ...)", flag);
  double bytes = value * scale;
  if (!(bytes >= 0) || bytes > 9.0e18) throw usage_error("byte count out of range: '" + text + "'", flag);
  return static_cast<uint64_t>(bytes + 0.5);
}

}  // namespace tk::cli
