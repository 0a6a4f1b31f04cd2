// The forward pass of every architecture: one decoder layer driven by its LayerSpec (decoder.cc).
#pragma once

#include "kv/kv_cache.h"
#include "model/activations.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/weights.h"
#include "platform/thread_pool.h"

namespace strata::model {

// What a forward pass returns for each entry that wants output.
enum class OutputKind {
  kLogits,  // [n_vocab]: the output projection of the final-normed hidden state, soft-capped
            // when the model says so
  kHidden,  // [n_embd]: the hidden state after the final norm (what the output projection
            // multiplies; embeddings read it)
};

struct ForwardContext {
  const ModelConfig& c;
  const ModelWeights& w;
  const Batch& batch;
  kv::KvCache& cache;
  ThreadPool& pool;
  Activations& a;
  OutputKind kind;
  float* out;     // [n_out][n_vocab or n_embd] for the entries that want logits, in batch order
  float* hidden;  // [n_hidden][n_embd] for the entries that want hidden states, in batch order
};

// Embeddings, every decoder layer, the final norm and the output.
void forward(const ForwardContext& ctx);

// Block l over the T rows of x in flight; returns the rows still in flight (the last block keeps
// only those that want output).
size_t decoder_layer(const ForwardContext& ctx, size_t l, size_t T);

// After the last layer's attention nothing mixes positions any more, so only the rows that want
// output (logits or hidden states) need its feed-forward block. Moves those rows of x and out
// (in batch order) to the front and returns their count n_out.
size_t keep_output_rows(const ForwardContext& ctx);

}  // namespace strata::model
