// The forward pass of each architecture, one file each (llama.cc, qwen2.cc, qwen3.cc).
#pragma once

#include "kv/kv_cache.h"
#include "model/activations.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/weights.h"
#include "platform/thread_pool.h"

namespace strata::model {

struct ForwardContext {
  const ModelConfig& c;
  const ModelWeights& w;
  const Batch& batch;
  kv::KvCache& cache;
  ThreadPool& pool;
  Activations& a;
  float* logits;  // [n_out][n_vocab] for the entries that want logits, in batch order
};

void forward_llama(const ForwardContext& ctx);
void forward_qwen2(const ForwardContext& ctx);
void forward_qwen3(const ForwardContext& ctx);

// The SwiGLU feed-forward sub-block all three share, residual included:
// x += W_down · (silu(W_gate · RMSNorm(x)) * (W_up · RMSNorm(x)))
void feed_forward(const ForwardContext& ctx, const LayerWeights& lw);

// The last step all three share: final RMSNorm and the output projection, computed only for the
// rows that want logits.
void output_logits(const ForwardContext& ctx);

}  // namespace strata::model
