// tconvert: safetensors <-> HDF5 <-> GGUF <-> .npy/.npz (PyTorch checkpoints in); casts, select, rename, merge.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tconvert.h"
#include "tk/core/dtype.h"

int main(int argc, char** argv) {
  tk::cli::Tool tool("tconvert",
                     "Convert tensor files between safetensors, HDF5, GGUF, .npy and .npz (PyTorch checkpoints too, "
                     "as input); cast, select, rename and merge tensors");
  tool.set_examples({
      {"tconvert model.safetensors -o model.h5", "safetensors to HDF5"},
      {"tconvert model.safetensors --dtype bf16 -o m-bf16.safetensors", "Cast float tensors, round to nearest even"},
      {"tconvert shards/ -o merged.safetensors", "Merge a sharded model"},
      {"tconvert model-f16.gguf -t 'blk.0.*' -o blk0.gguf", "A GGUF subset, keeping the model's key-value pairs"},
      {"tconvert pytorch_model.bin -o model.safetensors", "A torch.save checkpoint, read without running its pickle"},
      {"tconvert q4.safetensors -o q4.gguf", "A tquant output as ggml blocks, bit for bit, not quantized again"},
      {"tconvert model.safetensors --max-shard-size 2GB -o out/model.safetensors",
       "Shards and an index, as transformers writes them"},
  });
  tk::tconvert::ConvertOptions o;
  CLI::App& app = tool.app();
  app.add_option("inputs", o.inputs,
                 "Input files, sharded indexes or model directories, merged in order ('-': stdin, the default)")
      ->type_name("IN...");
  tool.add_output(app, o.output);
  tool.add_metadata_options(app);
  app.add_option("--format", o.format,
                 "Output format (compressed-tensors: -o DIR, from a quantized model); default: from OUT's "
                 "extension. A quantized model (tquant's, or compressed-tensors) to gguf or compressed-tensors "
                 "is repacked without quantizing again")
      ->type_name("safetensors|hdf5|gguf|npy|npz|compressed-tensors");
  app.add_option("--dtype", o.dtype, "Cast float tensors to DT (see Float dtypes below); others are kept")
      ->type_name("DT");
  app.add_flag("--saturate", o.saturate, "Clamp values beyond the range of --dtype to its largest finite value");
  app.add_option("--rename", o.renames, "Rename tensors matching FROM; '*' in TO is what '*' in FROM matched")
      ->type_name("FROM=TO")
      ->allow_extra_args(false);
  app.add_option("--max-shard-size", o.max_shard_size,
                 "Write safetensors shards of at most SIZE (5GB, 500MiB, ...) named from OUT, with "
                 "OUT's stem + .safetensors.index.json, as transformers does; one file when it fits")
      ->type_name("SIZE");
  app.add_option("--compress", o.compress, "Compress HDF5 datasets with zstd (filter 32015) at LEVEL (default 3)")
      ->type_name("zstd[:LEVEL]");
  // The spellings --dtype takes, before the examples and exit codes that close every help.
  std::vector<std::string> float_dtypes;
  for (int d = 0; d < static_cast<int>(tk::DType::kCount); ++d) {
    const tk::DTypeTraits& traits = tk::dtype_traits(static_cast<tk::DType>(d));
    if (traits.cls == tk::DTypeClass::kFloat) float_dtypes.push_back(traits.short_name);
  }
  app.footer(fmt::format("Float dtypes:\n  {}\n\n{}", fmt::join(float_dtypes, "\n  "), app.get_footer()));
  return tool.run(argc, argv, [&] {
    if (o.inputs.empty()) o.inputs.push_back("-");
    return tk::tconvert::run_convert(tool, o);
  });
}
