#include "cli/metadata_text.h"

#include <algorithm>

#include "tk/core/json_parse_internal.h"

#include "cli/display_text.h"

namespace tk::cli {

std::string metadata_value_text(const std::string& value) {
  // Objects and arrays compact on one line; anything else, and any value the JSON
  // policy refuses (malformed, nested too deep, duplicate keys), as the raw string.
  std::string_view first = value;
  first.remove_prefix(std::min(first.find_first_not_of(" \t\r\n"), first.size()));
  if (first.starts_with('{') || first.starts_with('['))
    if (std::optional<std::string> compact = json_compact_if_valid(value)) return escape_json_text(*compact);
  return escape_text(value);
}

std::string metadata_lines(const io::Metadata& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata) out += "  " + escape_text(key) + ": " + metadata_value_text(value) + "\n";
  return out;
}

}  // namespace tk::cli
