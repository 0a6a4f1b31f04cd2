// Views of a model's weight tensors inside the GGUF image, checked against the configuration.
#pragma once

#include <cstddef>
#include <vector>

#include "base/aligned.h"
#include "base/dtype.h"
#include "base/result.h"
#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "model/config.h"
#include "platform/thread_pool.h"

namespace strata::model {

// A weight matrix in its file's block format: `rows` rows of `cols` elements (GGUF dims
// {cols, rows}), in GGUF row order or rearranged at load (interleave_weights).
struct Matrix {
  DType type = DType::kF32;
  kernels::WeightLayout layout = kernels::WeightLayout::kRows;
  const void* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
};

// Norm weights and biases are small: held as f32 copies whatever their file type.
using Vector = AlignedBuffer<float>;

struct LayerWeights {
  Vector attn_norm;             // [n_embd]
  Matrix wq, wk, wv, wo;        // [q_dim x n_embd], [kv_dim x n_embd] x2, [n_embd x q_dim]
  Vector bq, bk, bv;            // qwen2: [q_dim], [kv_dim], [kv_dim]; empty otherwise
  Vector q_norm, k_norm;        // qwen3: [head_dim] per-head RMSNorm weights; empty otherwise
  Vector ffn_norm;              // [n_embd]
  Matrix w_gate, w_up, w_down;  // [n_ff x n_embd] x2, [n_embd x n_ff]
};

struct ModelWeights {
  Matrix token_embd;   // [n_vocab x n_embd]
  Vector output_norm;  // [n_embd]
  Matrix output;       // [n_vocab x n_embd]; token_embd when the model ties embeddings
  Vector rope_freqs;   // [rope_dims / 2] Llama 3.1+ per-frequency divisors; empty if absent
  std::vector<LayerWeights> layers;
  size_t bytes = 0;  // bytes of all matrices read per token (for bandwidth figures)
};

// Finds every tensor the architecture needs, checks its shape and type, and returns views.
Result<ModelWeights> load_weights(const gguf::File& file, const ModelConfig& config);

// Rearranges in place each matrix that the CPU multiplies faster interleaved
// (kernels::preferred_layout), and marks its layout. Only a resident image is writable: with a
// memory-mapped file nothing changes. Returns the number of matrices rearranged.
size_t interleave_weights(gguf::File& file, ModelWeights& weights, ThreadPool& pool);

}  // namespace strata::model
