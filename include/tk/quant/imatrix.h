// llama.cpp's importance matrices (llama-imatrix) as per-column importance, and the
// names that tie them to a model's tensors.
//
// An imatrix holds, per weight matrix, the sum of squared activations that met each of
// its input columns and how many activation rows were summed; their ratio, the mean
// squared activation per column, is the importance ggml's quantizers take. Two files:
//   GGUF (current llama-imatrix): tensors NAME.in_sum2 (F32, [n_mat, cols]) and
//     NAME.counts (F32, [n_mat, 1]); importance = sum of in_sum2 / sum of counts over
//     the n_mat matrices (experts are pooled into one vector of `cols` values).
//   legacy .dat: i32 n_entries, then per entry i32 name length, the name's bytes, i32
//     ncall, i32 nval, f32 values[nval] (each a mean times ncall), then optionally i32
//     last chunk and i32 length + bytes of the dataset's name; importance = value / ncall.
// All integers and floats little-endian.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tk/io/tensor_file.h"

namespace tk::quant {

using ImportanceMap = std::map<std::string, std::vector<float>>;

// Parse a legacy .dat imatrix. Every count and length is checked against the bytes left
// before it is used, so a hostile file costs at most its own size. Throws kInvalidInput
// (located at the entry) for a truncated or malformed file, a duplicate name, or an
// entry without values.
ImportanceMap imatrix_parse_legacy(std::span<const uint8_t> bytes);

// Whether `reader` (a GGUF file) is an imatrix: it holds a tensor named *.in_sum2.
bool imatrix_is_gguf(const io::TensorReader& reader);

// The importance of a GGUF imatrix. Throws kInvalidInput for an in_sum2 without its
// counts (or the reverse), mismatched sizes, or counts that are negative or not finite.
// An entry whose counts are all zero (no data) is left out.
ImportanceMap imatrix_read_gguf(io::TensorReader& reader);

// Clip each of `importance`'s columns to at most `ratio` times the median of its positive
// values. An imatrix column is a mean of squared activations, and in a massive-activation
// channel a few tokens (the first, mostly) make that mean thousands of times the rest:
// weighted as it is, the one column would decide the tensor's error alone. Vectors
// without positive values are left as they are.
void importance_clip(std::vector<float>& importance, double ratio);

// How far above its vector's median an imatrix column may weigh (read_importance clips
// llama.cpp imatrices to it): measured on SmolLM2-135M, docs/QUANT.md "Massive activations".
inline constexpr double kImatrixColumnCap = 1e4;

// The Hugging Face name of a llama.cpp tensor of the llama architecture
// ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"), and back;
// nullopt for names outside the table.
std::optional<std::string> llama_to_hf_name(std::string_view gguf_name);
std::optional<std::string> hf_to_llama_name(std::string_view hf_name);

// The entries of `importance` keyed by the tensor of `names` each weights: the entry
// of that name, else the one under its llama.cpp or Hugging Face counterpart. The
// entries that weight no tensor go to `unmatched` (in name order) when it is given.
ImportanceMap importance_match(const ImportanceMap& importance, const std::vector<std::string>& names,
                               std::vector<std::string>* unmatched = nullptr);

}  // namespace tk::quant
