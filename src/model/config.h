// Hyper-parameters of a decoder-only model, read from GGUF metadata (`<arch>.*` keys) and the
// architecture table (architectures.h): model-wide sizes plus one LayerSpec per block, which is
// all the forward pass (decoder.cc) branches on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/gguf.h"

namespace strata::model {

enum class Architecture {
  kLlama,
  kQwen2,
  kQwen3,
  kGemma,
  kGemma2,
  kGemma3,
  kSmolLm3,
  kGranite,
  kOlmo2,
  kMistral3,
  kPhi3,
  kBert,
  kNomicBert
};

// How RoPE pairs the dimensions of a head: GGML's "normal" mode rotates (x[2i], x[2i+1])
// (Llama GGUFs are converted with Q/K permuted for it); NeoX mode rotates (x[i], x[i + d/2]).
enum class RopeStyle { kNormal, kNeox };

// The normalization of a block's inputs (and outputs, with post-norms): RMSNorm times a weight,
// or LayerNorm ((x - mean) / sqrt(var + eps)) times a weight plus a bias (BERT).
enum class NormKind { kRms, kLayer };

// Where a block normalizes: before each sub-layer (Llama), after it on its output before the
// residual add (OLMo 2), both (Gemma 2/3), or on the residual stream after each add (BERT's
// x = norm(x + sublayer(x))).
enum class NormPlacement { kPre, kPost, kPreAndPost, kAfterResidual };

// The feed-forward network's activation: gated, act(W_gate x) * (W_up x) with act SiLU or the
// tanh approximation of GELU; or plain GELU of W_up x (BERT).
enum class Activation { kSwiGlu, kGeGlu, kGelu };

const char* norm_kind_name(NormKind kind);
const char* activation_name(Activation activation);

// YaRN (rope.scaling.type yarn; Peng et al. 2023, as GGML's rope_yarn computes it): pair i's
// angle blends the interpolated theta * freq_scale and the extrapolated theta with weight
// ramp(i) * ext_factor, ramp falling from 1 to 0 between the correction dims that beta_fast
// and beta_slow rotations over the original context give; cos and sin are scaled by
// attn_factor * (1 + 0.1 ln(1 / freq_scale)). ext_factor 0: plain (linear) RoPE.
struct RopeYarn {
  float ext_factor = 0;
  float attn_factor = 1;
  float beta_fast = 32, beta_slow = 1;
  size_t n_ctx_orig = 0;  // rope.scaling.original_context_length, else context_length
};

// What one decoder block computes, filled from the metadata and the architecture's defaults.
struct LayerSpec {
  NormKind norm = NormKind::kRms;
  NormPlacement norm_placement = NormPlacement::kPre;
  float norm_eps = 1e-5f;
  float attn_scale = 0;  // multiplies q·k; 1/sqrt(head_dim) unless attention.scale says
  RopeStyle rope_style = RopeStyle::kNormal;
  size_t rope_dims = 0;  // leading dims of each head that rotate
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
  RopeYarn yarn;                 // YaRN's blend of interpolated and extrapolated pairs
  size_t sliding_window = 0;     // attend to the last n positions only; 0: global attention
  // Mistral 3's query temperature: q *= 1 + temp_scale * log(1 + floor(pos / temp_floor)).
  float query_temp_scale = 0;
  size_t query_temp_floor = 0;
  Activation activation = Activation::kSwiGlu;
  bool qkv_bias = false;  // attn_q/k/v.bias required (an optional bias is used when present)
  bool qk_norm = false;   // RMSNorm of q and k before RoPE (attn_q_norm, attn_k_norm), per head
  bool qk_norm_full_width = false;  // or over all of q and all of k (OLMo 2)
  bool rope = true;                 // false: this layer's q and k do not rotate (SmolLM3's NoPE)
  float residual_scale = 1.0f;      // each sub-layer's output times this before the add (Granite)
  float attn_logit_softcap = 0;     // scores = cap * tanh(scores / cap) when set

  bool pre_norm() const {
    return norm_placement == NormPlacement::kPre || norm_placement == NormPlacement::kPreAndPost;
  }
  bool post_norm() const {
    return norm_placement == NormPlacement::kPost || norm_placement == NormPlacement::kPreAndPost;
  }
  bool norm_after_residual() const { return norm_placement == NormPlacement::kAfterResidual; }
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string arch_name;
  size_t n_vocab = 0;
  size_t n_ctx_train = 0;           // context_length
  size_t n_embd = 0;                // embedding_length
  size_t n_layers = 0;              // block_count
  size_t n_ff = 0;                  // feed_forward_length
  size_t n_heads = 0;               // attention.head_count
  size_t n_kv_heads = 0;            // attention.head_count_kv (grouped-query attention)
  size_t head_dim = 0;              // attention.key_length, else n_embd / n_heads
  size_t n_experts = 0;             // expert_count; 0 for a dense feed-forward network
  size_t n_experts_used = 0;        // expert_used_count
  size_t n_ff_expert = 0;           // expert_feed_forward_length, else n_ff
  float rms_eps = 1e-5f;            // attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;  // rope.freq_base
  size_t rope_dims = 0;             // rope.dimension_count (dims rotated per head)
  float rope_freq_scale = 1.0f;     // 1 / rope.scaling.factor for linear scaling
  RopeYarn rope_yarn;               // with rope.scaling.type yarn
  // rope.scaling.original_context_length, else context_length: the context past which YaRN
  // blends and LongRoPE takes its long factors.
  size_t n_ctx_orig = 0;
  RopeStyle rope_style = RopeStyle::kNormal;
  float final_logit_softcap = 0;  // final_logit_softcapping: logits = cap * tanh(logits / cap)
  float embedding_scale = 1.0f;   // x = token_embd[token] * embedding_scale (Gemma: sqrt(n_embd))
  float logit_scale = 1.0f;       // logits = output(x) / logit_scale (Granite)
  // pooling_type: how embeddings pool hidden states (0 none, 1 mean, 2 cls, 3 last, 4 rank).
  uint32_t pooling_type = 0;
  // An encoder (BERT): attention.causal false, so every position attends to every position of
  // its sequence, and no output head, so it embeds and never generates.
  bool causal = true;
  bool encoder = false;
  // Learned absolute positions (position_embd): positions past n_ctx_train have no embedding.
  bool learned_positions = false;
  std::vector<LayerSpec> layers;  // [n_layers]

  size_t q_dim() const { return n_heads * head_dim; }
  size_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads and checks the hyper-parameters; errors name the missing or inconsistent key.
Result<ModelConfig> read_config(const gguf::File& file);

// What the forward pass cannot run yet (LayerNorm, mixture-of-experts): kUnsupported naming the
// feature, else ok.
Status check_supported(const ModelConfig& config);

const char* architecture_name(Architecture arch);

}  // namespace strata::model
