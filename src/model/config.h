// Hyper-parameters of a Llama-family model, read from GGUF metadata (`<arch>.*` keys).
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"
#include "gguf/gguf.h"

namespace strata::model {

enum class Architecture { kLlama, kQwen2, kQwen3 };

// How RoPE pairs the dimensions of a head: GGML's "normal" mode rotates (x[2i], x[2i+1])
// (Llama GGUFs are converted with Q/K permuted for it); NeoX mode rotates (x[i], x[i + d/2]).
enum class RopeStyle { kNormal, kNeox };

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
  float rms_eps = 1e-5f;            // attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;  // rope.freq_base
  size_t rope_dims = 0;             // rope.dimension_count (dims rotated per head)
  float rope_freq_scale = 1.0f;     // 1 / rope.scaling.factor for linear scaling
  RopeStyle rope_style = RopeStyle::kNormal;

  size_t q_dim() const { return n_heads * head_dim; }
  size_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads and checks the hyper-parameters; errors name the missing or inconsistent key.
Result<ModelConfig> read_config(const gguf::File& file);

const char* architecture_name(Architecture arch);

}  // namespace strata::model
