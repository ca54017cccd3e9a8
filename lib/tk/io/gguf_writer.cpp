// GGUF writer: the header first (every offset is known from the declarations), then
// each tensor in declaration order, padded to the alignment. Tensors that arrive early
// are held until their turn.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "tk/core/error.h"
#include "tk/io/gguf_internal.h"
#include "tk/io/gguf_rules.h"
#include "tk/io/gguf_transfer.h"
#include "tk/io/safetensors_internal.h"

namespace tk::io {

namespace {

using detail::tensor_where;

class GgufFileWriter final : public GgufWriter {
 public:
  explicit GgufFileWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}

  std::vector<size_t> begin(const std::vector<TensorInfo>& infos, const Metadata& metadata) override {
    std::vector<GgufTensorDecl> decls;
    for (const auto& info : infos) {
      std::optional<GgmlType> type = ggml_type_of(info.dtype);
      if (!type)
        throw usage_error(fmt::format("GGUF holds F32, F16, BF16, F64 and I8..I64 tensors, not {}",
                                      dtype_name(info.dtype)),
                          tensor_where(info.name))
            .with_option("io.gguf_dtype");
      // llama.cpp reads norms and biases only as F32: write() widens them.
      if (dtype_is_float(info.dtype) && gguf_keeps_f32(info.name, info.shape.size())) type = GgmlType::kF32;
      decls.push_back({info.name, info.shape, *type});
    }
    begin_gguf(decls, gguf_output_kvs(nullptr, metadata));
    std::vector<size_t> order(decls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    return order;
  }

  void begin_gguf(const std::vector<GgufTensorDecl>& tensors, const std::vector<GgufKv>& kvs) override {
    if (begun_) throw usage_error("begin() called twice", out_->name());
    std::set<std::string_view> names, keys;
    for (const auto& kv : kvs)
      if (!keys.insert(kv.key).second) throw usage_error("duplicate key '" + kv.key + "'", out_->name());
    for (const auto& t : tensors) {
      const std::string where = tensor_where(t.name);
      if (t.name.size() > kGgufMaxName)
        throw usage_error(fmt::format("GGUF tensor names are at most {} bytes (llama.cpp's limit)", kGgufMaxName),
                          where)
            .with_option("io.gguf_name_length");
      if (!names.insert(t.name).second) throw usage_error("duplicate tensor name", where);
      if (t.shape.empty() || t.shape.size() > 4)
        throw usage_error(fmt::format("GGUF holds tensors of 1 to 4 dimensions, not {}", t.shape.size()), where);
      const GgmlTypeTraits& traits = ggml_traits(t.type);
      if (t.shape.back() % traits.block != 0)
        throw usage_error(fmt::format("innermost dimension {} is not a whole number of {} blocks of {}", t.shape.back(),
                                      traits.name, traits.block),
                          where);
    }
    decls_ = tensors;
    std::vector<uint8_t> header;
    try {
      header = gguf_make_header(decls_, with_file_type(kvs), &offsets_);
    } catch (const Error& e) {
      throw usage_error(e.what(), out_->name());
    }
    alignment_ = kGgufDefaultAlignment;
    for (const auto& kv : kvs)
      if (kv.key == "general.alignment") alignment_ = static_cast<uint32_t>(*gguf_kv_uint_value(kv));
    out_->write(header);
    written_.assign(decls_.size(), false);
    begun_ = true;
  }

  void write(size_t index, const Tensor& tensor) override {
    check_writable(index);
    const GgufTensorDecl& d = decls_[index];
    const std::optional<DType> plain = ggml_traits(d.type).plain;
    if (plain == DType::kF32 && dtype_is_float(tensor.dtype()) && tensor.dtype() != DType::kF32 &&
        tensor.shape() == d.shape) {
      Tensor wide = Tensor::empty(DType::kF32, tensor.shape());
      cast_array(tensor.dtype(), tensor.data(), DType::kF32, wide.mutable_data(), tensor.numel(), CastOptions{});
      return put(index, wide.buffer());
    }
    if (!plain || tensor.dtype() != *plain || tensor.shape() != d.shape)
      throw usage_error(fmt::format("tensor declared as {} {} but written as {} {}", ggml_traits(d.type).name,
                                    shape_to_string(d.shape), dtype_name(tensor.dtype()),
                                    shape_to_string(tensor.shape())),
                        tensor_where(d.name));
    Buffer bytes = tensor.buffer();
    put(index, std::move(bytes));
  }

  void write_stored(size_t index, std::span<const uint8_t> bytes) override {
    check_writable(index);
    const GgufTensorDecl& d = decls_[index];
    const uint64_t want = ggml_storage_bytes(d.type, shape_numel(d.shape));
    if (bytes.size() != want)
      throw usage_error(fmt::format("{} bytes given for a tensor of {} stored bytes", bytes.size(), want),
                        tensor_where(d.name));
    if (index != next_) {
      Buffer copy = Buffer::allocate(bytes.size());
      if (!bytes.empty()) std::memcpy(copy.mutable_data(), bytes.data(), bytes.size());
      return put(index, std::move(copy));
    }
    emit(bytes);
    flush_held();
  }

  void finish() override {
    if (!begun_) throw usage_error("finish() before begin()", out_->name());
    if (next_ != decls_.size())
      throw usage_error("tensor declared but never written", tensor_where(decls_[next_].name));
    out_->commit();
  }

 private:
  // The pairs with general.file_type telling what the declared tensors are: a given
  // value that no longer holds is replaced (a source's F16 is not true of a quantized
  // output), and a model (general.architecture) gets one; left out where no
  // LLAMA_FTYPE names the mix.
  std::vector<GgufKv> with_file_type(const std::vector<GgufKv>& kvs) const {
    std::vector<GgufKv> out;
    bool model = false, given = false;
    const std::optional<uint32_t> file_type = gguf_file_type(decls_);
    for (const GgufKv& kv : kvs) {
      model = model || kv.key == "general.architecture";
      if (kv.key != "general.file_type") {
        out.push_back(kv);
        continue;
      }
      given = true;
      const std::optional<uint64_t> stated = gguf_kv_uint_value(kv);
      if (stated && gguf_file_type_holds(*stated, decls_)) {
        out.push_back(kv);  // still true (a copy keeps llama-quantize's Q4_K_S)
      } else if (file_type) {
        out.push_back(gguf_kv_u32(kv.key, *file_type));
      }
    }
    if (model && !given && file_type) out.push_back(gguf_kv_u32("general.file_type", *file_type));
    return out;
  }

  void check_writable(size_t index) const {
    if (!begun_) throw usage_error("write() before begin()", out_->name());
    if (index >= decls_.size()) throw usage_error(fmt::format("tensor index {} was not declared", index));
    if (written_[index]) throw usage_error("tensor written twice", tensor_where(decls_[index].name));
  }

  void put(size_t index, Buffer bytes) {
    written_[index] = true;
    if (index != next_) {
      held_.emplace(index, std::move(bytes));  // shares the bytes until its turn
      return;
    }
    emit({bytes.data(), bytes.size()});
    flush_held();
  }

  void emit(std::span<const uint8_t> bytes) {
    written_[next_] = true;
    out_->write(bytes);
    static const uint8_t kZeros[256] = {};
    for (size_t pad = (alignment_ - bytes.size() % alignment_) % alignment_; pad > 0;) {
      size_t n = std::min(pad, sizeof kZeros);
      out_->write(kZeros, n);
      pad -= n;
    }
    ++next_;
  }

  void flush_held() {
    for (auto it = held_.find(next_); it != held_.end(); it = held_.find(next_)) {
      Buffer b = std::move(it->second);
      held_.erase(it);
      emit({b.data(), b.size()});
    }
  }

  std::unique_ptr<OutputStream> out_;
  std::vector<GgufTensorDecl> decls_;
  std::vector<uint64_t> offsets_;
  std::vector<bool> written_;
  std::map<size_t, Buffer> held_;
  uint32_t alignment_ = kGgufDefaultAlignment;
  size_t next_ = 0;
  bool begun_ = false;
};

}  // namespace

std::unique_ptr<GgufWriter> gguf_writer(std::unique_ptr<OutputStream> out) {
  return std::make_unique<GgufFileWriter>(std::move(out));
}

}  // namespace tk::io
