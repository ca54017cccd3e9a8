// Checkpoints from device memory against the same checkpoints from host memory (the CPU
// reference): same files, same bytes restored, through the C++ and the C API.
#include <cuda_runtime_api.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ckpt/ckpt_test_util.h"
#include "gpu_test.h"
#include "test_util.h"
#include "tk/ckpt/checkpoint.h"
#include "tk_ckpt.h"
#include "tk/device/cuda/runtime.h"

namespace tk::ckpt {
namespace {

using device::cuda::check;
using device::cuda::DeviceArray;
using device::cuda::DeviceScope;

using test::random_tensor;

// A model-like state: many small tensors of odd sizes and dtypes (gathered into one
// transfer), a few above the gather threshold and one large one (copied directly).
std::vector<NamedTensor> host_state(uint64_t seed) {
  std::vector<NamedTensor> state;
  for (int i = 0; i < 300; ++i) {
    const DType dtype = i % 3 == 0 ? DType::kBF16 : (i % 3 == 1 ? DType::kF32 : DType::kU8);
    state.push_back({"small." + std::to_string(i), random_tensor(dtype, {1 + (i * 37) % 1500}, seed + i)});
  }
  state.push_back({"scalar", random_tensor(DType::kI64, {}, seed + 1000)});
  state.push_back({"medium", random_tensor(DType::kF32, {3, 131073}, seed + 1001)});
  state.push_back({"large", random_tensor(DType::kBF16, {4099, 2048}, seed + 1002)});
  return state;
}

// Device copies of `host`'s tensors, and tensors naming them (borrowed device pointers).
struct DeviceState {
  std::vector<DeviceArray<uint8_t>> arrays;
  std::vector<NamedTensor> tensors;
};

DeviceState upload(const std::vector<NamedTensor>& host) {
  DeviceState d;
  for (const NamedTensor& t : host) {
    DeviceArray<uint8_t> a(t.tensor.nbytes());
    check(cudaMemcpy(a.data(), t.tensor.data(), t.tensor.nbytes(), cudaMemcpyHostToDevice), "upload");
    d.tensors.push_back({t.name, Tensor(t.tensor.dtype(), t.tensor.shape(), Buffer::borrow(a.data(), a.bytes()))});
    d.arrays.push_back(std::move(a));
  }
  return d;
}

std::vector<uint8_t> download(const DeviceArray<uint8_t>& a) {
  std::vector<uint8_t> bytes(a.bytes());
  check(cudaMemcpy(bytes.data(), a.data(), a.bytes(), cudaMemcpyDeviceToHost), "download");
  return bytes;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_restored(const Checkpointer& ckpt, uint64_t step, const std::vector<NamedTensor>& want) {
  test::expect_same_tensors(ckpt.restore(step), want);
}

// Every shard of step `step` in `a` has the same bytes as in `b`.
void expect_same_shards(const std::string& a, const std::string& b, uint64_t step) {
  const std::string sa = a + "/step-" + std::to_string(step), sb = b + "/step-" + std::to_string(step);
  size_t shards = 0;
  for (const auto& e : std::filesystem::directory_iterator(sa)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("shard-", 0) != 0) continue;
    ++shards;
    EXPECT_EQ(file_bytes(sa + "/" + name), file_bytes(sb + "/" + name)) << name;
  }
  EXPECT_GT(shards, 0u);
}

TEST(CkptDevice, SaveFromDeviceWritesTheFilesOfAHostSave) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  const std::vector<NamedTensor> host = host_state(1);
  DeviceState dev = upload(host);
  test::TempDir from_host("ckpt_host"), from_device("ckpt_dev");
  Options options;
  options.shard_bytes = 8 << 20;  // several shards
  auto h = Checkpointer::open(from_host.path(), options);
  auto d = Checkpointer::open(from_device.path(), options);
  h->wait(h->save_async(1, host, {{"run", "a"}}));
  d->wait(d->save_async(1, dev.tensors, {{"run", "a"}}));
  expect_same_shards(from_host.path(), from_device.path(), 1);
  expect_restored(*d, 1, host);
  // The borrowing save (Checkpointer::save) copies device tensors too.
  d->save(2, dev.tensors);
  expect_restored(*d, 2, host);
}

TEST(CkptDevice, OverwritesAfterSaveAsyncDoNotReachTheCheckpoint) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  const std::vector<NamedTensor> host = host_state(2);
  DeviceState dev = upload(host);
  test::TempDir dir("ckpt_dev");
  auto ckpt = Checkpointer::open(dir.path());
  // Queued on the default stream right after save_async returns: it must run after the
  // save's copies (the device orders it), not before them.
  SaveHandle first = ckpt->save_async(1, dev.tensors);
  for (auto& a : dev.arrays) check(cudaMemsetAsync(a.data(), 0xA5, a.bytes(), cudaStreamLegacy), "memset");
  ckpt->wait(first);
  expect_restored(*ckpt, 1, host);
  // And after wait, from the host.
  for (auto& a : dev.arrays) check(cudaMemset(a.data(), 0x5A, a.bytes()), "memset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  expect_restored(*ckpt, 1, host);
  // A second save sees the new contents.
  ckpt->wait(ckpt->save_async(2, dev.tensors));
  std::vector<NamedTensor> second = ckpt->restore(2);
  for (const NamedTensor& t : second)
    for (uint64_t k = 0; k < t.tensor.nbytes(); ++k) ASSERT_EQ(t.tensor.data()[k], 0x5A) << t.name;
}

TEST(CkptDevice, OneSaveMixesHostAndDeviceTensors) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  const std::vector<NamedTensor> host = host_state(3);
  DeviceState dev = upload(host);
  std::vector<NamedTensor> mixed;
  for (size_t i = 0; i < host.size(); ++i) mixed.push_back(i % 2 ? host[i] : dev.tensors[i]);
  test::TempDir from_host("ckpt_host"), from_mixed("ckpt_mixed");
  auto h = Checkpointer::open(from_host.path());
  auto m = Checkpointer::open(from_mixed.path());
  h->wait(h->save_async(1, host));
  for (Snapshot mode : {Snapshot::kCopy, Snapshot::kBorrow}) {
    const uint64_t step = mode == Snapshot::kCopy ? 1 : 2;
    m->wait(m->save_async(step, mixed, {}, mode));
    expect_restored(*m, step, host);
  }
  expect_same_shards(from_host.path(), from_mixed.path(), 1);
}

TEST(CkptDevice, RestoreFillsDeviceBuffers) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  const std::vector<NamedTensor> host = host_state(4);
  test::TempDir dir("ckpt");
  auto ckpt = Checkpointer::open(dir.path());
  ckpt->save(1, host);
  DeviceState dev = upload(host_state(5));  // other contents, same dtypes and shapes
  ckpt->restore_into(1, dev.tensors);
  for (size_t i = 0; i < host.size(); ++i) {
    std::vector<uint8_t> got = download(dev.arrays[i]);
    ASSERT_EQ(got.size(), host[i].tensor.nbytes());
    EXPECT_EQ(0, std::memcmp(got.data(), host[i].tensor.data(), got.size())) << host[i].name;
  }
}

TEST(CkptDevice, CApiTakesDevicePointers) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  const std::vector<NamedTensor> host = host_state(6);
  DeviceState dev = upload(host);
  auto descriptors = [&](const std::vector<DeviceArray<uint8_t>>& arrays) {
    std::vector<tk_ckpt_tensor> out;
    for (size_t i = 0; i < host.size(); ++i) {
      const Shape& shape = host[i].tensor.shape();
      out.push_back({host[i].name.c_str(), dtype_name(host[i].tensor.dtype()), static_cast<int32_t>(shape.size()), shape.data(),
                     arrays[i].data(), host[i].tensor.nbytes()});
    }
    return out;
  };
  test::TempDir from_host("ckpt_host"), from_device("ckpt_dev");
  auto h = Checkpointer::open(from_host.path());
  h->save(1, host);

  tk_ckpt* ckpt = nullptr;
  ASSERT_EQ(tk_ckpt_open(from_device.path().c_str(), nullptr, &ckpt), TK_CKPT_OK) << tk_ckpt_last_error();
  std::vector<tk_ckpt_tensor> saved = descriptors(dev.arrays);
  uint64_t handle = 0;
  ASSERT_EQ(tk_ckpt_save_async(ckpt, 1, saved.data(), saved.size(), nullptr, nullptr, 0, 0, &handle), TK_CKPT_OK)
      << tk_ckpt_last_error();
  for (auto& a : dev.arrays) check(cudaMemsetAsync(a.data(), 0, a.bytes(), cudaStreamLegacy), "memset");
  ASSERT_EQ(tk_ckpt_wait(ckpt, handle, nullptr), TK_CKPT_OK) << tk_ckpt_last_error();
  ASSERT_EQ(tk_ckpt_restore_into(ckpt, 1, saved.data(), saved.size()), TK_CKPT_OK) << tk_ckpt_last_error();
  ASSERT_EQ(tk_ckpt_close(ckpt), TK_CKPT_OK) << tk_ckpt_last_error();
  expect_same_shards(from_host.path(), from_device.path(), 1);
  for (size_t i = 0; i < host.size(); ++i) {
    std::vector<uint8_t> got = download(dev.arrays[i]);
    EXPECT_EQ(0, std::memcmp(got.data(), host[i].tensor.data(), got.size())) << host[i].name;
  }
}

}  // namespace
}  // namespace tk::ckpt
