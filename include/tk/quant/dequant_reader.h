// A file that tquant wrote, read as the tensors it stands for: each quantized tensor
// (its parts NAME.codes, NAME.scales, ... and its record in the `tk` metadata,
// layout.h) is one logical tensor NAME in its original dtype and shape, dequantized
// when read; tensors stored densely pass through. `tquant dequant` writes these
// tensors out; `tinfo` lists them with their schemes and compares them with a source.
// A GGUF file is read the same way: its ggml block types are its quantized tensors
// (records named by the type, "Q4_K", without parts), decoded by the GGUF reader. So is
// a compressed-tensors model (compressed_tensors.h): each quantized module's parameters
// MODULE.weight_packed, MODULE.weight_scale, ... are the tensor MODULE.weight.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "tk/io/gguf.h"
#include "tk/io/tensor_file.h"
#include "tk/quant/compressed_tensors.h"
#include "tk/quant/layout.h"

namespace tk::quant {

// True when `metadata` describes quantized tensors (a `tk` value with a "quant" object).
bool has_layout(const io::Metadata& metadata);
// True when the reader's metadata does, or (a sharded model) any shard's.
bool has_layout(const io::TensorReader& reader);

class DequantReader final : public io::TensorReader {
 public:
  // Its tensors are listed in `inner`'s order, a
  // quantized tensor in the place of its first part. `cast` (f32, bf16 or f16), when
  // given, is the dtype of every dequantized and float tensor. The metadata is the
  // inner file's with the "quant" object taken out of `tk`. Throws kInvalidInput
  // (located at the file `where`) for a missing or malformed layout, a missing part, or a
  // tensor that is both quantized and stored densely.
  DequantReader(std::unique_ptr<io::TensorReader> inner, const std::string& where,
                std::optional<DType> cast = std::nullopt);
  // A compressed-tensors model whose config is `config` (ct_config_at). Its quantized
  // weights take the dtype `dtype` (config.json's torch_dtype, say) unless `cast`.
  // Throws kInvalidInput for a module whose parameters are missing or malformed.
  DequantReader(std::unique_ptr<io::TensorReader> inner, const std::string& where, CtConfig config, DType dtype,
                std::optional<DType> cast = std::nullopt);

  // On a sequential `inner` (a pipe), the tensors passed over on the way to a part are
  // held until asked for, so that any order works, at the cost of memory.
  io::FileFormat format() const override { return inner_->format(); }
  bool random_access() const override { return true; }
  Tensor read(size_t index) override;
  void release(size_t index) override;

  // The record of tensor `index`, or null for a tensor stored densely.
  const LayoutRecord* record(size_t index) const { return slots_.at(index).record; }
  // Bytes the tensor takes in the file (the sum of its parts for a quantized one).
  uint64_t stored_bytes(size_t index) const { return slots_.at(index).stored; }
  // Decode tensors of at least `min_values` values on CUDA device `device` where their
  // scheme has a GPU decoder (-1: the CPU, the default); the same values either way.
  void decode_on(int device, uint64_t min_values = 0) {
    device_ = device;
    device_min_values_ = min_values;
  }
  size_t quantized_count() const { return records_.size(); }
  // The quantized tensor `index` as tensorkit's Quantized, parts included, to repack it
  // (tconvert to GGUF or compressed-tensors). Throws kUsage for a tensor stored densely
  // or as GGUF blocks, kInvalidInput for malformed parts.
  Quantized quantized(size_t index);

 private:
  int device_ = -1;
  uint64_t device_min_values_ = 0;
  struct Slot {
    size_t input_index = 0;
    const LayoutRecord* record = nullptr;
    uint64_t stored = 0;
    std::vector<size_t> parts;  // the record's parts, as indices of inner_, in its order
    const CtGroup* ct = nullptr;  // a compressed-tensors module: its group
  };
  Tensor fetch(size_t inner_index);
  void init_gguf(const io::GgufReader& gguf, std::optional<DType> cast);
  // The quantized tensor `index` with its parts fetched; errors located at the tensor.
  Quantized collect(size_t index);
  // Tensor `inner_index` of the file, passed through (cast to `cast` when a float).
  void add_dense(size_t inner_index, std::optional<DType> cast);

  std::unique_ptr<io::TensorReader> inner_;
  std::map<size_t, Tensor> held_;  // read ahead from a sequential inner
  size_t next_ = 0;                // its next index
  std::string where_;
  std::map<std::string, LayoutRecord> records_;
  std::vector<Slot> slots_;
  CtConfig ct_;
};

// The DequantReader of a quantized model whose tensors `inner` reads from `path`: a
// tquant file (tk metadata), a compressed-tensors model (its config.json beside the
// tensors, ct_model.h), or, when `gguf`, a GGUF file. Null when it is none of these;
// `inner` is then left as it was. `path` is empty for a model read from a stream (it
// has no directory to look in); `name` names the input in messages.
std::unique_ptr<DequantReader> open_dequant_reader(std::unique_ptr<io::TensorReader>& inner, const std::string& path,
                                                   const std::string& name, std::optional<DType> cast, bool gguf);

}  // namespace tk::quant
