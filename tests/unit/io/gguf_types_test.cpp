// ggml types: the table against ggml's sizes, lookups by number, name and dtype, and the
// block decoders on blocks built by hand (Q8_0, Q4_0, Q4_K, MXFP4) with values worked out
// by hand. Bit-exactness against gguf-py over random blocks of every decoded type is the
// interop test's job (tests/interop/test_gguf_dequant_interop.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/gguf_types.h"

namespace tk::io {
namespace {

using Bytes = std::vector<uint8_t>;
using test::kind_of;

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfMinusTwo = 0xC000;

std::vector<float> dequantize(GgmlType type, const Bytes& blocks, size_t values) {
  std::vector<float> out(values);
  gguf_dequantize(type, blocks, out);
  return out;
}

TEST(GgmlTypes, TableIsConsistent) {
  int listed = 0;
  for (uint32_t number = 0; number < 64; ++number) {
    const GgmlTypeTraits* t = ggml_type_traits(number);
    if (!t) continue;
    ++listed;
    SCOPED_TRACE(t->name);
    EXPECT_EQ(static_cast<uint32_t>(t->type), number);
    EXPECT_EQ(&ggml_traits(t->type), t);
    EXPECT_EQ(ggml_type_parse(t->name), t->type);
    EXPECT_EQ(ggml_storage_bytes(t->type, 3 * uint64_t{t->block}), 3 * uint64_t{t->type_bytes});
    if (t->plain) {
      EXPECT_EQ(t->block, 1u);
      EXPECT_EQ(t->type_bytes * 8, static_cast<uint32_t>(dtype_bits(*t->plain)));
      EXPECT_EQ(ggml_type_of(*t->plain), t->type);
      EXPECT_TRUE(t->dequantizes);
    }
  }
  EXPECT_EQ(listed, 32);
  EXPECT_EQ(ggml_type_traits(4), nullptr);  // Q4_2, removed from ggml
  EXPECT_EQ(ggml_type_traits(40), nullptr);
}

TEST(GgmlTypes, SizesAreGgmls) {
  EXPECT_EQ(ggml_traits(GgmlType::kQ8_0).type_bytes, 34u);
  EXPECT_EQ(ggml_traits(GgmlType::kQ8_1).type_bytes, 36u);  // two halves; gguf-py says 40
  EXPECT_EQ(ggml_traits(GgmlType::kQ4_K).type_bytes, 144u);
  EXPECT_EQ(ggml_traits(GgmlType::kQ6_K).type_bytes, 210u);
  EXPECT_EQ(ggml_traits(GgmlType::kTQ1_0).type_bytes, 54u);
  EXPECT_EQ(ggml_traits(GgmlType::kMXFP4).type_bytes, 17u);
  EXPECT_EQ(ggml_traits(GgmlType::kQ2_K).block, 256u);
  EXPECT_EQ(ggml_traits(GgmlType::kIQ4_NL).block, 32u);
}

TEST(GgmlTypes, DecodedTypes) {
  std::set<std::string> decoded;
  for (uint32_t number = 0; number < 64; ++number)
    if (const GgmlTypeTraits* t = ggml_type_traits(number); t && !t->plain && t->dequantizes) decoded.insert(t->name);
  EXPECT_EQ(decoded, (std::set<std::string>{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                                            "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ4_NL", "IQ3_S", "IQ2_S",
                                            "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4"}));
}

TEST(GgmlTypes, ParseIgnoresCase) {
  EXPECT_EQ(ggml_type_parse("q4_k"), GgmlType::kQ4_K);
  EXPECT_EQ(ggml_type_parse("Q8_0"), GgmlType::kQ8_0);
  EXPECT_EQ(ggml_type_parse("mxfp4"), GgmlType::kMXFP4);
  EXPECT_EQ(ggml_type_parse("Bf16"), GgmlType::kBF16);
  EXPECT_EQ(ggml_type_parse("q4"), std::nullopt);
  EXPECT_EQ(ggml_type_parse("q4_k "), std::nullopt);
  EXPECT_EQ(ggml_type_parse(""), std::nullopt);
}

TEST(GgmlTypes, TypeOfDtype) {
  EXPECT_EQ(ggml_type_of(DType::kF32), GgmlType::kF32);
  EXPECT_EQ(ggml_type_of(DType::kBF16), GgmlType::kBF16);
  EXPECT_EQ(ggml_type_of(DType::kI64), GgmlType::kI64);
  EXPECT_EQ(ggml_type_of(DType::kU8), std::nullopt);
  EXPECT_EQ(ggml_type_of(DType::kF8E4M3), std::nullopt);
  EXPECT_EQ(ggml_type_of(DType::kC64), std::nullopt);
}

TEST(GgmlTypes, StorageBytes) {
  EXPECT_EQ(ggml_storage_bytes(GgmlType::kQ4_K, 512), 288u);
  EXPECT_EQ(ggml_storage_bytes(GgmlType::kQ4_0, 0), 0u);
  EXPECT_EQ(kind_of([] { ggml_storage_bytes(GgmlType::kQ4_0, 33); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([] { ggml_storage_bytes(GgmlType::kF64, uint64_t{1} << 62); }), ErrorKind::kInvalidInput);
}

TEST(GgmlDequantize, Q8_0) {
  Bytes b(34);
  store_le(b.data(), kHalfHalf);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  b[2] = 0x80;  // -128
  b[33] = 0x7F;
  std::vector<float> y = dequantize(GgmlType::kQ8_0, b, 32);
  EXPECT_EQ(y[0], -64.0f);
  EXPECT_EQ(y[1], -7.5f);
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[17], 0.5f);
  EXPECT_EQ(y[31], 63.5f);
}

TEST(GgmlDequantize, Q4_0) {
  // Low nibbles are values 0-15, high nibbles 16-31; each is q - 8 times d = -2.
  Bytes b(18);
  store_le(b.data(), kHalfMinusTwo);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> y = dequantize(GgmlType::kQ4_0, b, 32);
  EXPECT_EQ(y[0], 16.0f);    // q 0
  EXPECT_EQ(y[8], -0.0f);    // q 8
  EXPECT_EQ(y[15], -14.0f);  // q 15
  EXPECT_EQ(y[16], -14.0f);  // high nibble of byte 0: 15
  EXPECT_EQ(y[31], 16.0f);   // high nibble of byte 15: 0
}

// A Q4_K block with d = 1, dmin = 0.5, the given 6-bit scales and mins, and quants whose
// low nibbles count up (l % 16) and high nibbles count down.
Bytes q4_k_block(const int (&sc)[8], const int (&m)[8]) {
  Bytes b(144);
  store_le(b.data(), kHalfOne);
  store_le(b.data() + 2, kHalfHalf);
  uint8_t* s = b.data() + 4;
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    s[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
  }
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>(i % 16 | (15 - i % 16) << 4);
  return b;
}

TEST(GgmlDequantize, Q4_K) {
  const int sc[8] = {1, 2, 3, 4, 17, 33, 63, 5};
  const int m[8] = {0, 1, 2, 3, 20, 40, 63, 6};
  std::vector<float> y = dequantize(GgmlType::kQ4_K, q4_k_block(sc, m), 256);
  // Sub-block g holds values 32g..32g+31: nibble g % 2 of bytes 32 (g / 2)..; (d sc) q - dmin m.
  EXPECT_EQ(y[0], 0.0f);          // g 0, q 0
  EXPECT_EQ(y[33], 27.5f);        // g 1, q 14: 2 * 14 - 0.5
  EXPECT_EQ(y[131], 41.0f);       // g 4, q 3: 17 * 3 - 10
  EXPECT_EQ(y[207], 913.5f);      // g 6, q 15: 63 * 15 - 31.5
  EXPECT_EQ(y[224], 72.0f);       // g 7, q 15: 5 * 15 - 3
  EXPECT_EQ(y[255], -3.0f);       // g 7, q 0
  for (int v = 0; v < 256; ++v) {
    const int g = v / 32, l = v % 32;
    const int q = g % 2 == 0 ? l % 16 : 15 - l % 16;
    EXPECT_EQ(y[v], static_cast<float>(sc[g] * q) - 0.5f * static_cast<float>(m[g])) << v;
  }
}

TEST(GgmlDequantize, Mxfp4) {
  // Block 0: scale byte 128 (2^1, halved against doubled E2M1 values: 1); block 1: byte 0,
  // the subnormal 2^-127 halved.
  Bytes b(34);
  b[0] = 128;
  for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  b[17] = 0;
  for (int j = 0; j < 16; ++j) b[18 + j] = 0x71;
  std::vector<float> y = dequantize(GgmlType::kMXFP4, b, 64);
  const float e2m1_doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], e2m1_doubled[j]) << j;
    EXPECT_EQ(y[16 + j], e2m1_doubled[15 - j]) << j;
  }
  EXPECT_EQ(y[32], std::ldexp(1.0f, -128));   // code 1 (0.5, doubled) * 2^-128
  EXPECT_EQ(y[48], std::ldexp(12.0f, -128));  // code 7 (6, doubled)
}

TEST(GgmlDequantize, PlainTypes) {
  Bytes f16(4);
  store_le(f16.data(), kHalfOne);
  store_le(f16.data() + 2, kHalfMinusTwo);
  EXPECT_EQ(dequantize(GgmlType::kF16, f16, 2), (std::vector<float>{1.0f, -2.0f}));
  Bytes i16(2);
  store_le(i16.data(), int16_t{-300});
  EXPECT_EQ(dequantize(GgmlType::kI16, i16, 1), std::vector<float>{-300.0f});
}

TEST(GgmlDequantize, LargeInputMatchesBlockByBlock) {
  // 2^17 Q8_0 blocks: enough values for several threads.
  const size_t blocks = size_t{1} << 17;
  Bytes b(blocks * 34);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t i = 0; i < blocks; ++i) store_le(b.data() + 34 * i, static_cast<uint16_t>(0x3000 + i % 0x1000));
  std::vector<float> all = dequantize(GgmlType::kQ8_0, b, 32 * blocks);
  for (size_t i : {size_t{0}, blocks / 2 + 3, blocks - 1}) {
    Bytes one(b.begin() + 34 * i, b.begin() + 34 * (i + 1));
    std::vector<float> y = dequantize(GgmlType::kQ8_0, one, 32);
    EXPECT_EQ(0, std::memcmp(y.data(), all.data() + 32 * i, sizeof(float) * 32)) << i;
  }
}

TEST(GgmlDequantize, Errors) {
  std::vector<float> out(32);
  EXPECT_EQ(kind_of([&] { gguf_dequantize(GgmlType::kQ4_0, Bytes(18), std::span(out).first(31)); }),
            ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { gguf_dequantize(GgmlType::kQ4_0, Bytes(17), out); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of([&] { gguf_dequantize(GgmlType::kQ4_0, Bytes(36), out); }), ErrorKind::kInternal);
  std::vector<float> k(256);
  EXPECT_EQ(kind_of([&] { gguf_dequantize(GgmlType::kIQ1_S, Bytes(50), k); }), ErrorKind::kUnavailable);
  EXPECT_EQ(kind_of([&] { gguf_dequantize(GgmlType::kQ8_K, Bytes(292), k); }), ErrorKind::kUnavailable);
  EXPECT_EQ(kind_of([&] { ggml_traits(static_cast<GgmlType>(4)); }), ErrorKind::kInternal);
  gguf_dequantize(GgmlType::kQ4_0, {}, {});  // no blocks: nothing to do
}

}  // namespace
}  // namespace tk::io
