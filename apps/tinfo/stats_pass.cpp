#include "stats_pass.h"

#include <exception>
#include <utility>

namespace tk::tinfo {

namespace {

// Below this a tensor's own pass is single-threaded, so tensors are spread instead.
constexpr uint64_t kSmallTensorBytes = 1 << 20;
constexpr uint64_t kBatchBytes = 64 << 20;

}  // namespace

std::vector<TensorStats> stats_pass(io::TensorReader& reader, const std::vector<size_t>& indices) {
  std::vector<TensorStats> out(indices.size());
  std::vector<std::pair<size_t, Tensor>> batch;
  uint64_t batch_bytes = 0;
  auto flush = [&] {
    std::exception_ptr error;
    const long n = static_cast<long>(batch.size());
#pragma omp parallel for schedule(dynamic) if (n > 1)
    for (long k = 0; k < n; ++k) {
      try {
        out[batch[k].first] = tensor_stats(batch[k].second);
      } catch (...) {
#pragma omp critical(tinfo_stats_error)
        if (!error) error = std::current_exception();
      }
    }
    batch.clear();
    batch_bytes = 0;
    if (error) std::rethrow_exception(error);
  };
  for (size_t k = 0; k < indices.size(); ++k) {
    const io::TensorInfo& info = reader.tensors()[indices[k]];
    if (info.nbytes >= kSmallTensorBytes) {
      flush();
      out[k] = tensor_stats(reader.read(indices[k]));
      continue;
    }
    batch.emplace_back(k, reader.read(indices[k]));
    batch_bytes += info.nbytes;
    if (batch_bytes >= kBatchBytes) flush();
  }
  flush();
  return out;
}

}  // namespace tk::tinfo
