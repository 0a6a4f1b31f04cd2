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

// The SwiGLU feed-forward sub-block all three share, residual included, over the first n_rows
// rows of x: x += W_down · (silu(W_gate · RMSNorm(x)) * (W_up · RMSNorm(x)))
void feed_forward(const ForwardContext& ctx, const LayerWeights& lw, size_t n_rows);

// After the last layer's attention nothing mixes positions any more, so only the rows that want
// logits need its feed-forward block. Moves those rows of x and out (in batch order) to the
// front and returns their count n_out.
size_t keep_logit_rows(const ForwardContext& ctx);

// The last step all three share: final RMSNorm and the output projection of the n_out rows
// keep_logit_rows kept, into logits.
void output_logits(const ForwardContext& ctx, size_t n_out);

}  // namespace strata::model
