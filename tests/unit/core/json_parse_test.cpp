// The JSON policy: depth limit, duplicate keys, NUL and BOM, errors naming the document,
// member streaming and compact display.
#include "tk/core/json_parse_internal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"

namespace tk {
namespace {

using nlohmann::json;

std::string nested(int depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

std::string deep_objects(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "0";
  s += std::string(depth, '}');
  return s;
}

void expect_invalid(const std::string& text, const std::string& message) {
  try {
    json_parse(text, "metadata value 'tk'");
    ADD_FAILURE() << "accepted " << text.substr(0, 40);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(JsonParse, BuildsTheDom) {
  json j = json_parse(R"( {"b": [1, -2, 2.5, "x", true, null, {}], "a": {"c": []}} )", "doc");
  EXPECT_EQ(j, json::parse(R"({"a": {"c": []}, "b": [1, -2, 2.5, "x", true, null, {}]})"));
  EXPECT_EQ(json_parse("7", "doc"), json(7));
  EXPECT_EQ(json_parse(nested(kJsonMaxDepth), "doc").dump(), nested(kJsonMaxDepth));
}

TEST(JsonParse, RefusesDeepNesting) {
  const std::string m = "invalid JSON in metadata value 'tk': nested deeper than 127 levels";
  expect_invalid(nested(kJsonMaxDepth + 1), m);
  expect_invalid(nested(100000), m);
  expect_invalid(deep_objects(100000), m);
  expect_invalid(std::string(100000, '['), m);  // unterminated: the depth is hit first
  EXPECT_FALSE(json_parse_if_valid(deep_objects(100000)));
  EXPECT_FALSE(json_compact_if_valid(nested(100000)));
}

TEST(JsonParse, RefusesDuplicatesNulBomAndSyntaxErrors) {
  expect_invalid(R"({"a": 1, "b": {"k": 1, "k": 2}})", "invalid JSON in metadata value 'tk': duplicate key \"k\"");
  expect_invalid(std::string("{}\0{", 3), "invalid JSON in metadata value 'tk': NUL byte at offset 2");
  expect_invalid("\xEF\xBB\xBF{}", "invalid JSON in metadata value 'tk': starts with a byte order mark");
  try {
    json_parse("{\"a\": ", "shard index");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("invalid JSON in shard index: parse error at line 1, column 7", 0), 0u) << e.what();
  }
  EXPECT_FALSE(json_parse_if_valid("{\"a\": 1} x"));
  EXPECT_FALSE(json_compact_if_valid(R"({"k": 1, "k": 2})"));
}

TEST(JsonParse, CompactKeepsKeyOrder) {
  EXPECT_EQ(json_compact_if_valid(" {\"z\": [1, 2.50, \"\\u00e9\"], \"a\": {}, \"m\": []} "),
            std::optional<std::string>("{\"z\":[1,2.5,\"\xC3\xA9\"],\"a\":{},\"m\":[]}"));
  EXPECT_EQ(json_compact_if_valid(nested(kJsonMaxDepth)), nested(kJsonMaxDepth));
}

TEST(JsonParse, StreamsMembers) {
  std::vector<std::pair<int, std::string>> keys;
  std::vector<std::pair<std::string, json>> members;
  auto root = json_parse_members(
      R"({"b": {"x": [1, {"y": 2}]}, "a": 3, "b": null})", "header",
      [&](int depth, const std::string& k) { keys.emplace_back(depth, k); },
      [&](std::string&& k, json&& v) { members.emplace_back(std::move(k), std::move(v)); });
  EXPECT_FALSE(root);
  std::vector<std::pair<int, std::string>> want_keys = {{1, "b"}, {2, "x"}, {4, "y"}, {1, "a"}, {1, "b"}};
  EXPECT_EQ(keys, want_keys);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].first, "b");
  EXPECT_EQ(members[0].second, json::parse(R"({"x": [1, {"y": 2}]})"));
  EXPECT_EQ(members[1].second, json(3));
  EXPECT_TRUE(members[2].second.is_null());

  root = json_parse_members("[1, {\"a\": 2}]", "header", [](int, const std::string&) {},
                            [](std::string&&, json&&) { ADD_FAILURE(); });
  ASSERT_TRUE(root);
  EXPECT_EQ(*root, json::parse("[1, {\"a\": 2}]"));
}

TEST(JsonParse, BuildsOnlyTheMembersKept) {
  const std::string text = R"({"a": {"deep": [1, 2, {"x": null}]}, "keep": {"k": [true, "s"], "k": 2}, "n": 7})";
  const std::optional<json> kept = json_parse_object_members(text, "config", {"keep", "n", "absent"});
  ASSERT_TRUE(kept);
  // Nested duplicates are passed on (the last value wins), as Python's json reads them.
  EXPECT_EQ(*kept, json::parse(R"({"keep": {"k": 2}, "n": 7})"));
  EXPECT_FALSE(json_parse_object_members("[1, {}]", "config", {"a"}));
  EXPECT_FALSE(json_parse_object_members("\"text\"", "config", {"a"}));
  // The whole text is checked, kept or not.
  const std::string m = "invalid JSON in config: nested deeper than 127 levels";
  for (const std::string& bad : {"{\"a\": " + nested(100000) + "}", "{\"keep\": " + nested(200) + "}"}) {
    try {
      json_parse_object_members(bad, "config", {"keep"});
      ADD_FAILURE() << "accepted " << bad.substr(0, 20);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), m);
    }
  }
  EXPECT_EQ(test::kind_of([] { json_parse_object_members(R"({"a": 1, "a": 2})", "config", {}); }),
            ErrorKind::kInvalidInput);
  // The kept members hold a bounded number of values.
  EXPECT_EQ(test::kind_of([] { json_parse_object_members(R"({"keep": [1, 2, 3]})", "config", {"keep"}, 3); }),
            ErrorKind::kInvalidInput);
  EXPECT_NO_THROW(json_parse_object_members(R"({"keep": [1, 2], "big": [1, 2, 3, 4]})", "config", {"keep"}, 3));
}

TEST(JsonParse, AppendsAMemberToTheText) {
  EXPECT_EQ(json_object_append("{\n  \"a\": [1,2]  \n}\n", "q", "{\n  \"b\": 1\n}"),
            "{\n  \"a\": [1,2],\n  \"q\": {\n    \"b\": 1\n  }\n}\n");
  EXPECT_EQ(json_object_append("{ }", "q", "1"), "{\n  \"q\": 1\n}");
  EXPECT_EQ(json_object_append(R"({"a":{}})", "q", "[]"), "{\"a\":{},\n  \"q\": []\n}");
  // Linear in the text, whatever its nesting: the original bytes are not re-indented.
  const std::string deep = "{\"a\": " + nested(kJsonMaxDepth - 1) + "}";
  EXPECT_EQ(json_object_append(deep, "q", "0").size(), deep.size() + 11);
  EXPECT_EQ(test::kind_of([] { json_object_append("[1]", "q", "0"); }), ErrorKind::kInternal);
}

}  // namespace
}  // namespace tk
