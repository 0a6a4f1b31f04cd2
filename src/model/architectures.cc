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
     .qkv_bias = TensorUse::kOptional,
     .out_bias = TensorUse::kOptional},
    // Qwen2 / Qwen2.5: the Llama block with Q, K and V biases and NeoX-style RoPE.
    {.name = "qwen2",
     .arch = Architecture::kQwen2,
     .rope_style = RopeStyle::kNeox,
     .qkv_bias = TensorUse::kRequired},
    // Qwen3: the Llama block with a per-head RMSNorm of Q and K before RoPE, NeoX-style RoPE.
    {.name = "qwen3",
     .arch = Architecture::kQwen3,
     .rope_style = RopeStyle::kNeox,
     .qk_norm = TensorUse::kRequired},
    // Gemma: RMSNorm weights stored with Gemma's +1 already added, embeddings scaled by
    // sqrt(n_embd), GeGLU (tanh GELU), NeoX RoPE, tied output, head size 256.
    {.name = "gemma",
     .arch = Architecture::kGemma,
     .rope_style = RopeStyle::kNeox,
     .activation = Activation::kGeGlu,
     .scale_embeddings = true},
    // Gemma 2: Gemma with norms before and after each sub-layer, soft-capped attention scores
    // and logits, and sliding-window attention on every other layer (the even ones).
    {.name = "gemma2",
     .arch = Architecture::kGemma2,
     .rope_style = RopeStyle::kNeox,
     .norm_placement = NormPlacement::kPreAndPost,
     .activation = Activation::kGeGlu,
     .sliding_window_period = 2,
     .default_sliding_window = 4096,
     .scale_embeddings = true,
     .default_attn_softcap = 50.0f,
     .default_final_softcap = 30.0f,
     .wide_query_scale_blocks = 46},
    // Gemma 3: Gemma 2 without soft-caps, with per-head q/k norms, five sliding-window layers to
    // one global, and the local layers on their own RoPE base.
    {.name = "gemma3",
     .arch = Architecture::kGemma3,
     .rope_style = RopeStyle::kNeox,
     .norm_placement = NormPlacement::kPreAndPost,
     .activation = Activation::kGeGlu,
     .qk_norm = TensorUse::kRequired,
     .sliding_window_period = 6,
     .swa_rope_base = 10000.0f,
     .swa_rope_unscaled = true,
     .scale_embeddings = true,
     .wide_query_scale_blocks = 62},
    // SmolLM3: the Llama block without RoPE on every fourth layer (NoPE).
    {.name = "smollm3", .arch = Architecture::kSmolLm3, .no_rope_period = 4},
    // Granite 3: the Llama block with multipliers on the embeddings, the residual branches, the
    // attention scores (attention.scale) and the logits.
    {.name = "granite",
     .arch = Architecture::kGranite,
     .qkv_bias = TensorUse::kOptional,
     .out_bias = TensorUse::kOptional,
     .granite_multipliers = true},
    // OLMo 2: norms after each sub-layer only (on its output, before the residual add), one
    // RMSNorm over all of q and of k before RoPE, NeoX RoPE. OLMo 3 files add sliding windows on
    // three layers of four, their RoPE unscaled.
    {.name = "olmo2",
     .arch = Architecture::kOlmo2,
     .rope_style = RopeStyle::kNeox,
     .norm_placement = NormPlacement::kPost,
     .qk_norm = TensorUse::kRequired,
     .qk_norm_full_width = true,
     .sliding_window_period = 4,
     .swa_rope_unscaled = true},
    // Mistral 3 (Ministral): the Llama block with YaRN and a query temperature that grows with
    // the position past the original context.
    {.name = "mistral3", .arch = Architecture::kMistral3, .query_temperature = true},
    // Phi-3 / Phi-4-mini: the Llama block with fused attn_qkv, gate and up in one ffn_up,
    // NeoX RoPE (partial on Phi-4-mini: rope.dimension_count below the head size) and
    // LongRoPE's per-frequency factors, long past the original context, short within it.
    {.name = "phi3",
     .arch = Architecture::kPhi3,
     .rope_style = RopeStyle::kNeox,
     .out_bias = TensorUse::kOptional,
     .up_holds_gate = true},
    // BERT (bge, MiniLM, e5): an encoder with learned absolute positions, LayerNorm with biases
    // on the residual stream after each sub-layer's add, biases on every projection and a plain
    // GELU feed-forward network.
    {.name = "bert",
     .arch = Architecture::kBert,
     .norm = NormKind::kLayer,
     .norm_placement = NormPlacement::kAfterResidual,
     .activation = Activation::kGelu,
     .qkv_bias = TensorUse::kOptional,
     .out_bias = TensorUse::kOptional,
     .ffn_bias = TensorUse::kOptional,
     .encoder = true,
     .learned_positions = true,
     .rope = false},
    // nomic-bert (nomic-embed-text): the BERT encoder with NeoX RoPE instead of learned
    // positions, fused attn_qkv and a SwiGLU feed-forward network without biases.
    {.name = "nomic-bert",
     .arch = Architecture::kNomicBert,
     .rope_style = RopeStyle::kNeox,
     .norm = NormKind::kLayer,
     .norm_placement = NormPlacement::kAfterResidual,
     .qkv_bias = TensorUse::kOptional,
     .out_bias = TensorUse::kOptional,
     .encoder = true},
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
