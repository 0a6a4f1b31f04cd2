#include "model/architectures.h"

#include <string>

namespace strata::model {
namespace {

constexpr ArchitectureInfo kArchitectures[] = {
    // Llama 2/3.x, Mistral, TinyLlama, SmolLM: pre-norm RMSNorm blocks, grouped-query attention
    // with rotary positions, a SwiGLU feed-forward network. Biases are read when present (as
    // the reference engine does).
    {.name = "llama",
     .arch = Architecture::kLlama,
     .rope_style = RopeStyle::kNormal,
     .norm = NormKind::kRms,
     .norm_placement = NormPlacement::kPre,
     .activation = Activation::kSwiGlu,
     .qkv_bias = TensorUse::kOptional,
     .out_bias = TensorUse::kOptional,
     .qk_norm = TensorUse::kIgnored,
     .sliding_window_period = 0},
    // Qwen2 / Qwen2.5: the Llama block with Q, K and V biases and NeoX-style RoPE.
    {.name = "qwen2",
     .arch = Architecture::kQwen2,
     .rope_style = RopeStyle::kNeox,
     .norm = NormKind::kRms,
     .norm_placement = NormPlacement::kPre,
     .activation = Activation::kSwiGlu,
     .qkv_bias = TensorUse::kRequired,
     .out_bias = TensorUse::kIgnored,
     .qk_norm = TensorUse::kIgnored,
     .sliding_window_period = 0},
    // Qwen3: the Llama block with a per-head RMSNorm of Q and K before RoPE, NeoX-style RoPE.
    {.name = "qwen3",
     .arch = Architecture::kQwen3,
     .rope_style = RopeStyle::kNeox,
     .norm = NormKind::kRms,
     .norm_placement = NormPlacement::kPre,
     .activation = Activation::kSwiGlu,
     .qkv_bias = TensorUse::kIgnored,
     .out_bias = TensorUse::kIgnored,
     .qk_norm = TensorUse::kRequired,
     .sliding_window_period = 0},
};

}  // namespace

std::span<const ArchitectureInfo> architectures() { return kArchitectures; }

const ArchitectureInfo* find_architecture(std::string_view name) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string supported_architecture_names() {
  std::string names;
  for (const ArchitectureInfo& a : kArchitectures)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

const char* architecture_name(Architecture arch) {
  for (const ArchitectureInfo& a : kArchitectures) {
    if (a.arch == arch) return a.name;
  }
  return "?";
}

}  // namespace strata::model
