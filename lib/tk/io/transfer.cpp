#include "tk/io/transfer.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <unordered_map>

#include "tk/core/error.h"

namespace tk::io {

namespace {

const TensorInfo& source_info(const std::vector<TransferSource>& sources, const TransferItem& item) {
  if (item.source >= sources.size() || sources[item.source].reader == nullptr)
    throw usage_error("transfer item refers to a missing source", item.output_name);
  const auto& infos = sources[item.source].reader->tensors();
  if (item.index >= infos.size())
    throw usage_error("transfer item refers to a missing tensor", sources[item.source].name);
  return infos[item.index];
}

std::string origin(const std::vector<TransferSource>& sources, const TransferItem& item) {
  return sources[item.source].name + " '" + source_info(sources, item).name + "'";
}

// The order in which to read the items (indices into `items`), given the writer's order.
std::vector<size_t> read_sequence(const std::vector<TransferSource>& sources, const std::vector<TransferItem>& items,
                                  const std::vector<size_t>& writer_order) {
  bool all_random = std::all_of(sources.begin(), sources.end(),
                                [](const TransferSource& s) { return s.reader->random_access(); });
  if (all_random) return writer_order;
  std::vector<size_t> rank(items.size());
  for (size_t r = 0; r < writer_order.size(); ++r) rank[writer_order[r]] = r;
  std::vector<size_t> sequence;
  sequence.reserve(items.size());
  for (size_t s = 0; s < sources.size(); ++s) {
    size_t first = sequence.size();
    for (size_t k = 0; k < items.size(); ++k)
      if (items[k].source == s) sequence.push_back(k);
    auto key = [&](size_t k) { return sources[s].reader->random_access() ? rank[k] : items[k].index; };
    std::stable_sort(sequence.begin() + static_cast<std::ptrdiff_t>(first), sequence.end(),
                     [&](size_t a, size_t b) { return key(a) < key(b); });
  }
  return sequence;
}

void check_permutation(const std::vector<size_t>& order, size_t n) {
  std::vector<bool> seen(n, false);
  if (order.size() != n) throw internal_error("writer returned an order of the wrong length");
  for (size_t k : order) {
    if (k >= n || seen[k]) throw internal_error("writer returned an order that is not a permutation");
    seen[k] = true;
  }
}

Tensor cast_tensor(const Tensor& tensor, DType to, bool saturate, CastLosses& losses) {
  Tensor out = Tensor::empty(to, tensor.shape());
  cast_array(tensor.dtype(), tensor.data(), to, out.mutable_data(), tensor.numel(), CastOptions{saturate});
  losses += cast_losses(tensor.dtype(), tensor.data(), to, out.data(), tensor.numel());
  return out;
}

// Bytes per piece when streaming: large enough to amortise calls, small enough to stay
// in cache between the read, the cast and the write.
constexpr size_t kPieceBytes = size_t{1} << 20;

// Elements per piece of `from` cast to `to`: a multiple of the element count that fills
// whole bytes in both types (F4: 2, F6: 4), so every piece casts on its own.
uint64_t piece_elements(DType from, DType to) {
  auto whole = [](int bits) { return uint64_t{8} / std::gcd(uint64_t{8}, static_cast<uint64_t>(bits)); };
  uint64_t unit = std::lcm(whole(dtype_bits(from)), whole(dtype_bits(to)));
  uint64_t n = kPieceBytes * 8 / static_cast<uint64_t>(dtype_bits(from));
  return std::max(unit, n / unit * unit);
}

void stream_item(TensorReader& reader, size_t index, const TensorInfo& in_info, DType to, TensorWriter& writer,
                 bool saturate, CastLosses& losses) {
  const DType from = in_info.dtype;
  if (from == to) {
    reader.read_pieces(index, kPieceBytes, [&](std::span<const uint8_t> piece) { writer.write_piece(piece); });
  } else {
    const uint64_t elements = piece_elements(from, to);
    std::vector<uint8_t> out(static_cast<size_t>(dtype_storage_bytes(to, elements)));
    const size_t in_piece = static_cast<size_t>(dtype_storage_bytes(from, elements));
    reader.read_pieces(index, in_piece, [&](std::span<const uint8_t> piece) {
      uint64_t count = uint64_t{piece.size()} * 8 / static_cast<uint64_t>(dtype_bits(from));
      cast_array(from, piece.data(), to, out.data(), count, CastOptions{saturate});
      losses += cast_losses(from, piece.data(), to, out.data(), count);
      writer.write_piece({out.data(), static_cast<size_t>(dtype_storage_bytes(to, count))});
    });
  }
  writer.end_pieces();
}

// Read an item whole (or take the one kept from the previous item), cast it and hand it
// to the writer. Keeps it in `kept` when the next item copies the same tensor again.
void copy_item(const std::vector<TransferSource>& sources, const TransferItem& item, const TensorInfo& in_info,
               size_t out_index, DType out_dtype, std::optional<Tensor>& kept, bool read_again, TensorWriter& writer,
               bool saturate, CastLosses& losses) {
  Tensor tensor;
  if (kept) {
    tensor = std::move(*kept);
    kept.reset();
  } else {
    tensor = sources[item.source].reader->read(item.index);
    if (tensor.dtype() != in_info.dtype || tensor.shape() != in_info.shape)
      throw internal_error("reader returned a tensor that does not match its listing",
                           sources[item.source].name + ": tensor '" + in_info.name + "'");
  }
  if (read_again) kept = tensor;
  if (out_dtype != tensor.dtype()) tensor = cast_tensor(tensor, out_dtype, saturate, losses);
  writer.write(out_index, tensor);
}

}  // namespace

std::vector<TensorInfo> transfer_output_infos(const std::vector<TransferSource>& sources,
                                              const std::vector<TransferItem>& items) {
  std::vector<TensorInfo> infos;
  infos.reserve(items.size());
  std::unordered_map<std::string, size_t> by_name;
  for (size_t k = 0; k < items.size(); ++k) {
    const TransferItem& item = items[k];
    TensorInfo info = source_info(sources, item);
    info.name = item.output_name;
    if (item.cast_to && *item.cast_to != info.dtype) {
      info.dtype = *item.cast_to;
      info.nbytes = dtype_storage_bytes(info.dtype, shape_numel(info.shape));
    }
    auto [it, inserted] = by_name.emplace(info.name, k);
    if (!inserted)
      throw usage_error("duplicate tensor name in the output, from " + origin(sources, items[it->second]) +
                            " and " + origin(sources, item),
                        "tensor '" + info.name + "'");
    infos.push_back(std::move(info));
  }
  return infos;
}

TransferResult transfer(const std::vector<TransferSource>& sources, const std::vector<TransferItem>& items,
                        TensorWriter& writer, const Metadata& metadata, const TransferOptions& options) {
  std::vector<TensorInfo> out_infos = transfer_output_infos(sources, items);
  TransferResult result;
  result.losses.resize(items.size());
  TransferProgress progress;
  progress.tensors_total = items.size();
  for (const TensorInfo& info : out_infos) progress.bytes_total += info.nbytes;

  std::vector<size_t> order = writer.begin(out_infos, metadata);
  check_permutation(order, items.size());

  // A source tensor is kept after its write only when the next item copies the same
  // one again (a sequential reader cannot read it twice); otherwise one tensor is in
  // flight at a time.
  std::vector<size_t> sequence = read_sequence(sources, items, order);
  std::optional<Tensor> kept;
  for (size_t pos = 0; pos < sequence.size(); ++pos) {
    const TransferItem& item = items[sequence[pos]];
    const TensorInfo& in_info = source_info(sources, item);
    size_t k = sequence[pos];
    bool read_again = pos + 1 < sequence.size() && items[sequence[pos + 1]].source == item.source &&
                      items[sequence[pos + 1]].index == item.index;
    if (!kept && !read_again && writer.begin_pieces(k)) {
      // Stream through one cache-sized piece at a time: no whole-tensor buffer.
      stream_item(*sources[item.source].reader, item.index, in_info, out_infos[k].dtype, writer, options.saturate,
                  result.losses[k]);
    } else {
      copy_item(sources, item, in_info, k, out_infos[k].dtype, kept, read_again, writer, options.saturate,
                result.losses[k]);
    }
    result.bytes_in += in_info.nbytes;
    ++result.tensors;
    result.bytes_out += out_infos[k].nbytes;
    progress.tensors_done = result.tensors;
    progress.bytes_done = result.bytes_out;
    if (options.progress) options.progress(progress);
  }
  writer.finish();
  return result;
}

}  // namespace tk::io
