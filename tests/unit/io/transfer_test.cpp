// Copying tensors between readers and writers: order, casts, merges, renames, holding
// one tensor at a time, failures leaving no output.
#include "tk/io/transfer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "tk/core/error.h"
#include "tk/io/safetensors.h"

namespace tk::io {
namespace {

// Events in order: "r:NAME" when a tensor is read, "w:NAME" when one is written.
using Log = std::vector<std::string>;

Tensor filled(DType dtype, Shape shape, uint8_t seed) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (uint64_t i = 0; i < t.nbytes(); ++i) t.mutable_data()[i] = static_cast<uint8_t>(seed + i * 7);
  return t;
}

Tensor f32_tensor(std::vector<float> values) {
  Tensor t = Tensor::empty(DType::kF32, {static_cast<int64_t>(values.size())});
  std::memcpy(t.mutable_data(), values.data(), values.size() * 4);
  return t;
}

class FakeReader final : public TensorReader {
 public:
  FakeReader(std::vector<std::pair<std::string, Tensor>> tensors, bool random, Log* log, std::string tag = "")
      : random_(random), log_(log), tag_(std::move(tag)) {
    for (auto& [name, t] : tensors) {
      infos_.push_back({name, t.dtype(), t.shape(), t.nbytes()});
      data_.push_back(t);
    }
    metadata_["source"] = tag_;
  }
  FileFormat format() const override { return FileFormat::kSafetensors; }
  bool random_access() const override { return random_; }
  Tensor read(size_t index) override {
    if (!random_ && index < next_) throw usage_error("sequential reader asked to go back");
    if (index == fail_at_) throw invalid_input("corrupt tensor", infos_[index].name);
    next_ = index + 1;
    ++reads_;
    if (log_) log_->push_back("r:" + tag_ + infos_[index].name);
    return data_[index];
  }
  size_t reads_ = 0;
  size_t fail_at_ = SIZE_MAX;

 private:
  bool random_;
  Log* log_;
  std::string tag_;
  std::vector<Tensor> data_;
  size_t next_ = 0;
};

class FakeWriter final : public TensorWriter {
 public:
  FakeWriter(Log* log, bool reverse) : log_(log), reverse_(reverse) {}
  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) override {
    infos_ = infos;
    metadata_ = metadata;
    written_.assign(infos.size(), Tensor());
    std::vector<size_t> order(infos.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = reverse_ ? order.size() - 1 - i : i;
    return order;
  }
  void write(size_t index, const Tensor& tensor) override {
    EXPECT_EQ(tensor.dtype(), infos_[index].dtype);
    EXPECT_EQ(tensor.shape(), infos_[index].shape);
    if (log_) log_->push_back("w:" + infos_[index].name);
    written_[index] = tensor.clone();
  }
  void finish() override { finished_ = true; }

  std::vector<TensorInfo> infos_;
  Metadata metadata_;
  std::vector<Tensor> written_;
  bool finished_ = false;

 private:
  Log* log_;
  bool reverse_;
};

std::vector<std::pair<std::string, Tensor>> three_tensors() {
  return {{"a", filled(DType::kF32, {2, 3}, 1)}, {"b", filled(DType::kI64, {4}, 2)}, {"c", filled(DType::kF16, {5}, 3)}};
}

std::vector<TransferItem> all_items(const TensorReader& r, size_t source = 0) {
  std::vector<TransferItem> items;
  for (size_t i = 0; i < r.tensors().size(); ++i) items.push_back({source, i, r.tensors()[i].name, std::nullopt});
  return items;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(Transfer, RandomAccessReadsInTheWritersOrderOneTensorAtATime) {
  Log log;
  FakeReader reader(three_tensors(), /*random=*/true, &log);
  FakeWriter writer(&log, /*reverse=*/true);
  TransferResult r = transfer({{&reader, "in"}}, all_items(reader), writer, {{"k", "v"}});
  EXPECT_EQ(log, (Log{"r:c", "w:c", "r:b", "w:b", "r:a", "w:a"}));
  EXPECT_TRUE(writer.finished_);
  EXPECT_EQ(writer.metadata_, (Metadata{{"k", "v"}}));
  EXPECT_EQ(r.tensors, 3u);
  EXPECT_EQ(r.bytes_in, 24u + 32u + 10u);
  EXPECT_EQ(r.bytes_out, r.bytes_in);
  auto src = three_tensors();
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(writer.written_[i], src[i].second)) << i;
}

TEST(Transfer, SequentialReaderIsReadInItsOwnOrder) {
  Log log;
  FakeReader reader(three_tensors(), /*random=*/false, &log);
  FakeWriter writer(&log, /*reverse=*/true);
  transfer({{&reader, "in"}}, all_items(reader), writer, {});
  // Each tensor is handed over before the next is read: nothing is held by transfer.
  EXPECT_EQ(log, (Log{"r:a", "w:a", "r:b", "w:b", "r:c", "w:c"}));
  EXPECT_TRUE(writer.finished_);
}

TEST(Transfer, SequentialReaderWithItemsOutOfOrder) {
  Log log;
  FakeReader reader(three_tensors(), /*random=*/false, &log);
  FakeWriter writer(&log, false);
  std::vector<TransferItem> items = {{0, 2, "c", {}}, {0, 0, "a", {}}};
  transfer({{&reader, "in"}}, items, writer, {});
  EXPECT_EQ(log, (Log{"r:a", "w:a", "r:c", "w:c"}));
  EXPECT_EQ(writer.infos_[0].name, "c");
}

TEST(Transfer, TheSameTensorTwiceIsReadOnceFromAPipe) {
  FakeReader reader(three_tensors(), /*random=*/false, nullptr);
  FakeWriter writer(nullptr, false);
  std::vector<TransferItem> items = {{0, 1, "b1", {}}, {0, 1, "b2", {}}};
  transfer({{&reader, "in"}}, items, writer, {});
  EXPECT_EQ(reader.reads_, 1u);
  EXPECT_TRUE(same_bytes(writer.written_[0], writer.written_[1]));
}

TEST(Transfer, CastsRoundToNearestEvenAndSaturateOnRequest) {
  FakeReader reader({{"x", f32_tensor({1.0f, 1.00390625f, 1.01171875f, -3.0e38f, NAN})},
                     {"big", f32_tensor({1000.0f, -1e6f})}},
                    true, nullptr);
  {
    FakeWriter writer(nullptr, false);
    std::vector<TransferItem> items = {{0, 0, "x", DType::kBF16}, {0, 1, "big", DType::kF8E4M3}};
    TransferResult r = transfer({{&reader, "in"}}, items, writer, {});
    EXPECT_EQ(writer.infos_[0].dtype, DType::kBF16);
    EXPECT_EQ(writer.infos_[0].nbytes, 10u);
    EXPECT_EQ(r.bytes_in, 28u);
    EXPECT_EQ(r.bytes_out, 12u);
    const uint16_t* bf = writer.written_[0].data_as<uint16_t>();
    EXPECT_EQ(bf[0], 0x3F80);  // 1.0
    EXPECT_EQ(bf[1], 0x3F80);  // 1 + 2^-8: a tie, to even
    EXPECT_EQ(bf[2], 0x3F82);  // 1 + 3 * 2^-8: a tie, to even (up)
    EXPECT_EQ(bf[3], f32_to_bf16(-3.0e38f));
    EXPECT_TRUE(std::isnan(bf16_to_f32(bf[4])));
    const uint8_t* f8 = writer.written_[1].data_as<uint8_t>();
    EXPECT_TRUE(std::isnan(minifloat_to_f32(DType::kF8E4M3, f8[0])));  // E4M3 has no Inf
  }
  {
    FakeWriter writer(nullptr, false);
    std::vector<TransferItem> items = {{0, 1, "big", DType::kF8E4M3}};
    TransferOptions options;
    options.saturate = true;
    transfer({{&reader, "in"}}, items, writer, {}, options);
    const uint8_t* f8 = writer.written_[0].data_as<uint8_t>();
    EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3, f8[0]), 448.0f);
    EXPECT_EQ(minifloat_to_f32(DType::kF8E4M3, f8[1]), -448.0f);
  }
}

TEST(Transfer, MergesSourcesInSequenceWhenOneIsAPipe) {
  Log log;
  FakeReader pipe({{"p0", filled(DType::kU8, {3}, 1)}, {"p1", filled(DType::kU8, {3}, 2)}}, false, &log, "A.");
  FakeReader file({{"f0", filled(DType::kU8, {3}, 3)}, {"f1", filled(DType::kU8, {3}, 4)}}, true, &log, "B.");
  FakeWriter writer(&log, /*reverse=*/true);
  std::vector<TransferItem> items = all_items(pipe, 0);
  for (auto& item : all_items(file, 1)) items.push_back(item);
  transfer({{&pipe, "A"}, {&file, "B"}}, items, writer, {});
  // The pipe in its order, then the file in the writer's (reversed) order.
  EXPECT_EQ(log, (Log{"r:A.p0", "w:p0", "r:A.p1", "w:p1", "r:B.f1", "w:f1", "r:B.f0", "w:f0"}));
}

TEST(Transfer, DuplicateOutputNamesAreRefusedBeforeAnythingIsWritten) {
  FakeReader a({{"w", filled(DType::kU8, {1}, 1)}}, true, nullptr);
  FakeReader b({{"w", filled(DType::kU8, {1}, 2)}}, true, nullptr);
  FakeWriter writer(nullptr, false);
  std::vector<TransferItem> items = {{0, 0, "w", {}}, {1, 0, "w", {}}};
  try {
    transfer({{&a, "a.safetensors"}, {&b, "b.safetensors"}}, items, writer, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(), "duplicate tensor name in the output, from a.safetensors 'w' and b.safetensors 'w'");
    EXPECT_EQ(e.where(), "tensor 'w'");
  }
  EXPECT_TRUE(writer.infos_.empty());  // begin() was never called
}

TEST(Transfer, ReaderFailureLeavesTheWriterUnfinished) {
  FakeReader reader(three_tensors(), true, nullptr);
  reader.fail_at_ = 1;
  FakeWriter writer(nullptr, false);
  EXPECT_THROW(transfer({{&reader, "in"}}, all_items(reader), writer, {}), Error);
  EXPECT_FALSE(writer.finished_);
}

TEST(Transfer, ReportsProgressAfterEachTensor) {
  FakeReader reader(three_tensors(), true, nullptr);
  FakeWriter writer(nullptr, false);
  std::vector<TransferProgress> seen;
  TransferOptions options;
  options.progress = [&](const TransferProgress& p) { seen.push_back(p); };
  transfer({{&reader, "in"}}, all_items(reader), writer, {}, options);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].tensors_done, 1u);
  EXPECT_EQ(seen[0].bytes_done, 24u);
  EXPECT_EQ(seen[2].tensors_total, 3u);
  EXPECT_EQ(seen[2].bytes_done, seen[2].bytes_total);
  EXPECT_EQ(seen[2].bytes_total, 66u);
}

TEST(Transfer, BadItemsAreUsageErrors) {
  FakeReader reader(three_tensors(), true, nullptr);
  EXPECT_THROW(transfer_output_infos({{&reader, "in"}}, {{1, 0, "x", {}}}), Error);
  EXPECT_THROW(transfer_output_infos({{&reader, "in"}}, {{0, 9, "x", {}}}), Error);
}

TEST(Transfer, SafetensorsPipeToSafetensorsIsBitExact) {
  // Build a file with the real writer, read it back as a pipe (memory stream), copy it
  // renamed and partly cast, and check every byte.
  std::vector<uint8_t> original;
  {
    FakeReader reader(three_tensors(), true, nullptr);
    auto writer = safetensors_writer(OutputStream::to_memory(&original));
    transfer({{&reader, "in"}}, all_items(reader), *writer, {{"format", "pt"}});
  }
  Buffer bytes = Buffer::allocate(original.size());
  std::memcpy(bytes.mutable_data(), original.data(), original.size());
  auto pipe = safetensors_open(InputStream::from_buffer(bytes, "<stdin>"), {});
  ASSERT_FALSE(pipe->random_access());
  std::vector<uint8_t> copy;
  auto writer = safetensors_writer(OutputStream::to_memory(&copy));
  std::vector<TransferItem> items;
  for (size_t i = 0; i < pipe->tensors().size(); ++i) items.push_back({0, i, "m." + pipe->tensors()[i].name, {}});
  transfer({{pipe.get(), "<stdin>"}}, items, *writer, pipe->metadata());
  Buffer copy_bytes = Buffer::allocate(copy.size());
  std::memcpy(copy_bytes.mutable_data(), copy.data(), copy.size());
  auto back = safetensors_open(InputStream::from_buffer(copy_bytes, "copy"), {});
  EXPECT_EQ(back->metadata().at("format"), "pt");
  auto src = three_tensors();
  ASSERT_EQ(back->tensors().size(), src.size());
  for (size_t i = 0; i < back->tensors().size(); ++i) {  // storage order: a pipe reads forward
    const std::string& name = back->tensors()[i].name;
    auto it = std::find_if(src.begin(), src.end(), [&](const auto& p) { return "m." + p.first == name; });
    ASSERT_NE(it, src.end()) << name;
    EXPECT_TRUE(same_bytes(back->read(i), it->second)) << name;
  }
}

}  // namespace
}  // namespace tk::io

namespace tk::io {
namespace {

// A safetensors pipe (sequential reader) into a safetensors writer goes piece by piece:
// the output must equal a whole-tensor cast, for tensors spanning many pieces and for
// packed sub-byte targets whose pieces must end on whole bytes.
TEST(TransferPieces, StreamedCastsEqualWholeTensorCasts) {
  const int64_t n = (3 << 20) / 4 + 8;  // a little over 3 MiB of f32: four pieces
  Tensor big = Tensor::empty(DType::kF32, {n});
  float* v = big.mutable_data_as<float>();
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.001f * static_cast<float>(i)) * 5.0f + (i % 97 == 0 ? 1e30f : 0.0f);
  for (DType to : {DType::kF32, DType::kBF16, DType::kF4, DType::kF6E2M3, DType::kF8E4M3}) {
    std::vector<uint8_t> file;
    {
      auto w = safetensors_writer(OutputStream::to_memory(&file));
      w->begin({{"big", DType::kF32, {n}, big.nbytes()}}, {});
      w->write(0, big);
      w->finish();
    }
    auto reader = safetensors_open(InputStream::from_buffer(Buffer::borrow_const(file.data(), file.size()), "pipe"), {});
    ASSERT_FALSE(reader->random_access());
    std::vector<uint8_t> out;
    auto writer = safetensors_writer(OutputStream::to_memory(&out));
    TransferOptions options;
    options.saturate = true;
    transfer({{reader.get(), "pipe"}}, {{0, 0, "big", to}}, *writer, {}, options);

    auto result = safetensors_open(InputStream::from_buffer(Buffer::borrow_const(out.data(), out.size()), "out"), {});
    Tensor got = result->read(0);
    Tensor want = Tensor::empty(to, {n});
    cast_array(DType::kF32, big.data(), to, want.mutable_data(), static_cast<uint64_t>(n), {.saturate = true});
    ASSERT_EQ(got.nbytes(), want.nbytes()) << dtype_name(to);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0) << dtype_name(to);
  }
}

TEST(TransferPieces, TruncatedPipeFails) {
  // Through a real pipe (length unknown), so the truncation is found while streaming.
  Tensor t = filled(DType::kF32, {1 << 19}, 3);  // 2 MiB
  std::vector<uint8_t> file;
  {
    auto w = safetensors_writer(OutputStream::to_memory(&file));
    w->begin({{"t", DType::kF32, t.shape(), t.nbytes()}}, {});
    w->write(0, t);
    w->finish();
  }
  file.resize(file.size() - 100);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread feeder([&] {
    size_t off = 0;
    while (off < file.size()) {
      ssize_t w = ::write(fds[1], file.data() + off, file.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    ::close(fds[1]);
  });
  int saved = ::dup(STDIN_FILENO);
  ::dup2(fds[0], STDIN_FILENO);
  ::close(fds[0]);
  std::vector<uint8_t> out;
  try {
    auto reader = safetensors_open(InputStream::standard_input(), {});
    auto writer = safetensors_writer(OutputStream::to_memory(&out));
    transfer({{reader.get(), "<stdin>"}}, {{0, 0, "t", std::nullopt}}, *writer, {});
    ADD_FAILURE() << "expected a truncation error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("truncated data"), std::string::npos) << e.what();
  }
  feeder.join();
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
}

}  // namespace
}  // namespace tk::io
