// Sharded safetensors models: the committed two-shard model opened by index and by
// directory, metadata merging, and every validation rule on hand-made indexes.
#include <gtest/gtest.h>

#include "test_util.h"
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/sharded.h"

namespace tk::io {
namespace {

const std::string kModelDir = std::string(TK_TESTDATA_DIR) + "/sharded";
const std::string kIndex = kModelDir + "/model.safetensors.index.json";

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("tk_sharded") {}
};

// A safetensors file of U8 tensors, written by hand so that these tests depend only on
// the reader: each tensor is {name, bytes}, stored in the given order.
std::string safetensors_bytes(const std::vector<std::pair<std::string, std::string>>& tensors,
                              const std::string& metadata_json = "") {
  std::string header = "{";
  std::string data;
  if (!metadata_json.empty()) header += "\"__metadata__\":" + metadata_json;
  for (const auto& [name, bytes] : tensors) {
    if (header.size() > 1) header += ",";
    header += "\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(bytes.size()) +
              "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + bytes.size()) + "]}";
    data += bytes;
  }
  header += "}";
  while ((8 + header.size()) % 8) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

std::string index_json(const std::string& weight_map, const std::string& metadata = "") {
  return "{" + (metadata.empty() ? "" : "\"metadata\": " + metadata + ", ") + "\"weight_map\": " + weight_map + "}";
}

using test::expect_error_exact;

std::vector<std::string> names(const TensorReader& r) {
  std::vector<std::string> out;
  for (const auto& t : r.tensors()) out.push_back(t.name);
  return out;
}

TEST(Sharded, OpensTheModelByIndex) {
  auto r = sharded_open(kIndex, {});
  EXPECT_EQ(r->format(), FileFormat::kShardIndex);
  EXPECT_TRUE(r->random_access());
  // Shard by shard, each in its storage order (the reference writer's: alignment, name).
  EXPECT_EQ(names(*r), (std::vector<std::string>{"model.embed_tokens.weight", "model.layers.0.norm.weight",
                                                 "model.layers.0.mlp.weight", "step", "lm_head.weight",
                                                 "model.norm.weight", "model.layers.1.mlp.weight"}));
  const auto& infos = r->tensors();
  EXPECT_EQ(infos[0].dtype, DType::kF32);
  EXPECT_EQ(infos[0].shape, (Shape{16, 8}));
  EXPECT_EQ(infos[2].dtype, DType::kF16);
  EXPECT_EQ(infos[3].dtype, DType::kI64);
  EXPECT_EQ(infos[3].shape, Shape{});
  EXPECT_EQ(r->metadata(), (Metadata{{"format", "pt"}, {"total_size", "1352"}}));

  Tensor step = r->read(*r->find("step"));
  EXPECT_EQ(step.data_as<int64_t>()[0], 1234);
  Tensor norm = r->read(*r->find("model.norm.weight"));
  ASSERT_EQ(norm.numel(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(norm.data_as<float>()[i], 0.5f);
  Tensor norm0 = r->read(*r->find("model.layers.0.norm.weight"));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(norm0.data_as<float>()[i], 1.0f);
  // Random access, zero-copy views of the mapped shards.
  Tensor again = r->read(*r->find("model.norm.weight"));
  EXPECT_EQ(again.data(), norm.data());
  EXPECT_FALSE(again.buffer().writable());
}

TEST(Sharded, OpensTheModelByDirectory) {
  EXPECT_EQ(sharded_find_in_directory(kModelDir), kIndex);
  EXPECT_EQ(sharded_find_in_directory(kModelDir + "/"), kIndex);
  auto r = open_reader(kModelDir);
  EXPECT_EQ(r->format(), FileFormat::kShardIndex);
  EXPECT_EQ(r->tensors().size(), 7u);
  auto by_index = open_reader(kIndex);
  EXPECT_EQ(names(*by_index), names(*r));
}

TEST(Sharded, FindInDirectory) {
  TempDir dir;
  expect_error_exact([&] { sharded_find_in_directory(dir.path()); }, ErrorKind::kInvalidInput,
               "no *.safetensors.index.json or *.safetensors file in directory", dir.path());
  dir.write("b.safetensors", safetensors_bytes({{"x", "1"}}));
  EXPECT_EQ(sharded_find_in_directory(dir.path()), dir.path() + "/b.safetensors");
  dir.write("a.safetensors", safetensors_bytes({{"y", "2"}}));
  expect_error_exact([&] { sharded_find_in_directory(dir.path()); }, ErrorKind::kInvalidInput,
               "several .safetensors files and no index in directory: a.safetensors, b.safetensors; open one by path");
  dir.write("model.safetensors.index.json", index_json(R"({"x": "b.safetensors"})"));
  EXPECT_EQ(sharded_find_in_directory(dir.path()), dir.path() + "/model.safetensors.index.json");
  dir.write("other.safetensors.index.json", index_json(R"({"y": "a.safetensors"})"));
  expect_error_exact([&] { sharded_find_in_directory(dir.path()); }, ErrorKind::kInvalidInput,
               "several shard indexes in directory: model.safetensors.index.json, "
               "other.safetensors.index.json; open one by path");
  expect_error_exact([&] { sharded_find_in_directory(dir.path() + "/missing"); }, ErrorKind::kIo,
               "failed to list directory: No such file or directory");
}

TEST(Sharded, MetadataMergeIndexWins) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "ab"}}, R"({"format":"pt","from":"a","only_a":"1"})"));
  dir.write("b.safetensors", safetensors_bytes({{"v", "c"}}, R"({"format":"np","from":"b"})"));
  std::string index = dir.write(
      "m.index.json",
      index_json(R"({"w": "a.safetensors", "v": "b.safetensors"})",
                 R"({"total_size": 3, "format": "index", "ratio": 0.5, "flag": true, "list": [1, 2]})"));
  auto r = sharded_open(index, {});
  EXPECT_EQ(r->metadata(), (Metadata{{"format", "index"},
                                     {"from", "a"},
                                     {"only_a", "1"},
                                     {"total_size", "3"},
                                     {"ratio", "0.5"},
                                     {"flag", "true"},
                                     {"list", "[1,2]"}}));
  EXPECT_EQ(names(*r), (std::vector<std::string>{"w", "v"}));
  Tensor w = r->read(0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.data()), w.nbytes()), "ab");
}

TEST(Sharded, TensorsNotInTheWeightMapAreLeftOut) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}, {"extra", "b"}, {"z", "c"}}));
  auto r = sharded_open(dir.write("i.json", index_json(R"({"z": "a.safetensors", "w": "a.safetensors"})")), {});
  EXPECT_EQ(names(*r), (std::vector<std::string>{"w", "z"}));
  EXPECT_EQ(r->read(1).data()[0], 'c');
}

TEST(Sharded, MissingShard) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}}));
  std::string index = dir.write("i.json", index_json(R"({"w": "a.safetensors", "v": "b.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
               "shard 'b.safetensors' listed in the index does not exist", index);
  std::string fixture = std::string(TK_TESTDATA_DIR) + "/malformed/index-missing-shard.index.json";
  expect_error_exact([&] { open_reader(fixture); }, ErrorKind::kInvalidInput,
               "shard 'absent.safetensors' listed in the index does not exist", fixture);
}

TEST(Sharded, MissingTensor) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}}));
  dir.write("b.safetensors", safetensors_bytes({{"v", "a"}}));
  std::string index = dir.write("i.json", index_json(R"({"w": "a.safetensors", "v": "a.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
               "tensor 'v' listed in the index is missing from shard 'a.safetensors'", index);
  index = dir.write("j.json", index_json(R"({"w": "a.safetensors", "u": "b.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
               "tensor 'u' listed in the index is missing from shard 'b.safetensors'", index);
}

TEST(Sharded, ShardPathsMustStayInTheIndexDirectory) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}}));
  for (std::string shard : {"../a.safetensors", "/etc/passwd", "sub/a.safetensors", "..", ".", "",
                            "./a.safetensors"}) {
    SCOPED_TRACE(shard);
    std::string index = dir.write("i.json", index_json(R"({"w": ")" + shard + R"("})"));
    expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
                 "shard '" + shard + "' of tensor 'w' is not a plain file name in the index's directory", index);
  }
  std::string fixture = std::string(TK_TESTDATA_DIR) + "/malformed/index-traversal.index.json";
  expect_error_exact([&] { sharded_open(fixture, {}); }, ErrorKind::kInvalidInput,
               "shard '../sharded/model-00001-of-00002.safetensors' of tensor 'w' is not a plain file name in "
               "the index's directory");
}

TEST(Sharded, DuplicateNames) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}}));
  dir.write("b.safetensors", safetensors_bytes({{"v", "b"}, {"w", "c"}}));
  std::string index = dir.write("i.json", index_json(R"({"w": "a.safetensors", "v": "b.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
               "tensor 'w' is stored in both shard 'a.safetensors' and shard 'b.safetensors'", index);
  index = dir.write("j.json", index_json(R"({"w": "a.safetensors", "w": "a.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput,
               "invalid JSON in shard index: duplicate key \"w\"", index);
}

TEST(Sharded, MalformedIndexes) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_bytes({{"w", "a"}}));
  dir.write("not.safetensors", "this is not a tensor file at all");
  const std::string m = "malformed shard index: ";
  const std::pair<std::string, std::string> cases[] = {
      {"[1, 2]", m + "not a JSON object"},
      {"{}", m + "no \"weight_map\" object"},
      {R"({"weight_map": []})", m + "no \"weight_map\" object"},
      {R"({"weight_map": {}})", m + "\"weight_map\" is empty"},
      {R"({"weight_map": {"w": 1}})", m + "shard of tensor 'w' is not a string"},
      {R"({"weight_map": {"w": "a.safetensors"}, "metadata": "x"})", m + "\"metadata\" is not an object"},
      {R"({"weight_map": {"w\n": "a.safetensors"}})", "tensor 'w\n' listed in the index is missing from shard "
                                                      "'a.safetensors'"},
  };
  for (const auto& [json, message] : cases) {
    SCOPED_TRACE(json);
    std::string index = dir.write("i.json", json);
    expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput, message, index);
  }
  std::string index = dir.write("j.json", "{\"weight_map\": {\"w\": ");
  try {
    sharded_open(index, {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()).rfind("invalid JSON in shard index: ", 0), 0u) << e.what();
  }
  index = dir.write("k.json", index_json(R"({"w": "not.safetensors"})"));
  expect_error_exact([&] { sharded_open(index, {}); }, ErrorKind::kInvalidInput, "shard is not a safetensors file",
               dir.path() + "/not.safetensors");
  std::string fixture = std::string(TK_TESTDATA_DIR) + "/malformed/index-no-weight-map.index.json";
  expect_error_exact([&] { open_reader(fixture); }, ErrorKind::kInvalidInput, m + "no \"weight_map\" object", fixture);
}

}  // namespace
}  // namespace tk::io
