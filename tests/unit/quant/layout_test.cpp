// The quantization metadata: round trip, provenance kept, malformed records rejected.
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tk/quant/layout.h"

namespace tk::quant {
namespace {

LayoutRecord sample_record() {
  LayoutRecord r;
  r.scheme = "kmeans:3";
  r.dtype = DType::kBF16;
  r.shape = {4, 6};
  r.params = {{"bits", "3"}, {"granularity", "channel"}};
  r.parts = {"codebook", "codes"};
  return r;
}

TEST(Layout, MetadataRoundTripKeepsOtherKeys) {
  std::string previous = R"({"provenance":[{"tool":"tconvert"}]})";
  std::string merged = layout_metadata_merge(previous, {{"w", sample_record()}});
  auto doc = nlohmann::json::parse(merged);
  EXPECT_EQ(doc["provenance"][0]["tool"], "tconvert");
  auto records = layout_metadata_parse(merged);
  ASSERT_EQ(records.size(), 1u);
  const LayoutRecord& r = records.at("w");
  EXPECT_EQ(r.scheme, "kmeans:3");
  EXPECT_EQ(r.dtype, DType::kBF16);
  EXPECT_EQ(r.shape, (Shape{4, 6}));
  EXPECT_EQ(r.params, sample_record().params);
  EXPECT_EQ(r.parts, sample_record().parts);
  EXPECT_EQ(layout_metadata_merge(std::nullopt, {{"w", sample_record()}}),
            layout_metadata_merge(std::nullopt, {{"w", sample_record()}}));
}

TEST(Layout, MalformedMetadataIsInvalidInput) {
  for (const char* bad : {"not json", "{}", R"({"quant":{"version":2,"tensors":{}}})",
                          R"({"quant":{"version":1}})",
                          R"({"quant":{"version":1,"tensors":{"w":{"scheme":"int4"}}}})",
                          R"({"quant":{"version":1,"tensors":{"w":{"scheme":"int4","dtype":"I32","shape":[2],"params":{},"parts":[]}}}})",
                          R"({"quant":{"version":1,"tensors":{"w":{"scheme":"int4","dtype":"F32","shape":[-2],"params":{},"parts":[]}}}})"}) {
    EXPECT_EQ(test::kind_of([&] { layout_metadata_parse(bad); }), ErrorKind::kInvalidInput) << bad;
  }
}

TEST(Layout, CollectNamesTheMissingPart) {
  Tensor codes = Tensor::zeros(DType::kU8, {9});
  auto lookup = [&](const std::string& name) -> const Tensor* { return name == "w.codes" ? &codes : nullptr; };
  test::expect_error_exact([&] { layout_collect("w", sample_record(), lookup); }, ErrorKind::kInvalidInput,
                           "missing part 'w.codebook'", "tensor 'w'");
}

TEST(Layout, ImportanceChecksLength) {
  std::map<std::string, std::vector<float>> imp = {{"w", {1, 2, 3}}};
  EXPECT_EQ(importance_for(imp, "other", 3), nullptr);
  EXPECT_EQ(importance_for(imp, "w", 3), imp["w"].data());
  EXPECT_EQ(test::kind_of([&] { importance_for(imp, "w", 4); }), ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace tk::quant
