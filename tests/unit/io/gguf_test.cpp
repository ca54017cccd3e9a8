// GGUF container: write / read round trips from memory and from a mapped file, typed
// pairs kept byte for byte, tensors held until their turn, and the header rules.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/gguf.h"

namespace tk::io {
namespace {

using Bytes = std::vector<uint8_t>;
using test::kind_of;

Buffer to_buffer(const Bytes& b) {
  Buffer buf = Buffer::allocate(b.size());
  if (!b.empty()) std::memcpy(buf.mutable_data(), b.data(), b.size());
  return buf;
}

std::unique_ptr<GgufReader> open_memory(const Bytes& b) {
  ReadOptions options;
  options.allow_mmap = false;
  return gguf_open(InputStream::from_buffer(to_buffer(b), "mem.gguf"), options);
}

Tensor f32_tensor(const Shape& shape, float first) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  auto* p = reinterpret_cast<float*>(t.mutable_data());
  for (uint64_t i = 0; i < t.numel(); ++i) p[i] = first + static_cast<float>(i);
  return t;
}

// A file of a 2x3 F32 tensor, a Q8_0 tensor of one block, and an I16 vector, written in
// reverse order so that the writer holds two of them.
Bytes sample_file(const std::vector<GgufKv>& kvs) {
  Bytes out;
  auto w = gguf_writer(OutputStream::to_memory(&out));
  w->begin_gguf({{"a", {2, 3}, GgmlType::kF32}, {"q", {32}, GgmlType::kQ8_0}, {"i", {5}, GgmlType::kI16}}, kvs);
  Tensor i16 = Tensor::zeros(DType::kI16, {5});
  w->write(2, i16);
  Bytes block(34, 0);
  store_le<uint16_t>(block.data(), 0x3c00);  // d = 1
  for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<uint8_t>(j - 16);
  w->write_stored(1, block);
  w->write(0, f32_tensor({2, 3}, 1.0f));
  w->finish();
  return out;
}

TEST(Gguf, RoundTripKeepsTypesShapesAndPairs) {
  std::vector<GgufKv> kvs = {gguf_kv_string("general.architecture", "llama"), gguf_kv_u32("llama.block_count", 2)};
  Bytes file = sample_file(kvs);
  ASSERT_EQ(file.size() % kGgufDefaultAlignment, 0u);
  auto r = open_memory(file);
  EXPECT_EQ(r->version(), 3u);
  ASSERT_EQ(r->kvs().size(), 3u);
  EXPECT_EQ(r->kvs()[1].value, kvs[1].value);
  // A model gets general.file_type for what it holds: Q8_0 is the most common of the
  // tensors llama.cpp does not keep in F32 (gguf_rules.h).
  EXPECT_EQ(r->kvs()[2].key, "general.file_type");
  EXPECT_EQ(gguf_kv_uint_value(r->kvs()[2]), 7u);
  EXPECT_EQ(r->metadata().at("general.architecture"), "llama");
  EXPECT_EQ(r->metadata().at("llama.block_count"), "2");
  ASSERT_EQ(r->tensors().size(), 3u);
  EXPECT_EQ(r->tensors()[0].shape, (Shape{2, 3}));
  EXPECT_EQ(r->entry(1).type, GgmlType::kQ8_0);
  EXPECT_EQ(r->entry(1).nbytes, 34u);
  EXPECT_EQ(r->tensors()[1].dtype, DType::kF32);  // block types read decoded
  EXPECT_EQ(r->tensors()[2].dtype, DType::kI16);
  Tensor a = r->read(0);
  EXPECT_EQ(a.data_as<float>()[5], 6.0f);
  Tensor q = r->read(1);
  EXPECT_EQ(q.data_as<float>()[0], -16.0f);
  EXPECT_EQ(q.data_as<float>()[31], 15.0f);
  EXPECT_EQ(r->read(2).nbytes(), 10u);
  // Sequential: no going back.
  EXPECT_EQ(kind_of([&] { r->read(0); }), ErrorKind::kUsage);
}

TEST(Gguf, MappedFileIsZeroCopy) {
  test::TempDir tmp("gguf");
  const std::string path = tmp.path() + "/m.gguf";
  Bytes file = sample_file({});
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), file.size());
  auto r = gguf_open(InputStream::open(path), {});
  EXPECT_TRUE(r->random_access());
  Tensor i16 = r->read(2);
  Tensor a = r->read(0);
  EXPECT_FALSE(a.buffer().writable());  // a view of the mapping
  EXPECT_EQ(a.data_as<float>()[0], 1.0f);
  EXPECT_EQ(r->read_stored(1).size(), 34u);
}

TEST(Gguf, GenericWriterTakesPlainTensorsAndLeavesOutGeneralKeys) {
  Bytes out;
  auto w = gguf_writer(OutputStream::to_memory(&out));
  TensorInfo info{"x.weight", DType::kBF16, {2, 4}, 16};
  TensorInfo norm{"x_norm.weight", DType::kBF16, {4}, 8};
  w->begin({info, norm}, {{"general.architecture", "llama"}, {"note", "hi"}});
  w->write(0, Tensor::zeros(DType::kBF16, {2, 4}));
  Tensor ones = Tensor::empty(DType::kBF16, {4});
  for (int i = 0; i < 4; ++i) reinterpret_cast<uint16_t*>(ones.mutable_data())[i] = 0x3f80;  // 1.0
  w->write(1, ones);
  w->finish();
  auto r = open_memory(out);
  EXPECT_EQ(r->metadata().count("general.architecture"), 0u);
  EXPECT_EQ(r->metadata().at("note"), "hi");
  EXPECT_EQ(r->entry(0).type, GgmlType::kBF16);
  // llama.cpp reads norms only as F32: widened on the way.
  EXPECT_EQ(r->entry(1).type, GgmlType::kF32);
  EXPECT_EQ(r->read(1).data_as<float>()[3], 1.0f);

  Bytes sink;
  auto w2 = gguf_writer(OutputStream::to_memory(&sink));
  EXPECT_EQ(kind_of([&] { w2->begin({{"u", DType::kU8, {4}, 4}}, {}); }), ErrorKind::kUsage);
  auto w3 = gguf_writer(OutputStream::to_memory(&sink));
  EXPECT_EQ(kind_of([&] { w3->begin_gguf({{std::string(64, 'n'), {4}, GgmlType::kF32}}, {}); }), ErrorKind::kUsage);
  auto w4 = gguf_writer(OutputStream::to_memory(&sink));
  EXPECT_EQ(kind_of([&] { w4->begin_gguf({{"q", {33}, GgmlType::kQ8_0}}, {}); }), ErrorKind::kUsage);
}

TEST(Gguf, ValueText) {
  GgufKv arr{"a", GgufValueType::kArray, {}};
  arr.value.resize(12 + 3 * 4);
  store_le<uint32_t>(arr.value.data(), static_cast<uint32_t>(GgufValueType::kI32));
  store_le<uint64_t>(arr.value.data() + 4, 3);
  store_le<int32_t>(arr.value.data() + 12, -1);
  store_le<int32_t>(arr.value.data() + 16, 2);
  store_le<int32_t>(arr.value.data() + 20, 3);
  EXPECT_EQ(gguf_value_text(arr), "[3 x i32: -1, 2, 3]");
  EXPECT_EQ(gguf_value_text(arr, 1), "[3 x i32: -1, ...]");
  EXPECT_EQ(gguf_value_text(gguf_kv_string("s", "text")), "text");
}

// Header rules, on files edited from a valid one.
Bytes header_only(const std::vector<GgufTensorDecl>& tensors, const std::vector<GgufKv>& kvs) {
  return gguf_make_header(tensors, kvs);
}

TEST(Gguf, RejectsBadHeaders) {
  auto rejected = [](const Bytes& b) { return kind_of([&] { open_memory(b); }); };
  Bytes good = header_only({}, {});
  EXPECT_NO_THROW(open_memory(good));

  Bytes v1 = good;
  store_le<uint32_t>(v1.data() + 4, 1);
  EXPECT_EQ(rejected(v1), ErrorKind::kInvalidInput);
  Bytes big = good;
  store_le<uint32_t>(big.data() + 4, 0x03000000);
  EXPECT_EQ(rejected(big), ErrorKind::kInvalidInput);

  Bytes many = good;
  store_le<uint64_t>(many.data() + 8, uint64_t{1} << 62);
  EXPECT_EQ(rejected(many), ErrorKind::kInvalidInput);

  // A tensor whose data is missing, and one whose offset is not aligned.
  Bytes missing = header_only({{"w", {8}, GgmlType::kF32}}, {});
  EXPECT_EQ(rejected(missing), ErrorKind::kInvalidInput);
  Bytes misaligned = header_only({{"w", {8}, GgmlType::kF32}}, {});
  store_le<uint64_t>(misaligned.data() + 24 + 8 + 1 + 4 + 8 + 4, 4);  // the offset field
  misaligned.resize(misaligned.size() + 64, 0);
  EXPECT_EQ(rejected(misaligned), ErrorKind::kInvalidInput);

  GgufKv bad_align = gguf_kv_u32("general.alignment", 24);
  EXPECT_EQ(kind_of([&] { header_only({}, {bad_align}); }), ErrorKind::kInvalidInput);
}

TEST(Gguf, RejectsTrailingBytes) {
  Bytes file = sample_file({});
  EXPECT_NO_THROW(open_memory(Bytes(file.begin(), file.end() - 6)));  // the last padding is optional
  file.resize(file.size() + 1, 0x55);
  EXPECT_EQ(kind_of([&] { open_memory(file); }), ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace tk::io
