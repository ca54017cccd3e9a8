// llama.cpp's expectations of a GGUF model: the F32 tensors and general.file_type.
#include "tk/io/gguf_rules.h"

#include <map>

namespace tk::io {

namespace {

bool contains(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

}  // namespace

bool gguf_keeps_f32(std::string_view name, size_t n_dims) {
  if (n_dims < 2) return true;
  // llama-quantize quantizes only tensors whose name ends in "weight".
  constexpr std::string_view kWeight = "weight";
  if (name.size() < kWeight.size() || name.substr(name.size() - kWeight.size()) != kWeight) return true;
  // Its list of 2-D tensors left unquantized (src/llama-quant.cpp), by name part.
  static constexpr std::string_view kParts[] = {
      "_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj", "ssm_conv1d.weight",
      "shortconv.conv.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
      "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
      "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
      "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
      "position_embd.weight"};
  for (std::string_view part : kParts)
    if (contains(name, part)) return true;
  return name == "token_types.weight";
}

std::optional<uint32_t> gguf_file_type_of(GgmlType type) {
  // gguf-py's LlamaFileType; a K type names its "_M" mix, as llama.cpp's loader guesses.
  switch (type) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 12;
    case GgmlType::kQ4_K: return 15;
    case GgmlType::kQ5_K: return 17;
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kIQ2_XXS: return 19;
    case GgmlType::kIQ2_XS: return 20;
    case GgmlType::kIQ3_XXS: return 23;
    case GgmlType::kIQ1_S: return 24;
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ3_S: return 26;
    case GgmlType::kIQ2_S: return 28;
    case GgmlType::kIQ4_XS: return 30;
    case GgmlType::kIQ1_M: return 31;
    case GgmlType::kBF16: return 32;
    case GgmlType::kTQ1_0: return 36;
    case GgmlType::kTQ2_0: return 37;
    case GgmlType::kMXFP4: return 38;
    default: return std::nullopt;
  }
}

namespace {

// The most common type of the tensors not kept in F32 (ties: the first); F32 when all
// are such tensors; nullopt for no tensors.
std::optional<GgmlType> main_type(const std::vector<GgufTensorDecl>& tensors) {
  std::map<GgmlType, size_t> count;
  std::optional<GgmlType> most;
  for (const GgufTensorDecl& t : tensors) {
    if (gguf_keeps_f32(t.name, t.shape.size()) && t.type == GgmlType::kF32) continue;
    const size_t n = ++count[t.type];
    if (!most || n > count[*most]) most = t.type;
  }
  if (!most && !tensors.empty()) return GgmlType::kF32;
  return most;
}

// llama-quantize's default tensor type for a LLAMA_FTYPE (its mixes move some tensors
// up or down from it).
std::optional<GgmlType> file_type_base(uint64_t file_type) {
  switch (file_type) {
    case 0: return GgmlType::kF32;
    case 1: return GgmlType::kF16;
    case 2: return GgmlType::kQ4_0;
    case 3: return GgmlType::kQ4_1;
    case 7: return GgmlType::kQ8_0;
    case 8: return GgmlType::kQ5_0;
    case 9: return GgmlType::kQ5_1;
    case 10: case 21: return GgmlType::kQ2_K;
    case 11: case 12: case 13: return GgmlType::kQ3_K;
    case 14: case 15: return GgmlType::kQ4_K;
    case 16: case 17: return GgmlType::kQ5_K;
    case 18: return GgmlType::kQ6_K;
    case 19: return GgmlType::kIQ2_XXS;
    case 20: case 28: return GgmlType::kIQ2_XS;
    case 22: case 26: case 27: return GgmlType::kIQ3_S;
    case 23: return GgmlType::kIQ3_XXS;
    case 24: return GgmlType::kIQ1_S;
    case 25: return GgmlType::kIQ4_NL;
    case 29: return GgmlType::kIQ2_S;
    case 30: return GgmlType::kIQ4_XS;
    case 31: return GgmlType::kIQ1_M;
    case 32: return GgmlType::kBF16;
    case 36: return GgmlType::kTQ1_0;
    case 37: return GgmlType::kTQ2_0;
    case 38: return GgmlType::kMXFP4;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<uint32_t> gguf_file_type(const std::vector<GgufTensorDecl>& tensors) {
  const std::optional<GgmlType> most = main_type(tensors);
  return most ? gguf_file_type_of(*most) : std::nullopt;
}

bool gguf_file_type_holds(uint64_t file_type, const std::vector<GgufTensorDecl>& tensors) {
  const std::optional<GgmlType> base = file_type_base(file_type);
  return base && base == main_type(tensors);
}

std::optional<GgmlType> gguf_fallback_type(GgmlType type, int64_t row) {
  std::optional<GgmlType> to;
  switch (type) {
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0: to = GgmlType::kQ4_0; break;
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S:
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ1_M:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kIQ4_XS: to = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ4_K: to = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: to = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: to = GgmlType::kQ8_0; break;
    default: return std::nullopt;
  }
  if (row <= 0 || row % ggml_traits(*to).block != 0) return std::nullopt;
  return to;
}

}  // namespace tk::io
