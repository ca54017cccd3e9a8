// Hand-checked encodings: FP8 saturation, subnormals, ties and NaN; MX shared scales
// under each rule and element rounding; NVFP4 block and tensor scales; integer codes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/quant/quant_internal.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

std::vector<uint8_t> encode(DType dtype, const std::vector<float>& v, bool reference) {
  std::vector<uint8_t> codes(v.size());
  detail::encode_minifloat(dtype, v.data(), static_cast<int64_t>(v.size()), codes.data(), reference);
  return codes;
}

TEST(QuantEncoding, Fp8E4M3SaturatesRoundsEvenAndKeepsSubnormals) {
  const float sub = std::ldexp(1.0f, -9);  // smallest E4M3 subnormal
  const std::vector<float> v = {448, 464, 1e30f, -1e30f, 1.0f, -1.0f, 0.5f, sub, 1.5f * sub, 2.5f * sub,
                                0.4f * sub, -0.0f, 1.0625f, 1.1875f, NAN};
  const std::vector<uint8_t> want = {0x7e, 0x7e, 0x7e, 0xfe, 0x38, 0xb8, 0x30, 0x01, 0x02, 0x02,
                                     0x00, 0x80, 0x38, 0x3a, 0x7f};
  for (bool ref : {true, false}) EXPECT_EQ(encode(DType::kF8E4M3, v, ref), want) << ref;
}

TEST(QuantEncoding, Fp8E5M2SaturatesInsteadOfInfinity) {
  const std::vector<float> v = {57344, 61440, 1e30f, -1e30f, 1.0f, 1.125f, 1.375f, std::ldexp(1.0f, -16)};
  // 61440 is the tie between max and the Inf step: saturating gives max.
  const std::vector<uint8_t> want = {0x7b, 0x7b, 0x7b, 0xfb, 0x3c, 0x3c, 0x3e, 0x01};
  for (bool ref : {true, false}) EXPECT_EQ(encode(DType::kF8E5M2, v, ref), want) << ref;
}

Quantized quantize_row(const std::string& scheme, const std::vector<float>& x, ScaleRule rule = ScaleRule::kDefault) {
  QuantOptions o;
  o.scale_rule = rule;
  return make_scheme(scheme)->quantize(x.data(), Shape{static_cast<int64_t>(x.size())}, o);
}

// The unpacked 4-bit codes of an F4 part.
std::vector<uint8_t> nibbles(const Tensor& t) {
  std::vector<uint8_t> out;
  for (uint64_t i = 0; i < t.nbytes(); ++i) {
    out.push_back(t.data()[i] & 15);
    out.push_back(t.data()[i] >> 4);
  }
  return out;
}

TEST(QuantEncoding, Mxfp4FloorRuleTiesAndSaturation) {
  // amax 1.75: floor(log2 1.75) - emax(2) = -2, X = 0.25; 1.75 / X = 7 saturates to 6.
  std::vector<float> x(32, 0.0f);
  x[0] = 1.75f;    // 7 -> 6 (code 7)
  x[1] = 0.3125f;  // 1.25: tie between 1 and 1.5 -> 1 (code 2)
  x[2] = 0.4375f;  // 1.75: tie between 1.5 and 2 -> 2 (code 4)
  x[3] = 0.125f;   // 0.5: subnormal (code 1)
  x[4] = 0.0625f;  // 0.25: tie between 0 and 0.5 -> 0
  x[5] = -1.0f;    // -4 (code 8 | 6)
  const Quantized q = quantize_row("mxfp4", x);
  EXPECT_EQ(q.parts.at("scales").dtype(), DType::kF8E8M0);
  EXPECT_EQ(q.parts.at("scales").data()[0], 125);
  EXPECT_EQ(q.parts.at("codes").dtype(), DType::kF4);
  const auto c = nibbles(q.parts.at("codes"));
  EXPECT_EQ((std::vector<uint8_t>(c.begin(), c.begin() + 7)), (std::vector<uint8_t>{7, 2, 4, 1, 0, 14, 0}));
  std::vector<float> y(32);
  make_scheme("mxfp4")->dequantize(q, y.data());
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[5], -1.0f);
}

TEST(QuantEncoding, Mxfp4CeilAndSearchRules) {
  std::vector<float> x(32, 0.0f);
  x[0] = 1.75f;
  // ceil: smallest X with 1.75 / X <= 6 is 0.5 (code 126); 3.5 ties to 4 (code 6).
  const Quantized c = quantize_row("mxfp4", x, ScaleRule::kCeil);
  EXPECT_EQ(c.parts.at("scales").data()[0], 126);
  EXPECT_EQ(nibbles(c.parts.at("codes"))[0], 6);
  EXPECT_EQ(c.params.at("scale_rule"), "ceil");
  // search: X = 0.25 gives 1.5 (error 0.25), X = 0.5 gives 2 (error 0.25): the floor
  // rule's exponent is kept on a tie.
  EXPECT_EQ(quantize_row("mxfp4", x, ScaleRule::kSearch).parts.at("scales").data()[0], 125);
  // 1.95: floor X = 0.25 clips 7.8 to 6 (1.5, error 0.45); X = 0.5 gives 3.9 -> 4 (2.0,
  // error 0.05): search takes the larger exponent.
  x[0] = 1.95f;
  EXPECT_EQ(quantize_row("mxfp4", x, ScaleRule::kFloor).parts.at("scales").data()[0], 125);
  EXPECT_EQ(quantize_row("mxfp4", x, ScaleRule::kSearch).parts.at("scales").data()[0], 126);
}

TEST(QuantEncoding, Mxfp8AndMxint8) {
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = -0.5f;
  // E4M3: e = 0 - 8 = -8 (code 119); 256 = 2^8 is 0x78, -128 is 0xf0.
  const Quantized q = quantize_row("mxfp8_e4m3", x);
  EXPECT_EQ(q.parts.at("scales").data()[0], 119);
  EXPECT_EQ(q.parts.at("codes").data()[0], 0x78);
  EXPECT_EQ(q.parts.at("codes").data()[1], 0xf0);
  // INT8: emax 0, e = 0 (code 127); codes are value * 64 as two's complement.
  x[1] = -1.5f;
  const Quantized i = quantize_row("mxint8", x);
  EXPECT_EQ(i.parts.at("scales").data()[0], 127);
  EXPECT_EQ(i.parts.at("codes").dtype(), DType::kI8);
  EXPECT_EQ(i.parts.at("codes").data()[0], 64);
  EXPECT_EQ(i.parts.at("codes").data()[1], 0xa0);
  // An all-zero block gets the smallest scale, 2^-127 (code 0).
  const Quantized z = quantize_row("mxfp8_e5m2", std::vector<float>(32, 0.0f));
  EXPECT_EQ(z.parts.at("scales").data()[0], 0);
}

// A block whose amax is an f32 subnormal gets the smallest scale, X = 2^-127 (its floor
// exponent is below the E8M0 range under every rule), and each element decodes to the
// element format's rounding of x / X, times X: the error bound of a normal block, with
// the scale held at 2^-127 (half an element step times X, or the clip to the largest
// element for MXINT8).
TEST(QuantEncoding, MxBlockWithSubnormalAmaxDecodesWithinItsBound) {
  const float tiny = std::ldexp(1.0f, -149);  // the smallest f32 subnormal
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * tiny * static_cast<float>(1 + 263143 * i % 8388607);
  x[5] = std::bit_cast<float>(0x007fffffu);  // the largest subnormal: amax just below 2^-126
  x[6] = 0.0f;
  x[7] = tiny;
  const float amax_units = x[5] * std::ldexp(1.0f, 127);  // amax / 2^-127, just below 2
  const struct {
    const char* name;
    float max;  // the largest element
  } formats[] = {{"mxfp8_e4m3", 448}, {"mxfp8_e5m2", 57344}, {"mxfp6_e2m3", 7.5f},
                 {"mxfp6_e3m2", 28}, {"mxfp4", 6}, {"mxint8", 127.0f / 64.0f}};
  for (const auto& [name, max] : formats) {
    for (ScaleRule rule : {ScaleRule::kFloor, ScaleRule::kCeil, ScaleRule::kSearch}) {
      SCOPED_TRACE(std::string(name) + " rule " + std::to_string(static_cast<int>(rule)));
      const auto s = make_scheme(name);
      const Quantized q = quantize_row(name, x, rule);
      // Floor takes 2^-127. Ceil takes 2^-126 only where amax / 2^-127 would clip (MXINT8,
      // whose largest element is 127/64); search may take 2^-126 if that is closer.
      const int code = q.parts.at("scales").data()[0];
      if (rule == ScaleRule::kSearch) {
        EXPECT_LE(code, 1);
      } else if (rule == ScaleRule::kCeil) {
        EXPECT_EQ(code, amax_units > max ? 1 : 0);
      } else {
        EXPECT_EQ(code, 0);
      }
      const float scale = std::ldexp(1.0f, code - 127);
      std::vector<float> y(32);
      s->dequantize(q, y.data());
      const DType element = q.parts.at("codes").dtype();
      for (int i = 0; i < 32; ++i) {
        const double unit = static_cast<double>(x[i]) / scale;  // x in element units, |unit| < 2
        double want;
        if (element == DType::kI8) {
          want = std::clamp(std::nearbyint(unit * 64.0), -127.0, 127.0) / 64.0;
        } else {
          want = minifloat_to_f32(element, minifloat_from_f64(element, unit, true));
        }
        EXPECT_EQ(y[i], static_cast<float>(want * scale)) << "element " << i << " x " << x[i];
        // Bound: half the element's step below 2 (0.5 for E2M1, the coarsest), or the
        // MXINT8 clip (2 - 127/64).
        EXPECT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), 0.25 * scale) << "element " << i;
      }
    }
  }
}

TEST(QuantEncoding, MxBlockWithNaNGetsNaNScale) {
  std::vector<float> x(64, 0.25f);
  x[3] = NAN;
  const auto s = make_scheme("mxfp6_e2m3");
  const Quantized q = s->quantize(x.data(), Shape{64}, QuantOptions{});
  EXPECT_EQ(q.parts.at("scales").data()[0], 0xff);
  EXPECT_NE(q.parts.at("scales").data()[1], 0xff);
  std::vector<float> y(64);
  s->dequantize(q, y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[40], 0.25f);
}

TEST(QuantEncoding, Nvfp4Scales) {
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f * 448.0f;  // tensor amax: t = 1, first block scale 448 (0x7e)
  x[16] = 3.0f;          // second block: scale 0.5 (E4M3 0x30), code 6 -> 6 (0x7)
  x[17] = -1.0f;         // -2 (code 0xc)
  QuantOptions o;
  o.fast = true;
  const Quantized q = make_scheme("nvfp4")->quantize(x.data(), Shape{32}, o);
  EXPECT_EQ(q.parts.at("tensor_scale").data_as<float>()[0], 1.0f);
  EXPECT_EQ(q.parts.at("scales").data()[0], 0x7e);
  EXPECT_EQ(q.parts.at("scales").data()[1], 0x30);
  const auto c = nibbles(q.parts.at("codes"));
  EXPECT_EQ(c[0], 7);
  EXPECT_EQ(c[16], 7);
  EXPECT_EQ(c[17], 0xc);
}

TEST(QuantEncoding, SymmetricIntUsesTheNegativeLevel) {
  // Fast int4: d = max / -8 maps the largest magnitude to code -8 (stored 0).
  std::vector<float> x(32, 0.0f);
  x[0] = 0.8f;
  x[1] = -0.1f;
  QuantOptions o;
  o.fast = true;
  const Quantized q = make_scheme("int4")->quantize(x.data(), Shape{32}, o);
  EXPECT_EQ(q.parts.at("codes").data()[0], (8 + 1) << 4 | 0);  // codes 0 (= -8) and 9 (= +1)
  std::vector<float> y(32);
  make_scheme("int4")->dequantize(q, y.data());
  EXPECT_NEAR(y[0], 0.8f, 1e-3);
  EXPECT_NEAR(y[1], -0.1f, 1e-3);
}

TEST(QuantEncoding, BitPackingIsLsbFirst) {
  const uint8_t codes[8] = {1, 2, 3, 4, 5, 6, 7, 0};
  for (bool ref : {true, false}) {
    uint8_t out[3] = {};
    detail::pack_bits(codes, 8, 3, out, ref);
    // 001 010 011 100 101 110 111 000, first code in the lowest bits.
    EXPECT_EQ(out[0], 0b11010001) << ref;
    EXPECT_EQ(out[1], 0b01011000) << ref;
    EXPECT_EQ(out[2], 0b00011111) << ref;
    uint8_t back[8];
    detail::unpack_bits(out, 8, 3, back, ref);
    EXPECT_EQ(std::memcmp(back, codes, 8), 0) << ref;
  }
}

}  // namespace
}  // namespace tk::quant
