// Packed element access, block decoders and the public convert_to_f32 / convert_to_f64.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "tk/core/dtype_array.h"
#include "tk/core/error.h"
#include "tk/core/float_format.h"
#include "tk/core/float_kernels.h"

namespace tk::detail {
namespace {

// Decode with Out = float or double; ints convert with one rounding to Out.
template <typename Out> void decode_block(DType dtype, const void* src, uint64_t first, uint64_t n, Out* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (dtype) {
    case DType::kBool:
      for (uint64_t i = 0; i < n; ++i) store<Out>(dst, i, bytes[first + i] != 0 ? Out{1} : Out{0});
      return;
#define TK_DECODE_INT(TAG, T) \
    case DType::TAG: \
      for (uint64_t i = 0; i < n; ++i) store<Out>(dst, i, static_cast<Out>(load<T>(src, first + i))); \
      return;
    TK_DECODE_INT(kU8, uint8_t)
    TK_DECODE_INT(kI8, int8_t)
    TK_DECODE_INT(kU16, uint16_t)
    TK_DECODE_INT(kI16, int16_t)
    TK_DECODE_INT(kU32, uint32_t)
    TK_DECODE_INT(kI32, int32_t)
    TK_DECODE_INT(kU64, uint64_t)
    TK_DECODE_INT(kI64, int64_t)
    TK_DECODE_INT(kF32, float)
    TK_DECODE_INT(kF64, double)
#undef TK_DECODE_INT
    case DType::kC64:  // the real part
      for (uint64_t i = 0; i < n; ++i) store<Out>(dst, i, static_cast<Out>(load<float>(src, 2 * (first + i))));
      return;
    case DType::kF16:
    case DType::kBF16: {
      const auto* codes = reinterpret_cast<const uint16_t*>(bytes + 2 * first);
      auto convert = dtype == DType::kF16 ? f16_to_f32_array : bf16_to_f32_array;
      if constexpr (std::is_same_v<Out, float>) {
        convert(codes, dst, n);
      } else {
        float scratch[kBlockElements];
        for (uint64_t done = 0; done < n; done += kBlockElements) {
          const uint64_t m = std::min(kBlockElements, n - done);
          convert(codes + done, scratch, m);
          for (uint64_t i = 0; i < m; ++i) store<Out>(dst, done + i, static_cast<Out>(scratch[i]));
        }
      }
      return;
    }
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kF8E8M0:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2FNUZ: {
      const float* table = minifloat_table(dtype);
      for (uint64_t i = 0; i < n; ++i) store<Out>(dst, i, static_cast<Out>(table[bytes[first + i]]));
      return;
    }
    case DType::kF4:
    case DType::kF6E2M3:
    case DType::kF6E3M2: {
      const float* table = minifloat_table(dtype);
      uint8_t codes[kBlockElements];
      for (uint64_t done = 0; done < n; done += kBlockElements) {
        const uint64_t m = std::min(kBlockElements, n - done);
        unpack_codes(bytes, dtype_bits(dtype), first + done, m, codes);
        for (uint64_t i = 0; i < m; ++i) store<Out>(dst, done + i, static_cast<Out>(table[codes[i]]));
      }
      return;
    }
    case DType::kCount: break;
  }
  throw internal_error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

void check_packed_range(DType dtype, uint64_t first, uint64_t count) {
  if (first > UINT64_MAX - count) throw invalid_input("element range overflows");
  packed_bytes(dtype, first + count);
}

}  // namespace

void unpack_codes(const uint8_t* src, int bits, uint64_t first, uint64_t n, uint8_t* codes) {
  const uint32_t mask = (1u << bits) - 1;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bit = (first + i) * static_cast<uint64_t>(bits);
    const uint8_t* p = src + bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    uint32_t v = static_cast<uint32_t>(p[0]) >> shift;
    if (shift + static_cast<unsigned>(bits) > 8) v |= static_cast<uint32_t>(p[1]) << (8 - shift);
    codes[i] = static_cast<uint8_t>(v & mask);
  }
}

void pack_codes(const uint8_t* codes, int bits, uint64_t n, uint8_t* dst) {
  const uint64_t total_bits = n * static_cast<uint64_t>(bits);
  std::memset(dst, 0, (total_bits + 7) / 8);
  const uint32_t mask = (1u << bits) - 1;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bit = i * static_cast<uint64_t>(bits);
    uint8_t* p = dst + bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    const uint32_t v = (codes[i] & mask) << shift;
    p[0] = static_cast<uint8_t>(p[0] | v);
    if (shift + static_cast<unsigned>(bits) > 8) p[1] = static_cast<uint8_t>(p[1] | (v >> 8));
  }
}

uint64_t packed_bytes(DType dtype, uint64_t n) {
  const auto bits = static_cast<uint64_t>(dtype_bits(dtype));
  if (bits % 8 == 0 && n <= UINT64_MAX / (bits / 8)) return n * (bits / 8);
  if (bits % 8 != 0 && n <= (UINT64_MAX - 7) / bits) return (n * bits + 7) / 8;
  throw invalid_input("storage size of " + std::to_string(n) + " elements of " + dtype_name(dtype) +
                      " overflows");
}

void decode_block_f32(DType dtype, const void* src, uint64_t first, uint64_t n, float* dst) {
  decode_block<float>(dtype, src, first, n, dst);
}

void decode_block_f64(DType dtype, const void* src, uint64_t first, uint64_t n, double* dst) {
  decode_block<double>(dtype, src, first, n, dst);
}

}  // namespace tk::detail

namespace tk {

void convert_to_f32(DType dtype, const void* src, uint64_t first, uint64_t count, float* dst) {
  dtype_traits(dtype);
  detail::check_packed_range(dtype, first, count);
  detail::for_blocks(count, [&](uint64_t begin, uint64_t n) {
    detail::decode_block_f32(dtype, src, first + begin, n, dst + begin);
  });
}

void convert_to_f64(DType dtype, const void* src, uint64_t first, uint64_t count, double* dst) {
  dtype_traits(dtype);
  detail::check_packed_range(dtype, first, count);
  detail::for_blocks(count, [&](uint64_t begin, uint64_t n) {
    detail::decode_block_f64(dtype, src, first + begin, n, dst + begin);
  });
}

}  // namespace tk
