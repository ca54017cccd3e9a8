// Provenance records in the `tk` metadata value.
#include "cli/provenance.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tk/core/error.h"

namespace tk::cli {
namespace {

using nlohmann::json;

const ProvenanceEntry kEntry{"tconvert", "0.1.0", {"in.h5", "-o", "out.safetensors"}};
const json kEntryJson = {{"tool", "tconvert"}, {"version", "0.1.0"}, {"args", {"in.h5", "-o", "out.safetensors"}}};

TEST(Provenance, StartsANewArrayWithoutPrevious) {
  EXPECT_EQ(provenance_merge(std::nullopt, kEntry),
            R"({"provenance":[{"args":["in.h5","-o","out.safetensors"],"tool":"tconvert","version":"0.1.0"}]})");
}

TEST(Provenance, AppendsAndKeepsOtherKeys) {
  json previous = {{"scheme", "mxfp4"}, {"provenance", {{{"tool", "tquant"}}}}};
  json merged = json::parse(provenance_merge(previous.dump(), kEntry));
  EXPECT_EQ(merged["scheme"], "mxfp4");
  ASSERT_EQ(merged["provenance"].size(), 2u);
  EXPECT_EQ(merged["provenance"][0], json({{"tool", "tquant"}}));
  EXPECT_EQ(merged["provenance"][1], kEntryJson);
}

TEST(Provenance, InvalidJsonIsKeptUnderPrevious) {
  json merged = json::parse(provenance_merge(std::string("not json {"), kEntry));
  EXPECT_EQ(merged["previous"], "not json {");
  EXPECT_EQ(merged["provenance"], json::array({kEntryJson}));
}

TEST(Provenance, NonObjectJsonIsKeptUnderPrevious) {
  json merged = json::parse(provenance_merge(std::string("[1,2]"), kEntry));
  EXPECT_EQ(merged["previous"], "[1,2]");
  EXPECT_EQ(merged["provenance"].size(), 1u);
}

// JSON nested deeper than the policy allows is kept as text: merging it as an object
// would give a document that no one can dump without recursing 10^5 levels.
TEST(Provenance, TooDeepJsonIsKeptUnderPrevious) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "0" + std::string(100000, '}');
  json merged = json::parse(provenance_merge(deep, kEntry));
  EXPECT_EQ(merged["previous"], deep);
  EXPECT_EQ(merged["provenance"], json::array({kEntryJson}));
}

TEST(Provenance, NonArrayProvenanceBecomesTheFirstElement) {
  json merged = json::parse(provenance_merge(std::string(R"({"provenance":"old"})"), kEntry));
  EXPECT_EQ(merged["provenance"], json::array({"old", kEntryJson}));
}

TEST(Provenance, AddUpdatesTheTkKeyOnly) {
  io::Metadata m = {{"format", "pt"}};
  provenance_add(m, kEntry);
  provenance_add(m, kEntry);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m["format"], "pt");
  EXPECT_EQ(json::parse(m["tk"])["provenance"].size(), 2u);
}

TEST(Provenance, PathArgumentsKeepTheirLastComponent) {
  // /tmp exists, so /tmp/out.h5 is a path; no one can create a directory under /proc/self,
  // so /proc/self/no-such-dir/y.safetensors (parent missing) is kept as it was written.
  const std::string missing = "/proc/self/no-such-dir/y.safetensors";
  const std::vector<std::string> args = {"/tmp", "/tmp/out.h5", "--output=/tmp/o.safetensors", missing,
                                         "blocks.*/attn=int4", "-j", "2"};
  EXPECT_EQ(provenance_args(args), (std::vector<std::string>{"tmp", "out.h5", "--output=o.safetensors", missing,
                                                             "blocks.*/attn=int4", "-j", "2"}));
}

TEST(Provenance, StampEditsThenRecordsThenAddsFormat) {
  OutputOptions o;
  o.set_metadata = {"license=mit", "note=a=b"};
  o.drop_metadata = {"author"};
  io::Metadata m = {{"author", "x"}, {"keep", "y"}};
  metadata_stamp(m, o, kEntry);
  EXPECT_EQ(m.size(), 5u);
  EXPECT_EQ(m["license"], "mit");
  EXPECT_EQ(m["note"], "a=b");
  EXPECT_EQ(m["format"], "pt");
  EXPECT_FALSE(m.count("author"));
  EXPECT_EQ(json::parse(m["tk"])["provenance"].size(), 1u);

  OutputOptions bare;
  bare.provenance = false;
  bare.drop_metadata = {"format"};
  io::Metadata empty;
  metadata_stamp(empty, bare, kEntry);
  EXPECT_TRUE(empty.empty());

  io::Metadata own = {{"format", "mlx"}};
  OutputOptions plain;
  metadata_stamp(own, plain, kEntry);
  EXPECT_EQ(own["format"], "mlx");  // the input's own format is kept
}

TEST(Provenance, EditsRefuseTheReservedKeyAndMalformedPairs) {
  struct Case {
    std::vector<std::string> set, drop;
  };
  const std::vector<Case> cases = {{{"novalue"}, {}}, {{"tk=1"}, {}}, {{}, {"tk"}}, {{"=v"}, {}}, {{"k=v"}, {"k"}}};
  for (const Case& c : cases) {
    OutputOptions o;
    o.set_metadata = c.set;
    o.drop_metadata = c.drop;
    io::Metadata m;
    bool usage = false;
    try {
      metadata_edit(m, o);
    } catch (const Error& e) {
      usage = e.kind() == ErrorKind::kUsage;
    }
    EXPECT_TRUE(usage) << (c.set.empty() ? c.drop[0] : c.set[0]);
  }
}

}  // namespace
}  // namespace tk::cli
