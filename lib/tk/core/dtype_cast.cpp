// Block encoders and the public cast_array.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "tk/core/dtype_array.h"
#include "tk/core/error.h"
#include "tk/core/float_format.h"
#include "tk/core/float_kernels.h"

namespace tk::detail {
namespace {

// Round to nearest (ties to even) and clamp to T's range; NaN -> 0.
template <typename T> inline T float_to_int(double v) {
  if (std::isnan(v)) return 0;
  v = std::nearbyint(v);
  constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
  const double high_bound = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1
  if (v <= kLow) return std::numeric_limits<T>::min();
  if (v >= high_bound) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Clamp an f64 to +-FLT_MAX before narrowing when saturating; Inf and NaN pass.
inline float narrow_to_f32(double v, bool saturate) {
  const float f = static_cast<float>(v);
  if (saturate && std::isinf(f) && std::isfinite(v))
    return std::copysign(std::numeric_limits<float>::max(), f);
  return f;
}

// Shared by the f32 and f64 encoders: every target except F16/BF16/F32.
template <typename In> bool encode_common(DType dtype, const In* src, uint64_t first, uint64_t n, void* dst,
                                          bool saturate) {
  auto* bytes = static_cast<uint8_t*>(dst);
  switch (dtype) {
    case DType::kBool:
      for (uint64_t i = 0; i < n; ++i) bytes[first + i] = load<In>(src, i) != In{0} ? 1 : 0;
      return true;
#define TK_ENCODE_INT(TAG, T) \
    case DType::TAG: \
      for (uint64_t i = 0; i < n; ++i) store<T>(dst, first + i, float_to_int<T>(load<In>(src, i))); \
      return true;
    TK_ENCODE_INT(kU8, uint8_t)
    TK_ENCODE_INT(kI8, int8_t)
    TK_ENCODE_INT(kU16, uint16_t)
    TK_ENCODE_INT(kI16, int16_t)
    TK_ENCODE_INT(kU32, uint32_t)
    TK_ENCODE_INT(kI32, int32_t)
    TK_ENCODE_INT(kU64, uint64_t)
    TK_ENCODE_INT(kI64, int64_t)
#undef TK_ENCODE_INT
    case DType::kF64:
      for (uint64_t i = 0; i < n; ++i) store<double>(dst, first + i, static_cast<double>(load<In>(src, i)));
      return true;
    case DType::kC64:
      for (uint64_t i = 0; i < n; ++i) {
        store<float>(dst, 2 * (first + i), narrow_to_f32(load<In>(src, i), saturate));
        store<float>(dst, 2 * (first + i) + 1, 0.0f);
      }
      return true;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kF8E8M0:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2FNUZ: {
      const FloatFormat& format = float_format(dtype);
      if constexpr (std::is_same_v<In, float>) {
        float_format_encode_f32_array(format, src, bytes + first, n, saturate);
      } else {
        for (uint64_t i = 0; i < n; ++i)
          bytes[first + i] = static_cast<uint8_t>(float_format_encode(format, load<In>(src, i), saturate));
      }
      return true;
    }
    case DType::kF4:
    case DType::kF6E2M3:
    case DType::kF6E3M2: {
      const FloatFormat& format = float_format(dtype);
      const int bits = dtype_bits(dtype);
      uint8_t codes[kBlockElements];
      for (uint64_t done = 0; done < n; done += kBlockElements) {
        const uint64_t m = std::min(kBlockElements, n - done);
        if constexpr (std::is_same_v<In, float>) {
          float_format_encode_f32_array(format, src + done, codes, m, saturate);
        } else {
          for (uint64_t i = 0; i < m; ++i)
            codes[i] = static_cast<uint8_t>(float_format_encode(format, load<In>(src, done + i), saturate));
        }
        pack_codes(codes, bits, m, bytes + (first + done) * static_cast<uint64_t>(bits) / 8);
      }
      return true;
    }
    default:
      return false;
  }
}

// Integer (and BOOL) to integer: clamp to the target range; BOOL targets take x != 0.
void cast_int_block(DType from, const void* src, DType to, void* dst, uint64_t first, uint64_t n) {
  __int128 wide[kBlockElements];
  const auto* in = static_cast<const uint8_t*>(src);
  switch (from) {
    case DType::kBool:
      for (uint64_t i = 0; i < n; ++i) wide[i] = in[first + i] != 0;
      break;
#define TK_READ_INT(TAG, T) \
    case DType::TAG: \
      for (uint64_t i = 0; i < n; ++i) wide[i] = load<T>(src, first + i); \
      break;
    TK_READ_INT(kU8, uint8_t)
    TK_READ_INT(kI8, int8_t)
    TK_READ_INT(kU16, uint16_t)
    TK_READ_INT(kI16, int16_t)
    TK_READ_INT(kU32, uint32_t)
    TK_READ_INT(kI32, int32_t)
    TK_READ_INT(kU64, uint64_t)
    TK_READ_INT(kI64, int64_t)
#undef TK_READ_INT
    default: return;
  }
  auto* out = static_cast<uint8_t*>(dst);
  switch (to) {
    case DType::kBool:
      for (uint64_t i = 0; i < n; ++i) out[first + i] = wide[i] != 0;
      return;
#define TK_WRITE_INT(TAG, T) \
    case DType::TAG: { \
      constexpr __int128 kLow = std::numeric_limits<T>::min(), kHigh = std::numeric_limits<T>::max(); \
      for (uint64_t i = 0; i < n; ++i) \
        store<T>(dst, first + i, static_cast<T>(wide[i] < kLow ? kLow : wide[i] > kHigh ? kHigh : wide[i])); \
      return; \
    }
    TK_WRITE_INT(kU8, uint8_t)
    TK_WRITE_INT(kI8, int8_t)
    TK_WRITE_INT(kU16, uint16_t)
    TK_WRITE_INT(kI16, int16_t)
    TK_WRITE_INT(kU32, uint32_t)
    TK_WRITE_INT(kI32, int32_t)
    TK_WRITE_INT(kU64, uint64_t)
    TK_WRITE_INT(kI64, int64_t)
#undef TK_WRITE_INT
    default: return;
  }
}

}  // namespace

void encode_block_from_f32(DType dtype, const float* src, uint64_t first, uint64_t n, void* dst, bool saturate) {
  auto* halves = static_cast<uint16_t*>(dst) + first;
  switch (dtype) {
    case DType::kF16:
      f32_to_f16_array(src, halves, n);
      if (saturate) saturate_half_array(src, halves, n, 0x7c00u, 0x7bffu);
      return;
    case DType::kBF16:
      f32_to_bf16_array(src, halves, n);
      if (saturate) saturate_half_array(src, halves, n, 0x7f80u, 0x7f7fu);
      return;
    case DType::kF32:
      std::memcpy(static_cast<float*>(dst) + first, src, n * sizeof(float));
      return;
    default:
      encode_common(dtype, src, first, n, dst, saturate);
  }
}

void encode_block_from_f64(DType dtype, const double* src, uint64_t first, uint64_t n, void* dst, bool saturate) {
  switch (dtype) {
    case DType::kF16:
      for (uint64_t i = 0; i < n; ++i) store<uint16_t>(dst, first + i, f64_to_f16(load<double>(src, i), saturate));
      return;
    case DType::kBF16:
      for (uint64_t i = 0; i < n; ++i) store<uint16_t>(dst, first + i, f64_to_bf16(load<double>(src, i), saturate));
      return;
    case DType::kF32:
      for (uint64_t i = 0; i < n; ++i) store<float>(dst, first + i, narrow_to_f32(load<double>(src, i), saturate));
      return;
    default:
      encode_common(dtype, src, first, n, dst, saturate);
  }
}

}  // namespace tk::detail

namespace tk {

void cast_array(DType from, const void* src, DType to, void* dst, uint64_t count, const CastOptions& options) {
  using namespace detail;
  dtype_traits(from);
  dtype_traits(to);
  const uint64_t src_bytes = packed_bytes(from, count);
  packed_bytes(to, count);
  if (count == 0) return;
  const bool saturate = options.saturate;
  const auto* in = static_cast<const uint8_t*>(src);

  if (from == to) {
    std::memcpy(dst, src, src_bytes);
    const uint64_t used_bits = count * static_cast<uint64_t>(dtype_bits(from)) % 8;
    if (used_bits != 0) static_cast<uint8_t*>(dst)[src_bytes - 1] &= static_cast<uint8_t>((1u << used_bits) - 1);
    return;
  }
  if (dtype_is_integer(from) && dtype_is_integer(to)) {
    for_blocks(count, [&](uint64_t b, uint64_t n) { cast_int_block(from, src, to, dst, b, n); });
    return;
  }
  if (from == DType::kC64 && to == DType::kBool) {  // nonzero real or imaginary part
    auto* out = static_cast<uint8_t*>(dst);
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      for (uint64_t i = b; i < b + n; ++i) {
        float re, im;
        std::memcpy(&re, in + 8 * i, 4);
        std::memcpy(&im, in + 8 * i + 4, 4);
        out[i] = (re != 0.0f || im != 0.0f) ? 1 : 0;
      }
    });
    return;
  }
  if (from == DType::kF32) {
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      encode_block_from_f32(to, reinterpret_cast<const float*>(in) + b, b, n, dst, saturate);
    });
    return;
  }
  if (from == DType::kF64) {
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      encode_block_from_f64(to, reinterpret_cast<const double*>(in) + b, b, n, dst, saturate);
    });
    return;
  }
  if (to == DType::kF32) {  // exact or one rounding, never overflows
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      decode_block_f32(from, src, b, n, static_cast<float*>(dst) + b);
    });
    return;
  }
  if (to == DType::kF64) {
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      decode_block_f64(from, src, b, n, static_cast<double*>(dst) + b);
    });
    return;
  }
  if (dtype_is_integer(from)) {  // via f64: exact up to 2^53
    for_blocks(count, [&](uint64_t b, uint64_t n) {
      double scratch[kBlockElements];
      decode_block_f64(from, src, b, n, scratch);
      encode_block_from_f64(to, scratch, b, n, dst, saturate);
    });
    return;
  }
  // A float no wider than f32 (or C64's real part): decoding to f32 is exact, so the
  // encode is the only rounding.
  for_blocks(count, [&](uint64_t b, uint64_t n) {
    float scratch[kBlockElements];
    decode_block_f32(from, src, b, n, scratch);
    encode_block_from_f32(to, scratch, b, n, dst, saturate);
  });
}

CastLosses& CastLosses::operator+=(const CastLosses& other) {
  rounded += other.rounded;
  clamped += other.clamped;
  overflowed += other.overflowed;
  return *this;
}

namespace {

// Whether a block of a float array may hold Inf or NaN: exact for whole-byte types (by the
// bits, or a table of the 256 codes), always true for packed ones. Keeps the loss count
// of a cast that loses nothing at memory speed.
class NonFiniteScan {
 public:
  explicit NonFiniteScan(DType dtype) : dtype_(dtype) {
    if (dtype_bits(dtype) != 8) return;
    for (int code = 0; code < 256; ++code) {
      const auto byte = static_cast<uint8_t>(code);
      double v;
      detail::decode_block_f64(dtype, &byte, 0, 1, &v);
      non_finite_[code] = !std::isfinite(v);
    }
  }
  bool any(const void* array, uint64_t first, uint64_t n) const {
    using detail::load;
    uint64_t found = 0;
    switch (dtype_) {
      case DType::kF32:
        for (uint64_t i = first; i < first + n; ++i) found += (load<uint32_t>(array, i) & 0x7f800000u) == 0x7f800000u;
        return found != 0;
      case DType::kF64:
        for (uint64_t i = first; i < first + n; ++i)
          found += (load<uint64_t>(array, i) & 0x7ff0000000000000u) == 0x7ff0000000000000u;
        return found != 0;
      case DType::kF16:
        for (uint64_t i = first; i < first + n; ++i) found += (load<uint16_t>(array, i) & 0x7c00u) == 0x7c00u;
        return found != 0;
      case DType::kBF16:
        for (uint64_t i = first; i < first + n; ++i) found += (load<uint16_t>(array, i) & 0x7f80u) == 0x7f80u;
        return found != 0;
      default:
        if (dtype_bits(dtype_) != 8) return true;
        for (uint64_t i = first; i < first + n; ++i) found += non_finite_[static_cast<const uint8_t*>(array)[i]];
        return found != 0;
    }
  }

 private:
  DType dtype_;
  bool non_finite_[256] = {};
};

}  // namespace

CastLosses cast_losses(DType from, const void* src, DType to, const void* dst, uint64_t count) {
  using namespace detail;
  CastLosses losses;
  if (!dtype_is_float(from) || to == DType::kBool || from == to) return losses;
  const bool to_integer = dtype_is_integer(to);
  const NonFiniteScan scan(to);
  double in[kBlockElements], out[kBlockElements];
  for (uint64_t first = 0; first < count; first += kBlockElements) {
    const uint64_t n = std::min(kBlockElements, count - first);
    if (!to_integer && !scan.any(dst, first, n)) continue;  // no Inf or NaN came out: nothing overflowed
    decode_block_f64(from, src, first, n, in);
    decode_block_f64(to, dst, first, n, out);
    for (uint64_t i = 0; i < n; ++i) {
      const double v = in[i];
      if (to_integer) {
        const double whole = std::nearbyint(v);
        if (std::isnan(v) || whole != out[i]) {
          ++losses.clamped;
        } else if (whole != v) {
          ++losses.rounded;
        }
      } else if (std::isfinite(v) && !std::isfinite(out[i])) {
        ++losses.overflowed;
      }
    }
  }
  return losses;
}

}  // namespace tk
