// GGUF pairs <-> JSON: exact for every type (64-bit integers as strings, non-finite
// floats and -0.0 as their bits, non-UTF-8 strings as hex).
#include "tk/io/gguf_kv_json.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"

namespace tk::io {

namespace {

using nlohmann::json;

struct TypeName {
  GgufValueType type;
  const char* name;
  size_t bytes;  // of a scalar; 0 for string and array
};

constexpr TypeName kTypes[] = {
    {GgufValueType::kU8, "u8", 1},   {GgufValueType::kI8, "i8", 1},       {GgufValueType::kU16, "u16", 2},
    {GgufValueType::kI16, "i16", 2}, {GgufValueType::kU32, "u32", 4},     {GgufValueType::kI32, "i32", 4},
    {GgufValueType::kU64, "u64", 8}, {GgufValueType::kI64, "i64", 8},     {GgufValueType::kF32, "f32", 4},
    {GgufValueType::kF64, "f64", 8}, {GgufValueType::kBool, "bool", 1},   {GgufValueType::kString, "string", 0},
    {GgufValueType::kArray, "array", 0}};

const TypeName* type_info(GgufValueType type) {
  for (const TypeName& t : kTypes)
    if (t.type == type) return &t;
  return nullptr;
}

const TypeName& type_named(const json& name, const std::string& where) {
  if (name.is_string())
    for (const TypeName& t : kTypes)
      if (name.get_ref<const std::string&>() == t.name) return t;
  throw invalid_input("unknown GGUF value type " + name.dump(), where);
}

template <typename T> T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // GGUF and the hosts tensorkit runs on are little-endian
  return v;
}
template <typename T> void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c >> 5) == 0x6) {
      n = 1, cp = c & 0x1f;
    } else if ((c >> 4) == 0xe) {
      n = 2, cp = c & 0x0f;
    } else if ((c >> 3) == 0x1e) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (n >= s.size() - i) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = cp << 6 | (d & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

std::string hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

std::string unhex(const std::string& text, const std::string& where) {
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw invalid_input("malformed hex string", where);
  };
  if (text.size() % 2 != 0) throw invalid_input("malformed hex string", where);
  std::string out(text.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  return out;
}

// A float that JSON can say exactly as a number, else its bits.
template <typename F, typename Bits> json float_value(F v) {
  if (std::isfinite(v) && !(v == 0 && std::signbit(v))) return static_cast<double>(v);
  return fmt::format("0x{:0{}x}", std::bit_cast<Bits>(v), 2 * sizeof(Bits));
}

template <typename F, typename Bits> F float_from(const json& v, const std::string& where) {
  if (v.is_number()) {
    const double d = v.get<double>();
    const F f = static_cast<F>(d);
    if (static_cast<double>(f) != d) throw invalid_input("value does not fit its float type", where);
    return f;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() == 2 + 2 * sizeof(Bits) && s[0] == '0' && s[1] == 'x') {
      Bits bits = 0;
      for (char c : unhex(s.substr(2), where)) bits = static_cast<Bits>(bits << 8 | static_cast<unsigned char>(c));
      return std::bit_cast<F>(bits);
    }
  }
  throw invalid_input("expected a number or the bits of a float (\"0x...\")", where);
}

// Append one element of `type` from its encoded bytes at `p` as JSON; returns the bytes used.
size_t element_to_json(GgufValueType type, const uint8_t* p, json& out) {
  switch (type) {
    case GgufValueType::kU8: out = p[0]; return 1;
    case GgufValueType::kI8: out = static_cast<int8_t>(p[0]); return 1;
    case GgufValueType::kU16: out = load<uint16_t>(p); return 2;
    case GgufValueType::kI16: out = load<int16_t>(p); return 2;
    case GgufValueType::kU32: out = load<uint32_t>(p); return 4;
    case GgufValueType::kI32: out = load<int32_t>(p); return 4;
    case GgufValueType::kU64: out = std::to_string(load<uint64_t>(p)); return 8;
    case GgufValueType::kI64: out = std::to_string(load<int64_t>(p)); return 8;
    case GgufValueType::kF32: out = float_value<float, uint32_t>(load<float>(p)); return 4;
    case GgufValueType::kF64: out = float_value<double, uint64_t>(load<double>(p)); return 8;
    case GgufValueType::kBool: out = p[0] != 0; return 1;
    case GgufValueType::kString: {
      const uint64_t n = load<uint64_t>(p);
      const std::string_view s(reinterpret_cast<const char*>(p + 8), n);
      out = valid_utf8(s) ? json(std::string(s)) : json{{"hex", hex(s)}};
      return 8 + n;
    }
    default: throw internal_error("GGUF element type without a JSON form");
  }
}

template <typename T> T integer_from(const json& v, const std::string& where) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
    } else {
      const auto i = v.get<int64_t>();
      if (i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
          (i < 0 || static_cast<uint64_t>(i) <= static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        return static_cast<T>(i);
      }
    }
  }
  throw invalid_input("expected an integer in the range of its type, got " + v.dump(), where);
}

template <typename T> T decimal_from(const json& v, const std::string& where) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    T out{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return out;
  }
  throw invalid_input("expected a decimal string in the range of its type, got " + v.dump(), where);
}

void element_from_json(GgufValueType type, const json& v, std::vector<uint8_t>& out, const std::string& where) {
  switch (type) {
    case GgufValueType::kU8: append(out, integer_from<uint8_t>(v, where)); return;
    case GgufValueType::kI8: append(out, integer_from<int8_t>(v, where)); return;
    case GgufValueType::kU16: append(out, integer_from<uint16_t>(v, where)); return;
    case GgufValueType::kI16: append(out, integer_from<int16_t>(v, where)); return;
    case GgufValueType::kU32: append(out, integer_from<uint32_t>(v, where)); return;
    case GgufValueType::kI32: append(out, integer_from<int32_t>(v, where)); return;
    case GgufValueType::kU64: append(out, decimal_from<uint64_t>(v, where)); return;
    case GgufValueType::kI64: append(out, decimal_from<int64_t>(v, where)); return;
    case GgufValueType::kF32: append(out, float_from<float, uint32_t>(v, where)); return;
    case GgufValueType::kF64: append(out, float_from<double, uint64_t>(v, where)); return;
    case GgufValueType::kBool:
      if (!v.is_boolean()) throw invalid_input("expected true or false", where);
      append<uint8_t>(out, v.get<bool>() ? 1 : 0);
      return;
    case GgufValueType::kString: {
      std::string s;
      if (v.is_string()) {
        s = v.get<std::string>();
      } else if (v.is_object() && v.size() == 1 && v.contains("hex") && v["hex"].is_string()) {
        s = unhex(v["hex"].get<std::string>(), where);
      } else {
        throw invalid_input("expected a string or {\"hex\": ...}", where);
      }
      append<uint64_t>(out, s.size());
      out.insert(out.end(), s.begin(), s.end());
      return;
    }
    default: throw invalid_input("arrays of arrays are not GGUF values", where);
  }
}

}  // namespace

std::string gguf_kvs_to_json(const std::vector<GgufKv>& kvs) {
  json doc = json::array();
  for (const GgufKv& kv : kvs) {
    const TypeName* t = type_info(kv.type);
    if (!t) throw internal_error("GGUF pair of an unknown type", kv.key);
    // JSON text is UTF-8: a key that is not has no faithful form (metadata keys are text).
    if (!valid_utf8(kv.key)) throw invalid_input("GGUF key is not valid UTF-8", "key '" + hex(kv.key) + "' (hex)");
    json pair = {{"key", kv.key}, {"type", t->name}};
    const uint8_t* p = kv.value.data();
    if (kv.type != GgufValueType::kArray) {
      element_to_json(kv.type, p, pair["value"]);
    } else {
      const auto elem = static_cast<GgufValueType>(load<uint32_t>(p));
      const TypeName* e = type_info(elem);
      if (!e || elem == GgufValueType::kArray) throw internal_error("GGUF array of an unknown type", kv.key);
      const uint64_t count = load<uint64_t>(p + 4);
      p += 12;
      json values = json::array();
      for (uint64_t i = 0; i < count; ++i) {
        json v;
        p += element_to_json(elem, p, v);
        values.push_back(std::move(v));
      }
      pair["elem"] = e->name;
      pair["value"] = std::move(values);
    }
    doc.push_back(std::move(pair));
  }
  return doc.dump();
}

std::vector<GgufKv> gguf_kvs_from_json(std::string_view text, const std::string& where) {
  const json doc = json_parse(text, std::string("metadata value '") + kGgufPairsKey + "'", where);
  if (!doc.is_array()) throw invalid_input(std::string("metadata value '") + kGgufPairsKey + "' is not a JSON array", where);
  std::vector<GgufKv> kvs;
  for (const json& pair : doc) {
    if (!pair.is_object() || !pair.contains("key") || !pair["key"].is_string() || !pair.contains("type") ||
        !pair.contains("value")) {
      throw invalid_input("a GGUF pair needs \"key\", \"type\" and \"value\"", where);
    }
    GgufKv kv;
    kv.key = pair["key"].get<std::string>();
    const std::string at = where.empty() ? "key '" + kv.key + "'" : where + ": key '" + kv.key + "'";
    kv.type = type_named(pair["type"], at).type;
    if (kv.type != GgufValueType::kArray) {
      element_from_json(kv.type, pair["value"], kv.value, at);
    } else {
      if (!pair.contains("elem")) throw invalid_input("an array pair needs \"elem\"", at);
      const GgufValueType elem = type_named(pair["elem"], at).type;
      const json& values = pair["value"];
      if (!values.is_array()) throw invalid_input("an array pair's value must be a JSON array", at);
      append(kv.value, static_cast<uint32_t>(elem));
      append(kv.value, static_cast<uint64_t>(values.size()));
      for (const json& v : values) element_from_json(elem, v, kv.value, at);
    }
    kvs.push_back(std::move(kv));
  }
  return kvs;
}

}  // namespace tk::io
