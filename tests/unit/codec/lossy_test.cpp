// The lossy frame: Hadamard rotation inverse, round trips of every method available here
// within stated error bounds (SQNR floor at 4 bits per value, rate near the target),
// determinism for a seed, original dtype and shape restored, bad options and malformed
// frames rejected with the right error kind.
#include "tk/codec/lossy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tk/codec/hadamard.h"
#include "tk/codec/lossy_internal.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/stats.h"

namespace tk::codec {
namespace {

using test::kind_of;

Tensor gaussian(Shape shape, DType dtype, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  const uint64_t n = shape_numel(shape);
  std::vector<float> values(n);
  for (auto& v : values) v = normal(rng);
  Tensor t = Tensor::empty(dtype, std::move(shape));
  cast_array(DType::kF32, values.data(), dtype, t.mutable_data(), n);
  return t;
}

LossyOptions at_rate(LossyMethod method, double bits) {
  LossyOptions o;
  o.method = method;
  o.bits_per_value = bits;
  o.seed = 7;
  return o;
}

std::vector<LossyMethod> available_methods() {
  std::vector<LossyMethod> methods;
  for (LossyMethod m : {LossyMethod::kQuant, LossyMethod::kVideoHevc, LossyMethod::kVideoAv1, LossyMethod::kVideoH264})
    if (lossy_available(m)) methods.push_back(m);
  return methods;
}

TEST(Hadamard, BlocksAreTheBinaryExpansion) {
  EXPECT_EQ(hadamard_blocks(1008), (std::vector<uint32_t>{512, 256, 128, 64, 32, 16}));
  EXPECT_EQ(hadamard_blocks(3072), (std::vector<uint32_t>{1024, 1024, 1024}));
  EXPECT_EQ(hadamard_blocks(16), (std::vector<uint32_t>{16}));
  EXPECT_EQ(hadamard_padded_cols(384), 384u);
  EXPECT_EQ(hadamard_padded_cols(385), 400u);
  EXPECT_EQ(hadamard_padded_cols(1), 16u);
}

TEST(Hadamard, TransformIsOrthonormalAndItsOwnInverse) {
  std::vector<float> x(64), y;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 20.5f;
  y = x;
  walsh_hadamard(y.data(), y.size());
  double ex = 0, ey = 0;
  for (size_t i = 0; i < x.size(); ++i) ex += x[i] * x[i], ey += y[i] * y[i];
  EXPECT_NEAR(ey / ex, 1.0, 1e-6);
  walsh_hadamard(y.data(), y.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5f);
}

TEST(Hadamard, RotationInverseIsExactToFloatPrecision) {
  for (uint64_t cols : {16u, 48u, 1008u, 3072u}) {
    const uint64_t rows = 37;
    std::mt19937 rng(static_cast<uint32_t>(cols));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(rows * cols);
    for (auto& v : x) v = normal(rng);
    x[5] = 1000.0f;  // an outlier is spread over its block
    std::vector<float> y = x;
    hadamard_rotate(y.data(), rows, cols, 42);
    float max_rotated = 0;
    for (float v : y) max_rotated = std::max(max_rotated, std::fabs(v));
    EXPECT_LT(max_rotated, 1000.0f / 3);
    hadamard_unrotate(y.data(), rows, cols, 42);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-6f * 1000 * std::sqrt(1024.0f)) << cols << " " << i;
    double err = 0, energy = 0;
    for (size_t i = 0; i < x.size(); ++i) err += (y[i] - x[i]) * (y[i] - x[i]), energy += x[i] * x[i];
    EXPECT_LT(std::sqrt(err / energy), 1e-6) << cols;
  }
}

TEST(Hadamard, SignsDependOnTheSeed) {
  EXPECT_EQ(hadamard_signs(1, 0, 200), hadamard_signs(1, 0, 200));
  EXPECT_NE(hadamard_signs(1, 0, 200), hadamard_signs(2, 0, 200));
}

TEST(Hadamard, SignsOfAColumnRangeAreThatRangeOfTheRow) {
  const std::vector<float> row = hadamard_signs(9, 0, 4096);
  const std::vector<float> part = hadamard_signs(9, 1024, 3000);
  EXPECT_EQ(part, std::vector<float>(row.begin() + 1024, row.begin() + 4024));
}

// A decoder unrotates a long row piece by piece; the pieces must give exactly what the
// whole row gives.
TEST(Hadamard, UnrotatingColumnRangesMatchesTheWholeRow) {
  const uint64_t rows = 3, padded = 3 * 1024 + 48;  // blocks 1024 1024 1024 32 16
  const Tensor t = gaussian({static_cast<int64_t>(rows), static_cast<int64_t>(padded)}, DType::kF32, 3);
  std::vector<float> whole(rows * padded);
  std::memcpy(whole.data(), t.data(), t.nbytes());
  hadamard_rotate(whole.data(), rows, padded, 5);
  std::vector<float> pieces = whole;
  hadamard_unrotate(whole.data(), rows, padded, 5);
  for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, 1024}, {1024, 2048}, {3072, 48}}) {
    std::vector<float> part(rows * count);
    for (uint64_t r = 0; r < rows; ++r)
      std::memcpy(part.data() + r * count, pieces.data() + r * padded + first, count * sizeof(float));
    hadamard_unrotate_columns(part.data(), rows, padded, first, count, 5);
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < count; ++c)
        ASSERT_EQ(part[r * count + c], whole[r * padded + first + c]) << first << " " << r << " " << c;
  }
  std::vector<float> off(rows * 1000);
  EXPECT_EQ(kind_of([&] { hadamard_unrotate_columns(off.data(), rows, padded, 1024, 1000, 5); }),
            ErrorKind::kInternal);
}

TEST(Lossy, MethodNames) {
  for (LossyMethod m : {LossyMethod::kQuant, LossyMethod::kVideoHevc, LossyMethod::kVideoAv1, LossyMethod::kVideoH264})
    EXPECT_EQ(lossy_method_parse(lossy_method_name(m)), m);
  EXPECT_EQ(kind_of([] { lossy_method_parse("mpeg2"); }), ErrorKind::kUsage);
  EXPECT_TRUE(lossy_available(LossyMethod::kQuant));
}

// At 4 bits per value a Gaussian tensor must come back with SQNR above 18 dB (entropy-
// coded uniform quantization reaches ~22.5 dB; the rate-distortion bound is 24.1 dB),
// at a rate within 10% of the target, in its own dtype and shape.
TEST(Lossy, RoundTripAtFourBitsPerValue) {
  const Tensor t = gaussian({512, 1024}, DType::kF32, 1);
  for (LossyMethod m : available_methods()) {
    SCOPED_TRACE(lossy_method_name(m));
    LossyReport report;
    const std::vector<uint8_t> frame = lossy_encode(t, at_rate(m, 4), &report);
    EXPECT_EQ(report.values, t.numel());
    EXPECT_EQ(report.bytes, frame.size());
    EXPECT_NEAR(report.bits_per_value, 4.0, 0.4);
    EXPECT_GT(report.sqnr_db, 18.0);
    const Tensor back = lossy_decode(frame);
    EXPECT_EQ(back.dtype(), DType::kF32);
    EXPECT_EQ(back.shape(), t.shape());
    const TensorDiff diff = tensor_diff(t, back);
    const LossyFrameInfo info = lossy_inspect(frame);
    EXPECT_EQ(info.method, m);
    EXPECT_EQ(info.shape, t.shape());
    EXPECT_EQ(info.seed, 7u);
    EXPECT_TRUE(info.rotated);
    EXPECT_EQ(info.crf >= 0, m != LossyMethod::kQuant);
    EXPECT_EQ(info.report.bytes, report.bytes);
    EXPECT_EQ(info.report.sqnr_db, report.sqnr_db);
    EXPECT_EQ(info.report.max_abs_error, report.max_abs_error);
    EXPECT_NEAR(diff.sqnr_db, report.sqnr_db, 1e-9);
    EXPECT_NEAR(diff.max_abs_error, report.max_abs_error, 1e-12);
    EXPECT_NEAR(diff.rel_error, std::pow(10.0, -report.sqnr_db / 20), 1e-9);
  }
}

TEST(Lossy, QuantRateTracksTheTarget) {
  const Tensor t = gaussian({256, 768}, DType::kBF16, 2);
  double last_sqnr = 0;
  for (double bits : {1.5, 2.0, 3.0, 4.0, 6.0}) {
    LossyReport report;
    lossy_encode(t, at_rate(LossyMethod::kQuant, bits), &report);
    EXPECT_LE(report.bits_per_value, bits * 1.005) << bits;
    EXPECT_GE(report.bits_per_value, bits * 0.95) << bits;
    // Within 1.5 dB of 6.02 dB per bit less 1.53 dB (the high-rate entropy-coded
    // uniform quantizer); bf16 rounding of the input caps the top end.
    if (bits >= 2) {
      EXPECT_GT(report.sqnr_db, 6.02 * bits - 1.53 - 1.5) << bits;
    }
    EXPECT_GT(report.sqnr_db, last_sqnr);
    last_sqnr = report.sqnr_db;
  }
}

TEST(Lossy, VideoCrfAndDepth) {
  const Tensor t = gaussian({300, 200}, DType::kF16, 3);
  for (LossyMethod m : available_methods()) {
    if (m == LossyMethod::kQuant) continue;
    SCOPED_TRACE(lossy_method_name(m));
    for (int depth : {8, 10}) {
      LossyOptions o;
      o.method = m;
      o.crf = 10;
      o.bit_depth = depth;
      LossyReport fine, coarse;
      const auto frame = lossy_encode(t, o, &fine);
      o.crf = 40;
      lossy_encode(t, o, &coarse);
      EXPECT_GT(fine.sqnr_db, coarse.sqnr_db + 6) << depth;
      EXPECT_GT(fine.bits_per_value, coarse.bits_per_value) << depth;
      const Tensor back = lossy_decode(frame);
      EXPECT_EQ(back.dtype(), DType::kF16);
      EXPECT_EQ(back.shape(), t.shape());
    }
  }
}

// Every frame of a tensor is coded alike: CRF rate control in an all-intra stream gave
// the frames after the first far fewer bits (x265: 24 dB on one frame, 11 dB on four).
TEST(Lossy, VideoQualityDoesNotDependOnTheFrameCount) {
  for (LossyMethod m : available_methods()) {
    if (m == LossyMethod::kQuant) continue;
    SCOPED_TRACE(lossy_method_name(m));
    LossyOptions o;
    o.method = m;
    o.crf = 24;
    LossyReport one, four;
    lossy_encode(gaussian({1024, 64}, DType::kF32, 9), o, &one);
    lossy_encode(gaussian({4096, 64}, DType::kF32, 9), o, &four);
    EXPECT_NEAR(four.sqnr_db, one.sqnr_db, 1.5);
    EXPECT_NEAR(four.bits_per_value, one.bits_per_value, 0.1 * one.bits_per_value);
  }
}

TEST(Lossy, AwkwardShapesAndDtypes) {
  const std::vector<Shape> shapes = {{}, {1}, {7}, {1000}, {3, 5}, {2, 3, 40}, {0}, {4, 0}, {100, 1}};
  for (LossyMethod m : available_methods()) {
    for (const Shape& s : shapes) {
      for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
        SCOPED_TRACE(std::string(lossy_method_name(m)) + " " + shape_to_string(s) + " " + dtype_name(d));
        const Tensor t = gaussian(s, d, 4, 1.0f);
        LossyOptions o = at_rate(m, 6);
        if (m != LossyMethod::kQuant) o.bits_per_value = 0, o.crf = 0;
        LossyReport report;
        const Tensor back = lossy_decode(lossy_encode(t, o, &report));
        EXPECT_EQ(back.shape(), s);
        EXPECT_EQ(back.dtype(), d);
        // Tiny tensors spend part of the budget on the frame's fixed bytes.
        if (t.numel() >= 1000) {
          EXPECT_GT(report.sqnr_db, 15);
        } else if (t.numel() >= 16) {
          EXPECT_GT(report.sqnr_db, 10);
        }
      }
    }
  }
}

TEST(Lossy, DeterministicForASeed) {
  const Tensor t = gaussian({128, 256}, DType::kF32, 5);
  for (LossyMethod m : available_methods()) {
    SCOPED_TRACE(lossy_method_name(m));
    LossyOptions o = at_rate(m, 3);
    const auto a = lossy_encode(t, o);
    const auto b = lossy_encode(t, o);
    EXPECT_EQ(a, b);
    o.seed = 8;
    EXPECT_NE(lossy_encode(t, o), a);
  }
}

TEST(Lossy, RotationHelpsOnOutliers) {
  Tensor t = gaussian({64, 512}, DType::kF32, 6);
  float* x = t.mutable_data_as<float>();
  for (int i = 0; i < 64; ++i) x[i * 512 + (i * 37) % 512] = 2.0f;  // 100 sigma
  LossyOptions o = at_rate(LossyMethod::kQuant, 3);
  LossyReport rotated, plain;
  lossy_encode(t, o, &rotated);
  o.rotate = false;
  const auto frame = lossy_encode(t, o, &plain);
  EXPECT_GT(rotated.sqnr_db, 6.02 * 3 - 3);
  EXPECT_EQ(tensor_diff(t, lossy_decode(frame)).sqnr_db, plain.sqnr_db);
}

TEST(Lossy, BadOptions) {
  const Tensor f = gaussian({16, 16}, DType::kF32, 7);
  const Tensor i = Tensor::zeros(DType::kI32, {16, 16});
  EXPECT_EQ(kind_of([&] { lossy_encode(i, at_rate(LossyMethod::kQuant, 4)); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([&] { lossy_encode(Tensor::zeros(DType::kU8, {4}), at_rate(LossyMethod::kQuant, 4)); }),
            ErrorKind::kUsage);
  EXPECT_EQ(kind_of([&] { lossy_encode(f, at_rate(LossyMethod::kQuant, 0)); }), ErrorKind::kUsage);
  EXPECT_EQ(kind_of([&] { lossy_encode(f, at_rate(LossyMethod::kQuant, 17)); }), ErrorKind::kUsage);
  LossyOptions both = at_rate(LossyMethod::kVideoHevc, 4);
  both.crf = 20;
  EXPECT_EQ(kind_of([&] { lossy_encode(f, both); }), ErrorKind::kUsage);
  LossyOptions quant_crf = at_rate(LossyMethod::kQuant, 4);
  quant_crf.crf = 20;
  EXPECT_EQ(kind_of([&] { lossy_encode(f, quant_crf); }), ErrorKind::kUsage);
  if (lossy_available(LossyMethod::kVideoHevc)) {
    LossyOptions depth = at_rate(LossyMethod::kVideoHevc, 4);
    depth.bit_depth = 12;
    EXPECT_EQ(kind_of([&] { lossy_encode(f, depth); }), ErrorKind::kUsage);
    LossyOptions crf;
    crf.method = LossyMethod::kVideoHevc;
    crf.crf = 52;
    EXPECT_EQ(kind_of([&] { lossy_encode(f, crf); }), ErrorKind::kUsage);
  }
  Tensor nan = f.clone();
  nan.mutable_data_as<float>()[3] = NAN;
  EXPECT_EQ(kind_of([&] { lossy_encode(nan, at_rate(LossyMethod::kQuant, 4)); }), ErrorKind::kInvalidInput);
}

TEST(Lossy, MalformedFramesAreInvalidInput) {
  const Tensor t = gaussian({40, 64}, DType::kF32, 8);
  for (LossyMethod m : available_methods()) {
    SCOPED_TRACE(lossy_method_name(m));
    const std::vector<uint8_t> frame = lossy_encode(t, at_rate(m, 3));
    for (size_t n = 0; n < frame.size(); n += 1 + n / 8) {
      const std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(n));
      ASSERT_EQ(kind_of([&] { lossy_decode(cut); }), ErrorKind::kInvalidInput) << "truncated at " << n;
    }
    for (size_t at = 0; at < frame.size(); at += 1 + at / 16) {
      std::vector<uint8_t> bad = frame;
      bad[at] ^= static_cast<uint8_t>(1u << (at % 8));
      ASSERT_EQ(kind_of([&] { lossy_decode(bad); }), ErrorKind::kInvalidInput) << "bit flipped at " << at;
    }
    std::vector<uint8_t> longer = frame;
    longer.push_back(0);
    EXPECT_EQ(kind_of([&] { lossy_decode(longer); }), ErrorKind::kInvalidInput);
  }
  EXPECT_EQ(kind_of([] { lossy_decode(std::vector<uint8_t>{}); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(kind_of([] { lossy_decode(std::vector<uint8_t>(100, 0)); }), ErrorKind::kInvalidInput);
}

// A frame is decoded in units (bands of rows, or pieces of one long row) so that memory
// does not follow the size a frame claims. Every unit size gives the bytes of the
// whole-matrix decode (a unit larger than the matrix), across row pieces, bands, the
// tail of a near-square view and, for quant, chunk boundaries inside a unit.
TEST(Lossy, DecodingInUnitsGivesTheSameBytes) {
  struct Case {
    Shape shape;
    bool quant_only;
  };
  const std::vector<Case> cases = {{{37, 3120}, false},  // rows longer than the small units
                                   {{5000}, false},      // near-square view with a short last row
                                   {{300, 64}, false},   // bands of many rows
                                   {{2200, 2000}, true}, // two quant chunks, a boundary mid-row
                                   {{3, (1 << 21) + 16}, true}};  // a chunk boundary inside a row piece
  for (LossyMethod m : available_methods()) {
    for (const Case& c : cases) {
      if (c.quant_only && m != LossyMethod::kQuant) continue;
      SCOPED_TRACE(std::string(lossy_method_name(m)) + " " + shape_to_string(c.shape));
      const std::vector<uint8_t> frame = lossy_encode(gaussian(c.shape, DType::kBF16, 11), at_rate(m, 3));
      std::vector<uint8_t> whole;
      detail::lossy_decode_units(
          frame, [&](Buffer piece) { whole.insert(whole.end(), piece.data(), piece.data() + piece.size()); }, 0,
          uint64_t{1} << 30);
      const Tensor reference = lossy_decode(frame);
      ASSERT_EQ(whole.size(), reference.nbytes());
      ASSERT_EQ(std::memcmp(whole.data(), reference.data(), whole.size()), 0);
      for (uint64_t unit : {uint64_t{1024}, uint64_t{2048}, uint64_t{1} << 20}) {
        std::vector<uint8_t> bytes;
        size_t pieces = 0;
        detail::lossy_decode_units(
            frame,
            [&](Buffer piece) {
              EXPECT_LE(piece.size(), unit * 2) << unit;  // BF16: 2 bytes a value
              bytes.insert(bytes.end(), piece.data(), piece.data() + piece.size());
              ++pieces;
            },
            2, unit);
        if (unit < 4096) {
          EXPECT_GT(pieces, 1u) << unit;  // every case has more cells
        }
        ASSERT_EQ(bytes, whole) << unit;
      }
    }
  }
}

}  // namespace
}  // namespace tk::codec
