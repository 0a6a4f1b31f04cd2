// Views of a model's weight tensors inside the GGUF image, checked against the configuration.
#pragma once

#include <cstddef>
#include <cstdint>
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
// {cols, rows}), in GGUF row order or rearranged at load (interleave_weights), with the kernel
// that multiplies it, chosen for its type and layout when that was set.
struct Matrix {
  DType type = DType::kF32;
  kernels::WeightLayout layout = kernels::WeightLayout::kRows;
  const void* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  kernels::MatmulKernel kernel;

  // A GGUF-order matrix and its kernel.
  static Matrix rows_of(DType type, const void* data, size_t rows, size_t cols) {
    return Matrix{type, kernels::WeightLayout::kRows,
                  data, rows,
                  cols, kernels::select_matmul_kernel(type, kernels::WeightLayout::kRows, cols)};
  }
};

// A stack of same-shaped matrices with an expert dimension (GGUF dims {cols, rows, n_experts}):
// expert e's rows follow expert e-1's. Loaded as views; nothing multiplies them yet.
struct ExpertMatrices {
  Matrix first;  // expert 0
  size_t n_experts = 0;
  size_t expert_bytes = 0;  // bytes from one expert's matrix to the next

  Matrix expert(size_t e) const {
    Matrix m = first;
    m.data = static_cast<const uint8_t*>(first.data) + e * expert_bytes;
    return m;
  }
};

// Norm weights and biases are small: held as f32 copies whatever their file type.
using Vector = AlignedBuffer<float>;

// A norm's parameters: the weight, and LayerNorm's bias (empty for RMSNorm).
struct Norm {
  Vector weight;  // [n]; empty for a norm the block does not apply
  Vector bias;    // [n]
};

// One block's weights. An empty Vector is an absent optional tensor. Fused projections
// (attn_qkv, ffn_gate_up) are loaded as row-range views: wq, wk, wv (w_gate, w_up) then point
// into one matrix.
struct LayerWeights {
  Norm attn_norm;               // [n_embd] before attention (pre-norm placements)
  Matrix wq, wk, wv, wo;        // [q_dim x n_embd], [kv_dim x n_embd] x2, [n_embd x q_dim]
  Vector bq, bk, bv, bo;        // [q_dim], [kv_dim], [kv_dim], [n_embd] when present
  Vector q_norm, k_norm;        // [head_dim] per-head RMSNorm weights (Qwen3), or [q_dim],
                                // [kv_dim] over the whole row (OLMo 2)
  Norm attn_post_norm;          // [n_embd] post_attention_norm (post-norm placements), or
                                // attn_output_norm after the residual add (BERT)
  Norm ffn_norm;                // [n_embd] before the feed-forward network (pre-norm placements)
  Matrix w_gate, w_up, w_down;  // [n_ff x n_embd] x2, [n_embd x n_ff]; no w_gate with plain GELU
  Vector b_up, b_down;          // [n_ff], [n_embd] when present (BERT)
  Norm ffn_post_norm;           // [n_embd] post_ffw_norm (post-norm placements), or
                                // layer_output_norm after the residual add (BERT)
  Matrix w_router;              // [n_experts x n_embd] ffn_gate_inp (mixture of experts)
  ExpertMatrices gate_exps, up_exps, down_exps;  // [n_experts][n_ff_expert x n_embd] ...
};

struct ModelWeights {
  Matrix token_embd;     // [n_vocab x n_embd]
  Matrix position_embd;  // [n_ctx_train x n_embd] learned positions (BERT); absent otherwise
  Vector token_type;     // [n_embd] row 0 of token_types, added to every input (encoders)
  Norm input_norm;       // [n_embd] token_embd_norm of the summed inputs (encoders)
  Norm output_norm;      // [n_embd]; absent in encoders (the last block ends in a norm)
  Matrix output;         // [n_vocab x n_embd]; token_embd when the model ties embeddings;
                         // absent in encoders
  Vector rope_freqs;     // [rope_dims / 2] Llama 3.1+ per-frequency divisors; empty if absent
  // LongRoPE's two sets (rope_factors_long, rope_factors_short), when the file has them and no
  // rope_freqs (the reference engine prefers that one); long_rope picks the long set
  // (Model::use_context).
  Vector rope_long, rope_short;
  bool long_rope = false;
  std::vector<LayerWeights> layers;
  size_t bytes = 0;  // bytes of all matrices read per token (for bandwidth figures)

  // The per-frequency divisors RoPE applies: rope_freqs, or LongRoPE's set in use; may be empty.
  const Vector& rope_factors() const {
    if (rope_freqs.size() != 0) return rope_freqs;
    return long_rope ? rope_long : rope_short;
  }
};

// Finds every tensor the architecture needs, checks its shape and type, and returns views.
Result<ModelWeights> load_weights(const gguf::File& file, const ModelConfig& config);

// Rearranges in place each matrix that the CPU multiplies faster interleaved
// (kernels::preferred_layout), and marks its layout. Only a resident image is writable: with a
// memory-mapped file nothing changes. Returns the number of matrices rearranged.
size_t interleave_weights(gguf::File& file, ModelWeights& weights, ThreadPool& pool);

}  // namespace strata::model
