#include "tk/store/manifest.h"

#include <nlohmann/json.hpp>

#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::store {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "tk-store-manifest";
constexpr int kVersion = 1;

bool plain_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

codec::Sha256Digest parse_key(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_string()) throw invalid_input(std::string("missing '") + field + "'", where);
  auto d = sha256_parse_hex(j[field].get<std::string>());
  if (!d) throw invalid_input(std::string("'") + field + "' is not a SHA-256", where);
  return *d;
}

uint64_t parse_u64(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_number_unsigned())
    throw invalid_input(std::string("missing or invalid '") + field + "'", where);
  return j[field].get<uint64_t>();
}

std::string parse_string(const json& j, const char* field, const std::string& where, bool required) {
  if (!j.contains(field)) {
    if (required) throw invalid_input(std::string("missing '") + field + "'", where);
    return {};
  }
  if (!j[field].is_string()) throw invalid_input(std::string("'") + field + "' is not a string", where);
  return j[field].get<std::string>();
}

}  // namespace

std::string store_segment_label(const StoreSegment& s) {
  if (!s.tensor.empty()) return "tensor '" + s.tensor + "'";
  return s.offset == 0 ? std::string("header") : "bytes at " + std::to_string(s.offset);
}

std::optional<codec::Sha256Digest> sha256_parse_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  codec::Sha256Digest d{};
  for (size_t i = 0; i < d.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return d;
}

std::vector<uint8_t> store_manifest_serialize(const StoreManifest& m) {
  json segments = json::array();
  for (const auto& s : m.segments) {
    json j = {{"offset", s.offset}, {"size", s.size}, {"key", codec::sha256_hex(s.key)}};
    if (!s.tensor.empty()) {
      j["tensor"] = s.tensor;
      j["dtype"] = s.dtype;
      j["shape"] = s.shape;
    }
    segments.push_back(std::move(j));
  }
  json doc = {{"format", kFormat},     {"version", kVersion}, {"name", m.name},
              {"kind", m.kind},        {"size", m.size},      {"sha256", codec::sha256_hex(m.sha256)},
              {"base", m.base},        {"created", m.created}, {"segments", std::move(segments)}};
  // Tensor names come from files and may hold any bytes: replace invalid UTF-8 rather
  // than fail (the name is descriptive; the key restores the bytes).
  std::string text = doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
  return {text.begin(), text.end()};
}

StoreManifest store_manifest_parse(std::span<const uint8_t> bytes, const std::string& where) {
  json doc = json_parse({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "store manifest", where);
  if (!doc.is_object()) throw invalid_input("store manifest is not a JSON object", where);
  if (parse_string(doc, "format", where, true) != kFormat) throw invalid_input("not a store manifest", where);
  if (!doc.contains("version") || doc["version"] != kVersion) throw invalid_input("unknown manifest version", where);
  StoreManifest m;
  m.name = parse_string(doc, "name", where, true);
  m.kind = parse_string(doc, "kind", where, true);
  if (m.kind != "safetensors" && m.kind != "opaque") throw invalid_input("unknown kind '" + m.kind + "'", where);
  m.size = parse_u64(doc, "size", where);
  m.sha256 = parse_key(doc, "sha256", where);
  m.base = parse_string(doc, "base", where, false);
  m.created = parse_string(doc, "created", where, false);
  if (!doc.contains("segments") || !doc["segments"].is_array()) throw invalid_input("missing 'segments'", where);
  uint64_t next = 0;
  for (const json& j : doc["segments"]) {
    if (!j.is_object()) throw invalid_input("segment is not an object", where);
    StoreSegment s;
    s.offset = parse_u64(j, "offset", where);
    s.size = parse_u64(j, "size", where);
    s.key = parse_key(j, "key", where);
    if (s.offset != next || s.size > m.size - s.offset)
      throw invalid_input("segments do not cover the file in order", where);
    next = s.offset + s.size;
    s.tensor = parse_string(j, "tensor", where, false);
    if (!s.tensor.empty()) {
      s.dtype = parse_string(j, "dtype", where, true);
      if (!dtype_from_safetensors_name(s.dtype)) throw invalid_input("unknown dtype '" + s.dtype + "'", where);
      if (!j.contains("shape") || !j["shape"].is_array()) throw invalid_input("missing 'shape'", where);
      for (const json& d : j["shape"]) {
        if (!d.is_number_unsigned()) throw invalid_input("invalid shape", where);
        s.shape.push_back(d.get<uint64_t>());
      }
    }
    m.segments.push_back(std::move(s));
  }
  if (next != m.size) throw invalid_input("segments do not cover the file", where);
  return m;
}

void store_check_name(const std::string& name) {
  if (name.empty() || name.size() > 200) throw usage_error("a store name has 1 to 200 characters", name);
  if (name == "." || name == "..") throw usage_error("invalid store name", name);
  for (char c : name)
    if (c < 0x20 || c > 0x7e) throw usage_error("a store name has printable ASCII characters only", name);
}

std::string store_manifest_file_name(const std::string& name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (plain_char(c) && !(i == 0 && c == '.')) {
      out += c;
    } else {
      auto u = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out + ".json";
}

bool store_is_manifest_file_name(const std::string& file_name) {
  return file_name.size() > 5 && file_name[0] != '.' && file_name.ends_with(".json");
}

}  // namespace tk::store
