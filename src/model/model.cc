#include "model/model.h"

#include <string>

#include "gguf/names.h"
#include "model/forward.h"

namespace strata::model {

Result<std::unique_ptr<Model>> Model::load(std::unique_ptr<gguf::File> file,
                                           const ModelLoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  STRATA_ASSIGN_OR_RETURN(m->config_, read_config(*file));
  STRATA_RETURN_IF_ERROR(check_supported(m->config_));
  Result<ModelWeights> weights = load_weights(*file, m->config_);
  if (!weights.ok()) {
    // Which tensor and shape the message names; which architecture expected it, here.
    return make_error(
        weights.error().code,
        "architecture " + gguf::quoted_name(m->config_.arch_name) + ": " + weights.error().message);
  }
  m->weights_ = std::move(weights).value();
  if (options.interleave_pool != nullptr) {
    m->interleaved_matrices_ = interleave_weights(*file, m->weights_, *options.interleave_pool);
  }
  m->file_ = std::move(file);
  return m;
}

void Model::use_context(size_t n_ctx) { weights_.long_rope = n_ctx > config_.n_ctx_orig; }

kv::KvShape Model::kv_shape(size_t page_size) const {
  kv::KvShape shape{config_.n_layers, config_.n_kv_heads, config_.head_dim, page_size};
  // Sliding-window layers (one window for all of them) keep their KV in pages' window parts,
  // released as sequences move on. An encoder reads every position, ahead too: none.
  if (config_.encoder) return shape;
  for (size_t l = 0; l < config_.n_layers; ++l) {
    if (config_.layers[l].sliding_window == 0) continue;
    shape.window_layers.resize(config_.n_layers);
    shape.window_layers[l] = true;
    shape.window = config_.layers[l].sliding_window;
  }
  return shape;
}

Status Model::forward(const Batch& batch, kv::KvCache& cache, ThreadPool& pool, float* out,
                      OutputKind kind, float* hidden) {
  for (const BatchEntry& e : batch) {
    if (e.want_logits && kind == OutputKind::kLogits && config_.encoder) {
      return make_error(ErrorCode::kInvalidArgument,
                        "architecture " + gguf::quoted_name(config_.arch_name) +
                            " is an encoder: it has no output head, so no logits; ask it for "
                            "embeddings");
    }
    if (config_.learned_positions && e.pos >= config_.n_ctx_train) {
      return make_error(ErrorCode::kInvalidArgument,
                        "position " + std::to_string(e.pos) + " is past the " +
                            std::to_string(config_.n_ctx_train) + " positions the model learned");
    }
    if (e.want_hidden && hidden == nullptr) {
      return make_error(ErrorCode::kInternal, "a batch entry wants its hidden state but no buffer");
    }
    if (e.token < 0 || static_cast<size_t>(e.token) >= config_.n_vocab) {
      return make_error(ErrorCode::kInvalidArgument, "token id " + std::to_string(e.token) +
                                                         " is outside the vocabulary (0.." +
                                                         std::to_string(config_.n_vocab - 1) + ")");
    }
    if (e.pos >= cache.capacity(e.seq)) {
      return make_error(ErrorCode::kInternal, "position " + std::to_string(e.pos) +
                                                  " of sequence " + std::to_string(e.seq) +
                                                  " has no KV page reserved");
    }
  }
  if (batch.empty()) return ok_status();
  activations_.reserve(batch.size(), config_);
  model::forward({config_, weights_, batch, cache, pool, activations_, kind, out, hidden});
  return ok_status();
}

}  // namespace strata::model
