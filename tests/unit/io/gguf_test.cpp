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
#include "tk/io/gguf_transfer.h"

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

// A file written by hand, as the writer would not: one u32 general.alignment pair and
// F32 tensors of `dims` (innermost first), all at offset 0, then `data` after the
// header (unpadded).
Bytes hand_file(uint32_t alignment, const std::vector<std::pair<std::string, std::vector<uint64_t>>>& tensors,
                const Bytes& data = {}) {
  Bytes out = {'G', 'G', 'U', 'F'};
  auto put = [&out]<typename T>(T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    store_le(out.data() + at, v);
  };
  auto put_string = [&](std::string_view s) {
    put(uint64_t{s.size()});
    out.insert(out.end(), s.begin(), s.end());
  };
  put(uint32_t{3});
  put(uint64_t{tensors.size()});
  put(uint64_t{1});
  put_string("general.alignment");
  put(static_cast<uint32_t>(GgufValueType::kU32));
  put(alignment);
  for (const auto& [name, dims] : tensors) {
    put_string(name);
    put(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) put(d);
    put(static_cast<uint32_t>(GgmlType::kF32));
    put(uint64_t{0});
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(Gguf, HugeAlignmentIsReadButNotWritten) {
  // 2^31 is a valid alignment: the data section would start 2 GiB in, past the end of
  // this small file, which is fine for a tensor of no bytes (gguf-py reads it).
  const Bytes empty = hand_file(uint32_t{1} << 31, {{"t", {4, 0}}});
  test::TempDir tmp("gguf");
  const std::string path = tmp.path() + "/e.gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(empty.data()), empty.size());
  for (bool mapped : {false, true}) {
    auto r = mapped ? gguf_open(InputStream::open(path), {}) : open_memory(empty);
    EXPECT_EQ(r->random_access(), mapped);
    EXPECT_EQ(r->alignment(), uint32_t{1} << 31);
    EXPECT_EQ(r->tensors()[0].shape, (Shape{0, 4}));
    EXPECT_EQ(r->read(0).numel(), 0u);
    if (mapped) {
      EXPECT_EQ(r->read_stored(0).size(), 0u);
    }
    // An output from it pads to the default, not to 2 GiB.
    bool has_alignment = false;
    for (const GgufKv& kv : gguf_output_kvs(r.get(), r->metadata())) has_alignment |= kv.key == "general.alignment";
    EXPECT_FALSE(has_alignment);
  }
  // A tensor that holds data must lie inside the file.
  EXPECT_EQ(kind_of([&] { open_memory(hand_file(uint32_t{1} << 31, {{"t", {4}}}, Bytes(64, 0))); }),
            ErrorKind::kInvalidInput);
  // The writer pads to at most kGgufMaxAlignment.
  Bytes sink;
  auto w = gguf_writer(OutputStream::to_memory(&sink));
  EXPECT_EQ(kind_of([&] { w->begin_gguf({}, {gguf_kv_u32("general.alignment", kGgufMaxAlignment * 2)}); }),
            ErrorKind::kUsage);
  EXPECT_EQ(header_only({}, {gguf_kv_u32("general.alignment", kGgufMaxAlignment)}).size(), kGgufMaxAlignment);
}

TEST(Gguf, EmptyTensorsOverlapNothing) {
  // Two empty tensors and one of data, all at offset 0.
  Bytes file = hand_file(32, {{"a", {0}}, {"w", {4}}, {"b", {8, 0}}});
  file.resize((file.size() + 31) / 32 * 32 + 16, 0);
  auto r = open_memory(file);
  ASSERT_EQ(r->tensors().size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r->read_stored(i).size(), r->entry(i).nbytes);
}

TEST(Gguf, RefusesKeysAndNamesThatAreNotUtf8) {
  Bytes name = hand_file(32, {{"w\xff", {4}}});
  name.resize((name.size() + 31) / 32 * 32 + 16, 0);
  try {
    open_memory(name);
    ADD_FAILURE() << "accepted a name that is not UTF-8";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(e.message(), "tensor name is not valid UTF-8 (byte 1)");
  }
  Bytes key = hand_file(32, {});
  key[24 + 8 + 7] = 0xC3;  // "general\xC3alignment"
  EXPECT_EQ(kind_of([&] { open_memory(key); }), ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace tk::io
