// The JSON policy (json_parse_internal.h): nlohmann's SAX parser feeding one event
// front that counts depth and reports errors (detail::JsonPolicySax), and behind it a
// DOM builder, a compact writer, or a caller's own sink. nlohmann's own DOM parsers are
// not used: json::parse with a callback rescans the parent at each closing brace
// (quadratic in the members of an object), and none of them bounds the depth.
#include "tk/core/json_parse_internal.h"

#include <algorithm>
#include <set>
#include <vector>

#include "tk/core/error.h"

namespace tk {

namespace {

using nlohmann::json;

// nlohmann's messages start with "[json.exception.parse_error.101] "; keep the rest,
// bounded and on one line.
std::string json_error_text(const char* what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0) {
    size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

// A key for a one-line message: JSON-quoted (control characters escaped), long keys
// shortened.
std::string quoted_key(const std::string& key) {
  constexpr size_t kMaxShown = 96;
  std::string shown = json(key.substr(0, kMaxShown)).dump(-1, ' ', false, json::error_handler_t::replace);
  return key.size() > kMaxShown ? shown + "..." : shown;
}

Error invalid_json(std::string_view what, const std::string& detail) {
  return invalid_input("invalid JSON in " + std::string(what) + ": " + detail);
}

// Scalars as values, for the sinks below.
template <class Derived>
struct ValueSink {
  void null() { self().value(json(nullptr)); }
  void boolean(bool v) { self().value(json(v)); }
  void number_integer(int64_t v) { self().value(json(v)); }
  void number_unsigned(uint64_t v) { self().value(json(v)); }
  void number_float(double v) { self().value(json(v)); }
  // The lexer clears its buffer before it reads the next token, so it may be moved from.
  void string(std::string& v) { self().value(json(std::move(v))); }
  void start_object() { self().start(json::value_t::object); }
  void start_array() { self().start(json::value_t::array); }
  void end_object() { self().end(); }
  void end_array() { self().end(); }
  Derived& self() { return static_cast<Derived&>(*this); }
};

// Builds a DOM from the events. Streaming mode (with `on_member`): the members of a
// top-level object are built one at a time and handed over instead of being kept.
class DomBuilder : public ValueSink<DomBuilder> {
 public:
  DomBuilder(std::string_view what, bool reject_duplicates, const JsonKeyHandler* on_key = nullptr,
             const JsonMemberHandler* on_member = nullptr)
      : what_(what), reject_duplicates_(reject_duplicates), on_key_(on_key), on_member_(on_member) {}

  void value(json&& v) {
    place(std::move(v));
    member_done();
  }
  void start(json::value_t type) { stack_.push_back(place(json(type))); }
  void end() {
    stack_.pop_back();
    member_done();
  }
  void key(std::string& k, int depth) {
    if (on_key_) (*on_key_)(depth, k);
    if (streaming_at_top()) {
      member_key_ = std::move(k);
      slot_ = &member_;
      return;
    }
    auto [it, inserted] = stack_.back()->get_ref<json::object_t&>().try_emplace(std::move(k));
    if (!inserted) {
      if (reject_duplicates_) throw invalid_json(what_, "duplicate key " + quoted_key(it->first));
      it->second = json();  // the last value wins, as in nlohmann's own parser
    }
    slot_ = &it->second;
  }

  json& root() { return root_; }

 private:
  bool streaming_at_top() const { return on_member_ && stack_.size() == 1 && stack_[0]->is_object(); }

  // Put `v` where the current container expects its next element; return where it is.
  // Pointers on the stack stay valid: only the innermost container ever grows.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      auto& array = top.get_ref<json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }

  void member_done() {
    if (!streaming_at_top()) return;
    (*on_member_)(std::move(member_key_), std::move(member_));
    member_ = json();
  }

  std::string_view what_;
  bool reject_duplicates_;
  const JsonKeyHandler* on_key_;
  const JsonMemberHandler* on_member_;
  json root_;
  std::vector<json*> stack_;  // open containers, outermost first
  json* slot_ = nullptr;      // the value of the key just read
  std::string member_key_;
  json member_;
};

// Writes the events back as compact JSON (nlohmann's dump(-1) spelling of each
// value), refusing duplicate keys as json_parse does.
class CompactWriter : public ValueSink<CompactWriter> {
 public:
  void value(json&& v) {
    separate();
    out_ += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  void start(json::value_t type) {
    separate();
    bool object = type == json::value_t::object;
    out_ += object ? '{' : '[';
    open_.push_back({object, true, {}});
  }
  void end() {
    out_ += open_.back().object ? '}' : ']';
    open_.pop_back();
  }
  void key(std::string& k, int) {
    separate();
    out_ += json(k).dump(-1, ' ', false, json::error_handler_t::replace);
    out_ += ':';
    after_key_ = true;
    if (!open_.back().keys.insert(std::move(k)).second) throw invalid_input("duplicate key");
  }

  std::string& text() { return out_; }

 private:
  struct Open {
    bool object;
    bool empty;
    std::set<std::string> keys;
  };

  void separate() {
    if (after_key_) {
      after_key_ = false;
    } else if (!open_.empty()) {
      if (!open_.back().empty) out_ += ',';
      open_.back().empty = false;
    }
  }

  std::string out_;
  std::vector<Open> open_;
  bool after_key_ = false;
};

// Builds the top-level members of an object whose keys are in `keep` (a DomBuilder for
// each while it is read); every other event is only counted for depth.
class SelectedMembers {
 public:
  SelectedMembers(std::string_view what, const std::vector<std::string>& keep, uint64_t max_values)
      : what_(what), keep_(keep), max_values_(max_values) {}

  void null() { value(json(nullptr)); }
  void boolean(bool v) { value(json(v)); }
  void number_integer(int64_t v) { value(json(v)); }
  void number_unsigned(uint64_t v) { value(json(v)); }
  void number_float(double v) { value(json(v)); }
  void string(std::string& v) {
    if (building()) value(json(std::move(v)));
  }
  void start_object() { start(json::value_t::object); }
  void start_array() { start(json::value_t::array); }
  void end_object() { end(); }
  void end_array() { end(); }
  void key(std::string& k, int depth) {
    if (!root_object_) return;
    if (depth > 1) {
      if (building()) builder_->key(k, depth - 1);
      return;
    }
    if (!top_keys_.insert(k).second) throw invalid_json(what_, "duplicate key " + quoted_key(k));
    if (std::find(keep_.begin(), keep_.end(), k) == keep_.end()) return;
    builder_.emplace(what_, /*reject_duplicates=*/false);
    member_key_ = k;
  }

  bool root_object() const { return root_object_; }
  json& members() { return members_; }

 private:
  bool building() const { return builder_.has_value(); }

  void count() {
    if (++values_ > max_values_)
      throw invalid_json(what_, "the members read hold more than " + std::to_string(max_values_) + " values");
  }
  void value(json&& v) {
    if (depth_ == 0) root_object_ = false;
    if (!building()) return;
    count();
    builder_->value(std::move(v));
    if (depth_ == 1) finish();
  }
  void start(json::value_t type) {
    if (++depth_ == 1) {
      root_object_ = type == json::value_t::object;
      return;
    }
    if (!building()) return;
    count();
    builder_->start(type);
  }
  void end() {
    if (building()) {
      builder_->end();
      if (depth_ == 2) finish();
    }
    --depth_;
  }
  void finish() {
    members_[member_key_] = std::move(builder_->root());
    builder_.reset();
  }

  std::string_view what_;
  const std::vector<std::string>& keep_;
  uint64_t max_values_;
  uint64_t values_ = 0;
  int depth_ = 0;  // containers open
  bool root_object_ = false;
  std::set<std::string> top_keys_;
  std::optional<DomBuilder> builder_;  // the kept member being read
  std::string member_key_;
  json members_ = json::object();
};

}  // namespace

namespace detail {

// Checks nlohmann's lexer does not make: it ends the input at a NUL byte (as if parsing
// a C string) and skips a byte order mark; JSON allows neither.
void json_check_bytes(std::string_view text, std::string_view what) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw invalid_json(what, "NUL byte at offset " + std::to_string(nul));
  if (text.starts_with("\xEF\xBB\xBF")) throw invalid_json(what, "starts with a byte order mark");
}

void json_throw_syntax(std::string_view what, const json::exception& e) {
  throw invalid_json(what, json_error_text(e.what()));
}

void json_throw_too_deep(std::string_view what) {
  throw invalid_json(what, "nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
}

}  // namespace detail

json json_parse(std::string_view text, std::string_view what, const std::string& where) {
  DomBuilder builder(what, /*reject_duplicates=*/true);
  try {
    json_parse_events(text, what, builder);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  return std::move(builder.root());
}

std::optional<json> json_parse_if_valid(std::string_view text) {
  try {
    return json_parse(text, "text");
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<std::string> json_compact_if_valid(std::string_view text) {
  CompactWriter writer;
  try {
    json_parse_events(text, "text", writer);
  } catch (const Error&) {
    return std::nullopt;
  }
  return std::move(writer.text());
}

std::optional<json> json_parse_members(std::string_view text, std::string_view what, const JsonKeyHandler& on_key,
                                       const JsonMemberHandler& on_member) {
  DomBuilder builder(what, /*reject_duplicates=*/false, &on_key, &on_member);
  json_parse_events(text, what, builder);
  if (builder.root().is_object()) return std::nullopt;
  return std::move(builder.root());
}

std::optional<json> json_parse_object_members(std::string_view text, std::string_view what,
                                              const std::vector<std::string>& keep, uint64_t max_values) {
  SelectedMembers sink(what, keep, max_values);
  json_parse_events(text, what, sink);
  if (!sink.root_object()) return std::nullopt;
  return std::move(sink.members());
}

std::string json_object_append(std::string_view object_text, std::string_view key, std::string_view value_json,
                               int indent) {
  constexpr const char* kSpace = " \t\r\n";
  const size_t close = object_text.find_last_not_of(kSpace);
  if (close == std::string_view::npos || close == 0 || object_text[close] != '}')
    throw internal_error("json_object_append: not the text of a JSON object");
  // After the last member, or after the opening brace of an empty object (no value ends
  // in '{').
  const size_t last = object_text.find_last_not_of(kSpace, close - 1);
  if (last == std::string_view::npos) throw internal_error("json_object_append: not the text of a JSON object");
  const size_t body_end = last + 1;
  const bool was_empty = object_text[last] == '{';
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out;
  out.reserve(object_text.size() + key.size() + value_json.size() + value_json.size() / 8 + 16);
  out.append(object_text.substr(0, body_end));
  out += was_empty ? "\n" : ",\n";
  out += pad;
  out += json(std::string(key)).dump();
  out += ": ";
  for (char c : value_json) {
    out += c;
    if (c == '\n') out += pad;
  }
  out += '\n';
  out.append(object_text.substr(close));
  return out;
}

}  // namespace tk
