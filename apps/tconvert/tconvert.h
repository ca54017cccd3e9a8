// tconvert: convert between safetensors, HDF5 and .npy, cast float dtypes, select,
// rename and merge tensors.
#pragma once

#include <string>
#include <vector>

#include "cli/tool.h"
#include "tk/quant/dequant_reader.h"

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

// --format's value for a compressed-tensors model directory (vLLM, transformers).
inline constexpr const char* kCompressedTensors = "compressed-tensors";

// Convert; returns the exit code.
int run_convert(cli::Tool& tool, const ConvertOptions& options);

// Write the quantized model `reader` reads (a tquant file, a compressed-tensors model)
// as GGUF, or as a compressed-tensors directory when `ct`, repacking its quantized
// tensors without quantizing again (repack.cpp). Throws kUsage for a tensor whose scheme
// the target cannot hold.
int run_repack(cli::Tool& tool, const ConvertOptions& options, quant::DequantReader& reader, bool ct);

}  // namespace tk::tconvert
