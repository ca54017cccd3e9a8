// Sharded safetensors models: `model.safetensors.index.json` (or a directory holding one)
// opened as one logical file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tk/io/tensor_file.h"

namespace tk::io {

// Open the index at `index_path`; shards are resolved relative to its directory.
// Metadata: the index's "metadata" object (values converted to strings) merged with each
// shard's own metadata. Throws kInvalidInput for a malformed index, a tensor mapped to a
// missing shard, or a tensor listed in the index but absent from its shard.
std::unique_ptr<TensorReader> sharded_open(const std::string& index_path, const ReadOptions& options);

// The metadata of each shard of a reader that sharded_open returned, in shard order
// (what the merged metadata() keeps of only one shard, such as each shard's own
// quantization records); empty for any other reader.
std::vector<Metadata> sharded_shard_metadata(const TensorReader& reader);

struct ShardedWriteOptions {
  uint64_t max_shard_bytes = 0;  // tensor bytes per shard at most (a larger tensor: alone)
  bool durable = false;          // fsync each file before its rename
  bool replace = false;          // replace existing shards and index (else kUsage)
};

// A writer of a model at `path` (NAME.safetensors) as shards of at most
// max_shard_bytes of tensor data: NAME-00001-of-0000N.safetensors beside
// NAME.safetensors.index.json ({"metadata": {"total_size": ...}, "weight_map": {tensor:
// shard}}, names sorted), as transformers' save_pretrained writes them; a model that
// fits one shard is written as `path` alone, with no index. Shards are assigned in the
// declared order, a new one started when the next tensor would not fit. Each shard gets
// the metadata. Every shard is committed before the index (a failure after the first
// commit leaves the committed shards but no index). Throws kUsage for a path not
// ending in .safetensors, and for existing outputs unless `replace`.
std::unique_ptr<TensorWriter> sharded_writer(const std::string& path, const ShardedWriteOptions& options);

// Find the index file in a directory: the single *.safetensors.index.json, else a single
// *.safetensors file. Throws kInvalidInput when there is none or several.
std::string sharded_find_in_directory(const std::string& dir);

}  // namespace tk::io
