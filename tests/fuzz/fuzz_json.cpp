// libFuzzer target for the JSON policy (lib/tk/core/json_parse_internal.h). Each input
// is a JSON text. Checked: every entry point agrees on what it accepts (json_parse,
// json_compact_if_valid, json_parse_members); an accepted DOM is no deeper than the
// limit and survives dump / parse; the safetensors header's event path and its
// member-by-member path build the same table or raise the same error.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/core/json_parse_internal.h"
#include "tk/io/safetensors_internal.h"

namespace {

using nlohmann::json;

void check(bool ok) {
  if (!ok) std::abort();
}

int depth_of(const json& root) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> todo = {{&root, 0}};
  while (!todo.empty()) {
    auto [j, d] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, d + 1);
    for (const json& child : *j) todo.push_back({&child, d + 1});
  }
  return deepest;
}

void check_policy(std::string_view text) {
  std::optional<json> dom;
  try {
    dom = tk::json_parse(text, "fuzz");
  } catch (const tk::Error& e) {
    check(e.kind() == tk::ErrorKind::kInvalidInput);
  }
  std::optional<std::string> compact = tk::json_compact_if_valid(text);
  check(dom.has_value() == compact.has_value());
  if (!dom) return;
  check(depth_of(*dom) <= tk::kJsonMaxDepth);
  // Compared as text: a number too large for a double parses as infinity, dumped as null.
  const std::string dumped = dom->dump();
  check(tk::json_parse(*compact, "compact").dump() == dumped);
  check(tk::json_parse(dumped, "dump").dump() == dumped);

  json members = json::object();
  auto root = tk::json_parse_members(
      text, "fuzz", [](int, const std::string&) {}, [&](std::string&& k, json&& v) { members[k] = std::move(v); });
  check((root ? *root : members).dump() == dumped);
}

void check_header_paths(std::string_view text) {
  std::vector<tk::io::detail::HeaderEntry> fast_entries, slow_entries;
  tk::io::Metadata fast_metadata, slow_metadata;
  bool fast = false;
  std::string fast_error, slow_error;
  try {
    fast = tk::io::detail::header_table_from_events(text, fast_entries, fast_metadata);
  } catch (const tk::Error& e) {
    fast_error = e.what();
  }
  try {
    tk::io::detail::header_table_from_members(text, slow_entries, slow_metadata);
  } catch (const tk::Error& e) {
    slow_error = e.what();
  }
  if (!fast_error.empty()) check(fast_error == slow_error);  // syntax and depth errors
  if (!fast) return;
  check(slow_error.empty() && fast_metadata == slow_metadata && fast_entries.size() == slow_entries.size());
  for (size_t i = 0; i < fast_entries.size(); ++i) {
    const auto &a = fast_entries[i], &b = slow_entries[i];
    check(a.info.name == b.info.name && a.info.dtype == b.info.dtype && a.info.shape == b.info.shape &&
          a.info.nbytes == b.info.nbytes && a.begin == b.begin && a.end == b.end);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_policy(text);
  check_header_paths(text);
  return 0;
}
