// Sharded safetensors models: `model.safetensors.index.json` (or a directory holding one)
// opened as one logical file.
#pragma once

#include <memory>
#include <string>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Open the index at `index_path`; shards are resolved relative to its directory.
// Metadata: the index's "metadata" object (values converted to strings) merged with each
// shard's own metadata. Throws kInvalidInput for a malformed index, a tensor mapped to a
// missing shard, or a tensor listed in the index but absent from its shard.
std::unique_ptr<TensorReader> sharded_open(const std::string& index_path, const ReadOptions& options);

// Find the index file in a directory: the single *.safetensors.index.json, else a single
// *.safetensors file. Throws kInvalidInput when there is none or several.
std::string sharded_find_in_directory(const std::string& dir);

}  // namespace tk::io
