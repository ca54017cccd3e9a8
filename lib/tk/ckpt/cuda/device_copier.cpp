// The CUDA DeviceCopier (device_copier.h). A save's copies run on one non-blocking stream
// per device, bracketed by two events: `ready`, recorded on the legacy default stream,
// which the copies wait for, and `done`, recorded after them, which the legacy default
// stream then waits for and the writer's thread synchronizes on before reading the
// pinned bytes.
#include "tk/ckpt/device_copier.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "tk/ckpt/cuda/gather.h"
#include "tk/device/cuda/runtime.h"

namespace tk::ckpt {

namespace {

using device::cuda::check;
using device::cuda::DeviceArray;
using device::cuda::DeviceScope;
using device::cuda::Event;
using device::cuda::PinnedBuffer;
using device::cuda::Stream;

// Tensors below this size are gathered on the device and cross in one transfer: each
// transfer costs microseconds of setup however small it is, and a model's many norms
// and biases would pay it one by one, while gathering a megabyte on the device takes
// far less than moving it over the bus.
constexpr uint64_t kGatherBelow = uint64_t(1) << 20;

int device_of(const void* p) {
  cudaPointerAttributes a{};
  check(cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes");
  return a.device;
}

class CudaCopies final : public DeviceCopies {
 public:
  ~CudaCopies() override {
    for (const auto& e : done_) cudaEventSynchronize(e->get());
  }
  void wait() override {
    for (const auto& e : done_) e->synchronize();
  }
  // One event per device, recorded after that device's copies.
  std::vector<std::unique_ptr<Event>> done_;
};

class CudaCopier final : public DeviceCopier {
 public:
  Buffer allocate_pinned(uint64_t bytes) override {
    auto pinned = std::make_shared<PinnedBuffer>(bytes);
    void* data = pinned->data();
    return Buffer::wrap(std::shared_ptr<void>(std::move(pinned), data), bytes);
  }

  QueuedCopies queue(std::span<const DeviceBytes> sources, const Buffer& staging) override;
  void upload(void* device, const void* host, uint64_t nbytes) override;

 private:
  struct PerDevice {
    Stream stream;
    // Where small tensors are gathered; kept from save to save, grown when a save needs
    // more (after the stream's earlier copies out of it are done).
    DeviceArray<uint8_t> scratch;
  };
  struct Copy {
    DeviceBytes source;
    uint64_t offset;  // in the staging buffer
  };

  PerDevice& per_device(int index);
  std::unique_ptr<Event> queue_on(int index, const std::vector<Copy>& copies, uint8_t* staging);

  std::mutex mutex_;  // saves from several threads share the streams and scratch
  std::map<int, PerDevice> devices_;
};

CudaCopier::PerDevice& CudaCopier::per_device(int index) {
  // Created under the caller's DeviceScope(index): the stream belongs to that device.
  return devices_.try_emplace(index).first->second;
}

QueuedCopies CudaCopier::queue(std::span<const DeviceBytes> sources, const Buffer& staging) {
  // Layout: a device's tensors together, its small ones first and back to back as the
  // gather leaves them, so that one transfer carries them all; then its large ones.
  std::map<int, std::vector<size_t>> by_device;
  for (size_t i = 0; i < sources.size(); ++i) by_device[device_of(sources[i].data)].push_back(i);
  QueuedCopies queued;
  queued.slices.resize(sources.size());
  std::vector<std::pair<int, std::vector<Copy>>> plans;
  uint64_t offset = 0;
  for (const auto& [index, members] : by_device) {
    std::vector<Copy> plan;
    for (const bool small_pass : {true, false}) {
      for (size_t i : members) {
        const DeviceBytes& s = sources[i];
        if ((s.nbytes < kGatherBelow) != small_pass) continue;
        queued.slices[i] = staging.slice(offset, s.nbytes);
        plan.push_back({s, offset});
        offset += staged_size(s.nbytes);
      }
    }
    plans.emplace_back(index, std::move(plan));
  }
  Buffer target = staging;
  uint8_t* base = target.mutable_data();
  auto copies = std::make_unique<CudaCopies>();
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    for (const auto& [index, plan] : plans) copies->done_.push_back(queue_on(index, plan, base));
  } catch (...) {
    // Nothing may still be writing into the staging buffer the caller gets back.
    for (auto& [index, d] : devices_) cudaStreamSynchronize(d.stream.get());
    throw;
  }
  queued.copies = std::move(copies);
  return queued;
}

std::unique_ptr<Event> CudaCopier::queue_on(int index, const std::vector<Copy>& copies, uint8_t* staging) {
  DeviceScope scope(index);
  PerDevice& d = per_device(index);
  cudaStream_t stream = d.stream.get();
  // Copy what the caller's work queued so far on the default stream wrote, not what was
  // there before it.
  Event ready;
  check(cudaEventRecord(ready.get(), cudaStreamLegacy), "cudaEventRecord");
  check(cudaStreamWaitEvent(stream, ready.get(), 0), "cudaStreamWaitEvent");

  // The small tensors come first in `copies`, back to back in the staging buffer from
  // `small_begin` on: gather them at the same offsets relative to it.
  std::vector<cuda::GatherItem> items;
  uint64_t small_begin = 0, small_end = 0;
  for (const Copy& c : copies) {
    if (c.source.nbytes >= kGatherBelow) continue;
    if (items.empty()) small_begin = c.offset;
    items.push_back({static_cast<const uint8_t*>(c.source.data), c.offset - small_begin, c.source.nbytes});
    small_end = c.offset + c.source.nbytes;
  }
  if (!items.empty()) {
    const uint64_t span = small_end - small_begin;
    if (d.scratch.size() < span) {
      d.stream.synchronize();  // earlier saves' transfers out of the old scratch
      d.scratch = DeviceArray<uint8_t>();
      d.scratch = DeviceArray<uint8_t>(span);
    }
    cuda::gather(items.data(), items.size(), d.scratch.data(), stream);
    check(cudaMemcpyAsync(staging + small_begin, d.scratch.data(), span, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync of gathered tensors");
  }
  for (const Copy& c : copies) {
    if (c.source.nbytes < kGatherBelow) continue;
    check(cudaMemcpyAsync(staging + c.offset, c.source.data, c.source.nbytes, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync of a tensor");
  }
  auto done = std::make_unique<Event>();
  done->record(d.stream);
  // The caller's later work on the default stream (the next update of these tensors)
  // waits on the device for the copies, not the caller on the host.
  check(cudaStreamWaitEvent(cudaStreamLegacy, done->get(), 0), "cudaStreamWaitEvent");
  return done;
}

void CudaCopier::upload(void* device, const void* host, uint64_t nbytes) {
  DeviceScope scope(device_of(device));
  // On the legacy default stream: after the caller's work there that may still read the
  // old contents. From pageable memory cudaMemcpy may return before the bytes land, so
  // the stream is synchronized too.
  check(cudaMemcpy(device, host, nbytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
}

}  // namespace

std::unique_ptr<DeviceCopier> make_device_copier() { return std::make_unique<CudaCopier>(); }

}  // namespace tk::ckpt
