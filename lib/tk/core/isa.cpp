#include "tk/core/isa.h"

#if TK_X86
#include <cpuid.h>
#endif

#include <cstdlib>

#include "tk/core/error.h"

namespace tk {
namespace detail {
std::atomic<int> active_isa_level{-1};
}  // namespace detail

namespace {

bool cpu_has_avx2() {
#if TK_X86
  // libgcc's cpu model also checks that the OS saves the YMM registers (XGETBV).
  __builtin_cpu_init();
  // Clang before 16 has no "f16c" for __builtin_cpu_supports: CPUID leaf 1, ECX.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2");
#else
  return false;
#endif
}

std::string supported_list() {
  std::string list;
  for (Isa isa : supported_isas()) list += std::string(list.empty() ? "" : ", ") + isa_name(isa);
  return list;
}

}  // namespace

bool isa_supported(Isa isa) {
  static const bool avx2 = cpu_has_avx2();
  return isa == Isa::kScalar || (isa == Isa::kAvx2 && avx2);
}

const char* isa_name(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "scalar"; }

Isa parse_isa(std::string_view name) {
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") return Isa::kAvx2;
  throw usage_error("unknown instruction set '" + std::string(name) + "' (known: scalar, avx2)", "TK_ISA");
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::kScalar};
  if (isa_supported(Isa::kAvx2)) out.push_back(Isa::kAvx2);
  return out;
}

namespace {

// Use `isa` from now on; a usage error when the processor lacks it.
void set_active_isa(Isa isa) {
  if (!isa_supported(isa))
    throw usage_error(std::string("this processor cannot run the ") + isa_name(isa) + " path (it runs: " +
                      supported_list() + ")");
  detail::active_isa_level.store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace

int detail::choose_isa_level() {
  const char* forced = std::getenv("TK_ISA");
  if (forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced);
    try {
      set_active_isa(isa);
    } catch (const Error& e) {
      throw e.with_context("TK_ISA");
    }
  } else {
    detail::active_isa_level.store(static_cast<int>(supported_isas().back()), std::memory_order_relaxed);
  }
  return detail::active_isa_level.load(std::memory_order_relaxed);
}

Isa active_isa() {
  const int level = detail::active_isa_level.load(std::memory_order_relaxed);
  return static_cast<Isa>(level >= 0 ? level : detail::choose_isa_level());
}

}  // namespace tk
