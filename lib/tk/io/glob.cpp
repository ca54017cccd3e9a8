#include "tk/io/glob.h"

#include <cstdint>

namespace tk::io {

namespace {

enum class TokenKind : uint8_t { kChar, kAny, kStar };

struct Token {
  TokenKind kind;
  char c = 0;
};

std::vector<Token> tokenize(std::string_view pattern) {
  std::vector<Token> tokens;
  tokens.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      tokens.push_back({TokenKind::kChar, pattern[++i]});
    } else if (c == '*') {
      // Consecutive stars match the same as one; keep one so captures stay meaningful.
      tokens.push_back({TokenKind::kStar});
    } else if (c == '?') {
      tokens.push_back({TokenKind::kAny});
    } else {
      tokens.push_back({TokenKind::kChar, c});
    }
  }
  return tokens;
}

// Table of "tokens[i..] matches text[j..]", (|tokens| + 1) x (|text| + 1), filled from the end.
class MatchTable {
 public:
  MatchTable(const std::vector<Token>& tokens, std::string_view text)
      : cols_(text.size() + 1), cells_((tokens.size() + 1) * cols_, 0) {
    size_t n = tokens.size(), m = text.size();
    at(n, m) = 1;
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m + 1; j-- > 0;) {
        const Token& t = tokens[i];
        bool ok = false;
        if (t.kind == TokenKind::kStar) {
          ok = at(i + 1, j) || (j < m && at(i, j + 1));
        } else if (j < m) {
          ok = (t.kind == TokenKind::kAny || t.c == text[j]) && at(i + 1, j + 1);
        }
        at(i, j) = ok ? 1 : 0;
      }
    }
  }
  bool get(size_t i, size_t j) const { return cells_[i * cols_ + j] != 0; }

 private:
  uint8_t& at(size_t i, size_t j) { return cells_[i * cols_ + j]; }
  size_t cols_;
  std::vector<uint8_t> cells_;
};

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  auto tokens = tokenize(pattern);
  return MatchTable(tokens, text).get(0, 0);
}

std::optional<std::vector<std::string>> glob_capture(std::string_view pattern, std::string_view text) {
  auto tokens = tokenize(pattern);
  MatchTable table(tokens, text);
  if (!table.get(0, 0)) return std::nullopt;
  std::vector<std::string> captures;
  size_t j = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::kStar) {
      ++j;
      continue;
    }
    size_t k = j;
    while (!table.get(i + 1, k)) ++k;  // terminates: table.get(i, j) holds
    captures.emplace_back(text.substr(j, k - j));
    j = k;
  }
  return captures;
}

size_t glob_star_count(std::string_view pattern) {
  size_t n = 0;
  for (const Token& t : tokenize(pattern)) n += t.kind == TokenKind::kStar;
  return n;
}

bool glob_is_literal(std::string_view pattern) {
  for (const Token& t : tokenize(pattern))
    if (t.kind != TokenKind::kChar) return false;
  return true;
}

}  // namespace tk::io
