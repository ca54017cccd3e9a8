#include "cli/display_text.h"

#include <cstdint>
#include <cstdio>

namespace tk::cli {

namespace {

// The length of the well-formed UTF-8 sequence starting at `s[i]` and its code point
// (Unicode 15, table 3-7), or 0 when the bytes there are not one.
size_t utf8_sequence(std::string_view s, size_t i, char32_t* code) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 < 0x80) len = 1;
  else if (b0 >= 0xc2 && b0 <= 0xdf) len = 2;
  else if (b0 == 0xe0) len = 3, lo = 0xa0;
  else if (b0 == 0xed) len = 3, hi = 0x9f;  // no surrogates
  else if (b0 >= 0xe1 && b0 <= 0xef) len = 3;
  else if (b0 == 0xf0) len = 4, lo = 0x90;
  else if (b0 == 0xf4) len = 4, hi = 0x8f;  // nothing past U+10FFFF
  else if (b0 >= 0xf1 && b0 <= 0xf3) len = 4;
  else return 0;
  if (i + len > s.size()) return 0;
  char32_t c = len == 1 ? b0 : b0 & (0xff >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    uint8_t b = byte(i + k);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return 0;
    c = (c << 6) | (b & 0x3f);
  }
  *code = c;
  return len;
}

// Code points that are valid but must not reach a terminal raw.
bool is_hidden_control(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

void append_hex_byte(std::string& out, uint8_t b) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  out += buf;
}

// Walk `bytes` one UTF-8 sequence at a time: a byte that starts no well-formed sequence
// goes out as "\xHH"; each sequence is handed to `emit(out, code, sequence)`.
template <typename Emit>
std::string transcode(std::string_view bytes, Emit emit) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    char32_t code = 0;
    size_t len = utf8_sequence(bytes, i, &code);
    if (len == 0) {
      append_hex_byte(out, static_cast<uint8_t>(bytes[i++]));
      continue;
    }
    emit(out, code, bytes.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace

std::string escape_text(std::string_view bytes) {
  return transcode(bytes, [](std::string& out, char32_t code, std::string_view seq) {
    switch (code) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\0': out += "\\0"; break;
      default:
        if (is_hidden_control(code))
          for (char b : seq) append_hex_byte(out, static_cast<uint8_t>(b));
        else
          out += seq;
    }
  });
}

std::string escape_json_text(std::string_view json) {
  // Malformed bytes cannot come from a dump; transcode keeps them unambiguous anyway.
  return transcode(json, [](std::string& out, char32_t code, std::string_view seq) {
    if (code >= 0x7f && is_hidden_control(code)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(code));
      out += buf;
    } else {
      out += seq;
    }
  });
}

}  // namespace tk::cli
