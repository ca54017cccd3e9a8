#include "cli/metadata_text.h"

#include <algorithm>

#include <fmt/format.h>

#include "tk/core/json_parse_internal.h"
#include "tk/io/gguf_kv_json.h"

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

namespace {

// A GGUF input's typed pairs (io::kGgufPairsKey) are megabytes of JSON for a tokenizer,
// and each pair has its own display line beside them: they are summarised.
std::string gguf_pairs_text(const std::string& value) {
  const std::optional<nlohmann::json> doc = json_parse_if_valid(value);
  if (!doc || !doc->is_array()) return metadata_value_text(value);
  return fmt::format("[{} typed GGUF key-value pairs, {} bytes of JSON]", doc->size(), value.size());
}

}  // namespace

std::string metadata_lines(const io::Metadata& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata) {
    const std::string text = key == io::kGgufPairsKey ? gguf_pairs_text(value) : metadata_value_text(value);
    out += "  " + escape_text(key) + ": " + text + "\n";
  }
  return out;
}

}  // namespace tk::cli
