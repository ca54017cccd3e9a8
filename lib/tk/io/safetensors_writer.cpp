// safetensors writer: the header first (canonical order, like the reference writer),
// then each tensor's bytes as soon as every tensor before it has been written.
#include <map>
#include <optional>
#include <set>

#include "tk/core/endian.h"
#include "tk/core/error.h"
#include "tk/io/safetensors.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

using detail::tensor_where;

class SafetensorsWriter final : public TensorWriter {
 public:
  explicit SafetensorsWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) override {
    if (begun_) throw usage_error("begin() called twice", out_->name());
    std::set<std::string_view> names;
    infos_ = infos;
    for (TensorInfo& info : infos_) {
      const std::string where = tensor_where(info.name);
      if (info.name == "__metadata__") throw usage_error("the name __metadata__ is reserved in safetensors", where);
      if (!detail::utf8_valid(info.name)) throw usage_error("tensor name is not valid UTF-8", where);
      if (!names.insert(info.name).second) throw usage_error("duplicate tensor name", where);
      try {
        info.nbytes = dtype_storage_bytes(info.dtype, shape_numel(info.shape));
      } catch (const Error& e) {
        throw usage_error(e.what(), where);
      }
    }
    for (const auto& [k, v] : metadata)
      if (!detail::utf8_valid(k) || !detail::utf8_valid(v))
        throw usage_error("metadata is not valid UTF-8", "metadata key " + tensor_where(k).substr(7));

    order_ = safetensors_canonical_order(infos_);
    std::vector<TensorInfo> ordered;
    ordered.reserve(order_.size());
    for (size_t i : order_) ordered.push_back(infos_[i]);
    std::vector<uint8_t> header = safetensors_make_header(ordered, metadata);
    if (header.size() > kSafetensorsMaxHeader)
      throw usage_error("header of " + std::to_string(header.size()) + " bytes exceeds the safetensors limit", out_->name());

    uint8_t prefix[8];
    store_le<uint64_t>(prefix, header.size());
    out_->write(prefix, 8);
    out_->write(header);
    written_.assign(infos_.size(), false);
    begun_ = true;
    return order_;
  }

  void write(size_t index, const Tensor& tensor) override {
    check_writable(index);
    const TensorInfo& info = infos_[index];
    if (tensor.dtype() != info.dtype || tensor.shape() != info.shape)
      throw usage_error(std::string("tensor declared as ") + dtype_name(info.dtype) + " " + shape_to_string(info.shape) +
                            " but written as " + dtype_name(tensor.dtype()) + " " + shape_to_string(tensor.shape()),
                        tensor_where(info.name));
    if (order_[next_] != index) {
      held_.emplace(index, tensor);  // shares the bytes until its turn
      return;
    }
    emit(index, tensor);
    flush_held();
  }

  bool begin_pieces(size_t index) override {
    check_writable(index);
    if (order_[next_] != index) return false;
    piece_index_ = index;
    piece_left_ = infos_[index].nbytes;
    return true;
  }

  void write_piece(std::span<const uint8_t> bytes) override {
    if (!piece_index_) throw internal_error("write_piece() without a successful begin_pieces()", out_->name());
    if (bytes.size() > piece_left_)
      throw usage_error("more bytes written than declared", tensor_where(infos_[*piece_index_].name));
    out_->write(bytes);
    piece_left_ -= bytes.size();
  }

  void end_pieces() override {
    if (!piece_index_) throw internal_error("end_pieces() without a successful begin_pieces()", out_->name());
    size_t index = *piece_index_;
    if (piece_left_ != 0)
      throw usage_error(std::to_string(piece_left_) + " bytes fewer written than declared", tensor_where(infos_[index].name));
    piece_index_.reset();
    written_[index] = true;
    ++next_;
    flush_held();
  }

  void finish() override {
    if (!begun_) throw usage_error("finish() before begin()", out_->name());
    if (finished_) return;
    if (next_ < order_.size()) {
      size_t missing = order_[next_];
      for (size_t i : order_)
        if (!written_[i] && !held_.count(i)) {
          missing = i;
          break;
        }
      throw usage_error("tensor declared but never written", tensor_where(infos_[missing].name));
    }
    out_->commit();
    finished_ = true;
  }

 private:
  void check_writable(size_t index) const {
    if (!begun_ || finished_) throw usage_error(finished_ ? "write() after finish()" : "write() before begin()", out_->name());
    if (piece_index_) throw usage_error("a tensor is being written piece by piece", tensor_where(infos_[*piece_index_].name));
    if (index >= infos_.size())
      throw usage_error("tensor index " + std::to_string(index) + " out of range (" + std::to_string(infos_.size()) +
                        " declared)", out_->name());
    if (written_[index] || held_.count(index)) throw usage_error("tensor written twice", tensor_where(infos_[index].name));
  }

  // Write the held tensors that have become next in order.
  void flush_held() {
    while (next_ < order_.size()) {
      auto it = held_.find(order_[next_]);
      if (it == held_.end()) break;
      Tensor held = std::move(it->second);
      held_.erase(it);
      emit(order_[next_], held);
    }
  }

  void emit(size_t index, const Tensor& tensor) {
    out_->write(tensor.data(), tensor.nbytes());
    written_[index] = true;
    ++next_;
  }

  std::unique_ptr<OutputStream> out_;
  std::vector<TensorInfo> infos_;
  std::vector<size_t> order_;
  std::vector<bool> written_;
  std::map<size_t, Tensor> held_;
  size_t next_ = 0;  // position in order_ of the next tensor to write
  std::optional<size_t> piece_index_;  // tensor being written piece by piece
  uint64_t piece_left_ = 0;            // its bytes still to come
  bool begun_ = false, finished_ = false;
};

}  // namespace

std::unique_ptr<TensorWriter> safetensors_writer(std::unique_ptr<OutputStream> out) {
  return std::make_unique<SafetensorsWriter>(std::move(out));
}

}  // namespace tk::io
