// HDF5 reader and writer: bit-exact round trips of every dtype through a file, through
// the in-memory image (stdout path) and from a memory stream (pipe path); nested names,
// metadata, 0-rank and empty tensors, zstd chunking; malformed files.
#include "tk/io/hdf5.h"
#include "tk/io/safetensors.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tk/core/error.h"

namespace tk::io {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    const char* base = std::getenv("TK_TMP");
    dir = fs::path(base ? base : fs::temp_directory_path().string()) /
          ("hdf5_test_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const uint8_t* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
}

// A tensor of random bytes (BOOL: random 0/1).
Tensor random_tensor(DType dtype, Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  std::mt19937 rng(seed);
  uint8_t* p = t.mutable_data();
  for (uint64_t i = 0; i < t.nbytes(); ++i) p[i] = dtype == DType::kBool ? rng() & 1 : rng() & 0xff;
  return t;
}

struct Named {
  std::string name;
  Tensor tensor;
};

void write_all(std::unique_ptr<TensorWriter> writer, const std::vector<Named>& tensors, const Metadata& metadata) {
  std::vector<TensorInfo> infos;
  for (const auto& n : tensors) infos.push_back({n.name, n.tensor.dtype(), n.tensor.shape(), n.tensor.nbytes()});
  writer->begin(infos, metadata);
  // Out of declaration order on purpose: the writer takes tensors as they come.
  for (size_t i = tensors.size(); i-- > 0;) writer->write(i, tensors[i].tensor);
  writer->finish();
}

void write_file(const std::string& path, const std::vector<Named>& tensors, const Metadata& metadata = {},
                WriteOptions options = {}) {
  write_all(hdf5_writer(OutputStream::open(path), options), tensors, metadata);
}

void expect_same(TensorReader& reader, const std::vector<Named>& tensors, const Metadata& metadata) {
  EXPECT_EQ(reader.metadata(), metadata);
  ASSERT_EQ(reader.tensors().size(), tensors.size());
  for (const auto& want : tensors) {
    auto index = reader.find(want.name);
    ASSERT_TRUE(index) << want.name;
    const TensorInfo& info = reader.tensors()[*index];
    EXPECT_EQ(info.dtype, want.tensor.dtype()) << want.name;
    EXPECT_EQ(info.shape, want.tensor.shape()) << want.name;
    EXPECT_EQ(info.nbytes, want.tensor.nbytes()) << want.name;
    Tensor got = reader.read(*index);
    ASSERT_EQ(got.nbytes(), want.tensor.nbytes()) << want.name;
    if (got.nbytes() > 0) {
      EXPECT_EQ(std::memcmp(got.data(), want.tensor.data(), got.nbytes()), 0) << want.name;
    }
  }
}

std::vector<Named> every_dtype() {
  std::vector<Named> out;
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    auto dtype = static_cast<DType>(d);
    out.push_back({std::string("layers/") + dtype_traits(dtype).short_name + "/w", random_tensor(dtype, {3, 4}, d)});
  }
  out.push_back({"top", random_tensor(DType::kF32, {5}, 99)});
  return out;
}

const Metadata kMetadata = {{"tk", R"({"tool":"test","args":["a b"]})"}, {"note", "gr\xc3\xbc\xc3\x9f"}};

TEST(Hdf5, RoundTripsEveryDtypeThroughAFile) {
  Scratch s;
  auto tensors = every_dtype();
  write_file(s.path("all.h5"), tensors, kMetadata);
  auto reader = hdf5_open(InputStream::open(s.path("all.h5")), {});
  EXPECT_EQ(reader->format(), FileFormat::kHdf5);
  EXPECT_TRUE(reader->random_access());
  expect_same(*reader, tensors, kMetadata);
  // Names are listed in HDF5 name order, without the leading '/'.
  EXPECT_EQ(reader->tensors()[0].name, "layers/bf16/w");
  EXPECT_EQ(reader->tensors().back().name, "top");
}

TEST(Hdf5, RoundTripsThroughTheInMemoryImageAndAMemoryStream) {
  auto tensors = every_dtype();
  std::vector<uint8_t> image;
  write_all(hdf5_writer(OutputStream::to_memory(&image), {}), tensors, kMetadata);
  ASSERT_GE(image.size(), 8u);
  EXPECT_EQ(std::memcmp(image.data(), "\x89HDF\r\n\x1a\n", 8), 0);
  auto reader = hdf5_open(InputStream::from_buffer(Buffer::borrow_const(image.data(), image.size()), "<pipe>"), {});
  expect_same(*reader, tensors, kMetadata);
}

TEST(Hdf5, KeepsScalarAndEmptyTensors) {
  Scratch s;
  std::vector<Named> tensors = {
      {"scalar", random_tensor(DType::kF64, {}, 1)},
      {"empty", Tensor::empty(DType::kI32, {0, 3})},
      {"g/empty_packed", Tensor::empty(DType::kF4, {2, 0})},
      {"g/scalar_bf16", random_tensor(DType::kBF16, {}, 2)},
  };
  WriteOptions zstd;
  zstd.hdf5_zstd_level = 3;  // scalar and empty datasets are never chunked
  write_file(s.path("edge.h5"), tensors, {}, zstd);
  auto reader = hdf5_open(InputStream::open(s.path("edge.h5")), {});
  expect_same(*reader, tensors, {});
}

TEST(Hdf5, ZstdChunksShrinkCompressibleDataAndReadBack) {
  Scratch s;
  Tensor smooth = Tensor::empty(DType::kF32, {64, 48, 16});
  float* p = smooth.mutable_data_as<float>();
  for (uint64_t i = 0; i < smooth.numel(); ++i) p[i] = static_cast<float>(i % 48) * 0.25f;
  std::vector<Named> tensors = {
      {"smooth", smooth},
      {"noise", random_tensor(DType::kBF16, {1000, 3}, 7)},  // does not shrink: stored as is
      {"packed", random_tensor(DType::kF6E2M3, {4096}, 8)},
  };
  write_file(s.path("plain.h5"), tensors);
  WriteOptions zstd;
  zstd.hdf5_zstd_level = 5;
  zstd.hdf5_chunk_bytes = 8192;  // many chunks, split along the leading dimensions
  write_file(s.path("zstd.h5"), tensors, {}, zstd);
  auto plain = fs::file_size(s.path("plain.h5"));
  auto packed = fs::file_size(s.path("zstd.h5"));
  EXPECT_LT(packed * 4, plain) << packed << " vs " << plain;
  auto reader = hdf5_open(InputStream::open(s.path("zstd.h5")), {});
  expect_same(*reader, tensors, {});
  // The same file through the file-image path.
  auto bytes = read_bytes(s.path("zstd.h5"));
  auto piped = hdf5_open(InputStream::from_buffer(Buffer::borrow_const(bytes.data(), bytes.size()), "<stdin>"), {});
  expect_same(*piped, tensors, {});
}

// A tensor that arrives in pieces (tcompress -d -t) is written as hyperslabs of whole
// elements, whatever the piece boundaries: inside an element, across rows and planes,
// into zstd chunks; a scalar is refused for pieces and written whole.
TEST(Hdf5, WritesTensorsInPiecesOfAnySize) {
  Scratch s;
  const std::vector<Named> tensors = {
      {"grid", random_tensor(DType::kF32, {2, 3, 5, 7}, 1)},
      {"g/bf16", random_tensor(DType::kBF16, {1000, 3}, 2)},
      {"packed", random_tensor(DType::kF6E2M3, {4096}, 3)},
      {"wide", random_tensor(DType::kF64, {3, 700}, 4)},
      {"empty", Tensor::empty(DType::kI32, {0, 3})},
      {"scalar", random_tensor(DType::kF64, {}, 5)},
  };
  for (int level : {0, 5}) {
    SCOPED_TRACE(level);
    WriteOptions options;
    options.hdf5_zstd_level = level;
    options.hdf5_chunk_bytes = 256;
    const std::string path = s.path("pieces" + std::to_string(level) + ".h5");
    auto writer = hdf5_writer(OutputStream::open(path), options);
    std::vector<TensorInfo> infos;
    for (const auto& n : tensors) infos.push_back({n.name, n.tensor.dtype(), n.tensor.shape(), n.tensor.nbytes()});
    writer->begin(infos, {});
    std::mt19937 rng(7);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i].tensor;
      if (!writer->begin_pieces(i)) {
        EXPECT_TRUE(t.shape().empty()) << tensors[i].name;
        writer->write(i, t);
        continue;
      }
      for (uint64_t at = 0; at < t.nbytes();) {
        const uint64_t n = std::min<uint64_t>(t.nbytes() - at, 1 + rng() % 700);
        writer->write_piece({t.data() + at, n});
        at += n;
      }
      writer->end_pieces();
    }
    writer->finish();
    auto reader = hdf5_open(InputStream::open(path), {});
    expect_same(*reader, tensors, {});
  }
  // A piece past the declared size, and an end before it, are refused.
  auto writer = hdf5_writer(OutputStream::open(s.path("over.h5")), {});
  const Tensor t = random_tensor(DType::kF32, {4}, 9);
  writer->begin({{"t", t.dtype(), t.shape(), t.nbytes()}}, {});
  ASSERT_TRUE(writer->begin_pieces(0));
  writer->write_piece({t.data(), 10});
  EXPECT_THROW(writer->end_pieces(), Error);
  EXPECT_THROW(writer->write_piece({t.data(), 7}), Error);
}

TEST(Hdf5, RefusesNamesThatCannotBePaths) {
  Scratch s;
  auto declare = [&](std::vector<std::string> names) {
    std::vector<TensorInfo> infos;
    for (auto& n : names) infos.push_back({n, DType::kU8, {1}, 1});
    hdf5_writer(OutputStream::open(s.path("bad.h5")), {})->begin(infos, {});
  };
  for (auto names : std::vector<std::vector<std::string>>{
           {"a", "a"}, {"a", "a/b"}, {"a/b", "a-c", "a"}, {""}, {"/a"}, {"a/"}, {"a//b"}, {"a/../b"}}) {
    try {
      declare(names);
      ADD_FAILURE() << "accepted " << names.back();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(s.path("bad.h5")));
}

// HDF5 ends names at a NUL: "a\0b" would be stored as "a". Refused as invalid input,
// naming both tensors when the cut name is another tensor's.
TEST(Hdf5, RefusesNamesHoldingANul) {
  using namespace std::string_literals;
  Scratch s;
  auto declare = [&](std::vector<std::string> names, Metadata metadata = {}) {
    std::vector<TensorInfo> infos;
    for (auto& n : names) infos.push_back({n, DType::kU8, {1}, 1});
    hdf5_writer(OutputStream::open(s.path("nul.h5")), {})->begin(infos, metadata);
  };
  try {
    declare({"a\0b"s, "a"});
    ADD_FAILURE() << "accepted a colliding name";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(e.message().find("'a' and 'a\0b'"s), std::string::npos) << e.message();
  }
  try {
    declare({"x\0y"s});
    ADD_FAILURE() << "accepted a NUL";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(e.where(), "tensor 'x\0y'"s);
  }
  EXPECT_THROW(declare({"a"}, {{"k\0ey"s, "v"}}), Error);
  EXPECT_FALSE(fs::exists(s.path("nul.h5")));
}

TEST(Hdf5, LeavesNoFileWhenATensorIsMissing) {
  Scratch s;
  auto writer = hdf5_writer(OutputStream::open(s.path("out.h5")), {});
  writer->begin({{"a", DType::kF32, {2}, 8}, {"b", DType::kF32, {2}, 8}}, {});
  writer->write(0, random_tensor(DType::kF32, {2}, 1));
  EXPECT_THROW(writer->finish(), Error);
  writer.reset();
  EXPECT_FALSE(fs::exists(s.path("out.h5")));
  EXPECT_TRUE(fs::is_empty(s.dir));  // the temporary file is gone too
}

// Open `bytes` as an HDF5 file and read every tensor; return the error kind raised.
std::optional<ErrorKind> open_and_read_all(const uint8_t* data, size_t n, const std::string& path) {
  try {
    auto reader = path.empty() ? hdf5_open(InputStream::from_buffer(Buffer::borrow_const(data, n), "<stdin>"), {})
                               : hdf5_open(InputStream::open(path), {});
    for (size_t i = 0; i < reader->tensors().size(); ++i) reader->read(i);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_FALSE(e.where().empty());
    return e.kind();
  }
  return std::nullopt;
}

TEST(Hdf5, TruncatedFilesAreInvalidInput) {
  Scratch s;
  std::vector<Named> tensors = {{"a/b", random_tensor(DType::kF32, {64, 8}, 3)},
                                {"c", random_tensor(DType::kI16, {100}, 4)}};
  write_file(s.path("good.h5"), tensors, kMetadata);
  auto bytes = read_bytes(s.path("good.h5"));
  ASSERT_GT(bytes.size(), 3000u);
  for (size_t cut : {size_t(8), size_t(40), size_t(100), size_t(800), size_t(2000), bytes.size() - 100, bytes.size() - 1}) {
    std::string path = s.path("cut" + std::to_string(cut) + ".h5");
    write_bytes(path, bytes.data(), cut);
    EXPECT_EQ(open_and_read_all(bytes.data(), cut, ""), ErrorKind::kInvalidInput) << "memory, cut at " << cut;
    EXPECT_EQ(open_and_read_all(nullptr, 0, path), ErrorKind::kInvalidInput) << "file, cut at " << cut;
  }
}

// Corrupt the n-th zstd frame of `bytes` in the given way; returns false when absent.
bool corrupt_zstd_frame(std::vector<uint8_t>& bytes, int n, const std::function<void(uint8_t*)>& corrupt) {
  static const uint8_t kMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  for (size_t i = 0; i + 16 < bytes.size(); ++i) {
    if (std::memcmp(&bytes[i], kMagic, 4) != 0) continue;
    if (n-- == 0) {
      corrupt(&bytes[i]);
      return true;
    }
  }
  return false;
}

TEST(Hdf5, CorruptZstdChunksFailOnRead) {
  Scratch s;
  Tensor smooth = Tensor::empty(DType::kF32, {256, 64});
  for (uint64_t i = 0; i < smooth.numel(); ++i) smooth.mutable_data_as<float>()[i] = static_cast<float>(i % 64);
  WriteOptions zstd;
  zstd.hdf5_zstd_level = 3;
  zstd.hdf5_chunk_bytes = 16384;
  write_file(s.path("good.h5"), {{"x", smooth}}, {}, zstd);
  auto good = read_bytes(s.path("good.h5"));
  // A reserved bit set in the frame header; a frame claiming 2^40 bytes of content.
  std::vector<std::function<void(uint8_t*)>> corruptions = {
      [](uint8_t* frame) { frame[4] |= 0x08; },
      [](uint8_t* frame) {
        frame[4] = 0xe0;  // single segment, 8-byte content size
        uint64_t huge = uint64_t(1) << 40;
        std::memcpy(frame + 5, &huge, 8);
      },
  };
  for (size_t k = 0; k < corruptions.size(); ++k) {
    auto bytes = good;
    ASSERT_TRUE(corrupt_zstd_frame(bytes, 1, corruptions[k]));
    auto reader = hdf5_open(InputStream::from_buffer(Buffer::borrow_const(bytes.data(), bytes.size()), "<stdin>"), {});
    try {
      reader->read(0);
      ADD_FAILURE() << "corruption " << k << " was not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
      EXPECT_EQ(e.where(), "<stdin>: tensor 'x'");
    }
  }
}

TEST(Hdf5, MalformedCorpusIsInvalidInput) {
  fs::path dir = fs::path(TK_TESTDATA_DIR) / "malformed";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".h5") continue;
    ++count;
    auto bytes = read_bytes(entry.path().string());
    EXPECT_EQ(open_and_read_all(nullptr, 0, entry.path().string()), ErrorKind::kInvalidInput) << entry.path();
    EXPECT_EQ(open_and_read_all(bytes.data(), bytes.size(), ""), ErrorKind::kInvalidInput) << entry.path();
  }
  EXPECT_GE(count, 6);
}

TEST(Hdf5, ReadsTheFieldFixture) {
  auto reader = hdf5_open(InputStream::open(std::string(TK_TESTDATA_DIR) + "/field.h5"), {});
  auto index = reader->find("fields/temperature");
  ASSERT_TRUE(index);
  EXPECT_EQ(reader->tensors()[*index].dtype, DType::kF32);
  EXPECT_EQ(reader->tensors()[*index].shape, (Shape{32, 32, 16}));
  Tensor t = reader->read(*index);
  // The generator writes sin(x)cos(y) + z/16 on a regular grid; spot-check one value.
  float v = t.data_as<float>()[(5 * 32 + 7) * 16 + 3];
  EXPECT_NEAR(v, std::sin(5 * 0.2) * std::cos(7 * 0.2) + 3.0 / 16, 1e-6);
  EXPECT_EQ(reader->metadata().at("title"), "demo simulation field");
}

// read_slab: the rows of one mode, as the whole tensor has them, from HDF5 (a hyperslab,
// contiguous and chunked) and from safetensors (a view of mode 0, copied runs otherwise).
TEST(Hdf5, SlabsAreTheRowsOfTheWholeTensor) {
  Scratch s;
  const Tensor t = random_tensor(DType::kF32, {5, 4, 3}, 11);
  WriteOptions chunked;
  chunked.hdf5_zstd_level = 1;
  chunked.hdf5_chunk_bytes = 48;  // several chunks
  write_file(s.path("plain.h5"), {{"t", t}});
  write_file(s.path("chunked.h5"), {{"t", t}}, {}, chunked);
  write_all(safetensors_writer(OutputStream::open(s.path("t.safetensors"))), {{"t", t}}, {});
  for (const char* name : {"plain.h5", "chunked.h5", "t.safetensors"}) {
    auto reader = open_reader(s.path(name));
    for (size_t mode = 0; mode < 3; ++mode) {
      const int64_t lo = 1, hi = t.shape()[mode] - 1;
      const Tensor got = reader->read_slab(0, mode, lo, hi);
      Shape want_shape = t.shape();
      want_shape[mode] = hi - lo;
      ASSERT_EQ(got.shape(), want_shape) << name << " mode " << mode;
      const float* whole = t.data_as<float>();
      const float* slab = got.data_as<float>();
      size_t k = 0;
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t l = 0; l < 3; ++l) {
            const int64_t idx[3] = {i, j, l};
            if (idx[mode] < lo || idx[mode] >= hi) continue;
            EXPECT_EQ(slab[k++], whole[(i * 4 + j) * 3 + l]) << name << " mode " << mode;
          }
      EXPECT_EQ(k, got.numel());
    }
    EXPECT_EQ(reader->read_slab(0, 0, 2, 2).numel(), 0u) << name;  // a rank with no rows
  }
}

}  // namespace
}  // namespace tk::io
