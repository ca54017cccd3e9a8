// safetensors: round trips of every dtype, the reference writer's exact bytes and
// order, out-of-order writes, mmap vs stream reads, every validation rule, truncation
// at every byte, pipes with headers that claim huge sizes, and the malformed corpus.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace tk::io {
namespace {

using Bytes = std::vector<uint8_t>;


// A file: little-endian length of `header`, the header, then `data`.
Bytes st_file(const std::string& header, const Bytes& data = {}) {
  Bytes out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Buffer to_buffer(const Bytes& b) {
  Buffer buf = Buffer::allocate(b.size());
  if (!b.empty()) std::memcpy(buf.mutable_data(), b.data(), b.size());
  return buf;
}

std::unique_ptr<TensorReader> open_memory(const Bytes& b) {
  return safetensors_open(InputStream::from_buffer(to_buffer(b), "mem.safetensors"), {});
}

// Open and read every tensor, as a tool would.
void read_all(TensorReader& r) {
  for (size_t i = 0; i < r.tensors().size(); ++i) r.read(i);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "tk_st_XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name, const Bytes& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(content.data()), content.size());
    return p;
  }

 private:
  std::string path_;
};

std::unique_ptr<TensorReader> open_file(const std::string& path, bool mmap) {
  ReadOptions options;
  options.allow_mmap = mmap;
  return safetensors_open(InputStream::open(path), options);
}

// Feed `content` through a pipe (unknown size, sequential only) and open it.
class Pipe {
 public:
  explicit Pipe(Bytes content) : content_(std::move(content)) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    read_fd_ = fds[0];
    writer_ = std::thread([this, w = fds[1]] {
      size_t done = 0;
      while (done < content_.size()) {
        ssize_t n = ::write(w, content_.data() + done, content_.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(w);
    });
  }
  ~Pipe() {
    ::close(read_fd_);  // unblocks the writer if the reader stopped early
    writer_.join();
  }
  std::string path() const { return "/dev/fd/" + std::to_string(read_fd_); }

 private:
  Bytes content_;
  int read_fd_;
  std::thread writer_;
};

Tensor patterned(DType dtype, Shape shape, int seed = 0) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] = static_cast<uint8_t>(i * 37 + 11 + seed * 101);
  if (dtype == DType::kBool)
    for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] &= 1;
  return t;
}

Bytes tensor_bytes(const Tensor& t) { return Bytes(t.data(), t.data() + t.nbytes()); }

TensorInfo info_of(const std::string& name, const Tensor& t) { return {name, t.dtype(), t.shape(), t.nbytes()}; }

// Write named tensors (in the given order of write() calls) to memory.
Bytes write_memory(const std::vector<std::pair<std::string, Tensor>>& tensors, const Metadata& metadata = {},
                   bool reverse_writes = false) {
  Bytes sink;
  auto w = safetensors_writer(OutputStream::to_memory(&sink));
  std::vector<TensorInfo> infos;
  for (const auto& [name, t] : tensors) infos.push_back(info_of(name, t));
  w->begin(infos, metadata);
  for (size_t k = 0; k < tensors.size(); ++k) {
    size_t i = reverse_writes ? tensors.size() - 1 - k : k;
    w->write(i, tensors[i].second);
  }
  w->finish();
  return sink;
}

// Run `f`; expect a tk::Error of `kind` whose message contains `message` and whose
// location contains `where`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& message, const std::string& where = "") {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what() << " (" << e.where() << ")";
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << "message: " << e.what();
    EXPECT_NE(e.where().find(where), std::string::npos) << "where: " << e.where();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

void expect_invalid(const Bytes& file, const std::string& message, const std::string& where = "") {
  expect_error([&] { read_all(*open_memory(file)); }, ErrorKind::kInvalidInput, message, where);
}

// ---------------------------------------------------------------- writing and reading

TEST(Safetensors, RoundTripEveryDtypeThroughMmapStreamAndPipe) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int d = 0; d < static_cast<int>(DType::kCount); ++d) {
    auto dtype = static_cast<DType>(d);
    tensors.emplace_back(std::string("t_") + dtype_name(dtype), patterned(dtype, {2, 4}, d));
  }
  tensors.emplace_back("scalar", patterned(DType::kF32, {}));
  tensors.emplace_back("empty", patterned(DType::kF16, {0, 3}));
  tensors.emplace_back("f4_odd_rows", patterned(DType::kF4, {3, 2}));
  tensors.emplace_back("f6_packed", patterned(DType::kF6E3M2, {4}));
  Bytes file = write_memory(tensors, {{"k", "v"}});

  TempDir dir;
  std::string path = dir.file("all.safetensors", file);
  Pipe pipe(file);
  std::vector<std::unique_ptr<TensorReader>> readers;
  readers.push_back(open_file(path, true));
  readers.push_back(open_file(path, false));
  readers.push_back(open_memory(file));
  readers.push_back(safetensors_open(InputStream::open(pipe.path()), {}));
  for (auto& r : readers) {
    EXPECT_EQ(r->format(), FileFormat::kSafetensors);
    ASSERT_EQ(r->tensors().size(), tensors.size());
    EXPECT_EQ(r->metadata(), (Metadata{{"k", "v"}}));
    for (size_t i = 0; i < r->tensors().size(); ++i) {  // storage order, read in order
      const TensorInfo& info = r->tensors()[i];
      auto want = r->find(info.name);
      ASSERT_TRUE(want.has_value());
      const Tensor& expected = tensors[std::distance(
          tensors.begin(), std::find_if(tensors.begin(), tensors.end(), [&](auto& p) { return p.first == info.name; }))].second;
      EXPECT_EQ(info.nbytes, expected.nbytes()) << info.name;
      Tensor t = r->read(i);
      EXPECT_EQ(t.dtype(), expected.dtype()) << info.name;
      EXPECT_EQ(t.shape(), expected.shape()) << info.name;
      EXPECT_EQ(tensor_bytes(t), tensor_bytes(expected)) << info.name;
    }
  }
  EXPECT_TRUE(readers[0]->random_access());
  EXPECT_FALSE(readers[1]->random_access());
  EXPECT_FALSE(readers[3]->random_access());
}

TEST(Safetensors, MmapIsZeroCopyAndRandomAccessStreamIsOwned) {
  Bytes file = write_memory({{"a", patterned(DType::kF32, {3})}, {"b", patterned(DType::kF64, {2})}});
  TempDir dir;
  std::string path = dir.file("x.safetensors", file);
  auto mapped = open_file(path, true);
  Tensor b = mapped->read(1), a = mapped->read(0), a2 = mapped->read(0);
  EXPECT_FALSE(a.buffer().writable());
  EXPECT_EQ(a.data(), a2.data());  // views into the same mapping
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 8, 0u);
  auto streamed = open_file(path, false);
  Tensor s = streamed->read(0);
  EXPECT_TRUE(s.buffer().writable());
  EXPECT_EQ(tensor_bytes(s), tensor_bytes(a));
}

TEST(Safetensors, MisalignedDataIsCopiedOnMmap) {
  // A hand-written header whose length is not a multiple of 8: the F32 data is misaligned.
  Bytes data = {0, 0, 128, 63, 0, 0, 0, 64};
  Bytes file = st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data);
  ASSERT_NE((file.size() - 8) % 4, 0u);
  TempDir dir;
  Tensor t = open_file(dir.file("m.safetensors", file), true)->read(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 4, 0u);
  EXPECT_EQ(tensor_bytes(t), data);
}

TEST(Safetensors, WriterMatchesReferenceBytes) {
  // What safetensors.numpy.save({"b": arange(3, f32), "a": zeros(2, i64)}, {"k": "v"}) writes.
  Tensor b = Tensor::empty(DType::kF32, {3});
  float fb[3] = {0, 1, 2};
  std::memcpy(b.mutable_data(), fb, 12);
  Bytes file = write_memory({{"b", b}, {"a", Tensor::zeros(DType::kI64, {2})}}, {{"k", "v"}});
  std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[16,28]}} )";
  Bytes want = st_file(header, Bytes(16, 0));
  Bytes fb_bytes(reinterpret_cast<uint8_t*>(fb), reinterpret_cast<uint8_t*>(fb) + 12);
  want.insert(want.end(), fb_bytes.begin(), fb_bytes.end());
  EXPECT_EQ(file, want);
  EXPECT_EQ(file[0], 0x88);

  EXPECT_EQ(write_memory({}), st_file("{}      "));
}

TEST(Safetensors, HeaderEscapesLikeSerdeJson) {
  std::vector<TensorInfo> infos = {{"a\"\\\n\t\x01\x7f\xc3\xa9/", DType::kU8, {1}, 1}};
  Bytes h = safetensors_make_header(infos, {{"m", "\x1f\b\f\r"}});
  std::string text(h.begin(), h.end());
  EXPECT_EQ(text,
            "{\"__metadata__\":{\"m\":\"\\u001f\\b\\f\\r\"},\"a\\\"\\\\\\n\\t\\u0001\x7f\xc3\xa9/\":"
            "{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}     ");
  EXPECT_EQ(h.size() % 8, 0u);
  // And the parser reads the names back.
  SafetensorsHeader parsed = safetensors_parse_header(h);
  EXPECT_EQ(parsed.tensors[0].name, infos[0].name);
  EXPECT_EQ(parsed.metadata.at("m"), "\x1f\b\f\r");
}

TEST(Safetensors, CanonicalOrderIsReferenceDtypeRankThenName) {
  std::vector<TensorInfo> infos = {
      {"x", DType::kU8, {1}, 1},   {"y", DType::kF64, {1}, 8},  {"z", DType::kI64, {1}, 8},
      {"w", DType::kF32, {1}, 4},  {"v", DType::kBF16, {1}, 2}, {"u", DType::kF4, {2}, 1},
      {"b", DType::kF32, {1}, 4},  {"c", DType::kC64, {1}, 8},  {"d", DType::kBool, {1}, 1},
      {"e", DType::kF8E4M3, {1}, 1}};
  std::vector<std::string> names;
  for (size_t i : safetensors_canonical_order(infos)) names.push_back(infos[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"z", "y", "c", "b", "w", "v", "e", "x", "u", "d"}));
}

TEST(Safetensors, OutOfOrderWritesGiveTheSameFile) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"a", patterned(DType::kU8, {5}, 1)}, {"b", patterned(DType::kF64, {3}, 2)},
      {"c", patterned(DType::kF32, {2, 2}, 3)}, {"d", patterned(DType::kBF16, {7}, 4)}};
  Bytes in_order = write_memory(tensors);
  EXPECT_EQ(write_memory(tensors, {}, /*reverse_writes=*/true), in_order);

  // Writing in the returned order streams each tensor at once; any other order holds
  // tensors until their turn (observable through the output size).
  Bytes sink;
  auto w = safetensors_writer(OutputStream::to_memory(&sink));
  std::vector<TensorInfo> infos;
  for (auto& [n, t] : tensors) infos.push_back(info_of(n, t));
  std::vector<size_t> order = w->begin(infos, {});
  EXPECT_EQ(order, (std::vector<size_t>{1, 2, 3, 0}));
  size_t header_end = sink.size();
  w->write(0, tensors[0].second);  // last in storage order: held
  EXPECT_EQ(sink.size(), header_end);
  w->write(1, tensors[1].second);  // first: written
  EXPECT_EQ(sink.size(), header_end + 24);
  w->write(3, tensors[3].second);  // third: held
  w->write(2, tensors[2].second);  // second: releases 3 and 0
  EXPECT_EQ(sink.size(), in_order.size());
  w->finish();
  EXPECT_EQ(sink, in_order);
}

TEST(Safetensors, WriterUsageErrors) {
  Bytes sink;
  auto make = [&] { return safetensors_writer(OutputStream::to_memory(&sink)); };
  std::vector<TensorInfo> two = {{"a", DType::kF32, {2}, 8}, {"b", DType::kU8, {3}, 3}};
  expect_error([&] { make()->begin({{"a", DType::kF32, {1}, 4}, {"a", DType::kU8, {1}, 1}}, {}); }, ErrorKind::kUsage,
               "duplicate tensor name", "tensor 'a'");
  expect_error([&] { make()->begin({{"__metadata__", DType::kF32, {1}, 4}}, {}); }, ErrorKind::kUsage, "reserved");
  expect_error([&] { make()->begin({{"q", DType::kF4, {3}, 2}}, {}); }, ErrorKind::kUsage, "", "tensor 'q'");
  expect_error([&] { make()->begin({{"\xff", DType::kF32, {1}, 4}}, {}); }, ErrorKind::kUsage, "UTF-8");
  expect_error([&] { make()->begin({}, {{"k", "\xc0\x80"}}); }, ErrorKind::kUsage, "UTF-8");
  {
    auto w = make();
    w->begin(two, {});
    expect_error([&] { w->write(0, patterned(DType::kF16, {2})); }, ErrorKind::kUsage,
                 "declared as F32 [2] but written as F16 [2]", "tensor 'a'");
    expect_error([&] { w->write(1, patterned(DType::kU8, {4})); }, ErrorKind::kUsage, "declared as U8 [3]");
    expect_error([&] { w->write(2, patterned(DType::kU8, {3})); }, ErrorKind::kUsage, "out of range");
    w->write(1, patterned(DType::kU8, {3}));  // held: 'a' (F32) comes first
    expect_error([&] { w->write(1, patterned(DType::kU8, {3})); }, ErrorKind::kUsage, "written twice");
    expect_error([&] { w->finish(); }, ErrorKind::kUsage, "never written", "tensor 'a'");
  }
  {
    auto w = make();
    expect_error([&] { w->write(0, patterned(DType::kU8, {3})); }, ErrorKind::kUsage, "before begin");
  }
}

TEST(Safetensors, WriterCommitsOnlyOnFinish) {
  TempDir dir;
  std::string path = dir.file("placeholder", {});
  std::filesystem::remove(path);
  {
    auto w = safetensors_writer(OutputStream::open(path));
    w->begin({{"a", DType::kU8, {1}, 1}}, {});
    w->write(0, patterned(DType::kU8, {1}));
  }  // destroyed without finish()
  EXPECT_FALSE(std::filesystem::exists(path));
  auto w = safetensors_writer(OutputStream::open(path));
  w->begin({{"a", DType::kU8, {1}, 1}}, {});
  w->write(0, patterned(DType::kU8, {1}));
  w->finish();
  EXPECT_EQ(open_file(path, true)->read(0).data()[0], 11);
}

// ---------------------------------------------------------------- sequential streams

TEST(Safetensors, SequentialReaderSkipsForwardAndRefusesToGoBack) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"a", patterned(DType::kF32, {4}, 1)}, {"b", patterned(DType::kF32, {4}, 2)}, {"c", patterned(DType::kF32, {4}, 3)}};
  Bytes file = write_memory(tensors);
  Pipe pipe(file);
  auto r = safetensors_open(InputStream::open(pipe.path()), {});
  EXPECT_EQ(tensor_bytes(r->read(2)), tensor_bytes(tensors[2].second));
  expect_error([&] { r->read(1); }, ErrorKind::kUsage, "sequentially", "tensor 'b'");
  expect_error([&] { r->read(2); }, ErrorKind::kUsage, "sequentially");
  expect_error([&] { r->read(3); }, ErrorKind::kUsage, "out of range");
}

TEST(Safetensors, PipeWithTrailingBytesFailsAtTheLastTensor) {
  Bytes file = write_memory({{"a", patterned(DType::kU8, {3})}});
  file.push_back(0);
  Pipe pipe(file);
  auto r = safetensors_open(InputStream::open(pipe.path()), {});
  expect_error([&] { r->read(0); }, ErrorKind::kInvalidInput, "trailing bytes");
  expect_invalid(file, "1 trailing bytes");  // known size: at open
}

TEST(Safetensors, PipeClaimingHugeSizesFailsWithoutAllocatingThem) {
  // 1 TiB of data claimed, 100 bytes delivered.
  Bytes file = st_file(R"({"big":{"dtype":"U8","shape":[1099511627776],"data_offsets":[0,1099511627776]}})",
                       Bytes(100, 7));
  {
    Pipe pipe(file);
    auto r = safetensors_open(InputStream::open(pipe.path()), {});
    EXPECT_EQ(r->tensors()[0].nbytes, uint64_t{1} << 40);
    expect_error([&] { r->read(0); }, ErrorKind::kInvalidInput, "truncated data (100 of 1099511627776 bytes",
                 "tensor 'big'");
  }
  expect_invalid(file, "truncated data", "tensor 'big'");
  // A header length of 100,000,000 with a few bytes behind it.
  Bytes header_claim = {0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'};
  Pipe pipe(header_claim);
  expect_error([&] { safetensors_open(InputStream::open(pipe.path()), {}); }, ErrorKind::kInvalidInput,
               "truncated header (2 of 100000000 bytes)");
}

// ---------------------------------------------------------------- validation

TEST(Safetensors, AcceptsWhatTheReferenceAccepts) {
  const std::string e = R"("dtype":"U8","shape":[1],"data_offsets":[0,1])";
  // Whitespace around the JSON, any key order, unknown fields, null metadata.
  auto r = open_memory(st_file(" \n\t{\"__metadata__\":null,\"a\":{\"extra\":[1,{\"q\":null}],"
                               "\"data_offsets\":[0,1],\"shape\":[1],\"dtype\":\"U8\"}} \r\n",
                               {'x'}));
  EXPECT_EQ(r->tensors().size(), 1u);
  EXPECT_TRUE(r->metadata().empty());
  EXPECT_EQ(r->read(0).data()[0], 'x');
  // No tensors at all.
  EXPECT_TRUE(open_memory(st_file("{}"))->tensors().empty());
  // Empty tensors sharing offsets, a 0-rank tensor, an empty name, listed in offset order.
  auto s = open_memory(st_file(R"({"z":{"dtype":"U8","shape":[0],"data_offsets":[1,1]},)"
                               R"("s":{"dtype":"U8","shape":[],"data_offsets":[0,1]},)"
                               R"("":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]}})",
                               {'q'}));
  ASSERT_EQ(s->tensors().size(), 3u);
  EXPECT_EQ(s->tensors()[0].name, "");
  EXPECT_EQ(s->tensors()[1].name, "s");
  EXPECT_EQ(s->tensors()[2].name, "z");
  EXPECT_EQ(s->read(1).rank(), 0);
  // Nesting up to the reference's depth limit (127 levels in all).
  std::string deep = "{\"a\":{" + e + ",\"x\":" + std::string(125, '[') + std::string(125, ']') + "}}";
  EXPECT_EQ(open_memory(st_file(deep, {'x'}))->tensors().size(), 1u);
  // Duplicate metadata keys: the last one wins, as in the reference.
  EXPECT_EQ(open_memory(st_file(R"({"__metadata__":{"k":"1","k":"2"}})"))->metadata().at("k"), "2");
}

struct Rule {
  const char* name;
  std::string header;
  Bytes data;
  const char* message;
  const char* where;
};

TEST(Safetensors, RejectsEveryMalformedHeader) {
  const std::string e = R"("dtype":"U8","shape":[1],"data_offsets":[0,1])";
  auto one = [](const std::string& entry) { return "{\"a\":{" + entry + "}}"; };
  const Bytes x = {'x'};
  const std::vector<Rule> rules = {
      {"header length zero", "", {}, "invalid JSON in header", ""},
      {"non-UTF-8", "{\"a\xff\":{" + e + "}}", x, "not valid UTF-8 (byte 3)", ""},
      {"overlong UTF-8", "{\"a\xc0\xaf\":{" + e + "}}", x, "not valid UTF-8", ""},
      {"UTF-8 surrogate", "{\"a\xed\xa0\x80\":{" + e + "}}", x, "not valid UTF-8", ""},
      {"UTF-8 above U+10FFFF", "{\"a\xf4\x90\x80\x80\":{" + e + "}}", x, "not valid UTF-8", ""},
      {"byte order mark", "\xef\xbb\xbf{\"a\":{" + e + "}}", x, "byte order mark", ""},
      {"invalid JSON", "{\"a\":{\"dtype\":", x, "invalid JSON in header", ""},
      {"trailing garbage", one(e) + "x", x, "invalid JSON in header", ""},
      {"NUL padding", one(e) + std::string(1, '\0'), x, "invalid JSON in header: NUL byte at offset 53", ""},
      {"NUL then garbage", "{}" + std::string(1, '\0') + "xyz", {}, "NUL byte at offset 2", ""},
      {"lone surrogate", "{\"a\\ud800\":{" + e + "}}", x, "invalid JSON in header", ""},
      {"too deep", "{\"a\":{" + e + ",\"x\":" + std::string(126, '[') + std::string(126, ']') + "}}", x,
       "nested deeper than 127 levels", ""},
      {"not an object", "[1]", {}, "header is not a JSON object but array", ""},
      {"entry not an object", R"({"a":5})", {}, "entry is not an object but number", "tensor 'a'"},
      {"entry null", R"({"a":null})", {}, "entry is not an object but null", "tensor 'a'"},
      {"unknown dtype", one(R"("dtype":"F7","shape":[1],"data_offsets":[0,1])"), x, "unknown dtype \"F7\"", "tensor 'a'"},
      {"lower-case dtype", one(R"("dtype":"u8","shape":[1],"data_offsets":[0,1])"), x, "unknown dtype", "tensor 'a'"},
      {"dtype not a string", one(R"("dtype":1,"shape":[1],"data_offsets":[0,1])"), x, "'dtype' is not a string", "tensor 'a'"},
      {"missing dtype", one(R"("shape":[1],"data_offsets":[0,1])"), x, "missing field 'dtype'", "tensor 'a'"},
      {"missing shape", one(R"("dtype":"U8","data_offsets":[0,1])"), x, "missing field 'shape'", "tensor 'a'"},
      {"missing offsets", one(R"("dtype":"U8","shape":[1])"), x, "missing field 'data_offsets'", "tensor 'a'"},
      {"duplicate field", one(R"("dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1])"), x,
       "duplicate field 'dtype'", "tensor 'a'"},
      {"shape not an array", one(R"("dtype":"U8","shape":1,"data_offsets":[0,1])"), x, "'shape' is not an array", "tensor 'a'"},
      {"negative dimension", one(R"("dtype":"U8","shape":[-1],"data_offsets":[0,1])"), x, "negative value -1 in shape",
       "tensor 'a'"},
      {"negative zero", one(R"("dtype":"U8","shape":[-0],"data_offsets":[0,0])"), {}, "in shape", "tensor 'a'"},
      {"float dimension", one(R"("dtype":"U8","shape":[1.0],"data_offsets":[0,1])"), x, "non-integer", "tensor 'a'"},
      {"string dimension", one(R"("dtype":"U8","shape":["1"],"data_offsets":[0,1])"), x,
       "expected an unsigned integer in shape, got string", "tensor 'a'"},
      {"dimension beyond u64", one(R"("dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1])"), x,
       "non-integer or out-of-range", "tensor 'a'"},
      {"dimension beyond i64", one(R"("dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,1])"), x,
       "too large", "tensor 'a'"},
      {"element count overflow", one(R"("dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,1])"),
       x, "too many elements", "tensor 'a'"},
      {"byte count overflow", one(R"("dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1])"), x, "",
       "tensor 'a'"},
      {"offsets not an array", one(R"("dtype":"U8","shape":[1],"data_offsets":1)"), x, "two offsets", "tensor 'a'"},
      {"one offset", one(R"("dtype":"U8","shape":[1],"data_offsets":[1])"), x, "two offsets", "tensor 'a'"},
      {"three offsets", one(R"("dtype":"U8","shape":[1],"data_offsets":[0,1,2])"), x, "two offsets", "tensor 'a'"},
      {"negative offset", one(R"("dtype":"U8","shape":[0],"data_offsets":[-1,-1])"), {}, "in data_offsets",
       "tensor 'a'"},
      {"metadata not an object", R"({"__metadata__":"x"})", {}, "__metadata__ is not an object but string", ""},
      {"metadata number", R"({"__metadata__":{"k":1}})", {}, "metadata value is not a string but number",
       "metadata key 'k'"},
      {"metadata null value", R"({"__metadata__":{"k":null}})", {}, "not a string but null", "metadata key 'k'"},
      {"duplicate metadata", R"({"__metadata__":{},"__metadata__":{}})", {}, "duplicate __metadata__", ""},
      {"duplicate tensor", R"({"a":{)" + e + R"(},"a":{)" + e + "}}", x, "duplicate tensor name", "tensor 'a'"},
      {"not from zero", one(R"("dtype":"U8","shape":[1],"data_offsets":[1,2])"), {'x', 'x'}, "leave a hole",
       "tensor 'a'"},
      {"hole", R"({"a":{)" + e + R"(},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})", {'x', 'x', 'x'},
       "data offsets [2, 3] leave a hole after the previous tensor, which ends at 1", "tensor 'b'"},
      {"overlap", R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
       {'x', 'x', 'x'}, "overlap the previous tensor, which ends at 2", "tensor 'b'"},
      {"end before begin", R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})",
       {'x', 'x'}, "end before they begin", "tensor 'b'"},
      {"size mismatch", one(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])"), Bytes(8, 0),
       "data offsets [0, 8] hold 8 bytes but F32 [3] needs 12", "tensor 'a'"},
      {"F4 half byte", one(R"("dtype":"F4","shape":[3],"data_offsets":[0,2])"), Bytes(2, 0), "", "tensor 'a'"},
      {"F6 partial byte", one(R"("dtype":"F6_E2M3","shape":[3],"data_offsets":[0,3])"), Bytes(3, 0), "", "tensor 'a'"},
      {"trailing bytes", one(e), {'x', 'y'}, "1 trailing bytes after the data", ""},
      {"truncated data", one(R"("dtype":"U8","shape":[4],"data_offsets":[0,4])"), {'x'},
       "truncated data (1 of 4 bytes present)", "tensor 'a'"},
  };
  for (const Rule& rule : rules) {
    SCOPED_TRACE(rule.name);
    expect_invalid(st_file(rule.header, rule.data), rule.message, rule.where);
  }
}

TEST(Safetensors, RejectsBadHeaderLengths) {
  expect_invalid({}, "file too short for a safetensors header (0 bytes)");
  expect_invalid({1, 0, 0}, "file too short for a safetensors header (3 bytes)");
  Bytes too_large = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'};
  expect_invalid(too_large, "header length 100000001 exceeds the limit of 100000000 bytes");
  Bytes max = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
  expect_invalid(max, "exceeds the limit");
  Bytes past = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  expect_invalid(past, "header length 100 extends past the end of the file (2 bytes follow the length)");
  TempDir dir;
  expect_error([&] { open_file(dir.file("p.safetensors", past), true); }, ErrorKind::kInvalidInput,
               "extends past the end", "p.safetensors");
}

TEST(Safetensors, ErrorsNameFileAndTensorAndStayOnOneLine) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors", st_file(R"({"w\n1":{"dtype":"F32","shape":[3],"data_offsets":[0,4]}})",
                                                         Bytes(4, 0)));
  try {
    open_reader(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(e.where(), path + ": tensor 'w\n1'");
  }
  std::string long_name(500, 'n');
  expect_invalid(st_file("{\"" + long_name + "\":5}"), "entry is not an object",
                 "tensor '" + std::string(96, 'n') + "...'");
}

TEST(Safetensors, TruncationAtEveryByteIsInvalidInput) {
  Bytes file = write_memory({{"a", patterned(DType::kF32, {3})}, {"b", patterned(DType::kU8, {5})}}, {{"k", "v"}});
  TempDir dir;
  for (size_t n = 0; n < file.size(); ++n) {
    SCOPED_TRACE(n);
    Bytes prefix(file.begin(), file.begin() + n);
    expect_invalid(prefix, "");
    std::string path = dir.file("t.safetensors", prefix);
    expect_error([&] { read_all(*open_file(path, true)); }, ErrorKind::kInvalidInput, "", "t.safetensors");
    if (n % 16 == 0 || n + 4 > file.size()) {  // pipes are slower; sample them
      Pipe pipe(prefix);
      expect_error([&] { read_all(*safetensors_open(InputStream::open(pipe.path()), {})); }, ErrorKind::kInvalidInput,
                   "");
    }
  }
}

TEST(Safetensors, MalformedCorpusIsInvalidInput) {
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TK_TESTDATA_DIR) / "malformed")) {
    if (entry.path().extension() != ".safetensors") continue;
    ++count;
    std::string path = entry.path().string();
    SCOPED_TRACE(path);
    expect_error([&] { read_all(*open_reader(path)); }, ErrorKind::kInvalidInput, "");
    std::ifstream f(path, std::ios::binary);
    Bytes content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    expect_invalid(content, "");
    expect_error([&] { read_all(*open_file(path, false)); }, ErrorKind::kInvalidInput, "");
  }
  EXPECT_GE(count, 50);
}

}  // namespace
}  // namespace tk::io
