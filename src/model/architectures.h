// The architecture table: everything that tells one supported architecture from another, in one
// place. Adding an architecture is adding an entry (plus, rarely, a new op in the forward pass).
#pragma once

#include <span>
#include <string_view>

#include "model/config.h"

namespace strata::model {

// Whether a block's optional tensor must be there, may be there, or is not read at all.
enum class TensorUse { kIgnored, kOptional, kRequired };

// Each field defaults to the plain Llama block's choice, so an entry names only what differs.
struct ArchitectureInfo {
  const char* name;  // general.architecture
  Architecture arch;
  // Per-layer defaults (LayerSpec); the metadata overrides what it names.
  RopeStyle rope_style = RopeStyle::kNormal;
  NormKind norm = NormKind::kRms;
  NormPlacement norm_placement = NormPlacement::kPre;
  Activation activation = Activation::kSwiGlu;
  TensorUse qkv_bias = TensorUse::kIgnored;  // attn_q.bias, attn_k.bias, attn_v.bias
  TensorUse out_bias = TensorUse::kIgnored;  // attn_output.bias
  TensorUse ffn_bias = TensorUse::kIgnored;  // ffn_up.bias, ffn_down.bias
  TensorUse qk_norm = TensorUse::kIgnored;   // attn_q_norm.weight, attn_k_norm.weight
  bool qk_norm_full_width = false;  // one RMSNorm over all of q (k) rather than one per head
  // Sliding-window layers (attention.sliding_window): every layer but each n-th one (Gemma 3:
  // 6, five local layers to one global; Gemma 2: 2); 0 if every layer attends globally.
  // attention.sliding_window_pattern overrides it (a period, or a bool per layer).
  size_t sliding_window_period = 0;
  size_t default_sliding_window = 0;  // when attention.sliding_window is absent (Gemma 2: 4096)
  // RoPE of the sliding-window layers: base rope.freq_base_swa, else this one (0: the global
  // layers'); unscaled where the global layers stretch (Gemma 3: base 10000; OLMo 3), or with
  // the global layers' scale (Gemma 2).
  float swa_rope_base = 0;
  bool swa_rope_unscaled = false;
  bool scale_embeddings = false;  // x = token_embd[token] * sqrt(n_embd) (Gemma)
  // Soft-caps when the file does not say (Gemma 2: 50 on attention scores, 30 on logits).
  float default_attn_softcap = 0;
  float default_final_softcap = 0;
  // block_count of a variant that scales q·k by 1/sqrt(n_embd / n_heads) instead of
  // 1/sqrt(head_dim) (Gemma 2 and 3 27B: query_pre_attn_scalar); 0 if none.
  size_t wide_query_scale_blocks = 0;
  // Layers without RoPE: every n-th one (SmolLM3: 4); 0 if every layer rotates.
  size_t no_rope_period = 0;
  // Granite's multipliers: embedding_scale on the embeddings, residual_scale on each
  // sub-layer's output before the residual add, logits divided by logit_scale.
  bool granite_multipliers = false;
  // Mistral 3's query temperature from attention.temperature_scale (LayerSpec).
  bool query_temperature = false;
  // ffn_up.weight holds the gate's rows, then the up projection's (Phi-3), when ffn_gate.weight
  // is absent.
  bool up_holds_gate = false;
  // An encoder (BERT family): bidirectional attention unless attention.causal says otherwise;
  // the embeddings plus row 0 of token_types ("sentence A") go through token_embd_norm; no
  // final norm and no output head: hidden states are the last block's output.
  bool encoder = false;
  bool learned_positions = false;  // x += position_embd[pos] (BERT) instead of RoPE
  bool rope = true;                // false: no layer rotates q and k
};

// Every supported architecture.
std::span<const ArchitectureInfo> architectures();

// The entry for general.architecture `name`; null if unsupported.
const ArchitectureInfo* find_architecture(std::string_view name);

// "llama, qwen2, qwen3": for error messages.
std::string supported_architecture_names();

}  // namespace strata::model
