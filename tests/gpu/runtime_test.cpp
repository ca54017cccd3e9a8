// The device layer: buffers, streams, events and pointer detection on a real device.
#include "tk/device/cuda/runtime.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "gpu_test.h"
#include "tk/core/error.h"

namespace tk::device::cuda {
namespace {

TEST(Runtime, DeviceArrayRoundTripsThroughPinnedMemory) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  Stream stream;
  const size_t n = 1 << 20;
  PinnedBuffer in(n * sizeof(float)), out(n * sizeof(float));
  auto* src = reinterpret_cast<float*>(in.data());
  std::iota(src, src + n, 0.5f);
  DeviceArray<float> d(n);
  Event start, end;
  start.record(stream);
  d.upload(src, stream);
  d.download(reinterpret_cast<float*>(out.data()), stream);
  end.record(stream);
  stream.synchronize();
  EXPECT_TRUE(end.done());
  EXPECT_GE(end.elapsed_ms_since(start), 0.0f);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size()), 0);
}

TEST(Runtime, DevicePointersAreToldFromHostPointers) {
  TK_REQUIRE_GPU();
  DeviceScope scope(0);
  DeviceArray<uint8_t> d(64);
  PinnedBuffer pinned(64);
  std::vector<uint8_t> host(64);
  EXPECT_TRUE(is_device_pointer(d.data()));
  EXPECT_TRUE(is_device_pointer(d.data() + 10));
  EXPECT_FALSE(is_device_pointer(pinned.data()));
  EXPECT_FALSE(is_device_pointer(host.data()));
}

TEST(Runtime, FailedCallsThrowErrors) {
  TK_REQUIRE_GPU();
  EXPECT_THROW(DeviceScope(1 << 20), Error);
  // Far more than any device has: unavailable, not a crash.
  try {
    DeviceArray<uint8_t> huge(size_t{1} << 60);
    FAIL() << "a 1 EiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnavailable) << e.message();
  }
}

}  // namespace
}  // namespace tk::device::cuda
