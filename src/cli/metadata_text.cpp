#include "cli/metadata_text.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace tk::cli {

namespace {

std::string escape_controls(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string metadata_value_text(const std::string& value) {
  auto parsed = nlohmann::ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded() && (parsed.is_object() || parsed.is_array()))
    return parsed.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return escape_controls(value);
}

std::string metadata_lines(const io::Metadata& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata) out += "  " + escape_controls(key) + ": " + metadata_value_text(value) + "\n";
  return out;
}

}  // namespace tk::cli
