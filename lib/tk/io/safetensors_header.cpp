// safetensors header: parsing with validation as strict as the reference implementation
// (plus duplicate names), serialisation exactly as the reference writer lays it out.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>

#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"
#include "tk/io/safetensors.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace detail {

size_t utf8_invalid_at(std::span<const uint8_t> b) {
  size_t i = 0, n = b.size();
  while (i < n) {
    uint8_t c = b[i];
    if (c < 0x80) { ++i; continue; }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;       // overlong
      if (c == 0xED) hi = 0x9F;       // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;       // overlong
      if (c == 0xF4) hi = 0x8F;       // above U+10FFFF
    } else {
      return i;
    }
    if (n - i < len || b[i + 1] < lo || b[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((b[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return n;
}

std::optional<SafetensorsPrefix> safetensors_prefix(std::span<const uint8_t> head) {
  if (head.size() < 9) return std::nullopt;
  SafetensorsPrefix p;
  p.header_bytes = load_le<uint64_t>(head.data());
  size_t i = 8;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  p.json_follows = i < head.size() && head[i] == '{';
  return p;
}

std::string tensor_where(std::string_view name) {
  constexpr size_t kMaxShown = 96;
  std::string out = "tensor '";
  size_t i = std::min(name.size(), kMaxShown);
  out.append(name.substr(0, i));  // the CLI escapes it for display (src/cli/display_text.h)
  if (i < name.size()) {
    // Do not end inside a UTF-8 sequence.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    out += "...";
  }
  return out + "'";
}

int safetensors_dtype_rank(DType dtype) {
  // The order of the reference's Dtype enum (0.8): BOOL, F4, F6_E2M3, F6_E3M2, U8, I8,
  // F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, F16, BF16, I32,
  // U32, F32, C64, F64, I64, U64.
  switch (dtype) {
    case DType::kBool: return 0;
    case DType::kF4: return 1;
    case DType::kF6E2M3: return 2;
    case DType::kF6E3M2: return 3;
    case DType::kU8: return 4;
    case DType::kI8: return 5;
    case DType::kF8E5M2: return 6;
    case DType::kF8E4M3: return 7;
    case DType::kF8E8M0: return 8;
    case DType::kF8E4M3FNUZ: return 9;
    case DType::kF8E5M2FNUZ: return 10;
    case DType::kI16: return 11;
    case DType::kU16: return 12;
    case DType::kF16: return 13;
    case DType::kBF16: return 14;
    case DType::kI32: return 15;
    case DType::kU32: return 16;
    case DType::kF32: return 17;
    case DType::kC64: return 18;
    case DType::kF64: return 19;
    case DType::kI64: return 20;
    case DType::kU64: return 21;
    case DType::kCount: break;
  }
  return -1;
}

}  // namespace detail

namespace {

using nlohmann::json;
using detail::tensor_where;

// Tracks keys while the header is parsed, to reject what a DOM would silently merge:
// duplicate top-level keys (tensor names, __metadata__) and duplicate fields of a
// tensor entry (which the reference rejects).
struct KeyGuard {
  std::string top_key;
  std::unordered_set<std::string> top_keys;
  std::array<bool, 3> seen_field{};

  void operator()(int depth, const std::string& key) {
    if (depth == 1) on_top_key(key);
    else if (depth == 2 && top_key != "__metadata__") on_entry_field(key);
  }

  void on_top_key(const std::string& key) {
    if (!top_keys.insert(key).second) {
      if (key == "__metadata__") throw invalid_input("duplicate __metadata__ in header");
      throw invalid_input("duplicate tensor name", tensor_where(key));
    }
    top_key = key;
    seen_field = {};
  }

  void on_entry_field(const std::string& key) {
    static const char* const kFields[3] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; ++i) {
      if (key != kFields[i]) continue;
      if (seen_field[i]) throw invalid_input("duplicate field '" + key + "'", tensor_where(top_key));
      seen_field[i] = true;
    }
  }
};

const json& require_field(const json& entry, const char* field, const std::string& where) {
  auto it = entry.find(field);
  if (it == entry.end()) throw invalid_input(std::string("missing field '") + field + "'", where);
  return *it;
}

uint64_t unsigned_value(const json& v, const char* what, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer())
    throw invalid_input(std::string("negative value ") + v.dump() + " in " + what, where);
  if (v.is_number_float())
    throw invalid_input(std::string("non-integer or out-of-range value ") + v.dump() + " in " + what, where);
  throw invalid_input(std::string("expected an unsigned integer in ") + what + ", got " + v.type_name(), where);
}

using Entry = detail::HeaderEntry;

Entry parse_entry(const std::string& name, const json& value) {
  const std::string where = tensor_where(name);
  if (!value.is_object()) throw invalid_input(std::string("entry is not an object but ") + value.type_name(), where);
  Entry e;
  e.info.name = name;

  const json& dtype = require_field(value, "dtype", where);
  if (!dtype.is_string()) throw invalid_input(std::string("field 'dtype' is not a string but ") + dtype.type_name(), where);
  const auto& dtype_text = dtype.get_ref<const std::string&>();
  auto parsed = dtype_from_safetensors_name(dtype_text);
  if (!parsed) {
    std::string shown = dtype_text.size() > 32 ? dtype_text.substr(0, 32) + "..." : dtype_text;
    throw invalid_input("unknown dtype " + json(shown).dump(-1, ' ', false, json::error_handler_t::replace), where);
  }
  e.info.dtype = *parsed;

  const json& shape = require_field(value, "shape", where);
  if (!shape.is_array()) throw invalid_input(std::string("field 'shape' is not an array but ") + shape.type_name(), where);
  for (const json& d : shape) {
    uint64_t dim = unsigned_value(d, "shape", where);
    if (dim > static_cast<uint64_t>(INT64_MAX)) throw invalid_input("dimension " + std::to_string(dim) + " too large", where);
    e.info.shape.push_back(static_cast<int64_t>(dim));
  }

  const json& offsets = require_field(value, "data_offsets", where);
  if (!offsets.is_array() || offsets.size() != 2)
    throw invalid_input("field 'data_offsets' is not an array of two offsets", where);
  e.begin = unsigned_value(offsets[0], "data_offsets", where);
  e.end = unsigned_value(offsets[1], "data_offsets", where);

  try {
    e.info.nbytes = dtype_storage_bytes(e.info.dtype, shape_numel(e.info.shape));
  } catch (const Error& err) {
    throw invalid_input(err.what(), where);
  }
  return e;
}

Metadata parse_metadata(const json& value) {
  Metadata out;
  if (value.is_null()) return out;  // the reference reads null as "no metadata"
  if (!value.is_object()) throw invalid_input(std::string("__metadata__ is not an object but ") + value.type_name());
  for (const auto& [k, v] : value.items()) {
    if (!v.is_string())
      throw invalid_input(std::string("metadata value is not a string but ") + v.type_name(),
                          "metadata key " + tensor_where(k).substr(7));
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

// Each member is checked as soon as it is read and then dropped, so that the DOM of one
// entry is all that is held besides the table. The first error by key order wins, as
// if the members had been checked after the whole text, sorted by name.
void detail::header_table_from_members(std::string_view text, std::vector<Entry>& entries, Metadata& metadata) {
  std::optional<std::pair<std::string, Error>> first_error;
  auto on_member = [&](std::string&& key, json&& value) {
    if (first_error && key > first_error->first) return;
    try {
      if (key == "__metadata__") metadata = parse_metadata(value);
      else entries.push_back(parse_entry(key, value));
    } catch (const Error& e) {
      first_error.emplace(std::move(key), e);
    }
  };
  std::optional<json> not_object = json_parse_members(text, "header", KeyGuard{}, on_member);
  if (not_object) throw invalid_input(std::string("header is not a JSON object but ") + not_object->type_name());
  if (first_error) throw first_error->second;
}

namespace {

void append_json_string(std::string& out, std::string_view s) {
  // serde_json's escaping: the short escapes, \u00XX (lowercase) for other control
  // characters, everything else (DEL and non-ASCII UTF-8 included) as is.
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace

SafetensorsHeader safetensors_parse_header(std::span<const uint8_t> bytes) {
  size_t bad = detail::utf8_invalid_at(bytes);
  if (bad != bytes.size()) throw invalid_input("header is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  // The usual header is read straight into the table; any other goes member by member.
  SafetensorsHeader header;
  std::vector<Entry> entries;
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!detail::header_table_from_events(text, entries, header.metadata)) {
    entries.clear();
    header.metadata.clear();
    detail::header_table_from_members(text, entries, header.metadata);
  }

  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.info.name) < std::tie(b.begin, b.end, b.info.name);
  });
  uint64_t cursor = 0;
  header.offsets.reserve(entries.size());
  header.tensors.reserve(entries.size());
  for (Entry& e : entries) {
    auto fail = [&](const std::string& problem) {
      return invalid_input("data offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] " + problem,
                           tensor_where(e.info.name));
    };
    if (e.end < e.begin) throw fail("end before they begin");
    if (e.begin < cursor) throw fail("overlap the previous tensor, which ends at " + std::to_string(cursor));
    if (e.begin > cursor) throw fail("leave a hole after the previous tensor, which ends at " + std::to_string(cursor));
    if (e.end - e.begin != e.info.nbytes)
      throw fail("hold " + std::to_string(e.end - e.begin) + " bytes but " + dtype_name(e.info.dtype) + " " +
                 shape_to_string(e.info.shape) + " needs " + std::to_string(e.info.nbytes));
    cursor = e.end;
    header.offsets.push_back(e.begin);
    header.tensors.push_back(std::move(e.info));
  }
  header.data_size = cursor;
  return header;
}

std::vector<uint8_t> safetensors_make_header(const std::vector<TensorInfo>& tensors, const Metadata& metadata) {
  std::string s = "{";
  bool first = true;
  if (!metadata.empty()) {
    s += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (!first) s += ',';
      first = false;
      append_json_string(s, k);
      s += ':';
      append_json_string(s, v);
    }
    s += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (const TensorInfo& t : tensors) {
    uint64_t nbytes = dtype_storage_bytes(t.dtype, shape_numel(t.shape));
    if (!first) s += ',';
    first = false;
    append_json_string(s, t.name);
    s += ":{\"dtype\":\"";
    s += dtype_name(t.dtype);
    s += "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(t.shape[i]);
    }
    s += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  s += '}';
  // Pad so that the data (after the 8-byte length and the header) starts 8-aligned.
  s.append((8 - s.size() % 8) % 8, ' ');
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::vector<size_t> safetensors_canonical_order(const std::vector<TensorInfo>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int ra = detail::safetensors_dtype_rank(tensors[a].dtype);
    int rb = detail::safetensors_dtype_rank(tensors[b].dtype);
    if (ra != rb) return ra > rb;
    return tensors[a].name < tensors[b].name;
  });
  return order;
}

}  // namespace tk::io
