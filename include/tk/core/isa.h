// The vector instruction set the kernels use, chosen once per process at run time.
//
// The library may be built for a baseline processor (TK_NATIVE=OFF: x86-64-v2). Each
// vector kernel is compiled a second time for AVX2 (with FMA, F16C, BMI and BMI2) inside
// a target region (the TK_BEGIN_AVX2 ... TK_END_TARGET pragmas below, as simdjson does),
// and every call chooses between it and the scalar version by active_isa(). The choice is the best the
// processor and the operating system support, or what TK_ISA names (scalar, avx2) for
// tests and benchmarks. Every path gives the same output bytes: the scalar version is
// each kernel's reference.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#if defined(__x86_64__)
#define TK_X86 1
#else
#define TK_X86 0
#endif

// Functions defined between TK_BEGIN_AVX2 and TK_END_TARGET are compiled for AVX2 and may
// use its intrinsics; call them only when use_avx2() holds. Functions outside the region
// may be inlined into them, never the other way round.
#if TK_X86 && defined(__clang__)
#define TK_BEGIN_AVX2 \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,f16c,bmi,bmi2\"))), apply_to = function)")
#define TK_END_TARGET _Pragma("clang attribute pop")
#elif TK_X86
#define TK_BEGIN_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2\")")
#define TK_END_TARGET _Pragma("GCC pop_options")
#endif
// The same for one member function, where a region cannot go (inside a class). Lambdas
// in it are not compiled for AVX2: they may call only functions of a region.
#if TK_X86
#define TK_TARGET_AVX2 __attribute__((target("avx2,fma,f16c,bmi,bmi2")))
#endif

namespace tk {

// Ordered: a path also has every instruction of the paths before it.
enum class Isa : int { kScalar = 0, kAvx2 = 1 };

// "scalar", "avx2".
const char* isa_name(Isa isa);
// The inverse of isa_name; a usage error names the known paths.
Isa parse_isa(std::string_view name);

// Whether this processor (and its operating system) can run `isa`.
bool isa_supported(Isa isa);
// Every path this processor can run, scalar first.
std::vector<Isa> supported_isas();

// The path in use: TK_ISA when set, else the best supported. Reading TK_ISA happens on
// the first call; an unknown name or a path the processor lacks is a usage error (the
// tools call this before any work, so the error comes first).
Isa active_isa();

namespace detail {
extern std::atomic<int> active_isa_level;  // -1 until chosen; relaxed loads cost a plain load
int choose_isa_level();
}  // namespace detail

inline bool use_avx2() {
  const int level = detail::active_isa_level.load(std::memory_order_relaxed);
  return (level >= 0 ? level : detail::choose_isa_level()) >= static_cast<int>(Isa::kAvx2);
}

}  // namespace tk
