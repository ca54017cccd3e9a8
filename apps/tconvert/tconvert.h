// tconvert: convert between safetensors, HDF5 and .npy, cast float dtypes, select,
// rename and merge tensors.
#pragma once

#include <string>
#include <vector>

#include "cli/tool.h"

namespace tk::tconvert {

struct ConvertOptions {
  std::vector<std::string> inputs;   // "-" = stdin; several are merged
  std::string output = "-";          // -o/--output
  std::string format;                // --format; empty: from the output's extension
  std::string dtype;                 // --dtype: cast float tensors to it
  bool saturate = false;             // --saturate: clamp overflow in casts
  std::vector<std::string> renames;  // --rename FROM=TO, repeatable
  std::string compress;              // --compress zstd[:LEVEL] (HDF5 output)
  std::string max_shard_size;        // --max-shard-size SIZE: sharded safetensors output
};

// Convert; returns the exit code.
int run_convert(cli::Tool& tool, const ConvertOptions& options);

}  // namespace tk::tconvert
