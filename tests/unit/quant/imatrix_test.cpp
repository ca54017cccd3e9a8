// llama.cpp's legacy imatrix (.dat) parser on files built by hand, hostile counts and
// lengths, and the llama.cpp <-> Hugging Face name mapping. The GGUF form and the output
// tquant makes with either are the interop test's (test_tquant_imatrix.py).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"
#include "tk/quant/imatrix.h"

namespace tk::quant {
namespace {

using test::kind_of;

struct Dat {
  std::vector<uint8_t> bytes;
  void i32(int32_t v) { raw(&v, 4); }
  void f32(float v) { raw(&v, 4); }
  void text(const std::string& s) { raw(s.data(), s.size()); }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
};

Dat two_entries() {
  Dat d;
  d.i32(2);
  d.i32(19), d.text("blk.0.attn_q.weight"), d.i32(4), d.i32(2), d.f32(8.0f), d.f32(2.0f);
  d.i32(13), d.text("output.weight"), d.i32(0), d.i32(1), d.f32(0.5f);
  d.i32(10), d.i32(5), d.text("a.txt");  // last chunk, dataset name
  return d;
}

TEST(Imatrix, LegacyValuesAreMeansTimesNcall) {
  const ImportanceMap m = imatrix_parse_legacy(two_entries().bytes);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("blk.0.attn_q.weight"), (std::vector<float>{2.0f, 0.5f}));
  EXPECT_EQ(m.at("output.weight"), (std::vector<float>{0.5f}));  // ncall 0: as stored
}

TEST(Imatrix, LegacyRefusesTruncatedAndOversizedFiles) {
  const Dat good = two_entries();
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, size_t{30}, size_t{40}}) {
    SCOPED_TRACE(cut);
    const std::vector<uint8_t> part(good.bytes.begin(), good.bytes.begin() + cut);
    EXPECT_EQ(kind_of([&] { imatrix_parse_legacy(part); }), ErrorKind::kInvalidInput);
  }
  Dat huge;  // counts that claim more than the file holds fail before any allocation
  huge.i32(0x7fffffff), huge.i32(1), huge.text("x"), huge.i32(1), huge.i32(1), huge.f32(1);
  EXPECT_EQ(kind_of([&] { imatrix_parse_legacy(huge.bytes); }), ErrorKind::kInvalidInput);
  Dat values;
  values.i32(1), values.i32(1), values.text("x"), values.i32(1), values.i32(0x7fffffff), values.f32(1), values.f32(1);
  values.f32(1), values.f32(1);
  EXPECT_EQ(kind_of([&] { imatrix_parse_legacy(values.bytes); }), ErrorKind::kInvalidInput);
  Dat dup;
  dup.i32(2);
  for (int i = 0; i < 2; ++i) dup.i32(1), dup.text("x"), dup.i32(1), dup.i32(1), dup.f32(1);
  EXPECT_EQ(kind_of([&] { imatrix_parse_legacy(dup.bytes); }), ErrorKind::kInvalidInput);
}

TEST(Imatrix, ClipBoundsAColumnByTheMedian) {
  // A massive-activation column 1e6 times the others: clipped to `ratio` times the median.
  std::vector<float> w = {1, 2, 3, 4, 5, 6e6f};
  importance_clip(w, 100);
  EXPECT_EQ(w, (std::vector<float>{1, 2, 3, 4, 5, 400}));  // median of six: the upper middle, 4
  // Zero columns do not count towards the median; below the cap nothing moves.
  std::vector<float> z = {0, 0, 0, 0, 2, 3, 1000};
  importance_clip(z, 100);
  EXPECT_EQ(z, (std::vector<float>{0, 0, 0, 0, 2, 3, 300}));
  std::vector<float> flat = {0, 0, 0};
  importance_clip(flat, 100);
  EXPECT_EQ(flat, (std::vector<float>{0, 0, 0}));
  std::vector<float> calm = {1, 50, 99};
  importance_clip(calm, 100);
  EXPECT_EQ(calm, (std::vector<float>{1, 50, 99}));
}

TEST(Imatrix, NamesMapBothWays) {
  EXPECT_EQ(llama_to_hf_name("blk.12.attn_q.weight"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(llama_to_hf_name("blk.0.ffn_down.weight"), "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(llama_to_hf_name("output.weight"), "lm_head.weight");
  EXPECT_EQ(llama_to_hf_name("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(hf_to_llama_name("model.layers.3.post_attention_layernorm.weight"), "blk.3.ffn_norm.weight");
  EXPECT_EQ(hf_to_llama_name("model.layers.3.self_attn.o_proj.bias"), "blk.3.attn_output.bias");
  EXPECT_EQ(llama_to_hf_name("blk.x.attn_q.weight"), std::nullopt);
  EXPECT_EQ(hf_to_llama_name("model.layers.1.unknown.weight"), std::nullopt);
}

TEST(Imatrix, MatchKeysEntriesByTheInputsNames) {
  const ImportanceMap imp = {{"blk.0.attn_q.weight", {1.0f}}, {"blk.9.attn_q.weight", {2.0f}}};
  std::vector<std::string> unmatched;
  const ImportanceMap m =
      importance_match(imp, {"model.layers.0.self_attn.q_proj.weight", "model.norm.weight"}, &unmatched);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at("model.layers.0.self_attn.q_proj.weight"), std::vector<float>{1.0f});
  EXPECT_EQ(unmatched, std::vector<std::string>{"blk.9.attn_q.weight"});
}

}  // namespace
}  // namespace tk::quant
