// A compressed-tensors model directory (compressed_tensors.h), written whole: the
// tensors in DIR/model.safetensors (quantized weights as their compressed-tensors
// parameters, every other tensor as given), DIR/config.json (the source directory's,
// with the quantization_config set) and the source directory's other files (tokenizer,
// generation config, ...). What vLLM and transformers load.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tk/io/tensor_file.h"
#include "tk/quant/compressed_tensors.h"

namespace tk::quant {

// One tensor of the model: passed through (`dense`), or the quantized weight `name`
// (MODULE.weight) of `shape` whose twin is `scheme`, its scales stored as `scale_dtype`
// (integer schemes; the others fix theirs).
struct CtOutput {
  io::TensorInfo dense;
  std::optional<CtScheme> scheme;
  Shape shape;
  DType scale_dtype = DType::kF32;
};

struct CtModelSources {
  std::function<Tensor(size_t output)> dense;      // output k's tensor, for a dense one
  std::function<Quantized(size_t output)> quantized;  // output k's quantized tensor, parts included
  std::function<void(size_t output)> release;      // done with output k (may be empty)
};

// The module of a weight name ("a.b.weight" -> "a.b"); empty when the name does not end
// in ".weight".
std::string ct_module_of(const std::string& weight_name);

// Whether `dir` holds a model in the compressed-tensors format (a config.json whose
// quantization_config has quant_method "compressed-tensors"), and then that config.
// A file path is looked up in its directory. nullopt for other paths (and for none:
// a model read from a stream has no directory).
// Throws like ct_config_parse.
std::optional<CtConfig> ct_config_at(const std::string& path);

// The directory whose config.json and other files a model at `input` comes with: the
// input itself when a directory; a file's directory when it holds a config.json; else
// (and for an empty input, a stream's) empty.
std::string ct_source_directory(const std::string& input);

// Check that `dir` can be written: named (not empty), and either absent or an empty
// directory.
// Throws kUsage otherwise.
void ct_check_output_directory(const std::string& dir);

// The config.json of a model quantized as `ct`: `source_config` (the text of the source
// model's config.json; empty for none) with the quantization_config appended, every
// other byte as it was (json_object_append: linear in the text, whatever its nesting).
// Throws kInvalidInput when the JSON policy (core/json_parse_internal.h) refuses the
// text (nesting deeper than kJsonMaxDepth, say) or it is not an object, kUsage when it
// already has a quantization_config.
std::string ct_model_config(std::string_view source_config, const CtConfig& ct);

struct CtModelWritten {
  std::string weights;               // the path of the model's model.safetensors
  std::vector<std::string> skipped;  // entries of the source directory not copied, "NAME (WHAT)"
  // One line on what was skipped, for a warning; empty when nothing was.
  std::string skipped_text() const;
};

// Write the model into `dir` through a temporary directory beside it, renamed into
// place when complete (a failure leaves nothing under `dir`). `source_dir` (may be
// empty) gives config.json (ct_model_config; errors located at it) and the files
// copied: its regular files other than weights (.safetensors, .bin, .pt, .pth, .gguf,
// .h5, .npz and shard indexes), each opened inside the directory without following a
// link. Its symbolic links, FIFOs, devices and sockets are not copied (a link may point
// outside the directory, at another user's file) but listed in `skipped`;
// subdirectories are left out. Tensors are fed in the writer's storage order, so
// memory stays near one tensor's parameters.
CtModelWritten ct_write_model(const std::string& dir, const std::string& source_dir,
                              const std::vector<CtOutput>& outputs, const io::Metadata& metadata,
                              const CtModelSources& sources);

}  // namespace tk::quant
