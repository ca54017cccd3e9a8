// The CUDA runtime as the modules use it: errors as tk::Error, a device made current for
// a scope, streams, events, and pinned-host and device buffers that free themselves.
// Only CUDA builds compile this (TK_HAVE_CUDA); the GPU code of each module lives in a
// cuda/ folder of its own and reaches the runtime through here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tk::device::cuda {

// Throws tk::Error for a failed call: kUnavailable when memory ran out ("out of GPU
// memory (WHAT)"), kRuntime otherwise ("CUDA: WHAT: the runtime's words").
void check(cudaError_t status, const char* what);

// Makes device `index` current until the scope ends (then the previous one again).
class DeviceScope {
 public:
  explicit DeviceScope(int index);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// A non-blocking stream (it does not wait on the legacy default stream) of the current
// device.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  // Wait for everything queued on it; throws the first error of its work.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// An event recorded on a stream: the point a host may wait for, or time to.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(const Stream& stream);
  // Whether the work before the record has finished (false while it runs).
  bool done() const;
  void synchronize() const;
  // Milliseconds from `start` to this event (both recorded and done).
  float elapsed_ms_since(const Event& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

// Page-locked host memory: the only host memory a copy from the device can reach without
// the stream waiting on the host.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(data_); }
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory for n values of T on the current device.
template <typename T> class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    if (n > 0) check(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), n_(std::exchange(other.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(n_, other.n_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

  // Copies of `count` values (default: all) to and from host memory, queued on `stream`.
  // Host memory that is not pinned makes the copy synchronous with the host.
  void upload(const T* host, const Stream& stream, size_t count = SIZE_MAX) {
    const size_t c = count == SIZE_MAX ? n_ : count;
    if (c) check(cudaMemcpyAsync(data_, host, c * sizeof(T), cudaMemcpyHostToDevice, stream.get()), "upload");
  }
  void download(T* host, const Stream& stream, size_t count = SIZE_MAX) const {
    const size_t c = count == SIZE_MAX ? n_ : count;
    if (c) check(cudaMemcpyAsync(host, data_, c * sizeof(T), cudaMemcpyDeviceToHost, stream.get()), "download");
  }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

// n host values copied into a new device array (queued on `stream`; pageable host memory
// may be reused on return, pinned memory once the stream is done).
template <typename T> DeviceArray<T> to_device(const T* host, size_t n, const Stream& stream) {
  DeviceArray<T> values(n);
  values.upload(host, stream);
  return values;
}

// n device values copied to the host, the stream waited for.
template <typename T> std::vector<T> to_host(const T* device_values, size_t n, const Stream& stream) {
  std::vector<T> host(n);
  if (n > 0) check(cudaMemcpyAsync(host.data(), device_values, n * sizeof(T), cudaMemcpyDeviceToHost, stream.get()),
                   "download");
  stream.synchronize();
  return host;
}

// Threads per block and blocks for one thread per item of n.
constexpr int kBlock = 256;
inline unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

// The error of the last kernel launch, as check() throws it.
void check_launch(const char* kernel);

}  // namespace tk::device::cuda
