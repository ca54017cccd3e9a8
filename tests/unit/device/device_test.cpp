#include "tk/device/device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tk/core/error.h"

namespace tk::device {
namespace {

using test::kind_of;

Request req(Request::Kind kind, int index = 0) { return Request{kind, index}; }

TEST(Request, ParsesAndNames) {
  EXPECT_EQ(parse_request("cpu").kind, Request::Kind::kCpu);
  EXPECT_EQ(parse_request("auto").kind, Request::Kind::kAuto);
  EXPECT_EQ(parse_request("cuda").kind, Request::Kind::kCuda);
  EXPECT_EQ(parse_request("cuda:3").index, 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "cudax", "CPU", ""}) {
    EXPECT_EQ(kind_of([bad] { parse_request(bad); }), ErrorKind::kUsage) << bad;
  }
  EXPECT_EQ(request_name(parse_request("cuda:2")), "cuda:2");
  EXPECT_EQ(request_name(parse_request("auto")), "auto");
}

TEST(Place, CpuIsTheCpu) {
  const Placement p = place(req(Request::Kind::kCpu), 1u << 30, 1);
  EXPECT_FALSE(p.cuda);
  EXPECT_EQ(p.name(), "cpu");
}

TEST(Place, AutoTakesTheCpuWithoutADeviceOrForSmallWork) {
  const bool gpu = cuda_device_count() > 0;
  const Placement small = place(req(Request::Kind::kAuto), 10, 1000);
  EXPECT_FALSE(small.cuda);
  EXPECT_FALSE(small.reason.empty());
  const Placement large = place(req(Request::Kind::kAuto), 1000, 1000);
  EXPECT_EQ(large.cuda, gpu);
  EXPECT_FALSE(large.reason.empty());
  if (!gpu) {
    EXPECT_NE(large.reason.find(cuda_compiled() ? "no CUDA device" : "not compiled in"), std::string::npos);
  }
  const Placement no_path = place(req(Request::Kind::kAuto), 1000, 1, false, "k-means");
  EXPECT_FALSE(no_path.cuda);
  EXPECT_EQ(no_path.reason, "no GPU code path for k-means");
}

TEST(Place, CudaIsThatDeviceOrUnavailable) {
  const int count = cuda_device_count();
  EXPECT_EQ(kind_of([count] { place(req(Request::Kind::kCuda, count), 1, 1); }), ErrorKind::kUnavailable);
  if (count == 0) {
    EXPECT_EQ(kind_of([] { place(req(Request::Kind::kCuda), 1, 1); }), ErrorKind::kUnavailable);
    return;
  }
  const Placement p = place(req(Request::Kind::kCuda, count - 1), 0, 1000);  // small work: still the GPU asked for
  EXPECT_TRUE(p.cuda);
  EXPECT_EQ(p.index, count - 1);
  EXPECT_EQ(kind_of([] { place(req(Request::Kind::kCuda), 1, 1, false, "k-means"); }), ErrorKind::kUnavailable);
}

// auto's fallback, with a GPU that fails as a full or taken one does: the CPU does the
// work and the reason is kept; cuda[:N] keeps the failure; other errors pass through.
TEST(OrOnCpu, AutoFallsBackOnlyWhenTheGpuIsUnavailable) {
  const auto full = []() -> int { throw unavailable("out of GPU memory (cudaMalloc)"); };
  const auto cpu = [] { return 7; };
  std::string why;
  EXPECT_EQ(or_on_cpu(req(Request::Kind::kAuto), full, cpu, &why), 7);
  EXPECT_EQ(why, "out of GPU memory (cudaMalloc)");

  why.clear();
  EXPECT_EQ(or_on_cpu(req(Request::Kind::kAuto), [] { return 3; }, cpu, &why), 3);
  EXPECT_TRUE(why.empty());

  EXPECT_EQ(kind_of([&] { or_on_cpu(req(Request::Kind::kCuda), full, cpu, &why); }), ErrorKind::kUnavailable);
  const auto broken = []() -> int { throw invalid_input("corrupt part"); };
  EXPECT_EQ(kind_of([&] { or_on_cpu(req(Request::Kind::kAuto), broken, cpu, &why); }), ErrorKind::kInvalidInput);
}

TEST(Pointer, HostMemoryIsNotDeviceMemory) {
  std::vector<float> host(16);
  EXPECT_FALSE(is_device_pointer(host.data()));
  EXPECT_FALSE(is_device_pointer(nullptr));
  static const int global = 1;
  EXPECT_FALSE(is_device_pointer(&global));
}

}  // namespace
}  // namespace tk::device
