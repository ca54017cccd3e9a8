// Writing one shard file of a step: an ordinary safetensors file whose tensors are
// given as byte spans, fsynced before it is reported. Shared by the single-process
// engine and the ranks of a distributed step. Internal to lib/tk/ckpt.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tk/ckpt/checkpoint.h"
#include "tk/io/dir_fd.h"
#include "tk/io/tensor_file.h"

namespace tk::ckpt {

struct ShardItem {
  io::TensorInfo info;             // name, dtype and shape as the shard's header lists them
  std::span<const uint8_t> bytes;  // info.nbytes bytes
};

struct WrittenShard {
  uint64_t bytes = 0;             // file size
  std::vector<uint64_t> offsets;  // byte offset of each item's data in the file, in item order
};

// Create `name` in `dir` exclusively, write `items` in safetensors' canonical order
// with `metadata` in the header, and fsync it. Throws kIo (through the fault hook).
// `data_alignment` (a multiple of 8): the header is padded with spaces, as the format
// allows, so that the data starts at a multiple of it; fs::kDirectAlignment lets
// page-aligned tensors go to the device straight from memory (fs::StreamWriter).
WrittenShard write_shard(const io::DirFd& dir, const std::string& name, const std::vector<ShardItem>& items,
                         const Metadata& metadata, uint64_t data_alignment = 8);

}  // namespace tk::ckpt
