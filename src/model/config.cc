#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>

#include "gguf/names.h"
#include "model/architectures.h"

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

// Tensors of block 0 (blk.0.*): a block_count the tensor table cannot back at that many per
// block is refused before the per-block weight table is sized from it.
size_t block0_tensors(const gguf::File& file) {
  size_t n = 0;
  for (const gguf::TensorInfo& t : file.tensors())
    n += std::string_view(t.name).starts_with("blk.0.");
  return n;
}

// The sizes: embedding, blocks, feed-forward, heads, context, experts.
Status read_sizes(const gguf::File& file, const std::string& p, ModelConfig& c) {
  STRATA_ASSIGN_OR_RETURN(c.n_embd, require_count(file, p + "embedding_length", kMaxEmbedding));
  STRATA_ASSIGN_OR_RETURN(c.n_layers, require_count(file, p + "block_count", kMaxBlocks));
  const size_t per_block = std::max<size_t>(block0_tensors(file), 1);
  if (c.n_layers > file.tensors().size() / per_block) {
    return invalid("metadata key " + p + "block_count is " + std::to_string(c.n_layers) +
                   " but the file has only " + std::to_string(file.tensors().size()) +
                   " tensors (block 0 has " + std::to_string(per_block) + "; file corrupt)");
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
  STRATA_ASSIGN_OR_RETURN(c.n_experts, optional_count(file, p + "expert_count", kMaxHeads, 0));
  if (c.n_experts > 0) {
    STRATA_ASSIGN_OR_RETURN(c.n_experts_used,
                            optional_count(file, p + "expert_used_count", kMaxHeads, 1));
    STRATA_ASSIGN_OR_RETURN(c.n_ff_expert, optional_count(file, p + "expert_feed_forward_length",
                                                          kMaxFeedForward, c.n_ff));
  }
  return ok_status();
}

// A float that may be 0 (YaRN's ext_factor), else as positive_float.
Result<float> non_negative_float(const gguf::File& file, const std::string& key, float fallback) {
  const gguf::Value* value = file.find(key);
  if (value != nullptr && value->as_float() && *value->as_float() == 0) return 0.0f;
  return positive_float(file, key, fallback);
}

// YaRN's parameters, with the reference engine's defaults (ext_factor 1, beta_fast 32,
// beta_slow 1, the training context as the original one) and its attention factor:
// rope.scaling.attn_factor, times mscale(factor, 1) / mscale(factor, yarn_log_multiplier) when
// the file has the multiplier, divided by the 1 + 0.1 ln(factor) the rotation applies itself.
Status read_yarn(const gguf::File& file, const std::string& p, ModelConfig& c) {
  const std::string k = p + "rope.scaling.";
  if (file.find(k + "factor") == nullptr) {
    return invalid("rope.scaling.type is yarn but rope.scaling.factor is missing");
  }
  STRATA_ASSIGN_OR_RETURN(const float factor, positive_float(file, k + "factor", 1.0f));
  c.rope_freq_scale = 1.0f / factor;
  RopeYarn& y = c.rope_yarn;
  STRATA_ASSIGN_OR_RETURN(y.ext_factor, non_negative_float(file, k + "yarn_ext_factor", 1.0f));
  STRATA_ASSIGN_OR_RETURN(y.beta_fast, positive_float(file, k + "yarn_beta_fast", 32.0f));
  STRATA_ASSIGN_OR_RETURN(y.beta_slow, positive_float(file, k + "yarn_beta_slow", 1.0f));
  y.n_ctx_orig = c.n_ctx_orig;
  const float attn_factor = y.attn_factor;  // rope.scaling.attn_factor, read by read_rope
  STRATA_ASSIGN_OR_RETURN(const float log_mul,
                          non_negative_float(file, k + "yarn_log_multiplier", 0.0f));
  auto mscale = [factor](float m) {
    return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f;
  };
  y.attn_factor = log_mul != 0 ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
  if (y.ext_factor != 0) y.attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
  y.attn_factor *= attn_factor;
  return ok_status();
}

// RoPE: rotated dimensions, base, and scaling.
Status read_rope(const gguf::File& file, const std::string& p, ModelConfig& c) {
  STRATA_ASSIGN_OR_RETURN(
      c.rope_dims, optional_count(file, p + "rope.dimension_count", kMaxHeadDim, c.head_dim));
  if (c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return invalid("rope.dimension_count " + std::to_string(c.rope_dims) +
                   " must be even and at most the head size " + std::to_string(c.head_dim));
  }
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
  STRATA_ASSIGN_OR_RETURN(
      c.n_ctx_orig,
      optional_count(file, p + "rope.scaling.original_context_length", kMaxContext, c.n_ctx_train));
  // cos and sin scale by it whatever the scaling (LongRoPE's files carry it).
  STRATA_ASSIGN_OR_RETURN(c.rope_yarn.attn_factor,
                          positive_float(file, p + "rope.scaling.attn_factor", 1.0f));
  if (scaling == "linear" || (scaling == "longrope" && file.find(p + "rope.scaling.factor"))) {
    if (file.find(p + "rope.scaling.factor") == nullptr) {
      return invalid("rope.scaling.type is linear but rope.scaling.factor is missing");
    }
    STRATA_ASSIGN_OR_RETURN(float factor, positive_float(file, p + "rope.scaling.factor", 1.0f));
    c.rope_freq_scale = 1.0f / factor;
    if (!std::isfinite(c.rope_freq_scale) || !(c.rope_freq_scale > 0)) {
      return invalid("metadata key " + p + "rope.scaling.factor " + std::to_string(factor) +
                     " is too small to invert (file corrupt)");
    }
  } else if (scaling == "yarn") {
    STRATA_RETURN_IF_ERROR(read_yarn(file, p, c));
  } else if (scaling != "none" && scaling != "longrope") {
    return make_error(ErrorCode::kUnsupported, "unsupported rope.scaling.type " +
                                                   gguf::quoted_name(scaling) +
                                                   " (supported: none, linear, yarn, longrope)");
  }
  return ok_status();
}

Status read_vocab(const gguf::File& file, const std::string& p, ModelConfig& c) {
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
  return ok_status();
}

// Which layers attend through a sliding window, and their RoPE: attention.sliding_window
// positions (or the architecture's default; none when 0), on the layers
// attention.sliding_window_pattern names (a period n: all but every n-th layer; or a bool per
// layer), else on the architecture's period. Local layers take rope.freq_base_swa.
Status fill_sliding_windows(const gguf::File& file, const std::string& p,
                            const ArchitectureInfo& arch, ModelConfig& c) {
  if (arch.sliding_window_period == 0) return ok_status();
  STRATA_ASSIGN_OR_RETURN(const size_t window,
                          optional_count(file, p + "attention.sliding_window", kMaxContext,
                                         arch.default_sliding_window));
  if (window == 0) return ok_status();
  std::vector<bool> local(c.n_layers);
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const gguf::Value* pattern = file.find(pattern_key);
  if (pattern != nullptr && pattern->as_array() != nullptr) {
    const gguf::Array& flags = *pattern->as_array();
    if (flags.values.size() != c.n_layers) {
      return invalid("metadata key " + pattern_key + " has " + std::to_string(flags.values.size()) +
                     " entries for " + std::to_string(c.n_layers) + " blocks (file corrupt)");
    }
    for (size_t l = 0; l < c.n_layers; ++l) {
      std::optional<bool> flag = flags.values[l].as_bool();
      if (!flag) return invalid("metadata key " + pattern_key + " must be an array of bools");
      local[l] = *flag;
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(const size_t period, optional_count(file, pattern_key, kMaxBlocks,
                                                                arch.sliding_window_period));
    for (size_t l = 0; l < c.n_layers; ++l) local[l] = (l + 1) % period != 0;
  }
  float swa_base = arch.swa_rope_base != 0 ? arch.swa_rope_base : c.rope_freq_base;
  STRATA_ASSIGN_OR_RETURN(swa_base, positive_float(file, p + "rope.freq_base_swa", swa_base));
  const float swa_scale = arch.swa_rope_unscaled ? 1.0f : c.rope_freq_scale;
  for (size_t l = 0; l < c.n_layers; ++l) {
    if (!local[l]) continue;
    c.layers[l].sliding_window = window;
    c.layers[l].rope_freq_base = swa_base;
    c.layers[l].rope_freq_scale = swa_scale;
    if (arch.swa_rope_unscaled) c.layers[l].yarn.ext_factor = 0;
  }
  return ok_status();
}

// One LayerSpec per block: the architecture's defaults, then what the metadata says.
Status fill_layer_specs(const gguf::File& file, const std::string& p, const ArchitectureInfo& arch,
                        ModelConfig& c) {
  LayerSpec s;
  s.norm = arch.norm;
  s.norm_placement = arch.norm_placement;
  s.norm_eps = c.rms_eps;
  if (s.norm == NormKind::kLayer) {
    STRATA_ASSIGN_OR_RETURN(s.norm_eps,
                            positive_float(file, p + "attention.layer_norm_epsilon", 1e-5f, 1.0f));
  }
  s.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  STRATA_ASSIGN_OR_RETURN(s.attn_scale, positive_float(file, p + "attention.scale", s.attn_scale));
  s.rope_style = arch.rope_style;
  s.rope_dims = c.rope_dims;
  s.rope_freq_base = c.rope_freq_base;
  s.rope_freq_scale = c.rope_freq_scale;
  s.yarn = c.rope_yarn;
  s.activation = arch.activation;
  s.qkv_bias = arch.qkv_bias == TensorUse::kRequired;
  s.qk_norm = arch.qk_norm == TensorUse::kRequired;
  s.qk_norm_full_width = arch.qk_norm_full_width;
  if (arch.query_temperature) {
    STRATA_ASSIGN_OR_RETURN(s.query_temp_scale,
                            non_negative_float(file, p + "attention.temperature_scale", 0.0f));
    s.query_temp_floor = c.n_ctx_orig;
  }
  if (arch.granite_multipliers) {
    STRATA_ASSIGN_OR_RETURN(s.residual_scale, positive_float(file, p + "residual_scale", 1.0f));
    STRATA_ASSIGN_OR_RETURN(c.embedding_scale, positive_float(file, p + "embedding_scale", 1.0f));
    STRATA_ASSIGN_OR_RETURN(c.logit_scale, positive_float(file, p + "logit_scale", 1.0f));
  }
  STRATA_ASSIGN_OR_RETURN(s.attn_logit_softcap, positive_float(file, p + "attn_logit_softcapping",
                                                               arch.default_attn_softcap));
  STRATA_ASSIGN_OR_RETURN(c.final_logit_softcap, positive_float(file, p + "final_logit_softcapping",
                                                                arch.default_final_softcap));
  if (arch.wide_query_scale_blocks != 0 && c.n_layers == arch.wide_query_scale_blocks &&
      file.find(p + "attention.scale") == nullptr) {
    const size_t query_pre_attn_scalar = c.n_embd / c.n_heads;  // whole, as Gemma's config has it
    s.attn_scale = 1.0f / std::sqrt(static_cast<float>(query_pre_attn_scalar));
  }
  c.layers.assign(c.n_layers, s);
  for (size_t l = 0; l < c.n_layers; ++l) {
    c.layers[l].rope =
        arch.rope && (arch.no_rope_period == 0 || (l + 1) % arch.no_rope_period != 0);
  }
  return fill_sliding_windows(file, p, arch, c);
}

}  // namespace

const char* norm_kind_name(NormKind kind) {
  return kind == NormKind::kRms ? "RMSNorm" : "LayerNorm";
}

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kSwiGlu:
      return "SwiGLU";
    case Activation::kGeGlu:
      return "GeGLU";
    case Activation::kGelu:
      return "GELU";
  }
  return "?";
}

Result<ModelConfig> read_config(const gguf::File& file) {
  ModelConfig c;
  std::optional<std::string> name = file.get_string("general.architecture");
  if (!name) return invalid("missing metadata key general.architecture");
  const ArchitectureInfo* arch = find_architecture(*name);
  if (arch == nullptr) {
    return make_error(ErrorCode::kUnsupported,
                      "unsupported architecture " + gguf::quoted_name(*name) +
                          " (supported: " + supported_architecture_names() + ")");
  }
  c.arch = arch->arch;
  c.arch_name = *name;
  c.rope_style = arch->rope_style;
  const std::string p = *name + ".";
  STRATA_RETURN_IF_ERROR(read_sizes(file, p, c));
  STRATA_RETURN_IF_ERROR(read_rope(file, p, c));
  // A norm epsilon of 1 or more is no longer a guard against division by zero but a different
  // model.
  STRATA_ASSIGN_OR_RETURN(
      c.rms_eps, positive_float(file, p + "attention.layer_norm_rms_epsilon", c.rms_eps, 1.0f));
  STRATA_RETURN_IF_ERROR(read_vocab(file, p, c));
  STRATA_RETURN_IF_ERROR(fill_layer_specs(file, p, *arch, c));
  if (arch->scale_embeddings) c.embedding_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.encoder = arch->encoder;
  c.learned_positions = arch->learned_positions;
  c.causal = !arch->encoder;
  if (const gguf::Value* causal = file.find(p + "attention.causal")) {
    std::optional<bool> flag = causal->as_bool();
    if (!flag) return invalid("metadata key " + p + "attention.causal must be a bool");
    c.causal = *flag;
  }
  if (const gguf::Value* pooling = file.find(p + "pooling_type")) {
    std::optional<int64_t> type =
        gguf::is_integer_type(pooling->type) ? pooling->as_int() : std::nullopt;
    if (!type || *type < 0 || *type > 4) {
      return invalid("metadata key " + p + "pooling_type must be 0 (none), 1 (mean), 2 (cls), " +
                     "3 (last) or 4 (rank), got " + gguf::format_value(*pooling, 4, 40));
    }
    c.pooling_type = static_cast<uint32_t>(*type);
  }
  return c;
}

Status check_supported(const ModelConfig& c) {
  auto unsupported = [&](const std::string& what) {
    return make_error(ErrorCode::kUnsupported, "architecture " + gguf::quoted_name(c.arch_name) +
                                                   ": " + what + " is not supported yet");
  };
  if (c.n_experts > 0) {
    return unsupported("a mixture-of-experts feed-forward network (" + std::to_string(c.n_experts) +
                       " experts)");
  }
  return ok_status();
}

}  // namespace strata::model
