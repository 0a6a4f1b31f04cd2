#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "gguf/names.h"

namespace strata::model {
namespace {

// Upper bounds on the `<arch>.*` counts, each far above any released model (largest today:
// 126 blocks, embedding 16384 (32768 in some research models), feed-forward 53248, 128 heads,
// head size 256, vocabularies of ~260K, contexts of 10M) yet small enough that every product
// the model forms from them (q_dim, kv_dim, KV page sizes) fits size_t with room to spare.
constexpr int64_t kMaxBlocks = 4096;
constexpr int64_t kMaxEmbedding = int64_t{1} << 20;
constexpr int64_t kMaxFeedForward = int64_t{1} << 22;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 8192;
constexpr int64_t kMaxContext = int64_t{1} << 30;
// Token ids are int32 and the reader holds at most 2^24 metadata values, so a larger vocabulary
// could not come with its tokenizer.ggml.tokens anyway.
constexpr int64_t kMaxVocab = int64_t{1} << 24;
// Tensors every block of every supported architecture has: attn_norm, attn_q/k/v/output,
// ffn_norm, ffn_gate/up/down. A block_count the tensor table cannot back is refused before the
// per-block weight table is sized from it.
constexpr size_t kMinTensorsPerBlock = 9;

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidFile, std::move(message));
}

// An integer hyper-parameter in [1, max]: past `max` is kOutOfRange, below 1 kInvalidFile.
Result<size_t> require_count(const gguf::File& file, const std::string& key, int64_t max) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) return invalid("missing metadata key " + key + "; the file is not a model");
  std::optional<int64_t> v = gguf::is_integer_type(value->type) ? value->as_int() : std::nullopt;
  if (!v && gguf::is_integer_type(value->type)) {
    return make_error(ErrorCode::kOutOfRange,
                      "metadata key " + key + " is " + gguf::format_value(*value) +
                          ", past strata's limit of " + std::to_string(max) + " (file corrupt?)");
  }
  if (!v) {
    return invalid("metadata key " + key + " must be an integer, got " +
                   std::string(gguf::value_type_name(value->type)) + " " +
                   gguf::format_value(*value, 4, 40));
  }
  if (*v < 1) {
    return invalid("metadata key " + key + " is " + std::to_string(*v) +
                   ", must be at least 1 (file corrupt)");
  }
  if (*v > max) {
    return make_error(ErrorCode::kOutOfRange, "metadata key " + key + " is " + std::to_string(*v) +
                                                  ", past strata's limit of " +
                                                  std::to_string(max) + " (file corrupt?)");
  }
  return static_cast<size_t>(*v);
}

Result<size_t> optional_count(const gguf::File& file, const std::string& key, int64_t max,
                              size_t fallback) {
  if (file.find(key) == nullptr) return fallback;
  return require_count(file, key, max);
}

// A float hyper-parameter (float32 in GGUF; any numeric type accepted) or `fallback` when absent.
// It must be finite and above 0 once narrowed to float, as the forward pass uses it, and below
// `max_exclusive`: a NaN epsilon or a zero RoPE base does not fail anywhere, it turns every
// logit into NaN.
Result<float> positive_float(const gguf::File& file, const std::string& key, float fallback,
                             float max_exclusive = INFINITY) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) return fallback;
  std::optional<double> v =
      value->type == gguf::ValueType::kBool ? std::nullopt : value->as_float();
  if (!v) {
    return invalid("metadata key " + key + " must be a number, got " +
                   std::string(gguf::value_type_name(value->type)) + " " +
                   gguf::format_value(*value, 4, 40));
  }
  const float f = static_cast<float>(*v);
  if (!std::isfinite(f) || !(f > 0) || !(f < max_exclusive)) {
    std::string range = "a finite number above 0";
    if (std::isfinite(max_exclusive)) {
      char bound[32];
      std::snprintf(bound, sizeof bound, " and below %g", static_cast<double>(max_exclusive));
      range += bound;
    }
    return invalid("metadata key " + key + " is " + gguf::format_value(*value) + ", must be " +
                   range + " (file corrupt)");
  }
  return f;
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
  if (!arch) return invalid("missing metadata key general.architecture");
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
    return make_error(ErrorCode::kUnsupported, "unsupported architecture " +
                                                   gguf::quoted_name(*arch) +
                                                   " (supported: llama, qwen2, qwen3)");
  }
  const std::string p = *arch + ".";
  STRATA_ASSIGN_OR_RETURN(c.n_embd, require_count(file, p + "embedding_length", kMaxEmbedding));
  STRATA_ASSIGN_OR_RETURN(c.n_layers, require_count(file, p + "block_count", kMaxBlocks));
  if (c.n_layers > file.tensors().size() / kMinTensorsPerBlock) {
    return invalid("metadata key " + p + "block_count is " + std::to_string(c.n_layers) +
                   " but the file has only " + std::to_string(file.tensors().size()) +
                   " tensors (each block needs at least " + std::to_string(kMinTensorsPerBlock) +
                   "; file corrupt)");
  }
  STRATA_ASSIGN_OR_RETURN(c.n_ff, require_count(file, p + "feed_forward_length", kMaxFeedForward));
  STRATA_ASSIGN_OR_RETURN(c.n_heads, require_count(file, p + "attention.head_count", kMaxHeads));
  STRATA_ASSIGN_OR_RETURN(c.n_ctx_train, require_count(file, p + "context_length", kMaxContext));
  STRATA_ASSIGN_OR_RETURN(
      c.n_kv_heads, optional_count(file, p + "attention.head_count_kv", kMaxHeads, c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid("attention.head_count (" + std::to_string(c.n_heads) +
                   ") is not a multiple of attention.head_count_kv (" +
                   std::to_string(c.n_kv_heads) + ")");
  }
  if (file.find(p + "attention.key_length") == nullptr && c.n_embd % c.n_heads != 0) {
    return invalid("embedding_length (" + std::to_string(c.n_embd) +
                   ") is not a multiple of attention.head_count (" + std::to_string(c.n_heads) +
                   ") and attention.key_length is absent, so the head size is undefined");
  }
  STRATA_ASSIGN_OR_RETURN(c.head_dim, optional_count(file, p + "attention.key_length", kMaxHeadDim,
                                                     c.n_embd / c.n_heads));
  STRATA_ASSIGN_OR_RETURN(
      c.rope_dims, optional_count(file, p + "rope.dimension_count", kMaxHeadDim, c.head_dim));
  if (c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return invalid("rope.dimension_count " + std::to_string(c.rope_dims) +
                   " must be even and at most the head size " + std::to_string(c.head_dim));
  }
  // A norm epsilon of 1 or more is no longer a guard against division by zero but a different
  // model.
  STRATA_ASSIGN_OR_RETURN(
      c.rms_eps, positive_float(file, p + "attention.layer_norm_rms_epsilon", c.rms_eps, 1.0f));
  STRATA_ASSIGN_OR_RETURN(c.rope_freq_base,
                          positive_float(file, p + "rope.freq_base", c.rope_freq_base));

  const gguf::Value* scaling_value = file.find(p + "rope.scaling.type");
  std::string scaling = "none";
  if (scaling_value != nullptr) {
    if (scaling_value->as_string() == nullptr) {
      return invalid("metadata key " + p + "rope.scaling.type must be a string, got " +
                     gguf::format_value(*scaling_value, 4, 40));
    }
    scaling = *scaling_value->as_string();
  }
  if (scaling == "linear") {
    if (file.find(p + "rope.scaling.factor") == nullptr) {
      return invalid("rope.scaling.type is linear but rope.scaling.factor is missing");
    }
    STRATA_ASSIGN_OR_RETURN(float factor, positive_float(file, p + "rope.scaling.factor", 1.0f));
    c.rope_freq_scale = 1.0f / factor;
    if (!std::isfinite(c.rope_freq_scale) || !(c.rope_freq_scale > 0)) {
      return invalid("metadata key " + p + "rope.scaling.factor " + std::to_string(factor) +
                     " is too small to invert (file corrupt)");
    }
  } else if (scaling != "none") {
    return make_error(ErrorCode::kUnsupported, "unsupported rope.scaling.type " +
                                                   gguf::quoted_name(scaling) +
                                                   " (supported: none, linear)");
  }

  if (const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
      tokens && tokens->as_array()) {
    c.n_vocab = tokens->as_array()->values.size();
  }
  if (file.find(p + "vocab_size") != nullptr) {
    STRATA_ASSIGN_OR_RETURN(c.n_vocab, require_count(file, p + "vocab_size", kMaxVocab));
  }
  if (c.n_vocab == 0) {
    return invalid("the vocabulary size is unknown: neither tokenizer.ggml.tokens nor " + p +
                   "vocab_size is present");
  }
  return c;
}

}  // namespace strata::model
