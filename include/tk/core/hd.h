// TK_HD marks a function that CUDA code calls on the device as well as the CPU on the
// host: one source for both, so that a GPU path computes what its CPU reference does,
// operation for operation (nvcc runs with --fmad=false, see CMakeLists.txt).
// TK_HD_INLINE also forces inlining on both sides: the CPU's kernels inline such
// functions into their AVX2 twins, where the loops vectorise.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TK_HD __host__ __device__
#define TK_HD_INLINE __host__ __device__ __forceinline__
#else
#define TK_HD
#define TK_HD_INLINE [[gnu::always_inline]] inline
#endif

namespace tk {

// The bits of a float and back, and leading zeros, on either side (CUDA sources are
// C++17: no std::bit_cast there).
TK_HD inline uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  return __builtin_bit_cast(uint32_t, v);
#endif
}
TK_HD inline float bits_float(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return __builtin_bit_cast(float, b);
#endif
}
TK_HD inline uint64_t double_bits(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  return __builtin_bit_cast(uint64_t, v);
#endif
}
TK_HD inline int leading_zeros(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __clz(static_cast<int>(v));
#else
  return v == 0 ? 32 : __builtin_clz(v);
#endif
}
TK_HD inline int leading_zeros(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(v));
#else
  return v == 0 ? 64 : __builtin_clzll(v);
#endif
}

}  // namespace tk
