// Factories of the scheme families, used by the one scheme table (scheme.cpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tk/quant/scheme.h"

namespace tk::quant {

std::unique_ptr<Scheme> make_int_scheme(int bits);         // int2..int8
std::unique_ptr<Scheme> make_kquant_scheme(const std::string& name);  // q2k..q8k, null if unknown
std::unique_ptr<Scheme> make_fp8_scheme(const std::string& name);     // fp8_e4m3, fp8_e5m2, null if unknown
std::unique_ptr<Scheme> make_mx_scheme(const std::string& name);      // mxfp8_*, mxfp6_*, mxfp4, mxint8
std::unique_ptr<Scheme> make_nvfp4_scheme();
std::unique_ptr<Scheme> make_nf4_scheme();
std::unique_ptr<Scheme> make_iq4nl_scheme();  // llama.cpp's IQ4_NL levels
std::unique_ptr<Scheme> make_iq2xxs_scheme();  // llama.cpp's IQ2_XXS: 256-point grid of 8 values, 2.0625 bpw
std::unique_ptr<Scheme> make_iq2xs_scheme();   // llama.cpp's IQ2_XS: 512-point grid of 8 values, 2.3125 bpw
std::unique_ptr<Scheme> make_iq2s_scheme();    // llama.cpp's IQ2_S: 1024-point grid of 8 values, 2.5625 bpw
std::unique_ptr<Scheme> make_iq3xxs_scheme();  // llama.cpp's IQ3_XXS: 256-point grid of 4 values, 3.0625 bpw
std::unique_ptr<Scheme> make_iq3s_scheme();    // llama.cpp's IQ3_S: 512-point grid of 4 values, 3.4375 bpw
std::unique_ptr<Scheme> make_iq4xs_scheme();  // llama.cpp's IQ4_XS: those levels, 6-bit sub-block scales
// trellis:BITS[:STATE_BITS]; null when the spec is not of the trellis family.
std::unique_ptr<Scheme> make_trellis_scheme(std::string_view spec);

}  // namespace tk::quant
