// FROSTT .tns reading and writing: index base detection, comments, gzip, error lines,
// sniffing a stream and reading it once.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/buffer.h"
#include "tk/core/error.h"
#include "tk/io/stream.h"
#include "tk/io/tns.h"

namespace tk::io {
namespace {

TEST(Tns, ReadsOneBasedWithCommentsBlankLinesAndCrlf) {
  test::TempDir dir;
  const std::string text =
      "# a FROSTT tensor\n"
      "1 1 1 1.5\n"
      "\n"
      "  2 3 1   -2e-3 # trailing comment\r\n"
      "\t1 2 4 +7\n";
  const SparseTensor t = read_tns(dir.write("a.tns", text));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(t.indices, (std::vector<int64_t>{0, 0, 0, 1, 2, 0, 0, 1, 3}));
  EXPECT_EQ(t.values, (std::vector<double>{1.5, -2e-3, 7}));
}

TEST(Tns, AnyZeroIndexMeansZeroBased) {
  test::TempDir dir;
  const SparseTensor t = read_tns(dir.write("z.tns", std::string("0 4 2.0\n3 1 1\n")));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(t.indices, (std::vector<int64_t>{0, 4, 3, 1}));
}

TEST(Tns, DeclaredShapeIsKeptAndChecked) {
  test::TempDir dir;
  const std::string path = dir.write("s.tns", std::string("1 1 1\n2 5 3\n"));
  TnsReadOptions o;
  o.shape = {3, 6};
  EXPECT_EQ(read_tns(path, o).shape, (std::vector<int64_t>{3, 6}));
  o.shape = {3, 4};
  test::expect_error_exact([&] { read_tns(path, o); }, ErrorKind::kInvalidInput,
                           "index 5 in mode 1 lies beyond the declared extent 4 (1-based)", path + ": line 2");
  o.shape = {3, 6, 1};
  EXPECT_EQ(test::kind_of([&] { read_tns(path, o); }), ErrorKind::kInvalidInput);
}

TEST(Tns, BadLinesNameTheirLineNumber) {
  test::TempDir dir;
  auto expect_line = [&](const std::string& text, const std::string& message, int line) {
    const std::string path = dir.write("bad.tns", text);
    test::expect_error_exact([&] { read_tns(path); }, ErrorKind::kInvalidInput, message,
                             path + ": line " + std::to_string(line));
  };
  expect_line("1 1 1.0\n# c\n1 x 2.0\n", "expected an integer index in mode 1", 3);
  expect_line("1 1 1.0\n2 2\n", "expected 3 fields, got 2", 2);
  expect_line("1 1 1.0\n2 2 3 4\n", "expected 3 fields, got more", 2);
  expect_line("1 1 1.0\n2 -2 1\n", "negative index in mode 1", 2);
  expect_line("1 1 nan\n", "the value is not finite", 1);
  expect_line("1 1 abc\n", "expected a number as the value", 1);
  expect_line("1 1.5 2\n", "expected an integer index in mode 1", 1);
  const std::string empty = dir.write("empty.tns", std::string("# only a comment\n"));
  test::expect_error_exact([&] { read_tns(empty); }, ErrorKind::kInvalidInput,
                           "the .tns file has no entries (and no shape was given)", empty);
}

TEST(Tns, ReadsGzip) {
  test::TempDir dir;
  const std::string path = dir.path() + "/g.tns.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  std::string text;
  for (int i = 1; i <= 5000; ++i) text += std::to_string(i) + " " + std::to_string(i % 7 + 1) + " 0.25\n";
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  const SparseTensor t = read_tns(path);
  EXPECT_EQ(t.nnz(), 5000);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{5000, 7}));
  EXPECT_EQ(t.values.back(), 0.25);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  EXPECT_EQ(test::kind_of([&] { read_tns(dir.write("t.tns.gz", bytes.substr(0, bytes.size() / 2))); }),
            ErrorKind::kInvalidInput);
}

// A stream that is not a regular file (a pipe, here memory) is sniffed and then parsed
// from the same stream: the peeked head is not lost.
TEST(Tns, SniffedStreamIsReadOnce) {
  std::string text = "# comment\n";
  for (int i = 1; i <= 3000; ++i) text += std::to_string(i) + " " + std::to_string(i % 5 + 1) + " 1.5\n";
  auto stream_of = [](const std::string& bytes) {
    Buffer b = Buffer::allocate(bytes.size());
    std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
    return InputStream::from_buffer(std::move(b), "<pipe>");
  };
  auto plain = stream_of(text);
  ASSERT_TRUE(stream_holds_tns(*plain));
  SparseTensor t = read_tns(*plain);
  EXPECT_EQ(t.nnz(), 3000);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3000, 5}));
  EXPECT_EQ(t.indices[0], 0);

  std::vector<uint8_t> gz(compressBound(static_cast<uLong>(text.size())) + 64);
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);  // gzip wrapper
  z.next_in = reinterpret_cast<Bytef*>(text.data());
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = gz.data();
  z.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz.resize(z.total_out);
  deflateEnd(&z);
  auto zipped = stream_of(std::string(gz.begin(), gz.end()));
  ASSERT_TRUE(stream_holds_tns(*zipped));
  t = read_tns(*zipped);
  EXPECT_EQ(t.nnz(), 3000);
  EXPECT_EQ(t.values.back(), 1.5);

  // Dense signatures are not .tns, whatever follows them.
  EXPECT_FALSE(stream_holds_tns(*stream_of(std::string("\x93NUMPY\x01\x00") + "1 2 3\n")));
  EXPECT_FALSE(stream_holds_tns(*stream_of("")));
  auto bad = stream_of("1 1 1.0\n2 x 2.0\n");
  ASSERT_TRUE(stream_holds_tns(*bad));
  try {
    read_tns(*bad);
    ADD_FAILURE() << "a bad line was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(e.where(), "<pipe>: line 2");
  }
}

TEST(Tns, WriteReadsBackExactly) {
  test::TempDir dir;
  SparseTensor t;
  t.shape = {3, 4, 5};
  t.indices = {0, 0, 0, 2, 3, 4, 1, 2, 3};
  t.values = {0.1, -1e300, 3.0000000000000004};
  const std::string path = dir.path() + "/w.tns";
  write_tns(path, t);
  const SparseTensor back = read_tns(path);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.indices, t.indices);
  EXPECT_EQ(back.values, t.values);
}

TEST(Tns, LooksLikeTns) {
  auto looks = [](const std::string& s) { return looks_like_tns(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  EXPECT_TRUE(looks("# header\n1 2 3 4.5\n"));
  EXPECT_TRUE(looks("\x1f\x8b\x08"));
  EXPECT_FALSE(looks("{\"a\": 1}"));
  EXPECT_FALSE(looks("1.5 2 3\n"));
  EXPECT_FALSE(looks("hello world\n"));
  EXPECT_FALSE(looks(""));
}


// The parts of a file read by P readers: every line once, whatever the byte cuts fall on.
TEST(TnsPart, EveryLineIsReadByExactlyOnePart) {
  test::TempDir dir;
  std::string text = "# header comment\n";
  for (int e = 0; e < 40; ++e)
    text += std::to_string(e % 7 + 1) + " " + std::to_string(e % 5 + 1) + "  " + std::to_string(e) + ".25" +
            (e % 3 ? "\n" : "\r\n");
  text += "3 3 99";  // no final newline
  const std::string path = dir.write("p.tns", text);
  const SparseTensor whole = read_tns(path);
  for (int parts = 1; parts <= 9; ++parts) {
    std::vector<int64_t> indices;
    std::vector<double> values;
    int entries = 0;
    for (int part = 0; part < parts; ++part) {
      const TnsPart p = read_tns_part(path, part, parts);
      EXPECT_TRUE(p.tensor.shape.empty());
      EXPECT_FALSE(p.saw_zero);
      if (p.order) EXPECT_EQ(p.order, 2);
      entries += static_cast<int>(p.tensor.nnz());
      for (int64_t i : p.tensor.indices) indices.push_back(i - 1);  // as written: 1-based
      values.insert(values.end(), p.tensor.values.begin(), p.tensor.values.end());
    }
    EXPECT_EQ(entries, 41) << parts << " parts";
    EXPECT_EQ(indices, whole.indices) << parts << " parts";
    EXPECT_EQ(values, whole.values) << parts << " parts";
  }
  // More parts than lines: the extra parts are empty.
  const TnsPart last = read_tns_part(path, 299, 300);
  EXPECT_EQ(last.order, 0);
}

TEST(TnsPart, AnErrorNamesItsLineInTheWholeFile) {
  test::TempDir dir;
  std::string text;
  for (int e = 0; e < 30; ++e) text += e == 24 ? "1 x 2\n" : "1 2 3\n";
  const std::string path = dir.write("bad.tns", text);
  for (int part = 0; part < 3; ++part) {
    if (part < 2) {
      EXPECT_EQ(read_tns_part(path, part, 3).tensor.nnz(), 10);
      continue;
    }
    test::expect_error_exact([&] { read_tns_part(path, part, 3); }, ErrorKind::kInvalidInput,
                             "expected an integer index in mode 1", path + ": line 25");
  }
}

}  // namespace
}  // namespace tk::io
