#include "stats_pass.h"

#include <algorithm>
#include <exception>
#include <span>
#include <utility>

namespace tk::tinfo {

namespace {

// Below this a tensor's own pass is single-threaded, so tensors are spread instead.
constexpr uint64_t kSmallTensorBytes = 1 << 20;
constexpr uint64_t kBatchBytes = 64 << 20;
// Elements per piece of a large tensor: whole chunks of the statistics, several per
// thread.
constexpr uint64_t kPieceChunks = 64;

// A large tensor's statistics from its bytes a piece at a time: a reader that gathers a
// strided view (a small storage repeated) never holds the tensor whole.
TensorStats streamed_stats(io::TensorReader& reader, size_t index) {
  const io::TensorInfo& info = reader.tensors()[index];
  uint64_t left = shape_numel(info.shape);
  StatsStream stream(info.dtype, left);
  const uint64_t piece_elements = StatsStream::piece_elements() * kPieceChunks;
  const size_t piece_bytes = static_cast<size_t>(dtype_storage_bytes(info.dtype, piece_elements));
  reader.read_pieces(index, piece_bytes, [&](std::span<const uint8_t> piece) {
    const uint64_t count = std::min(piece_elements, left);  // every piece but the last is whole
    stream.add(piece.data(), count);
    left -= count;
  });
  return stream.finish();
}

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
      out[k] = streamed_stats(reader, indices[k]);
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
