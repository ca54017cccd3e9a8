#include "tk/device/cuda/runtime.h"

#include <string>

#include "tk/core/error.h"

namespace tk::device::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  if (status == cudaErrorMemoryAllocation) throw unavailable(std::string("out of GPU memory (") + what + ")");
  throw runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

DeviceScope::DeviceScope(int index) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  check(cudaSetDevice(index), "cudaSetDevice");
}

DeviceScope::~DeviceScope() { cudaSetDevice(previous_); }

Stream::Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }

Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

void Stream::synchronize() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

Event::Event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

void Event::record(const Stream& stream) { check(cudaEventRecord(event_, stream.get()), "cudaEventRecord"); }

bool Event::done() const {
  const cudaError_t s = cudaEventQuery(event_);
  if (s == cudaErrorNotReady) return false;
  check(s, "cudaEventQuery");
  return true;
}

void Event::synchronize() const { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start.event_, event_), "cudaEventElapsedTime");
  return ms;
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault), "cudaHostAlloc");
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

}  // namespace tk::device::cuda
