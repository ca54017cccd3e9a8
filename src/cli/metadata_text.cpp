#include "cli/metadata_text.h"

#include <nlohmann/json.hpp>

#include "cli/display_text.h"

namespace tk::cli {

std::string metadata_value_text(const std::string& value) {
  auto parsed = nlohmann::ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded() && (parsed.is_object() || parsed.is_array()))
    return escape_json_text(parsed.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  return escape_text(value);
}

std::string metadata_lines(const io::Metadata& metadata) {
  std::string out;
  for (const auto& [key, value] : metadata) out += "  " + escape_text(key) + ": " + metadata_value_text(value) + "\n";
  return out;
}

}  // namespace tk::cli
