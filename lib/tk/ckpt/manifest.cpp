#include "tk/ckpt/manifest.h"

#include <xxhash.h>

#include <charconv>

#include "tk/ckpt/fileops.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::ckpt {

using nlohmann::json;

namespace {

// A shard is a file of the step directory itself: no '/', no leading '.' (so no "..").
bool valid_shard_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name[0] != '.';
}

constexpr uint64_t kMaxManifestBytes = 1ull << 30;

json entry_to_json(const TensorEntry& e) {
  json shape = json::array();
  for (auto d : e.shape) shape.push_back(d);
  json j = {{"name", e.name},       {"dtype", dtype_name(e.dtype)}, {"shape", shape},
            {"nbytes", e.nbytes},   {"encoding", e.encoding},       {"xxh3", hash_hex(e.xxh3)}};
  if (!e.shard.empty()) {
    j["shard"] = e.shard;
    j["offset"] = e.offset;
    j["stored_bytes"] = e.stored_bytes;
  }
  if (e.source_step) j["source_step"] = *e.source_step;
  return j;
}

bool valid_encoding(const std::string& enc) {
  return enc == "raw" || enc == "lossless" || enc == "xor" || enc == "xor-lossless" || enc == "ref";
}

TensorEntry entry_from_json(const json& j, const std::string& where) {
  TensorEntry e;
  e.name = j.at("name").get<std::string>();
  std::string w = where + ": tensor '" + e.name + "'";
  auto dtype = dtype_from_safetensors_name(j.at("dtype").get<std::string>());
  if (!dtype) throw invalid_input("unknown dtype in manifest", w);
  e.dtype = *dtype;
  for (const auto& d : j.at("shape")) {
    e.shape.push_back(d.get<int64_t>());
    if (e.shape.back() < 0) throw invalid_input("negative dimension in manifest", w);
  }
  e.nbytes = j.at("nbytes").get<uint64_t>();
  if (dtype_storage_bytes(e.dtype, shape_numel(e.shape)) != e.nbytes) throw invalid_input("size does not match dtype and shape", w);
  e.encoding = j.at("encoding").get<std::string>();
  if (!valid_encoding(e.encoding)) throw invalid_input("unknown encoding '" + e.encoding + "'", w);
  auto h = parse_hash_hex(j.at("xxh3").get<std::string>());
  if (!h) throw invalid_input("malformed checksum", w);
  e.xxh3 = *h;
  if (e.encoding != "ref") {
    e.shard = j.at("shard").get<std::string>();
    if (!valid_shard_name(e.shard)) throw invalid_input("bad shard name", w);
    e.offset = j.at("offset").get<uint64_t>();
    e.stored_bytes = j.at("stored_bytes").get<uint64_t>();
    if (e.encoding == "raw" && e.stored_bytes != e.nbytes) throw invalid_input("stored size does not match", w);
  }
  if (j.contains("source_step")) e.source_step = j.at("source_step").get<uint64_t>();
  bool needs_source = e.encoding == "ref" || e.encoding.starts_with("xor");
  if (needs_source != e.source_step.has_value()) throw invalid_input("source step missing or unexpected", w);
  return e;
}

}  // namespace

std::string hash_hex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::optional<uint64_t> parse_hash_hex(const std::string& text) {
  if (text.size() != 16) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::vector<uint8_t> manifest_encode(const Manifest& m) {
  const StepInfo& s = m.info;
  json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["step"] = s.step;
  j["created"] = s.created;
  j["parent"] = s.parent ? json(*s.parent) : json(nullptr);
  j["metadata"] = s.metadata;
  json shards = json::array();
  for (const auto& sh : m.shards) shards.push_back({{"file", sh.file}, {"bytes", sh.bytes}});
  j["shards"] = shards;
  json tensors = json::array();
  for (const auto& e : s.entries) tensors.push_back(entry_to_json(e));
  j["tensors"] = tensors;
  std::string body;
  try {
    body = j.dump();
  } catch (const json::type_error&) {
    // Names from HDF5 or .npz files may be any bytes; JSON holds only UTF-8.
    throw invalid_input("a tensor name or metadata value is not valid UTF-8, which the manifest cannot hold");
  }
  j["checksum"] = hash_hex(XXH3_64bits(body.data(), body.size()));
  std::string text = j.dump(1) + "\n";
  return {text.begin(), text.end()};
}

Manifest manifest_decode(std::span<const uint8_t> bytes, const std::string& where) {
  json j = json_parse({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "checkpoint manifest", where);
  if (!j.is_object()) throw invalid_input("checkpoint manifest is not a JSON object", where);
  Manifest m;
  try {
    if (j.value("format", "") != kManifestFormat) throw invalid_input("not a tensorkit checkpoint manifest", where);
    int version = j.at("version").get<int>();
    if (version != kManifestVersion)
      throw invalid_input("unsupported manifest version " + std::to_string(version), where);
    auto sum = parse_hash_hex(j.at("checksum").get<std::string>());
    json body = j;
    body.erase("checksum");
    std::string text = body.dump();
    if (!sum || *sum != XXH3_64bits(text.data(), text.size())) throw invalid_input("manifest checksum mismatch", where);
    StepInfo& s = m.info;
    s.step = j.at("step").get<uint64_t>();
    s.created = j.at("created").get<std::string>();
    if (!j.at("parent").is_null()) s.parent = j.at("parent").get<uint64_t>();
    s.metadata = j.at("metadata").get<Metadata>();
    for (const auto& sh : j.at("shards")) {
      m.shards.push_back({sh.at("file").get<std::string>(), sh.at("bytes").get<uint64_t>()});
      if (!valid_shard_name(m.shards.back().file)) throw invalid_input("bad shard name", where);
    }
    for (const auto& t : j.at("tensors")) {
      s.entries.push_back(entry_from_json(t, where));
      s.logical_bytes += s.entries.back().nbytes;
    }
    s.tensors = s.entries.size();
  } catch (const json::exception& e) {
    throw invalid_input(std::string("malformed manifest: ") + e.what(), where);
  }
  return m;
}

Manifest read_manifest(const std::string& step_dir) {
  std::string path = step_dir + "/" + kManifestName;
  if (!fs::exists(path)) throw invalid_input("no manifest (not a committed step)", step_dir);
  std::vector<uint8_t> bytes = fs::read_file(path, kMaxManifestBytes);
  Manifest m = manifest_decode(bytes, path);
  m.info.dir = step_dir;
  m.info.stored_bytes = bytes.size();
  for (const auto& sh : m.shards) m.info.stored_bytes += sh.bytes;
  return m;
}

std::string step_dir_name(uint64_t step) { return "step-" + std::to_string(step); }

std::optional<uint64_t> parse_step_dir_name(const std::string& name) {
  if (!name.starts_with("step-") || name.size() == 5 || name.size() > 25) return std::nullopt;
  std::string digits = name.substr(5);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return v;
}

bool is_leftover_name(const std::string& name) {
  auto tmp = name.find(".tmp-");
  auto del = name.find(".del-");
  auto cut = std::min(tmp, del);
  if (cut == std::string::npos) return false;
  std::string base = name.substr(0, cut);
  return base == "latest" || parse_step_dir_name(base).has_value();
}

bool is_checkpoint_entry_name(const std::string& name) {
  return name == ".lock" || name == "latest" || parse_step_dir_name(name).has_value() || is_leftover_name(name);
}

std::vector<uint64_t> committed_steps(const std::string& root) {
  std::vector<uint64_t> steps;
  for (const auto& name : fs::list_dir(root)) {
    auto step = parse_step_dir_name(name);
    if (step && fs::exists(root + "/" + name + "/" + kManifestName)) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace tk::ckpt
