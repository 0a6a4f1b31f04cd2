// The architecture table: everything that tells one supported architecture from another, in one
// place. Adding an architecture is adding an entry (plus, rarely, a new op in the forward pass).
#pragma once

#include <span>
#include <string_view>

#include "model/config.h"

namespace strata::model {

// Whether a block's optional tensor must be there, may be there, or is not read at all.
enum class TensorUse { kIgnored, kOptional, kRequired };

struct ArchitectureInfo {
  const char* name;  // general.architecture
  Architecture arch;
  // Per-layer defaults (LayerSpec); the metadata overrides what it names.
  RopeStyle rope_style;
  NormKind norm;
  NormPlacement norm_placement;
  Activation activation;
  TensorUse qkv_bias;  // attn_q.bias, attn_k.bias, attn_v.bias
  TensorUse out_bias;  // attn_output.bias
  TensorUse qk_norm;   // attn_q_norm.weight, attn_k_norm.weight
  // Sliding-window layers (attention.sliding_window): every layer but each n-th one (Gemma 3:
  // 6, five local layers to one global; Gemma 2: 2); 0 if every layer attends globally.
  size_t sliding_window_period;
};

// Every supported architecture.
std::span<const ArchitectureInfo> architectures();

// The entry for general.architecture `name`; null if unsupported.
const ArchitectureInfo* find_architecture(std::string_view name);

// "llama, qwen2, qwen3": for error messages.
std::string supported_architecture_names();

}  // namespace strata::model
