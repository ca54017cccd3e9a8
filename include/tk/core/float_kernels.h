// Array kernels between f32 and the narrow floats, bit-exact with the scalar reference
// functions of dtype.h (f32_to_f16, f16_to_f32, f32_to_bf16, bf16_to_f32). They run on one
// thread; callers split large arrays across threads. The default versions use F16C
// instructions when the build enables them; the portable versions are branch-free loops
// that the compiler vectorises, and are always compiled so that tests can check them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tk::detail {

void f32_to_f16_array(const float* src, uint16_t* dst, size_t n);
void f16_to_f32_array(const uint16_t* src, float* dst, size_t n);
void f32_to_bf16_array(const float* src, uint16_t* dst, size_t n);
void bf16_to_f32_array(const uint16_t* src, float* dst, size_t n);

void f32_to_f16_array_portable(const float* src, uint16_t* dst, size_t n);
void f16_to_f32_array_portable(const uint16_t* src, float* dst, size_t n);

// After an f32 -> F16/BF16 conversion: replace the +-Inf codes (magnitude `inf_code`)
// that came from finite inputs by +-max (magnitude `max_code`): the saturating cast.
// F16: 0x7c00 / 0x7bff; BF16: 0x7f80 / 0x7f7f.
void saturate_half_array(const float* src, uint16_t* dst, size_t n, uint16_t inf_code, uint16_t max_code);

struct FloatFormat;
// Encode n f32 values into one code byte each, exactly as float_format_encode does.
// Branch-free and vectorisable for the formats with a zero and at most 8 bits; E8M0 takes
// the scalar path.
void float_format_encode_f32_array(const FloatFormat& format, const float* src, uint8_t* codes, size_t n,
                                   bool saturate);

}  // namespace tk::detail
