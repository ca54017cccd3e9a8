// Decode and encode of the narrow floats against fixtures written by
// tests/fixtures/generate.py from ml_dtypes and numpy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tk/core/dtype.h"
#include "tk/core/float_format.h"

namespace tk {
namespace {

struct Narrow {
  const char* name;  // fixture spelling (the short name)
  DType dtype;
};

const Narrow kNarrow[] = {
    {"f16", DType::kF16},         {"bf16", DType::kBF16},       {"f8_e4m3", DType::kF8E4M3},
    {"f8_e5m2", DType::kF8E5M2},  {"f8_e8m0", DType::kF8E8M0},  {"f4", DType::kF4},
    {"f6_e2m3", DType::kF6E2M3},  {"f6_e3m2", DType::kF6E3M2},  {"f8_e4m3fnuz", DType::kF8E4M3FNUZ},
    {"f8_e5m2fnuz", DType::kF8E5M2FNUZ},
};

template <typename T> std::vector<T> read_fixture(const std::string& name) {
  const std::string path = std::string(TK_FIXTURES_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "missing fixture " << path << " (run the fixtures.generate test)";
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size() % sizeof(T), 0u) << path;
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// The reference that produced the fixtures of `name` ("ml_dtypes 0.7.0 float8_e8m0fnu"),
// from references.txt, for the failure messages.
std::string reference_of(const std::string& name) {
  std::ifstream in(std::string(TK_FIXTURES_DIR) + "/references.txt");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  return "unknown reference (references.txt missing)";
}

// The trace every fixture comparison of one type carries: its name and its reference.
std::string trace_of(const Narrow& t) { return std::string(t.name) + ", expected values from " + reference_of(t.name); }

bool is_wide(DType d) { return d == DType::kF16 || d == DType::kBF16; }

// Expected codes as u32, whatever the file's width.
std::vector<uint32_t> read_codes(const std::string& stem, DType dtype) {
  std::vector<uint32_t> out;
  if (is_wide(dtype)) {
    for (uint16_t c : read_fixture<uint16_t>(stem + ".out.u16")) out.push_back(c);
  } else {
    for (uint8_t c : read_fixture<uint8_t>(stem + ".out.u8")) out.push_back(c);
  }
  return out;
}

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }

// Read code i of an array of `dtype` (packed for F4 / F6).
uint32_t code_at(DType dtype, const std::vector<uint8_t>& bytes, size_t i) {
  const int bits = dtype_bits(dtype);
  if (bits == 16) return bytes[2 * i] | (bytes[2 * i + 1] << 8);
  if (bits == 8) return bytes[i];
  const size_t bit = i * bits;
  uint32_t v = bytes[bit / 8] >> (bit % 8);
  if (bit % 8 + bits > 8) v |= bytes[bit / 8 + 1] << (8 - bit % 8);
  return v & ((1u << bits) - 1);
}

// Codes equal, except that for F16/BF16 any NaN of the same sign matches (NaN payloads
// are not specified by the reference).
bool same_code(DType dtype, uint32_t expected, uint32_t got) {
  if (expected == got) return true;
  if (!is_wide(dtype)) return false;
  const uint32_t exp_mask = dtype == DType::kF16 ? 0x7c00 : 0x7f80;
  const uint32_t man_mask = dtype == DType::kF16 ? 0x03ff : 0x007f;
  auto is_nan = [&](uint32_t c) { return (c & exp_mask) == exp_mask && (c & man_mask) != 0; };
  return is_nan(expected) && is_nan(got) && (expected & 0x8000) == (got & 0x8000);
}

uint32_t encode_scalar_f32(DType dtype, float v) {
  if (dtype == DType::kF16) return f32_to_f16(v);
  if (dtype == DType::kBF16) return f32_to_bf16(v);
  return minifloat_from_f64(dtype, v, false);
}

uint32_t encode_scalar_f64(DType dtype, double v) {
  if (dtype == DType::kF16) return detail::f64_to_f16(v, false);
  if (dtype == DType::kBF16) return detail::f64_to_bf16(v, false);
  return minifloat_from_f64(dtype, v, false);
}

float decode_scalar(DType dtype, uint32_t code) {
  if (dtype == DType::kF16) return f16_to_f32(static_cast<uint16_t>(code));
  if (dtype == DType::kBF16) return bf16_to_f32(static_cast<uint16_t>(code));
  return minifloat_to_f32(dtype, static_cast<uint8_t>(code));
}

// All codes of the type as one array of that type (packed for F4 / F6).
std::vector<uint8_t> all_codes_array(DType dtype) {
  const int bits = dtype_bits(dtype);
  const size_t n = size_t{1} << bits;
  std::vector<uint8_t> out(dtype_storage_bytes(dtype, n), 0);
  for (size_t i = 0; i < n; ++i) {
    if (bits == 16) {
      out[2 * i] = static_cast<uint8_t>(i);
      out[2 * i + 1] = static_cast<uint8_t>(i >> 8);
    } else {
      const size_t bit = i * bits;
      out[bit / 8] |= static_cast<uint8_t>(i << (bit % 8));
      if (bit % 8 + bits > 8) out[bit / 8 + 1] |= static_cast<uint8_t>(i >> (8 - bit % 8));
    }
  }
  return out;
}

// Same f32 bits, or both NaN.
bool same_value(float expected, float got) {
  return std::isnan(expected) ? std::isnan(got) : f32_bits(expected) == f32_bits(got);
}

TEST(DTypeFixture, DecodeEveryCodeMatchesReference) {
  for (const Narrow& t : kNarrow) {
    SCOPED_TRACE(trace_of(t));
    const std::vector<float> expected = read_fixture<float>(std::string("decode_") + t.name + ".f32");
    const size_t n = size_t{1} << dtype_bits(t.dtype);
    ASSERT_EQ(expected.size(), n);
    const std::vector<uint8_t> codes = all_codes_array(t.dtype);
    std::vector<float> as_f32(n);
    std::vector<double> as_f64(n);
    convert_to_f32(t.dtype, codes.data(), 0, n, as_f32.data());
    convert_to_f64(t.dtype, codes.data(), 0, n, as_f64.data());
    int failures = 0;
    for (size_t c = 0; c < n && failures < 10; ++c) {
      const float scalar = decode_scalar(t.dtype, static_cast<uint32_t>(c));
      const bool ok = same_value(expected[c], scalar) && same_value(expected[c], as_f32[c]) &&
                      (std::isnan(expected[c]) ? std::isnan(as_f64[c])
                                               : as_f64[c] == expected[c] &&
                                                     std::signbit(as_f64[c]) == std::signbit(expected[c]));
      EXPECT_TRUE(ok) << "code 0x" << std::hex << c << std::dec << ": expected " << expected[c] << ", scalar "
                      << scalar << ", convert_to_f32 " << as_f32[c] << ", convert_to_f64 " << as_f64[c];
      if (!ok) ++failures;
    }
  }
}

TEST(DTypeFixture, EncodeF32MatchesReference) {
  for (const Narrow& t : kNarrow) {
    SCOPED_TRACE(trace_of(t));
    const std::string stem = std::string("encode32_") + t.name;
    const std::vector<float> inputs = read_fixture<float>(stem + ".in.f32");
    const std::vector<uint32_t> expected = read_codes(stem, t.dtype);
    ASSERT_EQ(inputs.size(), expected.size());
    ASSERT_GT(inputs.size(), 1000u);
    // The array path: cast the whole input, packed output for F4 / F6. Round the count
    // down so that a packed array fills whole bytes.
    const size_t n = inputs.size() / 8 * 8;
    std::vector<uint8_t> array(dtype_storage_bytes(t.dtype, n));
    cast_array(DType::kF32, inputs.data(), t.dtype, array.data(), n);
    int failures = 0;
    for (size_t i = 0; i < inputs.size() && failures < 10; ++i) {
      const uint32_t scalar = encode_scalar_f32(t.dtype, inputs[i]);
      bool ok = same_code(t.dtype, expected[i], scalar);
      EXPECT_TRUE(ok) << "input " << inputs[i] << " (bits 0x" << std::hex << f32_bits(inputs[i])
                      << ") expected 0x" << expected[i] << " got 0x" << scalar << std::dec;
      if (i < n) {
        const uint32_t from_array = code_at(t.dtype, array, i);
        EXPECT_TRUE(same_code(t.dtype, expected[i], from_array))
            << "cast_array: input " << inputs[i] << " expected 0x" << std::hex << expected[i] << " got 0x"
            << from_array << std::dec;
        ok = ok && same_code(t.dtype, expected[i], from_array);
      }
      if (!ok) ++failures;
    }
  }
}

TEST(DTypeFixture, EncodeF64RoundsOnceMatchingReference) {
  for (const Narrow& t : kNarrow) {
    SCOPED_TRACE(trace_of(t));
    const std::string stem = std::string("encode64_") + t.name;
    const std::vector<double> inputs = read_fixture<double>(stem + ".in.f64");
    const std::vector<uint32_t> expected = read_codes(stem, t.dtype);
    ASSERT_EQ(inputs.size(), expected.size());
    const size_t n = inputs.size() / 8 * 8;
    std::vector<uint8_t> array(dtype_storage_bytes(t.dtype, n));
    cast_array(DType::kF64, inputs.data(), t.dtype, array.data(), n);
    int failures = 0;
    size_t double_rounding_cases = 0;
    for (size_t i = 0; i < inputs.size() && failures < 10; ++i) {
      const uint32_t scalar = encode_scalar_f64(t.dtype, inputs[i]);
      bool ok = same_code(t.dtype, expected[i], scalar);
      EXPECT_TRUE(ok) << "input " << inputs[i] << " expected 0x" << std::hex << expected[i] << " got 0x"
                      << scalar << std::dec;
      if (i < n) {
        const uint32_t from_array = code_at(t.dtype, array, i);
        EXPECT_TRUE(same_code(t.dtype, expected[i], from_array)) << "cast_array: input " << inputs[i];
        ok = ok && same_code(t.dtype, expected[i], from_array);
      }
      if (!ok) ++failures;
      if (!same_code(t.dtype, expected[i], encode_scalar_f32(t.dtype, static_cast<float>(inputs[i]))))
        ++double_rounding_cases;
    }
    // The fixture must contain inputs where rounding through f32 would give another code.
    EXPECT_GT(double_rounding_cases, 10u);
  }
}

}  // namespace
}  // namespace tk
