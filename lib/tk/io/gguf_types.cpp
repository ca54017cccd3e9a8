// The ggml type table and the block decoders. Each decoder follows ggml's dequantize_row_*
// (ggml-quants.c) value for value, with the float operations in the same order, so that
// the result matches ggml and gguf-py's numpy port bit for bit; this file is compiled with
// -ffp-contract=off for the same reason: a fused multiply-add rounds once where ggml rounds
// twice. Byte offsets are those of the block structs in ggml-common.h.
#include "tk/io/gguf_types.h"

#include <algorithm>
#include <bit>
#include <cctype>

#include <fmt/format.h>

#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/ggml_iq_grids.h"

namespace tk::io {

namespace {

constexpr int kQK = 256;  // values of a k-quant super-block (ggml's QK_K)

float half_at(const uint8_t* p) { return f16_to_f32(load_le<uint16_t>(p)); }

// ---- 32-value blocks ----

void decode_q4_0(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* qs = x + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void decode_q4_1(const uint8_t* x, float* y) {
  const float d = half_at(x), m = half_at(x + 2);
  const uint8_t* qs = x + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0xF) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// The fifth bit of value j is bit j of the little-endian word qh.
int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
  return low | static_cast<int>(((qh >> j) & 1) << 4);
}

void decode_q5_0(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint32_t qh = load_le<uint32_t>(x + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_value(x + 6, qh, j) - 16) * d;
}

void decode_q5_1(const uint8_t* x, float* y) {
  const float d = half_at(x), m = half_at(x + 2);
  const uint32_t qh = load_le<uint32_t>(x + 4);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_value(x + 8, qh, j)) * d + m;
}

void decode_q8_0(const uint8_t* x, float* y) {
  const float d = half_at(x);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(x[2 + j])) * d;
}

// ggml's kvalues_iq4nl.
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// E2M1 values doubled (ggml's kvalues_mxfp4); the scale below is halved to match.
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void decode_iq4_nl(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* qs = x + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
  }
}

// Half of the E8M0 scale 2^(e-127) (ggml_e8m0_to_fp32_half); e = 0 and 1 give subnormals.
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

void decode_mxfp4(const uint8_t* x, float* y) {
  const float d = e8m0_half(x[0]);
  const uint8_t* qs = x + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(kMxfp4Values[qs[j] & 0xF]) * d;
    y[j + 16] = static_cast<float>(kMxfp4Values[qs[j] >> 4]) * d;
  }
}

// ---- 256-value super-blocks ----

// Value v of a super-block whose quants are packed 2 bits at a time: 32-byte groups of
// 128 values, four 32-value planes per group at shifts 0, 2, 4, 6.
int crumb_at(const uint8_t* qs, int v) { return (qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32))) & 3; }

void decode_q2_k(const uint8_t* x, float* y) {
  const uint8_t* scales = x;
  const uint8_t* qs = x + 16;
  const float d = half_at(x + 80), dmin = half_at(x + 82);
  for (int g = 0; g < kQK / 16; ++g) {
    const float dl = d * static_cast<float>(scales[g] & 0xF);
    const float ml = dmin * static_cast<float>(scales[g] >> 4);
    for (int l = 0; l < 16; ++l) y[16 * g + l] = dl * static_cast<float>(crumb_at(qs, 16 * g + l)) - ml;
  }
}

// The sixteen 6-bit scales of Q3_K: low nibbles in bytes 0-7 (both halves), high bit pairs
// in bytes 8-11, offset by 32.
int q3_k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

void decode_q3_k(const uint8_t* x, float* y) {
  const uint8_t* hmask = x;
  const uint8_t* qs = x + 32;
  const float d = half_at(x + 108);
  for (int g = 0; g < kQK / 16; ++g) {
    const float dl = d * static_cast<float>(q3_k_scale(x + 96, g));
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * g + l;
      // A clear high bit subtracts 4 (ggml stores the bit inverted).
      const int high = (hmask[v % 32] >> (v / 32)) & 1 ? 0 : 4;
      y[v] = dl * static_cast<float>(crumb_at(qs, v) - high);
    }
  }
}

// Scale and min of sub-block j of Q4_K / Q5_K (ggml's get_scale_min_k4): eight 6-bit pairs
// in 12 bytes.
void k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K and Q5_K: eight sub-blocks of 32; sub-block g takes nibble g % 2 of bytes
// 32 * (g / 2) .. + 31, and in Q5_K bit g of qh[0..31] as its fifth bit.
template <bool kFifthBit> void decode_k4(const uint8_t* x, float* y) {
  const float d = half_at(x), dmin = half_at(x + 2);
  const uint8_t* qh = x + 16;
  const uint8_t* qs = kFifthBit ? x + 48 : x + 16;
  for (int g = 0; g < kQK / 32; ++g) {
    int sc = 0, m = 0;
    k4_scale_min(x + 4, g, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (g / 2);
    const int shift = 4 * (g % 2);
    for (int l = 0; l < 32; ++l) {
      int value = (q[l] >> shift) & 0xF;
      if constexpr (kFifthBit) value |= ((qh[l] >> g) & 1) << 4;
      y[32 * g + l] = d1 * static_cast<float>(value) - m1;
    }
  }
}

void decode_q6_k(const uint8_t* x, float* y) {
  const uint8_t* ql = x;
  const uint8_t* qh = x + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(x + 192);
  const float d = half_at(x + 208);
  for (int g = 0; g < kQK / 16; ++g) {
    const float dl = d * static_cast<float>(scales[g]);
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * g + l, r = v % 128;
      // Low nibbles: 64-byte groups of 128 values, two 64-value planes per group.
      const int low = (ql[(v / 128) * 64 + r % 64] >> (4 * (r / 64))) & 0xF;
      y[v] = dl * static_cast<float>((low | (crumb_at(qh, v) << 4)) - 32);
    }
  }
}

void decode_iq4_xs(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint16_t scales_h = load_le<uint16_t>(x + 2);
  const uint8_t* scales_l = x + 4;
  const uint8_t* qs = x + 8;
  for (int ib = 0; ib < kQK / 32; ++ib) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    const uint8_t* q = qs + 16 * ib;
    for (int l = 0; l < 16; ++l) {
      y[32 * ib + l] = dl * static_cast<float>(kIq4nlValues[q[l] & 0xF]);
      y[32 * ib + 16 + l] = dl * static_cast<float>(kIq4nlValues[q[l] >> 4]);
    }
  }
}

// ---- lattice codebooks: IQ2_* and IQ3_* ----
//
// Each group of 8 (IQ2) or 4 (IQ3) values is a point of a fixed grid of small positive
// integers (ggml_iq_grids.h), times a sub-block scale, with a sign per value: y = db *
// grid[j], negated where the sign bit is set (a product with -1, exact, as ggml's).

// `count` values of grid point `point` (one byte each, value 0 lowest), signs in bits 0..
void put_lattice(float db, uint64_t point, unsigned signs, int count, float* y) {
  for (int j = 0; j < count; ++j) {
    const float v = db * static_cast<float>((point >> (8 * j)) & 0xFF);
    y[j] = (signs >> j) & 1 ? -v : v;
  }
}

// IQ2_* sub-block scales: d * (0.5 + s) * 0.25, ggml's order.
float iq2_scale(float d, unsigned s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

// Eight sub-blocks of 32, each two little-endian words: four grid bytes, then four 7-bit
// sign indices and the 4-bit scale on top.
void decode_iq2_xxs(const uint8_t* x, float* y) {
  const float d = half_at(x);
  for (int ib = 0; ib < kQK / 32; ++ib) {
    const uint32_t grid = load_le<uint32_t>(x + 2 + 8 * ib);
    const uint32_t aux = load_le<uint32_t>(x + 6 + 8 * ib);
    const float db = iq2_scale(d, aux >> 28);
    for (int l = 0; l < 4; ++l)
      put_lattice(db, kIq2xxsGrid[(grid >> (8 * l)) & 0xFF], kIqSigns[(aux >> (7 * l)) & 127], 8, y + 32 * ib + 8 * l);
  }
}

// 32 little-endian uint16 (9-bit grid index, 7-bit sign index), then a 4-bit scale per 16.
void decode_iq2_xs(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* scales = x + 66;
  for (int k = 0; k < kQK / 8; ++k) {
    const uint16_t q = load_le<uint16_t>(x + 2 + 2 * k);
    const float db = iq2_scale(d, (scales[k / 4] >> (4 * ((k / 2) % 2))) & 0xF);
    put_lattice(db, kIq2xsGrid[q & 511], kIqSigns[q >> 9], 8, y + 8 * k);
  }
}

// Low bytes of 32 grid indices, 32 sign bytes, the indices' 2-bit tops (four per byte),
// then a 4-bit scale per 16 values.
void decode_iq2_s(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* signs = x + 34;
  const uint8_t* qh = x + 66;
  const uint8_t* scales = x + 74;
  for (int k = 0; k < kQK / 8; ++k) {
    const unsigned index = qs[k] | (((qh[k / 4] >> (2 * (k % 4))) & 3u) << 8);
    const float db = iq2_scale(d, (scales[k / 4] >> (4 * ((k / 2) % 2))) & 0xF);
    put_lattice(db, kIq2sGrid[index], signs[k], 8, y + 8 * k);
  }
}

// 64 grid bytes, then per sub-block of 32 a little-endian word: four 7-bit sign indices
// (one per 8 values) and the 4-bit scale d * (0.5 + s) * 0.5.
void decode_iq3_xxs(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* qs = x + 2;
  for (int ib = 0; ib < kQK / 32; ++ib) {
    const uint32_t aux = load_le<uint32_t>(x + 66 + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const unsigned signs = kIqSigns[(aux >> (7 * l)) & 127];
      float* out = y + 32 * ib + 8 * l;
      put_lattice(db, kIq3xxsGrid[qs[8 * ib + 2 * l]], signs, 4, out);
      put_lattice(db, kIq3xxsGrid[qs[8 * ib + 2 * l + 1]], signs >> 4, 4, out + 4);
    }
  }
}

// Low bytes of 64 grid indices, their ninth bits (bit k % 8 of byte k / 8), a sign bit
// per value, then a 4-bit scale per sub-block of 32: d * (1 + 2 s).
void decode_iq3_s(const uint8_t* x, float* y) {
  const float d = half_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* qh = x + 66;
  const uint8_t* signs = x + 74;
  const uint8_t* scales = x + 106;
  for (int k = 0; k < kQK / 4; ++k) {
    const unsigned index = qs[k] | (((qh[k / 8] >> (k % 8)) & 1u) << 8);
    const int s = (scales[k / 16] >> (4 * ((k / 8) % 2))) & 0xF;
    const float db = d * static_cast<float>(1 + 2 * s);
    put_lattice(db, kIq3sGrid[index], signs[k / 2] >> (4 * (k % 2)), 4, y + 4 * k);
  }
}

// One ternary digit of a TQ1_0 byte, which holds 5 (or 4) digits as a fixed-point
// fraction: multiplying by 3^n (mod 256) brings digit n to the top.
int trit_at(uint8_t byte, uint8_t pow3) {
  const auto q = static_cast<uint8_t>(byte * pow3);
  return ((q * 3) >> 8) - 1;
}

void decode_tq1_0(const uint8_t* x, float* y) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t* qs = x;
  const uint8_t* qh = x + 48;
  const float d = half_at(x + 52);
  for (int n = 0; n < 5; ++n)
    for (int l = 0; l < 32; ++l) y[32 * n + l] = static_cast<float>(trit_at(qs[l], kPow3[n])) * d;
  for (int n = 0; n < 5; ++n)
    for (int l = 0; l < 16; ++l) y[160 + 16 * n + l] = static_cast<float>(trit_at(qs[32 + l], kPow3[n])) * d;
  for (int n = 0; n < 4; ++n)
    for (int l = 0; l < 4; ++l) y[240 + 4 * n + l] = static_cast<float>(trit_at(qh[l], kPow3[n])) * d;
}

void decode_tq2_0(const uint8_t* x, float* y) {
  const float d = half_at(x + 64);
  for (int v = 0; v < kQK; ++v) y[v] = static_cast<float>(crumb_at(x, v) - 1) * d;
}

// ---- the table ----

using BlockDecoder = void (*)(const uint8_t* block, float* values);
// Decode `count` consecutive blocks.
using BlocksDecoder = void (*)(const uint8_t* src, float* dst, int64_t count, uint32_t block, uint32_t type_bytes);

// Outputs of at least this many values are decoded by several threads (the threshold of
// the core array conversions, tk::detail::kParallelThreshold, for the same reasons).
constexpr uint64_t kParallelValues = uint64_t{1} << 22;

template <BlockDecoder kDecode>
void decode_blocks(const uint8_t* src, float* dst, int64_t count, uint32_t block, uint32_t type_bytes) {
  const bool parallel = static_cast<uint64_t>(count) * block >= kParallelValues;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < count; ++i) kDecode(src + i * type_bytes, dst + i * block);
}

struct Entry {
  GgmlTypeTraits traits;
  BlocksDecoder decode;  // null for plain types and block types not decoded
};

constexpr Entry plain(GgmlType type, const char* name, DType dtype, uint32_t bytes) {
  return {{type, name, 1, bytes, dtype, true}, nullptr};
}

constexpr Entry blocks(GgmlType type, const char* name, uint32_t block, uint32_t bytes, BlocksDecoder decode) {
  return {{type, name, block, bytes, std::nullopt, decode != nullptr}, decode};
}

using T = GgmlType;
// Sizes as ggml-common.h's static_asserts give them. gguf-py's GGML_QUANT_SIZES has Q8_1 as
// 40 bytes (its old float d, s); ggml's block_q8_1 holds two halves: 36. The IQ1 types,
// Q8_1 and Q8_K (ggml's intermediate types for dot products, which gguf-py does not decode
// either) are listed but not decoded.
// Not constexpr: with the sanitizers, comparing a function address with null is not a
// constant expression.
const Entry kTable[] = {
    plain(T::kF32, "F32", DType::kF32, 4),
    plain(T::kF16, "F16", DType::kF16, 2),
    blocks(T::kQ4_0, "Q4_0", 32, 18, decode_blocks<decode_q4_0>),
    blocks(T::kQ4_1, "Q4_1", 32, 20, decode_blocks<decode_q4_1>),
    blocks(T::kQ5_0, "Q5_0", 32, 22, decode_blocks<decode_q5_0>),
    blocks(T::kQ5_1, "Q5_1", 32, 24, decode_blocks<decode_q5_1>),
    blocks(T::kQ8_0, "Q8_0", 32, 34, decode_blocks<decode_q8_0>),
    blocks(T::kQ8_1, "Q8_1", 32, 36, nullptr),
    blocks(T::kQ2_K, "Q2_K", kQK, 84, decode_blocks<decode_q2_k>),
    blocks(T::kQ3_K, "Q3_K", kQK, 110, decode_blocks<decode_q3_k>),
    blocks(T::kQ4_K, "Q4_K", kQK, 144, decode_blocks<decode_k4<false>>),
    blocks(T::kQ5_K, "Q5_K", kQK, 176, decode_blocks<decode_k4<true>>),
    blocks(T::kQ6_K, "Q6_K", kQK, 210, decode_blocks<decode_q6_k>),
    blocks(T::kQ8_K, "Q8_K", kQK, 292, nullptr),
    blocks(T::kIQ2_XXS, "IQ2_XXS", kQK, 66, decode_blocks<decode_iq2_xxs>),
    blocks(T::kIQ2_XS, "IQ2_XS", kQK, 74, decode_blocks<decode_iq2_xs>),
    blocks(T::kIQ3_XXS, "IQ3_XXS", kQK, 98, decode_blocks<decode_iq3_xxs>),
    blocks(T::kIQ1_S, "IQ1_S", kQK, 50, nullptr),
    blocks(T::kIQ4_NL, "IQ4_NL", 32, 18, decode_blocks<decode_iq4_nl>),
    blocks(T::kIQ3_S, "IQ3_S", kQK, 110, decode_blocks<decode_iq3_s>),
    blocks(T::kIQ2_S, "IQ2_S", kQK, 82, decode_blocks<decode_iq2_s>),
    blocks(T::kIQ4_XS, "IQ4_XS", kQK, 136, decode_blocks<decode_iq4_xs>),
    plain(T::kI8, "I8", DType::kI8, 1),
    plain(T::kI16, "I16", DType::kI16, 2),
    plain(T::kI32, "I32", DType::kI32, 4),
    plain(T::kI64, "I64", DType::kI64, 8),
    plain(T::kF64, "F64", DType::kF64, 8),
    blocks(T::kIQ1_M, "IQ1_M", kQK, 56, nullptr),
    plain(T::kBF16, "BF16", DType::kBF16, 2),
    blocks(T::kTQ1_0, "TQ1_0", kQK, 54, decode_blocks<decode_tq1_0>),
    blocks(T::kTQ2_0, "TQ2_0", kQK, 66, decode_blocks<decode_tq2_0>),
    blocks(T::kMXFP4, "MXFP4", 32, 17, decode_blocks<decode_mxfp4>),
};

const Entry* find_entry(uint32_t type) {
  for (const Entry& e : kTable)
    if (static_cast<uint32_t>(e.traits.type) == type) return &e;
  return nullptr;
}

const Entry& entry_of(GgmlType type) {
  const Entry* e = find_entry(static_cast<uint32_t>(type));
  if (!e) throw internal_error(fmt::format("ggml type {} is not in the table", static_cast<uint32_t>(type)));
  return *e;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

const GgmlTypeTraits* ggml_type_traits(uint32_t type) {
  const Entry* e = find_entry(type);
  return e ? &e->traits : nullptr;
}

const GgmlTypeTraits& ggml_traits(GgmlType type) { return entry_of(type).traits; }

std::optional<GgmlType> ggml_type_parse(std::string_view name) {
  for (const Entry& e : kTable)
    if (equal_ignoring_case(name, e.traits.name)) return e.traits.type;
  return std::nullopt;
}

std::optional<GgmlType> ggml_type_of(DType dtype) {
  for (const Entry& e : kTable)
    if (e.traits.plain == dtype) return e.traits.type;
  return std::nullopt;
}

uint64_t ggml_storage_bytes(GgmlType type, uint64_t values) {
  const GgmlTypeTraits& t = ggml_traits(type);
  if (values % t.block != 0)
    throw invalid_input(fmt::format("{} values are not a whole number of {} blocks of {}", values, t.name, t.block));
  const uint64_t count = values / t.block;
  if (count > UINT64_MAX / t.type_bytes)
    throw invalid_input(fmt::format("{} values of {} overflow a 64-bit byte size", values, t.name));
  return count * t.type_bytes;
}

void gguf_dequantize(GgmlType type, std::span<const uint8_t> blocks, std::span<float> out) {
  const Entry& e = entry_of(type);
  const GgmlTypeTraits& t = e.traits;
  if (!t.dequantizes) throw unavailable(fmt::format("tensorkit does not decode ggml type {}", t.name));
  const uint64_t count = out.size() / t.block;
  if (out.size() % t.block != 0 || count > blocks.size() / t.type_bytes || count * t.type_bytes != blocks.size())
    throw internal_error(fmt::format("{} values of {} given {} bytes", out.size(), t.name, blocks.size()));
  if (t.plain) {
    convert_to_f32(*t.plain, blocks.data(), 0, out.size(), out.data());
    return;
  }
  e.decode(blocks.data(), out.data(), static_cast<int64_t>(count), t.block, t.type_bytes);
}

}  // namespace tk::io
