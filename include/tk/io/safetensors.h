// safetensors: reader (memory-mapped for files, sequential for pipes) and streaming
// writer. Validation is as strict as the reference implementation, plus duplicate names.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tk/io/tensor_file.h"

namespace tk::io {

inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

// A parsed and validated header: tensors sorted by data offset, offsets relative to
// the start of the data buffer.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in data-offset order
  std::vector<uint64_t> offsets;    // begin offset of each tensor in the data buffer
  Metadata metadata;
  uint64_t data_size = 0;           // end offset of the last tensor
};

// Parse and validate the JSON header text (the N bytes after the length prefix).
// Throws kInvalidInput naming the offending tensor on any violation. Does not check
// the file length; the caller compares data_size with what follows the header.
SafetensorsHeader safetensors_parse_header(std::span<const uint8_t> json);

// Serialise a header for `tensors` stored contiguously in the given order, with
// `__metadata__`, padded with spaces so that 8 + its length is a multiple of 8.
std::vector<uint8_t> safetensors_make_header(const std::vector<TensorInfo>& tensors, const Metadata& metadata);

// The order the reference writer stores tensors in: by its dtype enum, descending
// (U64, I64, F64, C64, F32, ..., BF16, F16, ..., I8, U8, F6, F4, BOOL: alignment never
// increases, so every tensor starts naturally aligned), then by name. Returns indices
// into `tensors`.
std::vector<size_t> safetensors_canonical_order(const std::vector<TensorInfo>& tensors);

// Read a safetensors file from `in` (positioned at its start). Regular files are mapped
// when options.allow_mmap; other streams are read sequentially.
std::unique_ptr<TensorReader> safetensors_open(std::unique_ptr<InputStream> in, const ReadOptions& options);

// Write safetensors to `out`: header first, then the data in canonical order.
std::unique_ptr<TensorWriter> safetensors_writer(std::unique_ptr<OutputStream> out);

}  // namespace tk::io
