#include "model/config.h"

namespace strata::model {
namespace {

Result<size_t> require_count(const gguf::File& file, const std::string& key) {
  std::optional<int64_t> v = file.get_int(key);
  if (!v) return make_error(ErrorCode::kInvalidFile, "missing or non-integer metadata key " + key);
  if (*v <= 0 || *v > (int64_t{1} << 32)) {
    return make_error(ErrorCode::kInvalidFile,
                      "metadata key " + key + " has invalid value " + std::to_string(*v));
  }
  return static_cast<size_t>(*v);
}

}  // namespace

const char* architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "?";
}

Result<ModelConfig> read_config(const gguf::File& file) {
  ModelConfig c;
  std::optional<std::string> arch = file.get_string("general.architecture");
  if (!arch)
    return make_error(ErrorCode::kInvalidFile, "missing metadata key general.architecture");
  c.arch_name = *arch;
  if (*arch == "llama") {
    c.arch = Architecture::kLlama;
  } else if (*arch == "qwen2") {
    c.arch = Architecture::kQwen2;
    c.rope_style = RopeStyle::kNeox;
  } else if (*arch == "qwen3") {
    c.arch = Architecture::kQwen3;
    c.rope_style = RopeStyle::kNeox;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "unsupported architecture '" + *arch + "' (supported: llama, qwen2, qwen3)");
  }
  const std::string p = *arch + ".";
  STRATA_ASSIGN_OR_RETURN(c.n_embd, require_count(file, p + "embedding_length"));
  STRATA_ASSIGN_OR_RETURN(c.n_layers, require_count(file, p + "block_count"));
  STRATA_ASSIGN_OR_RETURN(c.n_ff, require_count(file, p + "feed_forward_length"));
  STRATA_ASSIGN_OR_RETURN(c.n_heads, require_count(file, p + "attention.head_count"));
  STRATA_ASSIGN_OR_RETURN(c.n_ctx_train, require_count(file, p + "context_length"));
  c.n_kv_heads = c.n_heads;
  if (file.find(p + "attention.head_count_kv")) {
    STRATA_ASSIGN_OR_RETURN(c.n_kv_heads, require_count(file, p + "attention.head_count_kv"));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return make_error(ErrorCode::kInvalidFile,
                      "attention.head_count (" + std::to_string(c.n_heads) +
                          ") is not a multiple of attention.head_count_kv (" +
                          std::to_string(c.n_kv_heads) + ")");
  }
  c.head_dim = c.n_embd / c.n_heads;
  if (file.find(p + "attention.key_length")) {
    STRATA_ASSIGN_OR_RETURN(c.head_dim, require_count(file, p + "attention.key_length"));
  }
  c.rope_dims = c.head_dim;
  if (file.find(p + "rope.dimension_count")) {
    STRATA_ASSIGN_OR_RETURN(c.rope_dims, require_count(file, p + "rope.dimension_count"));
  }
  if (c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return make_error(ErrorCode::kInvalidFile,
                      "rope.dimension_count " + std::to_string(c.rope_dims) +
                          " must be even and at most the head size " + std::to_string(c.head_dim));
  }
  if (auto eps = file.get_float(p + "attention.layer_norm_rms_epsilon")) c.rms_eps = *eps;
  if (auto base = file.get_float(p + "rope.freq_base")) c.rope_freq_base = *base;

  std::string scaling = file.get_string(p + "rope.scaling.type").value_or("none");
  if (scaling == "linear") {
    std::optional<double> factor = file.get_float(p + "rope.scaling.factor");
    if (!factor || *factor <= 0) {
      return make_error(ErrorCode::kInvalidFile,
                        "rope.scaling.type is linear but rope.scaling.factor is missing");
    }
    c.rope_freq_scale = static_cast<float>(1.0 / *factor);
  } else if (scaling != "none") {
    return make_error(ErrorCode::kUnsupported,
                      "unsupported rope.scaling.type '" + scaling + "' (supported: none, linear)");
  }

  if (const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
      tokens && tokens->as_array()) {
    c.n_vocab = tokens->as_array()->values.size();
  }
  if (auto n = file.get_int(p + "vocab_size")) c.n_vocab = static_cast<size_t>(*n);
  return c;
}

}  // namespace strata::model
