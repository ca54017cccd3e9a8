// .npy reader and writer: round trips, NumPy's exact header bytes, Fortran order,
// big-endian data, 2.0/3.0 headers, every header rule, truncation, zero-copy mapping.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/npy.h"
#include "tk/io/npy_header.h"

namespace tk::io {
namespace {

using Bytes = std::vector<uint8_t>;

// A .npy file with the given dict text, padded to 64 bytes as NumPy pads.
Bytes npy_bytes(const std::string& dict, const Bytes& data = {}, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string text = dict;
  text.append(64 - (prefix + text.size() + 1) % 64, ' ');
  text += '\n';
  Bytes out(kNpyMagic, kNpyMagic + 6);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 8; i < prefix; ++i) out.push_back(static_cast<uint8_t>(text.size() >> (8 * (i - 8))));
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string dict_for(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape +
         ", }";
}

template <typename T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Buffer to_buffer(const Bytes& b) {
  Buffer buf = Buffer::allocate(b.size());
  if (!b.empty()) std::memcpy(buf.mutable_data(), b.data(), b.size());
  return buf;
}

std::unique_ptr<TensorReader> open_memory(const Bytes& b, const std::string& name = "t") {
  return npy_open(InputStream::from_buffer(to_buffer(b), "mem.npy"), name, {});
}

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("tk_npy") {}
};

std::unique_ptr<TensorReader> open_file(const std::string& path, bool mmap) {
  ReadOptions options;
  options.allow_mmap = mmap;
  return npy_open(InputStream::open(path), "t", options);
}

Bytes tensor_bytes(const Tensor& t) { return Bytes(t.data(), t.data() + t.nbytes()); }

Bytes write_npy(const Tensor& t, const std::string& name = "x") {
  Bytes sink;
  auto w = npy_writer(OutputStream::to_memory(&sink));
  EXPECT_EQ(w->begin({{name, t.dtype(), t.shape(), t.nbytes()}}, {}), std::vector<size_t>{0});
  w->write(0, t);
  w->finish();
  return sink;
}

Tensor patterned(DType dtype, Shape shape) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] = static_cast<uint8_t>(i * 37 + 11);
  if (dtype == DType::kBool)
    for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] &= 1;
  return t;
}

using test::expect_error_exact;

const DType kNumpyTypes[] = {DType::kBool, DType::kU8,  DType::kI8,  DType::kU16, DType::kI16,
                             DType::kU32,  DType::kI32, DType::kU64, DType::kI64, DType::kF16,
                             DType::kF32,  DType::kF64, DType::kC64};

TEST(Npy, RoundTripEveryNumpyDtype) {
  TempDir dir;
  for (DType dtype : kNumpyTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = patterned(dtype, {2, 3, 5});
    Bytes file = write_npy(t);
    ASSERT_EQ((file.size() - t.nbytes()) % 64, 0u);
    std::string path = dir.write(std::string(dtype_name(dtype)) + ".npy", file);
    for (int mode = 0; mode < 3; ++mode) {
      auto r = mode == 0 ? open_memory(file) : open_file(path, mode == 1);
      ASSERT_EQ(r->tensors().size(), 1u);
      EXPECT_EQ(r->format(), FileFormat::kNpy);
      EXPECT_EQ(r->tensors()[0].name, "t");
      EXPECT_EQ(r->tensors()[0].dtype, dtype);
      EXPECT_EQ(r->tensors()[0].shape, (Shape{2, 3, 5}));
      EXPECT_EQ(r->tensors()[0].nbytes, t.nbytes());
      EXPECT_TRUE(r->metadata().empty());
      EXPECT_TRUE(r->random_access());
      Tensor back = r->read(0);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), t.shape());
      EXPECT_EQ(tensor_bytes(back), tensor_bytes(t));
      EXPECT_EQ(tensor_bytes(r->read(0)), tensor_bytes(t));  // random access: read again
    }
  }
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  // np.save(np.zeros((2, 3), np.float32)): the dict, 21 - len("2") spaces of room for
  // the growth axis, then padding to 128 bytes ending in '\n'.
  Bytes h = npy_make_header(DType::kF32, {2, 3});
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(Bytes(h.begin(), h.begin() + 10), (Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0}));
  EXPECT_EQ(std::string(h.begin() + 10, h.begin() + 10 + dict.size()), dict);
  EXPECT_EQ(std::string(h.begin() + 10 + dict.size(), h.end() - 1), std::string(127 - 10 - dict.size(), ' '));
  EXPECT_EQ(h.back(), '\n');

  auto text = [](DType d, Shape s) {
    Bytes b = npy_make_header(d, s);
    std::string t(b.begin() + 10, b.end());
    return t.substr(0, t.find('}') + 1);
  };
  EXPECT_EQ(text(DType::kF64, {}), "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  EXPECT_EQ(text(DType::kI8, {0}), "{'descr': '|i1', 'fortran_order': False, 'shape': (0,), }");
  EXPECT_EQ(text(DType::kBool, {3}), "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }");
  EXPECT_EQ(text(DType::kC64, {1, 2, 3}), "{'descr': '<c8', 'fortran_order': False, 'shape': (1, 2, 3), }");
  // 0-rank: no growth-axis room; the file is 128 bytes of header.
  EXPECT_EQ(npy_make_header(DType::kF64, {}).size(), 128u);
}

TEST(Npy, HeaderPadsAFullBlockWhenAlreadyAligned) {
  // NumPy pads 64 bytes rather than none when prefix + dict + '\n' is a multiple of 64.
  for (int64_t d = 1; d < 100000000000LL; d = d * 10 + 3) {
    Bytes h = npy_make_header(DType::kU8, {d, d});
    std::string t(h.begin() + 10, h.end());
    size_t used = 10 + t.find_last_not_of(" \n") + 1 + 1;
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_GE(h.size() - used, 1u);
    EXPECT_LE(h.size() - used, 64u);
  }
}

TEST(Npy, ZeroRankAndEmpty) {
  for (Shape shape : {Shape{}, Shape{0}, Shape{3, 0, 2}, Shape{0, 0}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Tensor t = patterned(DType::kF32, shape);
    auto r = open_memory(write_npy(t));
    EXPECT_EQ(r->tensors()[0].shape, shape);
    Tensor back = r->read(0);
    EXPECT_EQ(back.shape(), shape);
    EXPECT_EQ(tensor_bytes(back), tensor_bytes(t));
  }
  // An empty Fortran-order array needs no transposition.
  auto r = open_memory(npy_bytes(dict_for("<f4", "(0, 3)", true)));
  EXPECT_EQ(r->read(0).nbytes(), 0u);
}

TEST(Npy, FortranOrderIsTransposedToCOrder) {
  TempDir dir;
  const Shape shape = {2, 3, 4};
  std::vector<int32_t> f(24);  // element (i, j, k) at i + 2j + 6k, value 100i + 10j + k
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) f[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
  Bytes file = npy_bytes(dict_for("<i4", "(2, 3, 4)", true), as_bytes(f));
  std::string path = dir.write("f.npy", file);
  for (int mode = 0; mode < 3; ++mode) {
    auto r = mode == 0 ? open_memory(file) : open_file(path, mode == 1);
    Tensor t = r->read(0);
    ASSERT_EQ(t.shape(), shape);
    const int32_t* c = t.data_as<int32_t>();
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) EXPECT_EQ(c[12 * i + 4 * j + k], 100 * i + 10 * j + k);
  }
  // 2-d, and 1-d where Fortran and C order coincide.
  std::vector<uint16_t> m = {1, 4, 2, 5, 3, 6};  // [[1, 2, 3], [4, 5, 6]] column-major
  Tensor t2 = open_memory(npy_bytes(dict_for("<u2", "(2, 3)", true), as_bytes(m)))->read(0);
  EXPECT_EQ(tensor_bytes(t2), as_bytes(std::vector<uint16_t>{1, 2, 3, 4, 5, 6}));
  Tensor t1 = open_memory(npy_bytes(dict_for("<u2", "(6,)", true), as_bytes(m)))->read(0);
  EXPECT_EQ(tensor_bytes(t1), as_bytes(m));
}

TEST(Npy, BigEndianIsConvertedToLittleEndian) {
  Bytes be_i4 = {0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xfe};
  Tensor t = open_memory(npy_bytes(dict_for(">i4", "(2,)"), be_i4))->read(0);
  EXPECT_EQ(t.dtype(), DType::kI32);
  EXPECT_EQ(t.data_as<int32_t>()[0], 0x01020304);
  EXPECT_EQ(t.data_as<int32_t>()[1], -2);

  // complex64: each of the two f32 halves is swapped on its own.
  Bytes be_c8 = {0x3f, 0x80, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00};  // 1.0, -2.0
  Tensor c = open_memory(npy_bytes(dict_for(">c8", "()"), be_c8))->read(0);
  EXPECT_EQ(c.data_as<float>()[0], 1.0f);
  EXPECT_EQ(c.data_as<float>()[1], -2.0f);

  Bytes be_f8 = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18};
  EXPECT_EQ(open_memory(npy_bytes(dict_for(">f8", "(1,)"), be_f8))->read(0).data_as<double>()[0],
            3.141592653589793);
  Bytes be_f2 = {0x3c, 0x00};
  EXPECT_EQ(open_memory(npy_bytes(dict_for(">f2", "(1,)"), be_f2))->read(0).data_as<uint16_t>()[0], 0x3c00);
  // One-byte types have no byte order.
  EXPECT_EQ(open_memory(npy_bytes(dict_for(">u1", "(1,)"), {0x12}))->read(0).data()[0], 0x12);

  // Big-endian and Fortran order together: [[1, 2], [3, 4]] as >u2, column-major.
  Bytes bf = {0, 1, 0, 3, 0, 2, 0, 4};
  Tensor m = open_memory(npy_bytes(dict_for(">u2", "(2, 2)", true), bf))->read(0);
  EXPECT_EQ(tensor_bytes(m), as_bytes(std::vector<uint16_t>{1, 2, 3, 4}));

  // From a mapped file the swap goes to a private copy; the file is untouched.
  TempDir dir;
  Bytes file = npy_bytes(dict_for(">i4", "(2,)"), be_i4);
  std::string path = dir.write("be.npy", file);
  EXPECT_EQ(open_file(path, true)->read(0).data_as<int32_t>()[0], 0x01020304);
  EXPECT_EQ(open_file(path, true)->read(0).data_as<int32_t>()[0], 0x01020304);
  EXPECT_EQ(open_file(path, false)->read(0).data_as<int32_t>()[1], -2);
}

TEST(Npy, NativeByteOrderForms) {
  std::vector<float> v = {1.5f, -2.0f};
  for (std::string d : {"<f4", "=f4", "|f4"}) {
    Tensor t = open_memory(npy_bytes(dict_for(d, "(2,)"), as_bytes(v)))->read(0);
    EXPECT_EQ(t.dtype(), DType::kF32);
    EXPECT_EQ(tensor_bytes(t), as_bytes(v)) << d;
  }
  for (std::string d : {"|u1", "<u1", "=u1"})
    EXPECT_EQ(open_memory(npy_bytes(dict_for(d, "(1,)"), {7}))->tensors()[0].dtype, DType::kU8) << d;
}

TEST(Npy, Version2And3Headers) {
  std::vector<int64_t> v = {-1, 2, 3};
  for (int major : {2, 3}) {
    Bytes file = npy_bytes(dict_for("<i8", "(3,)"), as_bytes(v), major);
    EXPECT_EQ((file.size() - 24) % 64, 0u);
    auto r = open_memory(file);
    EXPECT_EQ(r->tensors()[0].dtype, DType::kI64);
    EXPECT_EQ(tensor_bytes(r->read(0)), as_bytes(v));
  }
  // Python 2's "3L" long literals are read from 1.0/2.0 files (as NumPy does), not 3.0.
  EXPECT_EQ(open_memory(npy_bytes(dict_for("<i8", "(3L,)"), as_bytes(v), 2))->tensors()[0].shape, Shape{3});
  std::string d = dict_for("<i8", "(3L,)");
  expect_error_exact([&] { open_memory(npy_bytes(d, as_bytes(v), 3)); }, ErrorKind::kInvalidInput,
               "malformed .npy header: expected ')' to close the shape tuple at offset " +
                   std::to_string(d.find('L')));
}

TEST(Npy, TruncationAtEveryByteIsInvalidInput) {
  TempDir dir;
  Bytes file = write_npy(patterned(DType::kF32, {2, 3}));
  ASSERT_EQ(file.size(), 128u + 24u);
  for (size_t n = 0; n < file.size(); ++n) {
    SCOPED_TRACE(n);
    Bytes cut(file.begin(), file.begin() + n);
    std::string path = dir.write("cut.npy", cut);
    for (int mode = 0; mode < 3; ++mode) {
      try {
        auto r = mode == 0 ? open_memory(cut) : open_file(path, mode == 1);
        r->read(0);
        ADD_FAILURE() << "accepted a file cut at byte " << n;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
        EXPECT_FALSE(e.where().empty());
      }
    }
  }
  // Whole header, short data: the message says how much is missing.
  Bytes cut(file.begin(), file.end() - 1);
  expect_error_exact([&] { open_memory(cut); }, ErrorKind::kInvalidInput,
               "truncated .npy data (expected 24 bytes, found 23)");
  Bytes longer = file;
  longer.push_back(0);
  expect_error_exact([&] { open_file(dir.write("long.npy", longer), true); }, ErrorKind::kInvalidInput,
               "1 unexpected trailing bytes after the .npy data");
}

TEST(Npy, MappedFileIsReadWithoutCopy) {
  TempDir dir;
  Tensor t = patterned(DType::kF64, {4, 4});
  std::string path = dir.write("m.npy", write_npy(t));
  auto mapped = open_file(path, true);
  Tensor a = mapped->read(0), b = mapped->read(0);
  EXPECT_FALSE(a.buffer().writable());  // a view of the read-only mapping
  EXPECT_EQ(a.data(), b.data());        // the same bytes, not two copies
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);  // data starts at a multiple of 64
  EXPECT_EQ(tensor_bytes(a), tensor_bytes(t));

  auto copied = open_file(path, false);
  Tensor c = copied->read(0);
  EXPECT_TRUE(c.buffer().writable());
  EXPECT_EQ(tensor_bytes(c), tensor_bytes(t));

  // Fortran order cannot be a view: the transposed copy is private.
  std::string fpath = dir.write("f.npy", npy_bytes(dict_for("<f8", "(2, 2)", true), Bytes(32, 1)));
  EXPECT_TRUE(open_file(fpath, true)->read(0).buffer().writable());
}

// Feed `bytes` through a pipe, as stdin would.
class Pipe {
 public:
  explicit Pipe(Bytes bytes) : bytes_(std::move(bytes)) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_fd_ = fds[0];
    writer_ = std::thread([this, fd = fds[1]] {
      size_t done = 0;
      while (done < bytes_.size()) {
        ssize_t w = ::write(fd, bytes_.data() + done, bytes_.size() - done);
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
      ::close(fd);
    });
  }
  ~Pipe() {
    ::close(read_fd_);
    writer_.join();
  }
  std::string path() const { return "/dev/fd/" + std::to_string(read_fd_); }

 private:
  Bytes bytes_;
  int read_fd_ = -1;
  std::thread writer_;
};

TEST(Npy, PipesAreReadSequentially) {
  Tensor t = patterned(DType::kI16, {3, 5});
  {
    Pipe pipe(write_npy(t));
    auto r = npy_open(InputStream::open(pipe.path()), "piped", {});
    EXPECT_FALSE(r->random_access());
    EXPECT_EQ(r->tensors()[0].name, "piped");
    EXPECT_EQ(tensor_bytes(r->read(0)), tensor_bytes(t));
    try {
      r->read(0);
      ADD_FAILURE() << "read a pipe twice";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    }
  }
  {
    Bytes file = write_npy(t);
    file.pop_back();
    Pipe pipe(file);
    auto r = npy_open(InputStream::open(pipe.path()), "piped", {});
    expect_error_exact([&] { r->read(0); }, ErrorKind::kInvalidInput, "truncated .npy data (expected 30 bytes, found 29)");
  }
  {
    Bytes file = write_npy(t);
    file.push_back(1);
    Pipe pipe(file);
    auto r = npy_open(InputStream::open(pipe.path()), "piped", {});
    expect_error_exact([&] { r->read(0); }, ErrorKind::kInvalidInput, "unexpected trailing bytes after the .npy data");
  }
  {
    // A header that promises 2^40 bytes from a pipe that holds none: an error, not an
    // attempt to allocate a terabyte.
    Pipe pipe(npy_bytes(dict_for("|u1", "(1099511627776,)")));
    auto r = npy_open(InputStream::open(pipe.path()), "piped", {});
    expect_error_exact([&] { r->read(0); }, ErrorKind::kInvalidInput,
                 "truncated .npy data (expected 1099511627776 bytes, found 0)");
  }
}

// The case a refusal names (tk::Error::option()), for the tool to word its flag.
std::string option_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.option();
  }
  return "(no error)";
}

TEST(Npy, WriterRefusesWhatNpyCannotHold) {
  Bytes sink;
  TensorInfo a{"a", DType::kF32, {2}, 8}, b{"b", DType::kF32, {2}, 8};
  auto two = [&] { npy_writer(OutputStream::to_memory(&sink))->begin({a, b}, {}); };
  expect_error_exact(two, ErrorKind::kUsage, "a .npy file holds one tensor (got 2)");
  EXPECT_EQ(option_of(two), "io.npy_one_tensor");
  expect_error_exact([&] { npy_writer(OutputStream::to_memory(&sink))->begin({}, {}); }, ErrorKind::kUsage,
               "a .npy file holds one tensor (got 0)");
  for (DType d : {DType::kBF16, DType::kF8E4M3, DType::kF8E5M2, DType::kF8E8M0, DType::kF4, DType::kF6E2M3,
                  DType::kF6E3M2, DType::kF8E4M3FNUZ, DType::kF8E5M2FNUZ}) {
    TensorInfo info{"w", d, {8}, dtype_storage_bytes(d, 8)};
    auto one = [&] { npy_writer(OutputStream::to_memory(&sink))->begin({info}, {}); };
    expect_error_exact(one, ErrorKind::kUsage,
                       std::string("dtype ") + dtype_name(d) + " cannot be stored in .npy (NumPy has no such type)");
    EXPECT_EQ(option_of(one), "io.npy_dtype");
  }
  EXPECT_TRUE(sink.empty());
}

TEST(Npy, WriterCommitsOnlyOnFinish) {
  TempDir dir;
  std::string path = dir.path() + "/out.npy";
  Tensor t = patterned(DType::kU32, {3});
  {
    auto w = npy_writer(OutputStream::open(path));
    w->begin({{"x", t.dtype(), t.shape(), t.nbytes()}}, {{"ignored", "metadata"}});
    w->write(0, t);
    EXPECT_NE(::access(path.c_str(), F_OK), 0);
  }  // destroyed without finish(): nothing under the target name
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  {
    auto w = npy_writer(OutputStream::open(path));
    w->begin({{"x", t.dtype(), t.shape(), t.nbytes()}}, {});
    EXPECT_THROW(w->finish(), Error);  // declared but never written
  }
  auto w = npy_writer(OutputStream::open(path));
  w->begin({{"x", t.dtype(), t.shape(), t.nbytes()}}, {});
  w->write(0, t);
  w->finish();
  EXPECT_EQ(tensor_bytes(open_file(path, true)->read(0)), tensor_bytes(t));
}

TEST(Npy, MalformedFixtures) {
  const std::string dir = std::string(TK_TESTDATA_DIR) + "/malformed/";
  const std::pair<const char*, const char*> cases[] = {
      {"npy-bad-magic.npy", "not a .npy file (bad magic)"},
      {"npy-bad-version.npy", "unsupported .npy format version 4.0"},
      {"npy-c16.npy", "unsupported .npy dtype '<c16'"},
      {"npy-structured.npy", "unsupported .npy dtype '[('a', '<i4')]'"},
      {"npy-missing-shape.npy", "malformed .npy header: missing key 'shape'"},
      {"npy-negative-dim.npy", "malformed .npy header: expected a non-negative integer in shape at offset 51"},
      {"npy-not-tuple.npy", "malformed .npy header: shape (6) is not a tuple"},
      {"npy-truncated-data.npy", "truncated .npy data (expected 24 bytes, found 23)"},
      {"npy-trailing-bytes.npy", "1 unexpected trailing bytes after the .npy data"},
      {"npy-huge-shape.npy", "shape [4611686018427387904, 4] has too many elements"},
  };
  for (const auto& [file, message] : cases) {
    SCOPED_TRACE(file);
    for (bool mmap : {true, false}) {
      try {
        open_file(dir + file, mmap)->read(0);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
        EXPECT_EQ(std::string(e.what()), message);
        EXPECT_EQ(e.where(), dir + file);
      }
    }
  }
}

}  // namespace
}  // namespace tk::io
