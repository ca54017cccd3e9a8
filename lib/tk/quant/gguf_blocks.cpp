// The repacking behind gguf_blocks.h: each row's parts unpacked (one byte per code and
// per sub-block integer, as tensorkit stores them, offsets included), then written
// block by block at the byte offsets of ggml-common.h's block_* structs (f16 scales
// copied as their little-endian bits). The layouts and the order of ggml's float
// operations are those of gguf-py's dequantizers (gguf/quants.py).
//
// No twin, because the decoding differs and not only the bytes:
// - int3, int6, int7 and asymmetric int8: ggml has no such block (Q8_1's second f16 is
//   a sum for dot products, not an offset);
// - other group sizes, per-channel or per-tensor scales, bf16 or f32 scales: ggml's
//   blocks hold one f16 scale (and min) per 32 values. Repeating a wider group's scale
//   would decode exactly, but store more bits than tensorkit measured and a budget
//   counted, so it is left to a caller that wants it;
// - int2 other than symmetric group 256: TQ2_0 holds one f16 scale per 256 values, no min;
// - q8k: ggml's Q8_K has one f32 scale per 256 values and no sub-block scales;
// - nf4: IQ4_NL decodes through other levels (kvalues_iq4nl): that is iq4nl's twin;
// - nvfp4: ggml's NVFP4 has no per-tensor scale, and gguf_types.h has no such type;
// - fp8, the other MX formats, k-means and vq codebooks, trellis: no ggml type.
#include "tk/quant/gguf_blocks.h"

#include <cstring>
#include <exception>

#include "tk/core/error.h"
#include "tk/quant/quant_internal.h"

namespace tk::quant {
namespace {

using namespace detail;
using io::GgmlType;

// One row of a quantized tensor, unpacked. Scales are f16 bits (2 bytes each).
struct Row {
  const uint8_t* codes = nullptr;    // a code per value
  const uint8_t* d = nullptr;        // int: per group; K-quants: per super-block
  const uint8_t* m = nullptr;        // int: mins; K-quants: dmin (null without)
  const uint8_t* sub = nullptr;      // K-quants: sub-block scales (bias included)
  const uint8_t* sub_min = nullptr;  // K-quants: sub-block mins
  const uint8_t* e = nullptr;        // mxfp4: E8M0 scales
  const uint8_t* high = nullptr;     // lattice: a point's index above its low byte, a byte each
  const uint8_t* signs = nullptr;    // lattice: a sign byte per 8 values (bits 0..6 where 7 are stored)
};
// Write block `b` of the row into `out` (zeroed, the block's size).
using BlockWriter = void (*)(const Row& row, int64_t b, uint8_t* out);

void put_f16(const uint8_t* scales, int64_t i, uint8_t* out) { std::memcpy(out, scales + 2 * i, 2); }

// 32 4-bit values: value j in the low nibble of byte j, value j + 16 in the high one.
void put_nibbles32(const uint8_t* v, uint8_t* out) {
  for (int j = 0; j < 16; ++j) out[j] = static_cast<uint8_t>((v[j] & 0xf) | (v[j + 16] & 0xf) << 4);
}
// Bit 4 of 32 values as a little-endian uint32 (Q5_0's qh): value j in bit j.
void put_bit4_32(const uint8_t* v, uint8_t* out) {
  for (int j = 0; j < 32; ++j) out[j / 8] |= static_cast<uint8_t>((v[j] >> 4 & 1) << (j % 8));
}
// 256 2-bit values in K-quant order: value 128 h + 32 s + j in bits 2s of byte 32 h + j.
void put_crumbs256(const uint8_t* v, uint8_t* out) {
  for (int i = 0; i < 256; ++i) out[i / 128 * 32 + i % 32] |= static_cast<uint8_t>((v[i] & 3) << (i % 128 / 32 * 2));
}
// 256 4-bit values in K-quant order: value 64 h + 32 n + j in nibble n of byte 32 h + j.
void put_nibbles256(const uint8_t* v, uint8_t* out) {
  for (int i = 0; i < 256; ++i) out[i / 64 * 32 + i % 32] |= static_cast<uint8_t>((v[i] & 0xf) << (i % 64 / 32 * 4));
}
// One bit of 256 values: value 32 k + j in bit k of byte j (Q3_K's hmask, Q5_K's qh).
void put_bit_planes256(const uint8_t* v, int bit, uint8_t* out) {
  for (int i = 0; i < 256; ++i) out[i % 32] |= static_cast<uint8_t>((v[i] >> bit & 1) << (i / 32));
}
// Q4_K's and Q5_K's 12 bytes of eight 6-bit scales and mins (get_scale_min_k4).
void put_scales_k4(const uint8_t* sc, const uint8_t* mn, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    out[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | (mn[j + 4] & 0xf) << 4);
  }
}
// Q3_K's 12 bytes of sixteen 6-bit scales: low nibbles in bytes 0..7, high pairs in 8..11.
void put_scales_q3k(const uint8_t* s, uint8_t* out) {
  for (int i = 0; i < 16; ++i) {
    out[i % 8] |= static_cast<uint8_t>((s[i] & 0xf) << (i / 8 * 4));
    out[8 + i % 4] |= static_cast<uint8_t>((s[i] >> 4) << (i / 4 * 2));
  }
}

void write_q8_0(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  for (int j = 0; j < 32; ++j) out[2 + j] = r.codes[b * 32 + j] ^ 0x80;  // code - 128 as int8
}
void write_q4_0(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_nibbles32(r.codes + b * 32, out + 2);
}
void write_q4_1(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_f16(r.m, b, out + 2);
  put_nibbles32(r.codes + b * 32, out + 4);
}
void write_q5_0(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_bit4_32(r.codes + b * 32, out + 2);
  put_nibbles32(r.codes + b * 32, out + 6);
}
void write_q5_1(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_f16(r.m, b, out + 2);
  put_bit4_32(r.codes + b * 32, out + 4);
  put_nibbles32(r.codes + b * 32, out + 8);
}
// tensorkit's (c - 2) * d as ggml's (q - 1) * d' with q = 3 - c and d' = -d.
void write_tq2_0(const Row& r, int64_t b, uint8_t* out) {
  uint8_t v[256];
  for (int i = 0; i < 256; ++i) v[i] = static_cast<uint8_t>(3 - r.codes[b * 256 + i]);
  put_crumbs256(v, out);
  put_f16(r.d, b, out + 64);
  out[65] ^= 0x80;  // the f16 sign bit
}
void write_q2_k(const Row& r, int64_t b, uint8_t* out) {
  for (int i = 0; i < 16; ++i) out[i] = static_cast<uint8_t>(r.sub[b * 16 + i] | r.sub_min[b * 16 + i] << 4);
  put_crumbs256(r.codes + b * 256, out + 16);
  put_f16(r.d, b, out + 80);
  put_f16(r.m, b, out + 82);
}
void write_q3_k(const Row& r, int64_t b, uint8_t* out) {
  const uint8_t* c = r.codes + b * 256;
  put_bit_planes256(c, 2, out);  // hmask: set where the code is 4..7 (ggml: no -4)
  put_crumbs256(c, out + 32);
  put_scales_q3k(r.sub + b * 16, out + 96);
  put_f16(r.d, b, out + 108);
}
void write_q4_k(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_f16(r.m, b, out + 2);
  put_scales_k4(r.sub + b * 8, r.sub_min + b * 8, out + 4);
  put_nibbles256(r.codes + b * 256, out + 16);
}
void write_q5_k(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  put_f16(r.m, b, out + 2);
  put_scales_k4(r.sub + b * 8, r.sub_min + b * 8, out + 4);
  put_bit_planes256(r.codes + b * 256, 4, out + 16);
  put_nibbles256(r.codes + b * 256, out + 48);
}
// ql: value 128 h + 64 n + j in nibble n of byte 64 h + j; qh: its bits 4..5 in bits 2s
// of byte 128 + 32 h + j for value 128 h + 32 s + j; int8 scales; d.
void write_q6_k(const Row& r, int64_t b, uint8_t* out) {
  const uint8_t* c = r.codes + b * 256;
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = i % 128;
    out[h * 64 + k % 64] |= static_cast<uint8_t>((c[i] & 0xf) << (k / 64 * 4));
    out[128 + h * 32 + k % 32] |= static_cast<uint8_t>((c[i] >> 4 & 3) << (k / 32 * 2));
  }
  for (int i = 0; i < 16; ++i) out[192 + i] = r.sub[b * 16 + i] ^ 0x80;  // q + 128 to int8 q
  put_f16(r.d, b, out + 208);
}
// d, then the eight 6-bit ls (bias included): low nibbles in scales_l (sub-block i in
// nibble i % 2 of byte i / 2), high bit pairs in the little-endian uint16 scales_h (bits
// 2i), then each sub-block's 32 codes as Q4_0 lays them out.
void write_iq4_xs(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  const uint8_t* ls = r.sub + b * 8;
  unsigned high = 0;
  for (int i = 0; i < 8; ++i) {
    high |= static_cast<unsigned>(ls[i] >> 4 & 3) << (2 * i);
    out[4 + i / 2] |= static_cast<uint8_t>((ls[i] & 0xf) << (i % 2 * 4));
  }
  out[2] = static_cast<uint8_t>(high & 0xff);
  out[3] = static_cast<uint8_t>(high >> 8);
  for (int i = 0; i < 8; ++i) put_nibbles32(r.codes + b * 256 + i * 32, out + 8 + i * 16);
}
void put_le32(uint32_t word, uint8_t* out) {
  for (int k = 0; k < 4; ++k) out[k] = static_cast<uint8_t>(word >> (8 * k));
}
// d, then per sub-block of 32 two little-endian words: its four points, then their four
// 7-bit sign indices (bits 7 l) and l on top (bits 28..31).
void write_iq2_xxs(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  for (int i = 0; i < 8; ++i) {
    std::memcpy(out + 2 + 8 * i, r.codes + b * 32 + 4 * i, 4);
    uint32_t word = static_cast<uint32_t>(r.sub[b * 8 + i]) << 28;
    for (int l = 0; l < 4; ++l) word |= static_cast<uint32_t>(r.signs[b * 32 + i * 4 + l] & 0x7F) << (7 * l);
    put_le32(word, out + 6 + 8 * i);
  }
}
// d, 32 little-endian uint16 (9-bit point index, 7-bit sign index above it), then the
// sixteen 4-bit l (scale group i in nibble i % 2 of byte i / 2).
void write_iq2_xs(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  for (int k = 0; k < 32; ++k) {
    const unsigned v = r.codes[b * 32 + k] | (r.high[b * 32 + k] & 1u) << 8 | (r.signs[b * 32 + k] & 0x7Fu) << 9;
    out[2 + 2 * k] = static_cast<uint8_t>(v & 0xFF);
    out[3 + 2 * k] = static_cast<uint8_t>(v >> 8);
  }
  for (int i = 0; i < 16; ++i) out[66 + i / 2] |= static_cast<uint8_t>((r.sub[b * 16 + i] & 0xF) << (i % 2 * 4));
}
// d, the low bytes of the 32 points, the 32 sign bytes, the points' bits 8..9 (point k
// at bits 2 (k % 4) of byte k / 4), then the sixteen 4-bit l as IQ2_XS's.
void write_iq2_s(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  std::memcpy(out + 2, r.codes + b * 32, 32);
  std::memcpy(out + 34, r.signs + b * 32, 32);
  for (int k = 0; k < 32; ++k) out[66 + k / 4] |= static_cast<uint8_t>((r.high[b * 32 + k] & 3) << (2 * (k % 4)));
  for (int i = 0; i < 16; ++i) out[74 + i / 2] |= static_cast<uint8_t>((r.sub[b * 16 + i] & 0xF) << (i % 2 * 4));
}
// d, the 64 points of the block, then per sub-block of 32 a little-endian word: the four
// 7-bit sign indices (bits 7 l) and l on top (bits 28..31).
void write_iq3_xxs(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  std::memcpy(out + 2, r.codes + b * 64, 64);
  for (int i = 0; i < 8; ++i) {
    uint32_t word = static_cast<uint32_t>(r.sub[b * 8 + i]) << 28;
    for (int l = 0; l < 4; ++l) word |= static_cast<uint32_t>(r.signs[b * 32 + i * 4 + l] & 0x7F) << (7 * l);
    put_le32(word, out + 66 + 4 * i);
  }
}
// d, the low bytes of the 64 points, their bit 8 (point k in bit k % 8 of byte k / 8),
// the 32 sign bytes, then the eight 4-bit l (sub-block i in nibble i % 2 of byte i / 2).
void write_iq3_s(const Row& r, int64_t b, uint8_t* out) {
  put_f16(r.d, b, out);
  std::memcpy(out + 2, r.codes + b * 64, 64);
  for (int k = 0; k < 64; ++k) out[66 + k / 8] |= static_cast<uint8_t>((r.high[b * 64 + k] & 1) << (k % 8));
  std::memcpy(out + 74, r.signs + b * 32, 32);
  for (int i = 0; i < 8; ++i) out[106 + i / 2] |= static_cast<uint8_t>((r.sub[b * 8 + i] & 0xF) << (i % 2 * 4));
}
void write_mxfp4(const Row& r, int64_t b, uint8_t* out) {
  out[0] = r.e[b];
  put_nibbles32(r.codes + b * 32, out + 1);
}

enum class Family { kInt, kKQuant, kMx, kTable, kLattice };

// One tensorkit scheme with the options that fix its layout, and its ggml block type.
struct Twin {
  GgmlType type;
  const char* scheme;
  Family family;
  int64_t block;        // values per ggml block: tensorkit's group or super-block (bytes: io::ggml_traits)
  int bits;             // bits per code
  bool symmetric;       // int: the symmetric option; K-quants: no mins
  int sub;              // K-quants: values per sub-block scale
  int scale_bits;       // K-quants: bits per sub-block scale
  BlockWriter write;
};

constexpr Twin kTwins[] = {
    {GgmlType::kQ8_0, "int8", Family::kInt, 32, 8, true, 0, 0, write_q8_0},
    {GgmlType::kQ4_0, "int4", Family::kInt, 32, 4, true, 0, 0, write_q4_0},
    {GgmlType::kQ4_1, "int4", Family::kInt, 32, 4, false, 0, 0, write_q4_1},
    {GgmlType::kQ5_0, "int5", Family::kInt, 32, 5, true, 0, 0, write_q5_0},
    {GgmlType::kQ5_1, "int5", Family::kInt, 32, 5, false, 0, 0, write_q5_1},
    {GgmlType::kTQ2_0, "int2", Family::kInt, 256, 2, true, 0, 0, write_tq2_0},
    {GgmlType::kQ2_K, "q2k", Family::kKQuant, 256, 2, false, 16, 4, write_q2_k},
    {GgmlType::kQ3_K, "q3k", Family::kKQuant, 256, 3, true, 16, 6, write_q3_k},
    {GgmlType::kQ4_K, "q4k", Family::kKQuant, 256, 4, false, 32, 6, write_q4_k},
    {GgmlType::kQ5_K, "q5k", Family::kKQuant, 256, 5, false, 32, 6, write_q5_k},
    {GgmlType::kQ6_K, "q6k", Family::kKQuant, 256, 6, true, 16, 8, write_q6_k},
    {GgmlType::kMXFP4, "mxfp4", Family::kMx, 32, 4, true, 0, 0, write_mxfp4},
    {GgmlType::kIQ4_NL, "iq4nl", Family::kTable, 32, 4, true, 0, 0, write_q4_0},  // Q4_0's bytes, other levels
    // Parts as a symmetric K-quant's (codes, d, 6-bit sub_scales): read the same way.
    {GgmlType::kIQ4_XS, "iq4xs", Family::kKQuant, 256, 4, true, 32, 6, write_iq4_xs},
    // Parts "grid" (a point's low byte), "grid_high", "signs", 4-bit "sub_scales", "d"
    // (iq_grid.cpp); bits: those of the sign stream (7 or 8 per 8 values); sub: values
    // per l; lattice_shape: values per point and the index's bits above its low byte.
    {GgmlType::kIQ2_XXS, "iq2xxs", Family::kLattice, 256, 7, true, 32, 4, write_iq2_xxs},
    {GgmlType::kIQ2_XS, "iq2xs", Family::kLattice, 256, 7, true, 16, 4, write_iq2_xs},
    {GgmlType::kIQ2_S, "iq2s", Family::kLattice, 256, 8, true, 16, 4, write_iq2_s},
    {GgmlType::kIQ3_XXS, "iq3xxs", Family::kLattice, 256, 7, true, 32, 4, write_iq3_xxs},
    {GgmlType::kIQ3_S, "iq3s", Family::kLattice, 256, 8, true, 32, 4, write_iq3_s},
};

struct LatticeShape {
  int dims;       // values per point
  int high_bits;  // bits of a point's index above its low byte
};
LatticeShape lattice_shape(GgmlType type) {
  switch (type) {
    case GgmlType::kIQ2_XXS: return {8, 0};
    case GgmlType::kIQ2_XS: return {8, 1};
    case GgmlType::kIQ2_S: return {8, 2};
    case GgmlType::kIQ3_S: return {4, 1};
    default: return {4, 0};  // IQ3_XXS
  }
}

bool param_is(const Quantized& q, const char* key, const std::string& value) {
  auto it = q.params.find(key);
  return it != q.params.end() && it->second == value;
}

bool part_is(const Quantized& q, const char* name, DType dtype) {
  auto it = q.parts.find(name);
  return it != q.parts.end() && it->second.dtype() == dtype;
}

// Rows x cols as q was quantized: the tensor's own, or its view's (view.h's view_cols);
// cols 0 when the view does not fit the shape.
Layout quantized_rows(const Quantized& q, int64_t block) {
  const int64_t cols = q.shape.empty() ? 1 : q.shape.back();
  const auto numel = static_cast<int64_t>(shape_numel(q.shape));
  int64_t view = cols;
  if (auto it = q.params.find("view_cols"); it != q.params.end()) {
    try {
      view = std::stoll(it->second);
    } catch (const std::exception&) {
      view = 0;
    }
    if (view <= 0 || cols <= 0 || view % cols != 0 || numel % view != 0 || std::to_string(view) != it->second) {
      view = 0;
    }
  }
  Layout l;
  if (view > 0 || numel == 0) l = make_layout(Shape{view > 0 ? numel / view : 0, view}, block);
  return l;
}

// Whether q's blocks are ggml's: no padding, and the tensor's rows whole blocks.
bool whole_blocks(const Quantized& q, const Twin& t) {
  if (q.shape.empty() || q.shape.back() % t.block != 0) return false;
  const Layout l = quantized_rows(q, t.block);
  return (l.cols > 0 || shape_numel(q.shape) == 0) && l.cols == l.padded_cols &&
         param_is(q, "padded_cols", std::to_string(l.padded_cols));
}

bool options_match(const Quantized& q, const Twin& t) {
  switch (t.family) {
    case Family::kInt:
      return param_is(q, "bits", std::to_string(t.bits)) && param_is(q, "granularity", "group") &&
             param_is(q, "group_size", std::to_string(t.block)) && param_is(q, "symmetric", t.symmetric ? "1" : "0") &&
             part_is(q, "scales", DType::kF16) && (t.symmetric || part_is(q, "mins", DType::kF16));
    case Family::kKQuant: return part_is(q, "d", DType::kF16) && (t.symmetric || part_is(q, "dmin", DType::kF16));
    case Family::kTable: return part_is(q, "scales", DType::kF16);
    case Family::kLattice: return part_is(q, "d", DType::kF16) && part_is(q, "grid", DType::kU8);
    case Family::kMx: {
      // ggml decodes E8M0 0xff as 2^127, tensorkit as NaN (a block that held NaN or Inf).
      auto it = q.parts.find("scales");
      const Layout l = quantized_rows(q, t.block);
      if (it == q.parts.end() || it->second.dtype() != DType::kF8E8M0 ||
          it->second.numel() != static_cast<uint64_t>(l.rows * l.groups_per_row)) {
        return false;
      }
      const auto n = static_cast<size_t>(it->second.numel());
      return n == 0 || std::memchr(it->second.data(), 0xff, n) == nullptr;
    }
  }
  return false;
}

const Twin* twin_of(const Quantized& q) {
  for (const Twin& t : kTwins) {
    if (q.scheme == t.scheme && whole_blocks(q, t) && options_match(q, t)) return &t;
  }
  return nullptr;
}

// The parts of q as whole rows, sizes checked, and the unpacking of one row.
struct Source {
  const Twin& t;
  Layout l;
  const uint8_t* codes = nullptr;
  const uint8_t* d = nullptr;
  const uint8_t* m = nullptr;
  const uint8_t* sub = nullptr;
  const uint8_t* sub_min = nullptr;
  const uint8_t* high = nullptr;
  const uint8_t* signs = nullptr;
  int64_t scales_per_row = 0;  // d (and m) per row
  int64_t subs_per_row = 0;
  int64_t points_per_row = 0;  // lattice
  int high_bits = 0;           // lattice

  Source(const Quantized& q, const Twin& twin) : t(twin), l(quantized_rows(q, twin.block)) {
    const auto rows = static_cast<uint64_t>(l.rows);
    const auto code_count = rows * static_cast<uint64_t>(l.cols);
    scales_per_row = l.groups_per_row;
    const auto scale_count = rows * static_cast<uint64_t>(scales_per_row);
    if (t.family == Family::kMx) {
      codes = part(q, "codes", DType::kF4, code_count).data();
      d = part(q, "scales", DType::kF8E8M0, scale_count).data();
      return;
    }
    if (t.family == Family::kLattice) {
      const LatticeShape shape = lattice_shape(t.type);
      points_per_row = l.cols / shape.dims;
      high_bits = shape.high_bits;
      const uint64_t points = rows * static_cast<uint64_t>(points_per_row);
      codes = part(q, "grid", DType::kU8, points).data();
      if (high_bits) high = part(q, "grid_high", DType::kU8, points * static_cast<uint64_t>(high_bits) / 8).data();
      signs = part(q, "signs", DType::kU8, code_count / 64 * static_cast<uint64_t>(t.bits)).data();
      d = part(q, "d", DType::kF16, scale_count).data();
      subs_per_row = l.cols / t.sub;
      sub = part(q, "sub_scales", DType::kU8, rows * static_cast<uint64_t>(subs_per_row / 2)).data();
      return;
    }
    codes = part(q, "codes", DType::kU8, code_count * static_cast<uint64_t>(t.bits) / 8).data();
    const char* d_name = t.family == Family::kKQuant ? "d" : "scales";
    const char* m_name = t.family == Family::kInt ? "mins" : "dmin";
    d = part(q, d_name, DType::kF16, scale_count).data();
    if (!t.symmetric) m = part(q, m_name, DType::kF16, scale_count).data();
    if (t.family != Family::kKQuant) return;
    subs_per_row = l.cols / t.sub;
    const auto sub_bytes = rows * static_cast<uint64_t>(subs_per_row * t.scale_bits / 8);
    sub = part(q, "sub_scales", DType::kU8, sub_bytes).data();
    if (!t.symmetric) sub_min = part(q, "sub_mins", DType::kU8, sub_bytes).data();
  }

  // Row r unpacked into the scratch vectors (codes: cols, subs: subs_per_row each).
  Row row(int64_t r, std::vector<uint8_t>& code_buf, std::vector<uint8_t>& sub_buf,
          std::vector<uint8_t>& sub_min_buf) const {
    Row out;
    if (t.family == Family::kLattice) return lattice_row(r, code_buf, sub_buf);
    unpack_bits(codes + r * l.cols * t.bits / 8, l.cols, t.bits, code_buf.data(), false);
    out.codes = code_buf.data();
    if (t.family == Family::kMx) {
      out.e = d + r * scales_per_row;
      return out;
    }
    out.d = d + 2 * r * scales_per_row;
    out.m = m ? m + 2 * r * scales_per_row : nullptr;
    const int64_t sub_row_bytes = subs_per_row * t.scale_bits / 8;
    if (sub) {
      unpack_bits(sub + r * sub_row_bytes, subs_per_row, t.scale_bits, sub_buf.data(), false);
      out.sub = sub_buf.data();
    }
    if (sub_min) {
      unpack_bits(sub_min + r * sub_row_bytes, subs_per_row, t.scale_bits, sub_min_buf.data(), false);
      out.sub_min = sub_min_buf.data();
    }
    return out;
  }

  // A lattice row: points' low bytes in place; their high bits and the sign bytes
  // unpacked into `buf` (at most cols / 4 + cols / 8 bytes), the l into `sub_buf`.
  Row lattice_row(int64_t r, std::vector<uint8_t>& buf, std::vector<uint8_t>& sub_buf) const {
    Row out;
    const int64_t points = points_per_row, sign_count = l.cols / 8;
    out.codes = codes + r * points;
    out.d = d + 2 * r * scales_per_row;
    if (high) {
      unpack_bits(high + r * points * high_bits / 8, points, high_bits, buf.data(), false);
      out.high = buf.data();
    }
    const int64_t sign_row_bytes = sign_count * t.bits / 8;
    unpack_bits(signs + r * sign_row_bytes, sign_count, t.bits, buf.data() + points, false);
    out.signs = buf.data() + points;
    unpack_bits(sub + r * subs_per_row / 2, subs_per_row, 4, sub_buf.data(), false);
    out.sub = sub_buf.data();
    return out;
  }
};

}  // namespace

std::optional<io::GgmlType> ggml_type_for(const Quantized& q) {
  const Twin* t = twin_of(q);
  if (!t) return std::nullopt;
  return t->type;
}

std::optional<GgufTwin> tensorkit_twin(io::GgmlType type) {
  for (const Twin& t : kTwins) {
    if (t.type != type) continue;
    GgufTwin twin;
    twin.scheme = t.scheme;
    if (t.family == Family::kInt) {
      twin.options.group_size = t.block;
      twin.options.granularity = Granularity::kGroup;
      twin.options.symmetric = t.symmetric;
      twin.options.scale_dtype = DType::kF16;
    }
    return twin;
  }
  return std::nullopt;
}

std::optional<io::GgmlType> ggml_type_for_scheme(std::string_view scheme, bool symmetric) {
  for (const Twin& t : kTwins) {
    if (scheme == t.scheme && (t.family != Family::kInt || t.symmetric == symmetric)) return t.type;
  }
  return std::nullopt;
}

std::string ggml_schemes_text(std::string_view asymmetric) {
  std::string out;
  for (const Twin& t : kTwins) {
    out += out.empty() ? "" : ", ";
    out += std::string(t.scheme) + (t.family == Family::kInt && !t.symmetric ? " " + std::string(asymmetric) : "") +
           " (" + io::ggml_traits(t.type).name + ")";
  }
  return out;
}

std::string ggml_no_type_reason(const Quantized& q, std::string_view asymmetric) {
  for (const Twin& t : kTwins) {
    if (q.scheme != t.scheme || !options_match(q, t) || whole_blocks(q, t)) continue;
    return "its rows of " + std::to_string(q.shape.empty() ? 0 : q.shape.back()) + " values are not whole " +
           io::ggml_traits(t.type).name + " blocks of " + std::to_string(t.block) + " values";
  }
  return "its scheme and options have no ggml block type (GGUF holds " + ggml_schemes_text(asymmetric) + ")";
}

std::vector<uint8_t> ggml_blocks(const Quantized& q, io::GgmlType type) {
  const Twin* t = twin_of(q);
  if (!t || t->type != type) {
    const std::string why = t ? std::string("its twin is ") + io::ggml_traits(t->type).name : "it has no ggml twin";
    throw usage_error("this " + q.scheme + " tensor cannot be stored as ggml " + io::ggml_traits(type).name + " (" +
                          why + ")",
                      q.scheme);
  }
  const Source src(q, *t);
  const Layout& l = src.l;
  const int64_t blocks_per_row = l.cols / t->block;
  const int64_t block_bytes = io::ggml_traits(type).type_bytes;
  std::vector<uint8_t> out(static_cast<size_t>(l.rows * blocks_per_row * block_bytes));
  parallel_row_tasks(l, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> codes(static_cast<size_t>(l.cols));
    std::vector<uint8_t> subs(static_cast<size_t>(src.subs_per_row)), sub_mins(subs.size());
    for (int64_t r = begin; r < end; ++r) {
      const Row row = src.row(r, codes, subs, sub_mins);
      uint8_t* dst = out.data() + r * blocks_per_row * block_bytes;
      for (int64_t b = 0; b < blocks_per_row; ++b) t->write(row, b, dst + b * block_bytes);
    }
  });
  return out;
}

}  // namespace tk::quant
