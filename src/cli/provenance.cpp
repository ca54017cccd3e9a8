#include "cli/provenance.h"

#include <nlohmann/json.hpp>

#include "tk/core/json_parse_internal.h"

namespace tk::cli {

std::string provenance_merge(const std::optional<std::string>& previous, const ProvenanceEntry& entry) {
  using nlohmann::json;
  json tk = json::object();
  if (previous) {
    // A value that is not a JSON object within the policy (not JSON, or nested too
    // deep) is kept verbatim as a string.
    std::optional<json> parsed = json_parse_if_valid(*previous);
    if (parsed && parsed->is_object()) tk = std::move(*parsed);
    else tk["previous"] = *previous;
  }
  json& provenance = tk["provenance"];
  if (provenance.is_null()) provenance = json::array();
  else if (!provenance.is_array()) provenance = json::array({provenance});
  provenance.push_back({{"tool", entry.tool}, {"version", entry.version}, {"args", entry.args}});
  return tk.dump(-1, ' ', false, json::error_handler_t::replace);
}

void provenance_add(io::Metadata& metadata, const ProvenanceEntry& entry) {
  auto it = metadata.find(kTkMetadataKey);
  std::optional<std::string> previous;
  if (it != metadata.end()) previous = it->second;
  metadata[kTkMetadataKey] = provenance_merge(previous, entry);
}

}  // namespace tk::cli
