// The .npy header tokenizer: what NumPy writes is accepted, every rule is enforced with
// its exact message, and the prefix is checked before anything is allocated.
#include <gtest/gtest.h>

#include <string>

#include "tk/core/error.h"
#include "tk/io/npy_header.h"

namespace tk::io {
namespace {

std::string parse_error(const std::string& text, bool utf8 = false) {
  try {
    npy_parse_header(text, utf8);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    return e.what();
  }
  return "(accepted)";
}

TEST(NpyHeader, AcceptsWhatNumpyAndOthersWrite) {
  NpyHeader h = npy_parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                                     std::string(50, ' ') + "\n",
                                 false);
  EXPECT_EQ(h.dtype, DType::kF32);
  EXPECT_FALSE(h.fortran_order);
  EXPECT_FALSE(h.big_endian);
  EXPECT_EQ(h.shape, (Shape{2, 3}));

  // Any key order, double quotes, no trailing commas, spaces and newlines between tokens.
  h = npy_parse_header("{\"shape\":(7,),\"fortran_order\":True,\"descr\":\">i2\"}", false);
  EXPECT_EQ(h.shape, Shape{7});
  EXPECT_TRUE(h.fortran_order);
  EXPECT_TRUE(h.big_endian);
  EXPECT_EQ(h.dtype, DType::kI16);
  h = npy_parse_header("\t{ 'descr' : '|b1' ,\n 'fortran_order' : False ,\r\n 'shape' : ( 1 , 2 , ) , }\n", true);
  EXPECT_EQ(h.dtype, DType::kBool);
  EXPECT_EQ(h.shape, (Shape{1, 2}));
  EXPECT_EQ(npy_parse_header("{'descr': '<c8', 'fortran_order': False, 'shape': ()}", false).shape, Shape{});
  EXPECT_EQ(npy_parse_header("{'descr': '<u8', 'fortran_order': False, 'shape': (0, 4611686018427387904)}", false)
                .shape,
            (Shape{0, 4611686018427387904}));
}

TEST(NpyHeader, DescrTable) {
  const std::pair<const char*, DType> known[] = {
      {"|b1", DType::kBool}, {"|u1", DType::kU8},  {"|i1", DType::kI8},  {"<u2", DType::kU16},
      {"<i2", DType::kI16},  {"<u4", DType::kU32}, {"<i4", DType::kI32}, {"<u8", DType::kU64},
      {"<i8", DType::kI64},  {"<f2", DType::kF16}, {"<f4", DType::kF32}, {"<f8", DType::kF64},
      {"<c8", DType::kC64},
  };
  for (const auto& [descr, dtype] : known) {
    std::string text = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': ()}";
    EXPECT_EQ(npy_parse_header(text, false).dtype, dtype) << descr;
    EXPECT_EQ(npy_descr(dtype), std::string(descr));
  }
  for (DType d : {DType::kBF16, DType::kF8E4M3, DType::kF8E5M2, DType::kF8E8M0, DType::kF4, DType::kF6E2M3,
                  DType::kF6E3M2, DType::kF8E4M3FNUZ, DType::kF8E5M2FNUZ})
    EXPECT_FALSE(npy_descr(d)) << dtype_name(d);
}

TEST(NpyHeader, UnsupportedDtypes) {
  auto with = [](const std::string& descr) {
    return "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }";
  };
  EXPECT_EQ(parse_error(with("'<c16'")), "unsupported .npy dtype '<c16'");
  EXPECT_EQ(parse_error(with("'V2'")), "unsupported .npy dtype 'V2'");
  EXPECT_EQ(parse_error(with("'|V2'")), "unsupported .npy dtype '|V2'");
  EXPECT_EQ(parse_error(with("'|O'")), "unsupported .npy dtype '|O'");
  EXPECT_EQ(parse_error(with("'<U3'")), "unsupported .npy dtype '<U3'");
  EXPECT_EQ(parse_error(with("'f4'")), "unsupported .npy dtype 'f4'");
  EXPECT_EQ(parse_error(with("'<f16'")), "unsupported .npy dtype '<f16'");
  EXPECT_EQ(parse_error(with("''")), "unsupported .npy dtype ''");
  EXPECT_EQ(parse_error(with("[('a', '<i4'), ('b', '<f8')]")),
            "unsupported .npy dtype '[('a', '<i4'), ('b', '<f8')]'");
  EXPECT_EQ(parse_error(with("'\x01\xff'")), "unsupported .npy dtype '\x01\xff'");  // escaped when shown
}

TEST(NpyHeader, EveryRuleHasItsMessage) {
  const std::string m = "malformed .npy header: ";
  EXPECT_EQ(parse_error(""), m + "expected '{' at the start of the header dict at offset 0");
  EXPECT_EQ(parse_error("   "), m + "expected '{' at the start of the header dict at offset 3");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False}"), m + "missing key 'shape'");
  EXPECT_EQ(parse_error("{'shape': (), 'fortran_order': False}"), m + "missing key 'descr'");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'shape': ()}"), m + "missing key 'fortran_order'");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'descr': '<f4'}"), m + "duplicate key 'descr'");
  EXPECT_EQ(parse_error("{'shape': (), 'shape': ()}"), m + "duplicate key 'shape'");
  EXPECT_EQ(parse_error("{'fortran_order': False, 'fortran_order': False}"), m + "duplicate key 'fortran_order'");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}"),
            m + "unexpected key 'extra'");
  EXPECT_EQ(parse_error("{descr: '<f4'}"), m + "expected a quoted string as a key at offset 1");
  EXPECT_EQ(parse_error("{'descr' '<f4'}"), m + "expected ':' after a key at offset 9");
  EXPECT_EQ(parse_error("{'descr': '<f4' 'shape': ()}"), m + "expected '}' after a value at offset 16");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}"),
            m + "fortran_order must be True or False at offset 35");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': true, 'shape': ()}"),
            m + "fortran_order must be True or False at offset 38");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}"),
            m + "expected '(' to open the shape tuple at offset 50");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"), m + "shape (6) is not a tuple");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}"),
            m + "expected a non-negative integer in shape at offset 51");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}"),
            m + "expected a non-negative integer in shape at offset 53");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}"),
            m + "expected ')' to close the shape tuple at offset 52");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (07,)}"),
            m + "integer with leading zeros at offset 53");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}"),
            m + "dimension too large at offset 69");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"),
            m + "expected '}' after a value at offset 56");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x"),
            m + "unexpected text after the header dict at offset 54");
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': ()}}"),
            m + "unexpected text after the header dict at offset 53");
  EXPECT_EQ(parse_error("{'descr': '<f4"), m + "unterminated string at offset 14");
  EXPECT_EQ(parse_error("{'descr': '<f4\n'}"), m + "unterminated string at offset 14");
  EXPECT_EQ(parse_error("{'de\\x73cr': '<f4'}"), m + "escape sequences in strings are not supported at offset 4");
  EXPECT_EQ(parse_error("{'descr': [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["), m + "value nested too deeply at offset 42");
  EXPECT_EQ(parse_error("{'descr': [('a', '<i4')"), m + "unbalanced brackets at offset 23");
  // Too many elements, and too many dimensions.
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
            "shape [4294967296, 4294967296] has too many elements");
  std::string rank65 = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) rank65 += "1, ";
  EXPECT_EQ(parse_error(rank65 + ")}"), m + "shape has more than 64 dimensions");
  // Python 2 long suffix: only where NumPy accepts it.
  EXPECT_EQ(npy_parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L)}", false).shape,
            (Shape{2, 3}));
  EXPECT_EQ(parse_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2L,)}", true),
            m + "expected ')' to close the shape tuple at offset 52");
}

TEST(NpyHeader, Prefix) {
  auto bytes = [](std::initializer_list<uint8_t> tail) {
    std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    for (uint8_t t : tail) b.push_back(t);
    return b;
  };
  auto v1 = bytes({1, 0, 0x76, 0x00});
  EXPECT_EQ(npy_prefix_size(v1), 10u);
  NpyPrefix p = npy_parse_prefix(v1);
  EXPECT_EQ(p.major, 1);
  EXPECT_EQ(p.header_bytes, 0x76u);
  auto v2 = bytes({2, 0, 0x00, 0x00, 0x10, 0x00});
  EXPECT_EQ(npy_prefix_size(v2), 12u);
  EXPECT_EQ(npy_parse_prefix(v2).header_bytes, 0x100000u);
  auto v3 = bytes({3, 0, 0x01, 0x00, 0x10, 0x00});
  try {
    npy_parse_prefix(v3);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "header length 1048577 exceeds the limit of 1048576 bytes");
  }
  auto expect_bad = [](std::vector<uint8_t> b, const std::string& msg) {
    try {
      npy_prefix_size(b);
      ADD_FAILURE() << msg;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_EQ(std::string(e.what()), msg);
    }
  };
  expect_bad(bytes({1}), "not a .npy file (bad magic)");
  expect_bad({'N', 'U', 'M', 'P', 'Y', 0x93, 1, 0}, "not a .npy file (bad magic)");
  expect_bad(bytes({0, 0}), "unsupported .npy format version 0.0");
  expect_bad(bytes({1, 1}), "unsupported .npy format version 1.1");
  expect_bad(bytes({4, 0}), "unsupported .npy format version 4.0");
}

}  // namespace
}  // namespace tk::io
