// The one JSON policy for text from outside the process: safetensors headers and their
// metadata values, checkpoint and store manifests, shard indexes, result files, a
// model's config.json (read, and copied with a member added). Not a public interface
// (it exposes nlohmann types): include only from lib/ and src/ .cpp files and tests.
//
// Every parse here
// - refuses nesting deeper than kJsonMaxDepth, so that nothing downstream (nlohmann's
//   dump(), a recursive walk, a destructor) recurses without bound;
// - runs in time linear in the text (nlohmann's SAX lexer; objects are std::map, so a
//   key costs O(log n));
// - holds memory linear in the text: a DOM costs at most about 25 bytes per byte of
//   text (an object of empty objects, `{"":{},...`), and each caller bounds the text
//   (see docs/ARCHITECTURE.md, "Untrusted JSON").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tk {

// serde_json's recursion limit, which the safetensors reference uses: one limit for
// every document, so that a header the reference opens opens here too.
inline constexpr int kJsonMaxDepth = 127;

// Parse untrusted JSON text into a DOM. An object with a duplicate key is refused too:
// readers disagree on which value wins. Throws kInvalidInput "invalid JSON in WHAT:
// ..." (`what` names the document: "shard index", "metadata value 'tk'") located at
// `where` (a path; may be empty).
nlohmann::json json_parse(std::string_view text, std::string_view what, const std::string& where = {});

// json_parse for callers that keep text the policy refuses as a plain string (metadata
// values being merged): nullopt instead of an error.
std::optional<nlohmann::json> json_parse_if_valid(std::string_view text);

// Compact re-serialisation of untrusted JSON text for display, keys in their original
// order (nlohmann's dump(-1) format, invalid UTF-8 replaced), built from parse events
// without a DOM; nullopt when the policy refuses the text.
std::optional<std::string> json_compact_if_valid(std::string_view text);

// Parse a document whose top level is an object one member at a time, so that no DOM
// of the whole document is ever held (the safetensors header: a member per tensor).
// `on_key(depth, key)` sees every key as it is read (depth 1 = a top-level member);
// `on_member(key, value)` gets each top-level member once its value is complete.
// Duplicate keys are passed on, not refused (on_key may refuse them). Returns the
// whole document when its top level is not an object, nullopt when it is. Errors as
// json_parse; exceptions thrown by the callbacks propagate unchanged.
using JsonKeyHandler = std::function<void(int depth, const std::string& key)>;
using JsonMemberHandler = std::function<void(std::string&& key, nlohmann::json&& value)>;
std::optional<nlohmann::json> json_parse_members(std::string_view text, std::string_view what,
                                                 const JsonKeyHandler& on_key, const JsonMemberHandler& on_member);

// Parse untrusted JSON text that should be an object, building only its top-level
// members named in `keep`: the others are checked (syntax, depth) and dropped as they
// are read, so memory follows the kept members, which may hold at most `max_values`
// values in all (kInvalidInput beyond). A duplicate top-level key is refused; nested
// ones are passed on, the last value winning. Returns the object of the kept members
// that are present; nullopt when the top level is not an object. Errors as json_parse.
std::optional<nlohmann::json> json_parse_object_members(std::string_view text, std::string_view what,
                                                        const std::vector<std::string>& keep,
                                                        uint64_t max_values = uint64_t{1} << 20);

// `object_text` (the text of a JSON object that the policy accepted, without a member
// `key`) with the member `key`: `value_json` appended as its last member, spliced into
// the text. Every byte of the original is kept, so a document is copied at the cost of
// its length whatever its shape. `value_json` (trusted text, such as dump(2)'s) goes on
// a line of its own, each of its lines indented by `indent` spaces.
std::string json_object_append(std::string_view object_text, std::string_view key, std::string_view value_json,
                               int indent = 2);

namespace detail {

void json_check_bytes(std::string_view text, std::string_view what);
[[noreturn]] void json_throw_syntax(std::string_view what, const nlohmann::json::exception& e);
[[noreturn]] void json_throw_too_deep(std::string_view what);

// nlohmann's SAX interface in front of a Sink: counts nesting (refusing more than
// kJsonMaxDepth) and turns parse errors into the policy's error.
template <class Sink>
class JsonPolicySax {
 public:
  JsonPolicySax(Sink& sink, std::string_view what) : sink_(sink), what_(what) {}

  bool null() { return sink_.null(), true; }
  bool boolean(bool v) { return sink_.boolean(v), true; }
  bool number_integer(int64_t v) { return sink_.number_integer(v), true; }
  bool number_unsigned(uint64_t v) { return sink_.number_unsigned(v), true; }
  bool number_float(double v, const std::string&) { return sink_.number_float(v), true; }
  bool string(std::string& v) { return sink_.string(v), true; }
  bool binary(nlohmann::json::binary_t&) { return false; }  // not produced by JSON text
  bool start_object(std::size_t) { return enter(), sink_.start_object(), true; }
  bool end_object() { return --depth_, sink_.end_object(), true; }
  bool start_array(std::size_t) { return enter(), sink_.start_array(), true; }
  bool end_array() { return --depth_, sink_.end_array(), true; }
  bool key(std::string& k) { return sink_.key(k, depth_), true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) { json_throw_syntax(what_, e); }

 private:
  void enter() {
    if (++depth_ > kJsonMaxDepth) json_throw_too_deep(what_);
  }

  Sink& sink_;
  std::string_view what_;
  int depth_ = 0;
};

}  // namespace detail

// The policy's parse with the events handed to `sink`, for a parser that builds its own
// structures (the safetensors header's tensor table). Sink has null(), boolean(bool),
// number_integer(int64_t), number_unsigned(uint64_t), number_float(double),
// string(std::string&), start_object(), key(std::string&, int depth), end_object(),
// start_array() and end_array(); the strings may be moved from. Errors as json_parse;
// exceptions thrown by the sink propagate unchanged.
template <class Sink>
void json_parse_events(std::string_view text, std::string_view what, Sink& sink) {
  detail::json_check_bytes(text, what);
  detail::JsonPolicySax<Sink> sax(sink, what);
  nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax);
}

}  // namespace tk
