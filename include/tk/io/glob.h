// Shell-style name patterns for selecting and renaming tensors: `*` matches any run of
// characters (dots and slashes included), `?` exactly one character, `\` makes the next
// character literal. Everything else matches itself; there are no character classes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tk::io {

// True when `pattern` matches the whole of `text`. Time O(|pattern| * |text|).
bool glob_match(std::string_view pattern, std::string_view text);

// Match and return what each `*` of `pattern` matched, left to right, or nullopt when
// `pattern` does not match. Each `*` takes the shortest text that still lets the rest of
// the pattern match, so "a.*.*" on "a.b.c.d" captures {"b", "c.d"}.
std::optional<std::vector<std::string>> glob_capture(std::string_view pattern, std::string_view text);

// Number of unescaped `*` in `pattern`.
size_t glob_star_count(std::string_view pattern);

// True when `pattern` has no unescaped `*` or `?` (it can match only itself).
bool glob_is_literal(std::string_view pattern);

}  // namespace tk::io
