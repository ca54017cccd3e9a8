// tquant's GPU path against the CPU: the same bytes from quantize, the same values from
// dequantize, for every integer width, granularity, offset form and scale dtype, for
// nf4's block sizes, scale storage and double quantization, for fp8's granularities,
// the six MX types under each scale rule and nvfp4, and for the K-quants.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu_test.h"
#include "tk/quant/scheme.h"

namespace tk::quant {
namespace {

// Rows of normal values with the cases that decide scales: an outlier per row, an
// all-zero group, a constant group, and a width that needs padding.
std::vector<float> sample(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) v = normal(rng);
  for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r * cols + (r * 7) % cols)] = 0.5f * (r % 2 ? 1 : -1);
  for (int64_t c = 0; c < std::min<int64_t>(cols, 64); ++c) x[static_cast<size_t>(c)] = 0.0f;
  if (rows > 1) {
    for (int64_t c = 0; c < std::min<int64_t>(cols, 64); ++c) x[static_cast<size_t>(cols + c)] = 0.125f;
  }
  return x;
}

void expect_same_parts(const Quantized& a, const Quantized& b, const std::string& what) {
  ASSERT_EQ(a.params, b.params) << what;
  ASSERT_EQ(a.parts.size(), b.parts.size()) << what;
  for (const auto& [name, part] : a.parts) {
    const Tensor& other = b.parts.at(name);
    ASSERT_EQ(part.nbytes(), other.nbytes()) << what << " " << name;
    EXPECT_EQ(std::memcmp(part.data(), other.data(), part.nbytes()), 0) << what << ": part " << name << " differs";
  }
}

// The same values bit for bit, except that a NaN may come back as any NaN (a NaN scale
// times a code: the CPU keeps an operand's payload, the GPU gives its canonical NaN).
void expect_same_values(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0u) << what << ": dequantized values differ";
}

// Quantize on the CPU and on device 0, compare the parts, then decode the CPU's parts both
// ways and compare the values.
void expect_gpu_matches(const Scheme& scheme, const std::vector<float>& x, const Shape& shape, QuantOptions o,
                        const std::string& what) {
  ASSERT_TRUE(scheme.gpu_path(o)) << what;
  o.device = -1;
  const Quantized cpu = scheme.quantize(x.data(), shape, o);
  o.device = 0;
  expect_same_parts(cpu, scheme.quantize(x.data(), shape, o), what);
  std::vector<float> y_cpu(x.size()), y_gpu(x.size(), -1.0f);
  scheme.dequantize(cpu, y_cpu.data());
  scheme.dequantize_on(cpu, y_gpu.data(), 0);
  expect_same_values(y_cpu, y_gpu, what);
}

struct Case {
  Granularity granularity;
  int64_t group;
  bool symmetric;
  bool zero_point;
  DType scale_dtype;
  bool fast;
  bool importance;
};

TEST(GpuQuant, IntSchemesGiveTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 96, cols = 1000;  // 1000: padded to the group
  const std::vector<float> x = sample(rows, cols, 7);
  std::vector<float> importance(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) importance[static_cast<size_t>(c)] = 0.5f + static_cast<float>(c % 13) / 7.0f;
  const std::vector<Case> cases = {
      {Granularity::kGroup, 32, true, false, DType::kF16, false, false},
      {Granularity::kGroup, 64, false, false, DType::kF16, false, false},
      {Granularity::kGroup, 128, false, true, DType::kF16, false, false},
      {Granularity::kGroup, 32, true, false, DType::kBF16, false, true},
      {Granularity::kGroup, 256, false, false, DType::kF32, false, true},
      {Granularity::kGroup, 32, true, false, DType::kF16, true, false},
      {Granularity::kGroup, 32, false, false, DType::kF16, true, false},
      {Granularity::kChannel, 0, true, false, DType::kF16, false, false},
      {Granularity::kChannel, 0, false, false, DType::kF32, false, true},
  };
  for (int bits = 2; bits <= 8; ++bits) {
    const auto scheme = make_scheme("int" + std::to_string(bits));
    for (const Case& c : cases) {
      QuantOptions o;
      o.granularity = c.granularity;
      o.group_size = c.group;
      o.symmetric = c.symmetric;
      o.integer_zero_point = c.zero_point;
      o.scale_dtype = c.scale_dtype;
      o.fast = c.fast;
      o.importance = c.importance ? importance.data() : nullptr;
      const std::string what = "int" + std::to_string(bits) + " group " + std::to_string(c.group) +
                               (c.symmetric ? " symmetric" : " asymmetric") + (c.zero_point ? " zero points" : "") +
                               (c.fast ? " fast" : "") + (c.importance ? " importance" : "");
      expect_gpu_matches(*scheme, x, Shape{rows, cols}, o, what);
    }
  }
}

TEST(GpuQuant, Nf4GivesTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 80, cols = 1000;
  const std::vector<float> x = sample(rows, cols, 9);
  std::vector<float> importance(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) importance[static_cast<size_t>(c)] = 0.25f + static_cast<float>(c % 7);
  const auto scheme = make_scheme("nf4");
  for (const int64_t group : {int64_t{0}, int64_t{32}, int64_t{128}}) {
    for (const bool fast : {false, true}) {
      for (const bool double_quant : {false, true}) {
        for (const DType scale_dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
          if (double_quant && scale_dtype != DType::kF16) continue;  // double quantization has its own storage
          QuantOptions o;
          o.group_size = group;
          o.fast = fast;
          o.double_quant = double_quant;
          o.scale_dtype = scale_dtype;
          o.importance = group == 32 ? importance.data() : nullptr;
          const std::string what = "nf4 group " + std::to_string(group) + (fast ? " fast" : "") +
                                   (double_quant ? " double quant" : "") + " " + dtype_name(scale_dtype);
          expect_gpu_matches(*scheme, x, Shape{rows, cols}, o, what);
        }
      }
    }
  }
}

std::vector<float> column_weights(int64_t cols) {
  std::vector<float> w(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) w[static_cast<size_t>(c)] = 0.3f + static_cast<float>(c % 11) / 5.0f;
  return w;
}

TEST(GpuQuant, Fp8GivesTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 70, cols = 999;  // not a multiple of 8
  std::vector<float> x = sample(rows, cols, 11);
  x[static_cast<size_t>(5 * cols + 3)] = 3.0e4f;     // an outlier that the candidates clip
  x[static_cast<size_t>(6 * cols + 9)] = 1.0e-40f;  // a subnormal
  const std::vector<float> importance = column_weights(cols);
  for (const char* name : {"fp8_e4m3", "fp8_e5m2"}) {
    const auto scheme = make_scheme(name);
    for (const Granularity g : {Granularity::kTensor, Granularity::kChannel}) {
      for (const bool fast : {false, true}) {
        for (const bool weighted : {false, true}) {
          QuantOptions o;
          o.granularity = g;
          o.fast = fast;
          o.importance = weighted ? importance.data() : nullptr;
          expect_gpu_matches(*scheme, x, Shape{rows, cols}, o,
                             std::string(name) + (g == Granularity::kTensor ? " tensor" : " channel") +
                                 (fast ? " fast" : "") + (weighted ? " importance" : ""));
        }
      }
    }
  }
}

TEST(GpuQuant, MxGivesTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 40, cols = 1000;  // padded to 1024
  std::vector<float> x = sample(rows, cols, 13);
  for (int64_t c = 64; c < 96; ++c) x[static_cast<size_t>(2 * cols + c)] = 1.0e-41f;  // a subnormal block
  x[static_cast<size_t>(3 * cols + 200)] = NAN;                                         // a NaN block
  x[static_cast<size_t>(4 * cols + 300)] = -INFINITY;                                   // an Inf block
  x[static_cast<size_t>(5 * cols + 40)] = 3.0e38f;                                      // the largest scale
  const std::vector<float> importance = column_weights(cols);
  for (const char* name : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8"}) {
    const auto scheme = make_scheme(name);
    for (const ScaleRule rule : {ScaleRule::kFloor, ScaleRule::kCeil, ScaleRule::kSearch}) {
      for (const bool weighted : {false, true}) {
        QuantOptions o;
        o.scale_rule = rule;
        o.importance = weighted ? importance.data() : nullptr;
        expect_gpu_matches(*scheme, x, Shape{rows, cols}, o,
                           std::string(name) + " rule " + std::to_string(static_cast<int>(rule)) +
                               (weighted ? " importance" : ""));
      }
    }
  }
}

TEST(GpuQuant, Nvfp4GivesTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 50, cols = 1000;  // padded to 1008
  const std::vector<float> x = sample(rows, cols, 17);
  const std::vector<float> importance = column_weights(cols);
  const auto scheme = make_scheme("nvfp4");
  for (const bool fast : {false, true}) {
    for (const bool pow2 : {false, true}) {
      for (const bool weighted : {false, true}) {
        QuantOptions o;
        o.fast = fast;
        o.power_of_two_tensor_scale = pow2;
        o.importance = weighted ? importance.data() : nullptr;
        expect_gpu_matches(*scheme, x, Shape{rows, cols}, o,
                           std::string("nvfp4") + (fast ? " fast" : "") + (pow2 ? " pow2" : "") +
                               (weighted ? " importance" : ""));
      }
    }
  }
}

TEST(GpuQuant, Iq4nlGivesTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 40, cols = 1000;  // padded to 1024
  const std::vector<float> x = sample(rows, cols, 29);
  const std::vector<float> importance = column_weights(cols);
  const auto scheme = make_scheme("iq4nl");
  for (const bool fast : {false, true}) {
    for (const bool weighted : {false, true}) {
      QuantOptions o;
      o.fast = fast;
      o.importance = weighted ? importance.data() : nullptr;
      expect_gpu_matches(*scheme, x, Shape{rows, cols}, o,
                         std::string("iq4nl") + (fast ? " fast" : "") + (weighted ? " importance" : ""));
    }
  }
}

TEST(GpuQuant, KQuantsGiveTheCpusBytesAndValues) {
  TK_REQUIRE_GPU();
  const int64_t rows = 24, cols = 600;  // padded to 768
  std::vector<float> x = sample(rows, cols, 19);
  for (int64_t c = 256; c < 512; ++c) {  // an all-positive super-block: a zero dmin
    x[static_cast<size_t>(3 * cols + c)] = std::fabs(x[static_cast<size_t>(3 * cols + c)]);
  }
  const std::vector<float> importance = column_weights(cols);
  for (const char* name : {"q2k", "q3k", "q4k", "q5k", "q6k", "q8k"}) {
    const auto scheme = make_scheme(name);
    for (int variant = 0; variant < 3; ++variant) {
      QuantOptions o;
      o.fast = variant == 1;
      o.importance = variant == 2 ? importance.data() : nullptr;
      expect_gpu_matches(*scheme, x, Shape{rows, cols}, o, std::string(name) + " variant " + std::to_string(variant));
    }
  }
}

// --budget's measurement on the GPU: each row's sums as the host adds them from the values
// it decodes, bit for bit (the reconstruction never leaves the device).
TEST(GpuQuant, MeasuredRowsEqualTheHosts) {
  TK_REQUIRE_GPU();
  const int64_t rows = 33, cols = 1024;
  const std::vector<float> x = sample(rows, cols, 23);
  const std::vector<float> weights = column_weights(cols);
  for (const char* name : {"int4", "int8", "q4k", "nf4", "iq4nl", "fp8_e4m3", "mxfp4", "nvfp4"}) {
    const auto scheme = make_scheme(name);
    const Quantized q = scheme->quantize(x.data(), Shape{rows, cols}, QuantOptions{});
    std::vector<float> y(x.size());
    scheme->dequantize(q, y.data());
    for (const int64_t block : {int64_t{0}, int64_t{32}, cols}) {
      for (const float* w : {static_cast<const float*>(nullptr), weights.data()}) {
        const std::string what = std::string(name) + " block " + std::to_string(block) + (w ? " weighted" : "");
        const std::vector<detail::RowSums> host = row_errors(x.data(), y.data(), rows, cols, w, block);
        std::vector<detail::RowSums> gpu(static_cast<size_t>(rows));
        ASSERT_TRUE(scheme->measure_on(q, x.data(), w, block, 0, gpu.data())) << what;
        for (int64_t r = 0; r < rows; ++r) {
          const detail::RowSums &a = host[static_cast<size_t>(r)], &b = gpu[static_cast<size_t>(r)];
          EXPECT_TRUE(a.signal == b.signal && a.noise == b.noise && a.weighted == b.weighted &&
                      a.max_abs == b.max_abs && a.clipped == b.clipped)
              << what << " row " << r;
        }
      }
    }
  }
}

TEST(GpuQuant, EmptyAndOneValueTensors) {
  TK_REQUIRE_GPU();
  for (const char* spec : {"int4", "nf4", "fp8_e4m3", "mxfp4", "nvfp4", "q4k"}) {
    const auto scheme = make_scheme(spec);
    QuantOptions o;
    for (const Shape& shape : {Shape{0, 32}, Shape{1}, Shape{3, 5}}) {
      std::vector<float> x(static_cast<size_t>(shape_numel(shape)), 0.25f);
      if (!x.empty()) x[0] = -1.0f;
      o.device = -1;
      const Quantized cpu = scheme->quantize(x.data(), shape, o);
      o.device = 0;
      expect_same_parts(cpu, scheme->quantize(x.data(), shape, o), std::string(spec) + " " + shape_to_string(shape));
    }
  }
}

}  // namespace
}  // namespace tk::quant
