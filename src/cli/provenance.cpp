#include "cli/provenance.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tk/core/error.h"

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

namespace {

// `text` without its directories when it names a path here (see provenance_args).
std::string path_free(const std::string& text) {
  namespace fs = std::filesystem;
  if (text.find('/') == std::string::npos) return text;
  std::error_code ec;
  const fs::path path(text);
  const bool names_path = fs::exists(path, ec) || (path.has_parent_path() && fs::is_directory(path.parent_path(), ec));
  if (!names_path || !path.has_filename()) return text;
  return path.filename().string();
}

}  // namespace

std::vector<std::string> provenance_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) out.push_back(arg.substr(0, eq + 1) + path_free(arg.substr(eq + 1)));
    else out.push_back(path_free(arg));
  }
  return out;
}

void metadata_edit(io::Metadata& metadata, const OutputOptions& options) {
  auto check_key = [](const std::string& key, const char* flag) {
    if (key.empty()) throw usage_error("an empty metadata key", flag);
    if (key == kTkMetadataKey)
      throw usage_error("the metadata key 'tk' is tensorkit's own; use --no-provenance to leave out the command", flag);
  };
  for (const std::string& key : options.drop_metadata) {
    check_key(key, "--drop-metadata");
    metadata.erase(key);
  }
  for (const std::string& pair : options.set_metadata) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos) throw usage_error("expected KEY=VALUE, not '" + pair + "'", "--set-metadata");
    const std::string key = pair.substr(0, eq);
    check_key(key, "--set-metadata");
    if (std::count(options.drop_metadata.begin(), options.drop_metadata.end(), key))
      throw usage_error("the key '" + key + "' is both set and dropped", "--set-metadata");
    metadata[key] = pair.substr(eq + 1);
  }
}

void metadata_stamp(io::Metadata& metadata, const OutputOptions& options, const ProvenanceEntry& entry) {
  metadata_edit(metadata, options);
  if (options.provenance) provenance_add(metadata, {entry.tool, entry.version, provenance_args(entry.args)});
  const bool format_dropped = std::count(options.drop_metadata.begin(), options.drop_metadata.end(), "format") > 0;
  if (!format_dropped && !metadata.count("format")) metadata["format"] = "pt";
}

}  // namespace tk::cli
