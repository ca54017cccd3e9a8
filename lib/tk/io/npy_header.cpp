#include "tk/io/npy_header.h"

#include <array>
#include <cctype>
#include <cstring>
#include <limits>

#include "tk/core/endian.h"
#include "tk/core/error.h"

namespace tk::io {

namespace {

struct DescrEntry {
  const char* code;  // descr without its byte-order character
  DType dtype;
};

// The scalar types NumPy and tensorkit share. Anything else (structured, object,
// strings, '<c16', 'V2', '<f16', ...) is unsupported.
constexpr std::array<DescrEntry, 13> kDescrs = {{
    {"b1", DType::kBool}, {"u1", DType::kU8},  {"i1", DType::kI8},  {"u2", DType::kU16},
    {"i2", DType::kI16},  {"u4", DType::kU32}, {"i4", DType::kI32}, {"u8", DType::kU64},
    {"i8", DType::kI64},  {"f2", DType::kF16}, {"f4", DType::kF32}, {"f8", DType::kF64},
    {"c8", DType::kC64},
}};

[[noreturn]] void malformed(const std::string& why) { throw invalid_input("malformed .npy header: " + why); }

// Text from the file for a message, long text cut. Its bytes stay as they are: the
// command line escapes control characters when it shows a message (escaping here too
// would show them twice escaped).
std::string excerpt(std::string_view s) {
  constexpr size_t kMax = 60;
  return s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
}

[[noreturn]] void unsupported_dtype(std::string_view text) {
  throw invalid_input("unsupported .npy dtype '" + excerpt(text) + "'");
}

// Tokens of the small subset of Python literals that a .npy header uses.
class Lexer {
 public:
  Lexer(std::string_view text, bool allow_long_suffix) : s_(text), allow_long_suffix_(allow_long_suffix) {}

  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }
  bool accept(char c) {
    if (peek() != c || pos_ == s_.size()) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* context) {
    if (!accept(c)) malformed(std::string("expected '") + c + "' " + context + where());
  }

  // A quoted string without escapes.
  std::string string(const char* context) {
    char q = peek();
    if (q != '\'' && q != '"') malformed(std::string("expected a quoted string ") + context + where());
    size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') malformed("escape sequences in strings are not supported" + where());
      if (s_[pos_] == '\n') malformed("unterminated string" + where());
      ++pos_;
    }
    if (pos_ == s_.size()) malformed("unterminated string" + where());
    return std::string(s_.substr(start, pos_++ - start));
  }

  // A non-negative decimal integer that fits in int64 (NumPy's dimensions are intp).
  int64_t integer(const char* context) {
    peek();
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      uint64_t digit = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
        malformed("dimension too large" + where());
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) malformed(std::string("expected a non-negative integer ") + context + where());
    if (s_[start] == '0' && pos_ - start > 1) malformed("integer with leading zeros" + where());
    // Python 2 wrote long integers as "3L"; NumPy still reads them from 1.0/2.0 files.
    if (allow_long_suffix_ && pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;
    return static_cast<int64_t>(v);
  }

  // A bare name (True, False, None).
  std::string_view name() {
    peek();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // Skip one value of any shape (a nested list, tuple, dict, string or name) and return
  // its text, for reporting descrs we do not support. Stops before ',' or '}' at depth 0.
  std::string_view skip_value() {
    peek();
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\'' || c == '"') {
        string("in value");
        continue;
      }
      if (c == '[' || c == '(' || c == '{') {
        if (++depth > 32) malformed("value nested too deeply" + where());
      } else if (c == ']' || c == ')' || c == '}') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
      ++pos_;
    }
    if (depth != 0) malformed("unbalanced brackets" + where());
    size_t end = pos_;
    while (end > start && is_space(s_[end - 1])) --end;
    if (end == start) malformed("expected a value" + where());
    return s_.substr(start, end - start);
  }

  std::string where() const { return " at offset " + std::to_string(pos_); }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
  void skip_space() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
  bool allow_long_suffix_;
};

void parse_descr(const std::string& descr, NpyHeader& h) {
  if (descr.size() < 2) unsupported_dtype(descr);
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') unsupported_dtype(descr);
  std::string_view code = std::string_view(descr).substr(1);
  for (const auto& e : kDescrs) {
    if (code == e.code) {
      h.dtype = e.dtype;
      h.big_endian = order == '>' && dtype_bits(e.dtype) > 8;
      return;
    }
  }
  unsupported_dtype(descr);
}

Shape parse_shape(Lexer& lex) {
  Shape shape;
  lex.expect('(', "to open the shape tuple");
  if (lex.accept(')')) return shape;
  while (true) {
    if (shape.size() == kNpyMaxRank)
      malformed("shape has more than " + std::to_string(kNpyMaxRank) + " dimensions");
    shape.push_back(lex.integer("in shape"));
    if (lex.accept(',')) {
      if (lex.accept(')')) break;
      continue;
    }
    lex.expect(')', "to close the shape tuple");
    // "(3)" is the integer 3 in Python, not a tuple: NumPy rejects it too.
    if (shape.size() == 1) malformed("shape (" + std::to_string(shape[0]) + ") is not a tuple");
    break;
  }
  return shape;
}

void append_uint(std::string& s, uint64_t v) { s += std::to_string(v); }

}  // namespace

size_t npy_prefix_size(std::span<const uint8_t> head) {
  if (head.size() < 8 || std::memcmp(head.data(), kNpyMagic, sizeof kNpyMagic) != 0)
    throw invalid_input("not a .npy file (bad magic)");
  int major = head[6], minor = head[7];
  if (minor != 0 || major < 1 || major > 3)
    throw invalid_input("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  return major == 1 ? 10 : 12;
}

NpyPrefix npy_parse_prefix(std::span<const uint8_t> prefix) {
  NpyPrefix p;
  p.prefix_bytes = npy_prefix_size(prefix);
  if (prefix.size() < p.prefix_bytes) throw invalid_input("truncated .npy header");
  p.major = prefix[6];
  p.minor = prefix[7];
  p.header_bytes = p.prefix_bytes == 10 ? load_le<uint16_t>(prefix.data() + 8) : load_le<uint32_t>(prefix.data() + 8);
  if (p.header_bytes > kNpyMaxHeader)
    throw invalid_input("header length " + std::to_string(p.header_bytes) + " exceeds the limit of " +
                        std::to_string(kNpyMaxHeader) + " bytes");
  return p;
}

NpyHeader npy_parse_header(std::string_view text, bool utf8) {
  NpyHeader h;
  Lexer lex(text, /*allow_long_suffix=*/!utf8);
  bool seen_descr = false, seen_order = false, seen_shape = false;
  lex.expect('{', "at the start of the header dict");
  while (!lex.accept('}')) {
    std::string key = lex.string("as a key");
    lex.expect(':', "after a key");
    bool* seen = nullptr;
    if (key == "descr") {
      seen = &seen_descr;
      if (*seen) malformed("duplicate key 'descr'");
      char c = lex.peek();
      if (c == '\'' || c == '"') parse_descr(lex.string("as descr"), h);
      else unsupported_dtype(lex.skip_value());
    } else if (key == "fortran_order") {
      seen = &seen_order;
      if (*seen) malformed("duplicate key 'fortran_order'");
      std::string_view v = lex.name();
      if (v == "True") h.fortran_order = true;
      else if (v == "False") h.fortran_order = false;
      else malformed("fortran_order must be True or False" + lex.where());
    } else if (key == "shape") {
      seen = &seen_shape;
      if (*seen) malformed("duplicate key 'shape'");
      h.shape = parse_shape(lex);
    } else {
      malformed("unexpected key '" + excerpt(key) + "'");
    }
    *seen = true;
    if (lex.accept(',')) continue;
    lex.expect('}', "after a value");
    break;
  }
  if (!lex.at_end()) malformed("unexpected text after the header dict" + lex.where());
  if (!seen_descr) malformed("missing key 'descr'");
  if (!seen_order) malformed("missing key 'fortran_order'");
  if (!seen_shape) malformed("missing key 'shape'");
  shape_numel(h.shape);  // throws kInvalidInput when the element count overflows
  return h;
}

std::optional<std::string> npy_descr(DType dtype) {
  for (const auto& e : kDescrs) {
    if (e.dtype == dtype) return std::string(dtype_bits(dtype) == 8 ? "|" : "<") + e.code;
  }
  return std::nullopt;
}

std::vector<uint8_t> npy_make_header(DType dtype, const Shape& shape) {
  auto descr = npy_descr(dtype);
  if (!descr)
    throw usage_error(std::string("dtype ") + dtype_name(dtype) + " cannot be stored in .npy (NumPy has no such type)")
        .with_option("io.npy_dtype");
  // The dict exactly as NumPy's _write_array_header builds it: keys sorted, repr()
  // values, a trailing ", " and spare room for the growth axis to grow in place.
  std::string dict = "{'descr': '" + *descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) dict += ", ";
    append_uint(dict, static_cast<uint64_t>(shape[i]));
  }
  if (shape.size() == 1) dict += ",";
  dict += "), }";
  if (!shape.empty()) {
    constexpr size_t kGrowthAxisMaxDigits = 21;
    size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // _wrap_header: pad with spaces, end with '\n', so that the data starts at a multiple
  // of 64 (a full 64 bytes of padding when it would already be aligned).
  constexpr size_t kAlign = 64;
  size_t text_bytes = dict.size() + 1;
  int major = 1;
  size_t prefix_bytes = 10;
  size_t pad = kAlign - (prefix_bytes + text_bytes) % kAlign;
  if (text_bytes + pad > 0xffff) {
    major = 2;
    prefix_bytes = 12;
    pad = kAlign - (prefix_bytes + text_bytes) % kAlign;
  }
  uint64_t header_bytes = text_bytes + pad;
  std::vector<uint8_t> out(kNpyMagic, kNpyMagic + sizeof kNpyMagic);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  if (prefix_bytes == 10)
    append_le(out, static_cast<uint16_t>(header_bytes));
  else
    append_le(out, static_cast<uint32_t>(header_bytes));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), pad, ' ');
  out.push_back('\n');
  return out;
}

}  // namespace tk::io
