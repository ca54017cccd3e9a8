// llama.cpp's rules for GGUF models (gguf_rules.h) and the JSON form of typed pairs
// (gguf_kv_json.h): which tensors stay F32, the file type, the fallback types, and a
// round trip of every pair type that must come back byte for byte.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"
#include "tk/io/gguf_kv_json.h"
#include "tk/io/gguf_rules.h"

namespace tk::io {
namespace {

using test::kind_of;

TEST(GgufRules, KeepsWhatLlamaQuantizeDoesNotQuantize) {
  EXPECT_TRUE(gguf_keeps_f32("blk.0.attn_norm.weight", 1));
  EXPECT_TRUE(gguf_keeps_f32("blk.0.attn_q.bias", 1));
  EXPECT_TRUE(gguf_keeps_f32("blk.3.ffn_gate_inp.weight", 2));
  EXPECT_TRUE(gguf_keeps_f32("blk.3.ssm_conv1d.weight", 2));
  EXPECT_TRUE(gguf_keeps_f32("position_embd.weight", 2));
  EXPECT_TRUE(gguf_keeps_f32("token_types.weight", 2));
  EXPECT_TRUE(gguf_keeps_f32("blk.0.odd", 2));  // llama-quantize quantizes only *weight
  EXPECT_FALSE(gguf_keeps_f32("blk.0.attn_q.weight", 2));
  EXPECT_FALSE(gguf_keeps_f32("token_embd.weight", 2));
  EXPECT_FALSE(gguf_keeps_f32("blk.0.ffn_down_exps.weight", 3));
}

TEST(GgufRules, FileTypeIsTheMostCommonTypeOfTheWeights) {
  const Shape m{256, 256}, v{256};
  std::vector<GgufTensorDecl> d = {{"blk.0.attn_norm.weight", v, GgmlType::kF32},
                                   {"blk.1.attn_norm.weight", v, GgmlType::kF32},
                                   {"blk.2.attn_norm.weight", v, GgmlType::kF32},
                                   {"blk.0.attn_q.weight", m, GgmlType::kQ4_K},
                                   {"blk.0.attn_k.weight", m, GgmlType::kQ4_K},
                                   {"blk.0.ffn_down.weight", m, GgmlType::kQ6_K}};
  EXPECT_EQ(gguf_file_type(d), 15u);  // MOSTLY_Q4_K_M: the F32 norms do not count
  d[5].type = GgmlType::kBF16;
  d[4].type = GgmlType::kBF16;
  d[3].type = GgmlType::kBF16;
  EXPECT_EQ(gguf_file_type(d), 32u);
  for (auto& t : d) t.type = GgmlType::kF32;
  EXPECT_EQ(gguf_file_type(d), 0u);
  d[3].type = GgmlType::kQ8_K;  // no LLAMA_FTYPE: left to llama.cpp's guess
  d[4].type = d[5].type = GgmlType::kQ8_K;
  EXPECT_EQ(gguf_file_type(d), std::nullopt);
}

TEST(GgufRules, AStatedMixHoldsWhileItsBaseTypeLeads) {
  const Shape m{256, 256};
  std::vector<GgufTensorDecl> d = {{"blk.0.attn_q.weight", m, GgmlType::kQ4_K},
                                   {"blk.0.attn_k.weight", m, GgmlType::kQ4_K},
                                   {"blk.0.attn_v.weight", m, GgmlType::kQ6_K}};
  EXPECT_TRUE(gguf_file_type_holds(14, d));   // Q4_K_S
  EXPECT_TRUE(gguf_file_type_holds(15, d));   // Q4_K_M
  EXPECT_FALSE(gguf_file_type_holds(1, d));   // F16: the input's, not this file's
  EXPECT_FALSE(gguf_file_type_holds(999, d));
}

TEST(GgufRules, FallbacksAreLlamaQuantizes) {
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ4_K, 576), GgmlType::kQ5_0);
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ5_K, 576), GgmlType::kQ5_1);
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ6_K, 576), GgmlType::kQ8_0);
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ2_K, 576), GgmlType::kIQ4_NL);
  EXPECT_EQ(gguf_fallback_type(GgmlType::kTQ2_0, 576), GgmlType::kQ4_0);
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ4_K, 40), std::nullopt);  // not whole 32-blocks either
  EXPECT_EQ(gguf_fallback_type(GgmlType::kQ4_0, 576), std::nullopt);
}

GgufKv scalar(std::string key, GgufValueType type, const void* bytes, size_t n) {
  GgufKv kv{std::move(key), type, std::vector<uint8_t>(n)};
  std::memcpy(kv.value.data(), bytes, n);
  return kv;
}

TEST(GgufKvJson, EveryTypeRoundTripsBitForBit) {
  const uint64_t u64 = std::numeric_limits<uint64_t>::max();
  const int64_t i64 = std::numeric_limits<int64_t>::min();
  const uint32_t nan_bits = 0x7fc00123, neg_zero = 0x80000000;
  const double inf = -std::numeric_limits<double>::infinity(), tenth = 0.1;
  const int8_t i8 = -128;
  const uint8_t yes = 1;
  std::vector<GgufKv> kvs = {scalar("u64", GgufValueType::kU64, &u64, 8), scalar("i64", GgufValueType::kI64, &i64, 8),
                             scalar("nan", GgufValueType::kF32, &nan_bits, 4),
                             scalar("negzero", GgufValueType::kF32, &neg_zero, 4),
                             scalar("inf", GgufValueType::kF64, &inf, 8), scalar("tenth", GgufValueType::kF64, &tenth, 8),
                             scalar("i8", GgufValueType::kI8, &i8, 1), scalar("bool", GgufValueType::kBool, &yes, 1),
                             gguf_kv_string("utf8", "w\xc3\xb6rld \"q\""), gguf_kv_string("bytes", "\xff\xfe\x00x"),
                             gguf_kv_u32("u32", 4000000000u)};
  GgufKv strings{"strings", GgufValueType::kArray, {}};
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    strings.value.insert(strings.value.end(), b, b + n);
  };
  const uint32_t elem = static_cast<uint32_t>(GgufValueType::kString);
  const uint64_t count = 2, len0 = 2, len1 = 1;
  put(&elem, 4), put(&count, 8), put(&len0, 8), put("ab", 2), put(&len1, 8), put("\x80", 1);
  kvs.push_back(strings);
  const std::string text = gguf_kvs_to_json(kvs);
  const std::vector<GgufKv> back = gguf_kvs_from_json(text);
  ASSERT_EQ(back.size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    SCOPED_TRACE(kvs[i].key);
    EXPECT_EQ(back[i].key, kvs[i].key);
    EXPECT_EQ(back[i].type, kvs[i].type);
    EXPECT_EQ(back[i].value, kvs[i].value);
  }
  EXPECT_NE(text.find("\"18446744073709551615\""), std::string::npos);
  EXPECT_NE(text.find("\"0x7fc00123\""), std::string::npos);
}

TEST(GgufKvJson, RefusesKeysThatAreNotUtf8) {
  EXPECT_EQ(kind_of([] { gguf_kvs_to_json({gguf_kv_u32("bad\xff", 1)}); }), ErrorKind::kInvalidInput);
}

TEST(GgufKvJson, RefusesWhatIsNotAPair) {
  for (const char* bad : {"{}", "[{\"key\":\"a\"}]", "[{\"key\":\"a\",\"type\":\"u9\",\"value\":1}]",
                          "[{\"key\":\"a\",\"type\":\"u8\",\"value\":256}]", "[{\"key\":\"a\",\"type\":\"i8\",\"value\":-129}]",
                          "[{\"key\":\"a\",\"type\":\"u64\",\"value\":\"-1\"}]", "[{\"key\":\"a\",\"type\":\"f32\",\"value\":1e300}]",
                          "[{\"key\":\"a\",\"type\":\"array\",\"elem\":\"array\",\"value\":[[]]}]",
                          "[{\"key\":\"a\",\"type\":\"string\",\"value\":{\"hex\":\"f\"}}]"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(kind_of([&] { gguf_kvs_from_json(bad); }), ErrorKind::kInvalidInput);
  }
}

}  // namespace
}  // namespace tk::io
