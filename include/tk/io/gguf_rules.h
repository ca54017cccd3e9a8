// What llama.cpp expects of the tensors and pairs of a GGUF model file, beyond the
// format itself: which tensors it reads only as F32, and what `general.file_type` says.
// Every GGUF output goes through these rules (the writer applies gguf_file_type; the
// paths that choose tensor types ask gguf_keeps_f32), so each file tensorkit writes
// loads in llama.cpp as llama-quantize's output does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tk/io/gguf.h"

namespace tk::io {

// Whether a float tensor named `name` with `n_dims` dimensions stays F32 in a GGUF model:
// the tensors llama-quantize never quantizes (1-D tensors such as norms and biases,
// `*_norm.weight`, MoE router `ffn_gate_inp`, position embeddings and token types, the
// small 2-D tensors of Mamba, RWKV, T5 and Gemma 3n, names not ending in "weight").
// llama.cpp's graph adds norm weights to F32 activations and aborts on F16 ones.
bool gguf_keeps_f32(std::string_view name, size_t n_dims);

// The LLAMA_FTYPE value (gguf-py's LlamaFileType) that names a file of these tensors:
// the most common type among the tensors that are not kept in F32 (ties: the first in
// file order), as llama.cpp's loader guesses it; ALL_F32 when every tensor is F32;
// nullopt when that type has no LLAMA_FTYPE (the pair is then left out and llama.cpp
// guesses).
std::optional<uint32_t> gguf_file_type(const std::vector<GgufTensorDecl>& tensors);

// The LLAMA_FTYPE value of a file mostly of `type`, or nullopt.
std::optional<uint32_t> gguf_file_type_of(GgmlType type);

// Whether `file_type` (a LLAMA_FTYPE value as a file states it) still tells the truth
// about these tensors: llama-quantize's base type for it (Q4_K for Q4_K_S and Q4_K_M,
// IQ3_S for IQ3_XS and IQ3_M, ...) is their most common type as gguf_file_type counts.
// A copy of llama-quantize's file keeps its Q4_K_S; an F16 file quantized does not.
bool gguf_file_type_holds(uint64_t file_type, const std::vector<GgufTensorDecl>& tensors);

// llama-quantize's fallback for a type whose blocks do not fill rows of `row` values:
// the 2- and 3-bit K and IQ types and IQ4_XS take IQ4_NL, Q4_K Q5_0, Q5_K Q5_1, Q6_K
// Q8_0, TQ1_0 and TQ2_0 Q4_0. nullopt when `type` has no fallback or the fallback's
// blocks (32) do not fill the rows either (llama-quantize then writes F16).
std::optional<GgmlType> gguf_fallback_type(GgmlType type, int64_t row);

}  // namespace tk::io
