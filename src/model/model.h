// A loaded model: its GGUF file, hyper-parameters, weight views, and the forward pass.
#pragma once

#include <memory>

#include "base/result.h"
#include "gguf/gguf.h"
#include "kv/kv_cache.h"
#include "model/activations.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/forward.h"
#include "model/weights.h"
#include "platform/thread_pool.h"

namespace strata::model {

struct ModelLoadOptions {
  // Rearrange the weight matrices for the CPU's interleaved kernels (resident images only), on
  // this pool's threads; null leaves them in GGUF order.
  ThreadPool* interleave_pool = nullptr;
};

class Model {
 public:
  // Takes ownership of the file: weights are views into its image.
  static Result<std::unique_ptr<Model>> load(std::unique_ptr<gguf::File> file,
                                             const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::File& file() const { return *file_; }
  // How many weight matrices were rearranged at load (ModelLoadOptions::interleave_weights).
  size_t interleaved_matrices() const { return interleaved_matrices_; }

  // Tells the model the context its sequences may reach: past the original context
  // (ModelConfig::n_ctx_orig) LongRoPE files rotate with their long factors, else the short
  // ones (the reference engine chooses so from its context size).
  void use_context(size_t n_ctx);

  // The KV shape a cache for this model must have.
  kv::KvShape kv_shape(size_t page_size) const;

  // Runs one batch. Every entry's position must be reserved in `cache` for its sequence.
  // `out` receives one row per entry with want_logits, in batch order: [n_out][n_vocab] logits,
  // or with OutputKind::kHidden [n_out][n_embd] final-normed hidden states (output_width);
  // `hidden` one [n_embd] row per entry with want_hidden (embeddings), in batch order.
  // Not reentrant: one forward at a time per Model (it reuses its scratch buffers).
  Status forward(const Batch& batch, kv::KvCache& cache, ThreadPool& pool, float* out,
                 OutputKind kind = OutputKind::kLogits, float* hidden = nullptr);

  // Floats per output row of a forward pass of this kind.
  size_t output_width(OutputKind kind) const {
    return kind == OutputKind::kLogits ? config_.n_vocab : config_.n_embd;
  }

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  ModelConfig config_;
  ModelWeights weights_;
  size_t interleaved_matrices_ = 0;
  Activations activations_;
};

}  // namespace strata::model
