// `strata synth`: a GGUF of a supported architecture with seeded random weights at the shapes of
// real models.
//
// Scales: a projection with fan_in inputs draws from N(0, 1/fan_in), so a unit-RMS input (after
// RMSNorm) gives unit-variance outputs. W_o and W_down write into the residual stream; drawing
// them from N(0, 1/(fan_in * 2 * n_layers)) makes the 2 * n_layers residual additions sum to
// variance ~1, so activations stay finite over every depth. Embeddings and the output
// projection use 1/n_embd, which keeps logits O(1) as in trained models. Norm weights are 1 for
// llama files; for the other architectures they are drawn around 1 (N(1, 0.1^2)), so that a
// norm applied with the wrong weights shows in the logits (the differential tests against the
// reference engine rely on it).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/fp16.h"
#include "base/timer.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "platform/thread_pool.h"
#include "strata/model_tools.h"

namespace strata {
namespace {

struct Preset {
  const char* name;
  uint32_t n_embd, n_layers, n_heads, n_kv_heads, head_dim, n_ff;
  float rope_freq_base;     // Llama 3.x uses 500000; Llama 2 (and the tiny preset) 10000
  bool tied_embeddings;     // output.weight absent: the output projection reuses token_embd
  uint32_t sliding_window;  // of the local layers, for architectures that have them
};

// tiny-gqa, the differential tests' shape: grouped-query 4:1 and a head size (48) other than
// n_embd / n_heads (32), six blocks so that Gemma 3's pattern has a global layer, a window of 96
// so that a 300-token prompt spans three.
constexpr Preset kPresets[] = {
    {"tiny", 256, 4, 8, 4, 32, 768, 10000.0f, false, 64},
    {"tiny-gqa", 256, 6, 8, 2, 48, 768, 10000.0f, false, 96},
    {"llama-1b", 2048, 16, 32, 8, 64, 8192, 500000.0f, true, 4096},
    {"llama-3b", 3072, 28, 24, 8, 128, 8192, 500000.0f, true, 4096},
    {"llama-8b", 4096, 32, 32, 8, 128, 14336, 500000.0f, false, 4096},
    {"gemma3-1b", 1152, 26, 4, 1, 256, 6912, 1000000.0f, true, 512},
    {"bert-base", 768, 12, 12, 12, 64, 3072, 10000.0f, false, 0},  // bge-base, e5-base
};

// What an architecture adds to the Llama file of a preset's shape (see model/architectures.cc
// for what each means to the forward pass).
struct SynthArch {
  const char* name;
  bool pre_norms = true;            // blk.N.attn_norm, blk.N.ffn_norm
  bool post_norms = false;          // blk.N.post_attention_norm, blk.N.post_ffw_norm
  bool qk_norm = false;             // blk.N.attn_q_norm, blk.N.attn_k_norm [head_dim]
  bool qk_norm_full_width = false;  // ... [q_dim], [kv_dim] instead
  bool tied = false;                // token_embd is the output projection whatever the preset says
  bool sliding_window = false;      // attention.sliding_window = the preset's window
  // Small enough that tanh bends on random weights' scores and logits (real Gemma 2: 50, 30).
  float attn_softcap = 0, final_softcap = 0;
  float swa_rope_base = 0;       // rope.freq_base_swa, when set
  float rope_linear_factor = 0;  // rope.scaling.type linear with this factor, when set
  bool jitter_norms = true;      // norm weights N(1, 0.1^2) rather than 1
  // Granite's multipliers (embedding_scale, residual_scale, logit_scale, attention.scale),
  // written when set.
  float embedding_scale = 0, residual_scale = 0, logit_scale = 0, attention_scale = 0;
  // Head size n_embd / n_heads whatever the preset says (the reference engine's OLMo 2 loader
  // has no other).
  bool embd_head_dim = false;
  // YaRN (rope.scaling.type yarn) with this factor over an original context this short, so a
  // 345-token prompt runs past it; and Mistral 3's query temperature scale.
  float yarn_factor = 0;
  uint32_t yarn_original_context = 0;
  float temperature_scale = 0;
  // Phi-3: attn_qkv and ffn_up (gate rows, then up rows) fused; RoPE on this share of each head
  // (Phi-4-mini rotates 3/4); LongRoPE factor sets with this original context (a 1,024-token
  // context then takes the long ones) and rope.scaling.attn_factor.
  bool fused_qkv = false, fused_gate_up = false;
  float rotary_fraction = 1;
  uint32_t longrope_original_context = 0;
  float rope_attn_factor = 0;
  // Encoders (BERT family): attention.causal false, LayerNorm with biases after each residual
  // add (attn_output_norm, layer_output_norm) and on the inputs (token_embd_norm), token_types,
  // biases on the attention's projections (and BERT's feed-forward ones), no output head;
  // learned positions (position_embd over a
  // context this long) and a plain GELU feed-forward network (no ffn_gate) for BERT itself.
  bool encoder = false;
  uint32_t learned_positions = 0;
  bool gelu = false;
};

uint32_t rope_dims(const Preset& p, const SynthArch& a) {
  return static_cast<uint32_t>(static_cast<float>(p.head_dim) * a.rotary_fraction) & ~1u;
}

constexpr SynthArch kArchitectures[] = {
    {.name = "llama", .jitter_norms = false},
    {.name = "gemma", .tied = true},
    {.name = "gemma2",
     .post_norms = true,
     .tied = true,
     .sliding_window = true,
     .attn_softcap = 1.5f,
     .final_softcap = 3.0f},
    // Gemma 3 files may carry output.weight; the tiny one does, so a greedy continuation is not
    // the tied embedding's echo of the last token.
    {.name = "gemma3",
     .post_norms = true,
     .qk_norm = true,
     .sliding_window = true,
     .swa_rope_base = 10000.0f,
     .rope_linear_factor = 8.0f},
    {.name = "qwen3", .qk_norm = true},
    {.name = "smollm3", .tied = true},
    {.name = "granite",
     .embedding_scale = 12.0f,
     .residual_scale = 0.22f,
     .logit_scale = 8.0f,
     .attention_scale = 0.015625f},
    {.name = "mistral3",
     .yarn_factor = 4.0f,
     .yarn_original_context = 128,
     .temperature_scale = 0.1f},
    {.name = "phi3",
     .embd_head_dim = true,
     .fused_qkv = true,
     .fused_gate_up = true,
     .rotary_fraction = 0.75f,
     .longrope_original_context = 256,
     .rope_attn_factor = 1.19f},
    {.name = "olmo2",
     .pre_norms = false,
     .post_norms = true,
     .qk_norm = true,
     .qk_norm_full_width = true,
     .embd_head_dim = true},
    {.name = "bert",
     .pre_norms = false,
     .embd_head_dim = true,
     .encoder = true,
     .learned_positions = 512,
     .gelu = true},
    {.name = "nomic-bert",
     .pre_norms = false,
     .embd_head_dim = true,
     .fused_qkv = true,
     .encoder = true},
};

constexpr uint32_t kContextLength = 8192;
constexpr float kRmsEps = 1e-5f;
constexpr float kLayerNormEps = 1e-12f;  // BERT's
// llama.cpp's LLAMA_FTYPE ids for general.file_type.
constexpr uint32_t kFileTypeAllF32 = 0;
constexpr uint32_t kFileTypeMostlyF16 = 1;

// splitmix64's output function: a bijective 64-bit mix (Steele, Lea, Flood 2014).
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A splitmix64 stream seeded per (seed, tensor, row), so rows can be generated in any order on
// any number of threads and still give the same file.
class RowRandom {
 public:
  RowRandom(uint64_t seed, uint64_t tensor, uint64_t row)
      : state_(mix64(mix64(seed ^ mix64(tensor + 1)) + row)) {}

  // Approximately N(0, 1) by Irwin-Hall: the sum of four 16-bit uniforms, centred and scaled to
  // unit variance. Integer arithmetic and one multiply, so the value is bit-identical on every
  // platform (libm's log/cos, which Box-Muller needs, are not).
  int32_t next_centred_sum() {
    state_ += 0x9e3779b97f4a7c15ull;
    const uint64_t r = mix64(state_);
    const int32_t sum = static_cast<int32_t>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                             ((r >> 32) & 0xffff) + (r >> 48));
    return sum - 2 * 65535;
  }

 private:
  uint64_t state_;
};

// Standard deviation of the centred sum of four uniforms on {0..65535}: sqrt(4 (65536^2-1)/12).
const double kIrwinHallStd = std::sqrt((65536.0 * 65536.0 - 1.0) / 3.0);

struct SynthTensor {
  std::string name;
  std::vector<uint64_t> dims;  // {cols, rows} for matrices, {n} for norms
  DType type;
  double stddev;   // of the elements around `mean`; 0 for norm weights of exactly 1
  float mean = 0;  // 1 for norm weights
};

std::vector<SynthTensor> tensor_plan(const Preset& p, const SynthArch& a, uint64_t n_vocab,
                                     DType type) {
  const uint64_t q_dim = uint64_t{p.n_heads} * p.head_dim;
  const uint64_t kv_dim = uint64_t{p.n_kv_heads} * p.head_dim;
  const double residual = 2.0 * p.n_layers;
  auto matrix = [&](std::string name, uint64_t cols, uint64_t rows, double var_scale) {
    return SynthTensor{std::move(name), {cols, rows}, type, 1.0 / std::sqrt(cols * var_scale)};
  };
  auto norm = [&](std::string name, uint64_t n = 0) {
    return SynthTensor{
        std::move(name), {n ? n : p.n_embd}, DType::kF32, a.jitter_norms ? 0.1 : 0.0, 1.0f};
  };
  // A LayerNorm's weight and bias, or a projection's bias (drawn around 0).
  auto layer_norm = [&](std::vector<SynthTensor>& plan, const std::string& name) {
    plan.push_back(norm(name + ".weight"));
    plan.push_back(SynthTensor{name + ".bias", {p.n_embd}, DType::kF32, 0.1});
  };
  auto bias = [&](std::string name, uint64_t n) {
    return SynthTensor{std::move(name), {n}, DType::kF32, 0.05};
  };
  std::vector<SynthTensor> plan;
  plan.push_back(matrix("token_embd.weight", p.n_embd, n_vocab, 1.0));
  if (a.encoder) {
    if (a.learned_positions != 0) {
      plan.push_back(matrix("position_embd.weight", p.n_embd, a.learned_positions, 1.0));
    }
    // In F32 whatever the type, as converted files have it (the reference engine adds the row
    // to the f32 embeddings directly).
    SynthTensor token_types = matrix("token_types.weight", p.n_embd, 2, 1.0);
    token_types.type = DType::kF32;
    plan.push_back(token_types);
    layer_norm(plan, "token_embd_norm");
  } else {
    plan.push_back(norm("output_norm.weight"));
  }
  if (!p.tied_embeddings && !a.tied && !a.encoder) {
    plan.push_back(matrix("output.weight", p.n_embd, n_vocab, 1.0));
  }
  if (a.longrope_original_context != 0) {
    // Divisors of each pair's frequency, around 2 (long) and 1.5 (short), all above 0.
    const uint64_t n = rope_dims(p, a) / 2;
    plan.push_back(SynthTensor{"rope_factors_long.weight", {n}, DType::kF32, 0.4, 2.0f});
    plan.push_back(SynthTensor{"rope_factors_short.weight", {n}, DType::kF32, 0.2, 1.5f});
  }
  for (uint32_t i = 0; i < p.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    if (a.pre_norms) plan.push_back(norm(b + "attn_norm.weight"));
    if (a.fused_qkv) {
      plan.push_back(matrix(b + "attn_qkv.weight", p.n_embd, q_dim + 2 * kv_dim, 1.0));
      if (a.encoder) plan.push_back(bias(b + "attn_qkv.bias", q_dim + 2 * kv_dim));
    } else {
      plan.push_back(matrix(b + "attn_q.weight", p.n_embd, q_dim, 1.0));
      plan.push_back(matrix(b + "attn_k.weight", p.n_embd, kv_dim, 1.0));
      plan.push_back(matrix(b + "attn_v.weight", p.n_embd, kv_dim, 1.0));
      for (auto [name, n] : {std::pair{"attn_q", q_dim}, {"attn_k", kv_dim}, {"attn_v", kv_dim}}) {
        if (a.encoder) plan.push_back(bias(b + name + ".bias", n));
      }
    }
    if (a.qk_norm) {
      plan.push_back(norm(b + "attn_q_norm.weight", a.qk_norm_full_width ? q_dim : p.head_dim));
      plan.push_back(norm(b + "attn_k_norm.weight", a.qk_norm_full_width ? kv_dim : p.head_dim));
    }
    plan.push_back(matrix(b + "attn_output.weight", q_dim, p.n_embd, residual));
    if (a.encoder) plan.push_back(bias(b + "attn_output.bias", p.n_embd));
    if (a.encoder) layer_norm(plan, b + "attn_output_norm");
    if (a.post_norms) plan.push_back(norm(b + "post_attention_norm.weight"));
    if (a.pre_norms) plan.push_back(norm(b + "ffn_norm.weight"));
    if (a.fused_gate_up) {
      plan.push_back(matrix(b + "ffn_up.weight", p.n_embd, 2 * uint64_t{p.n_ff}, 1.0));
    } else {
      if (!a.gelu) plan.push_back(matrix(b + "ffn_gate.weight", p.n_embd, p.n_ff, 1.0));
      plan.push_back(matrix(b + "ffn_up.weight", p.n_embd, p.n_ff, 1.0));
    }
    // nomic-bert files have no feed-forward biases (the reference engine would ignore them).
    if (a.gelu) plan.push_back(bias(b + "ffn_up.bias", p.n_ff));
    plan.push_back(matrix(b + "ffn_down.weight", p.n_ff, p.n_embd, residual));
    if (a.gelu) plan.push_back(bias(b + "ffn_down.bias", p.n_embd));
    if (a.encoder) layer_norm(plan, b + "layer_output_norm");
    if (a.post_norms) plan.push_back(norm(b + "post_ffw_norm.weight"));
  }
  return plan;
}

// Fills one row of `cols` elements of `t` (the tensor at `index` in the plan).
void fill_row(const SynthTensor& t, uint64_t seed, size_t index, size_t row, uint8_t* dst) {
  const size_t cols = t.dims[0];
  RowRandom rng(seed, index, row);
  const float scale = static_cast<float>(t.stddev / kIrwinHallStd);
  for (size_t c = 0; c < cols; ++c) {
    const float v =
        t.stddev == 0 ? t.mean : t.mean + static_cast<float>(rng.next_centred_sum()) * scale;
    if (t.type == DType::kF16) {
      const uint16_t h = fp32_to_fp16(v);
      std::memcpy(dst + 2 * c, &h, 2);
    } else {
      std::memcpy(dst + 4 * c, &v, 4);
    }
  }
}

// The names of a table's entries, in order.
template <class Entry, size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
  std::vector<std::string> names;
  for (const Entry& e : table) names.emplace_back(e.name);
  return names;
}

// The entry of `table` called `name`, or an error listing the names (`what`: "preset", ...).
template <class Entry, size_t N>
Result<const Entry*> find_named(const Entry (&table)[N], const std::string& name,
                                const char* what) {
  std::string names;
  for (const Entry& e : table) {
    if (name == e.name) return &e;
    names += (names.empty() ? "" : ", ") + std::string(e.name);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown " + std::string(what) + " '" + name + "'; use one of: " + names);
}

// The `<arch>.*` hyper-parameters of preset p for architecture a.
void write_hyperparameters(const Preset& p, const SynthArch& a, uint64_t n_vocab,
                           gguf::Writer& writer) {
  const std::string k = std::string(a.name) + ".";
  writer.set(k + "vocab_size", gguf::Value::uint32(static_cast<uint32_t>(n_vocab)));
  writer.set(k + "context_length",
             gguf::Value::uint32(a.learned_positions ? a.learned_positions : kContextLength));
  writer.set(k + "embedding_length", gguf::Value::uint32(p.n_embd));
  writer.set(k + "block_count", gguf::Value::uint32(p.n_layers));
  writer.set(k + "feed_forward_length", gguf::Value::uint32(p.n_ff));
  writer.set(k + "attention.head_count", gguf::Value::uint32(p.n_heads));
  writer.set(k + "attention.head_count_kv", gguf::Value::uint32(p.n_kv_heads));
  if (p.head_dim != p.n_embd / p.n_heads) {
    writer.set(k + "attention.key_length", gguf::Value::uint32(p.head_dim));
    writer.set(k + "attention.value_length", gguf::Value::uint32(p.head_dim));
  }
  writer.set(k + "rope.dimension_count", gguf::Value::uint32(rope_dims(p, a)));
  if (a.longrope_original_context != 0) {
    writer.set(k + "rope.scaling.original_context_length",
               gguf::Value::uint32(a.longrope_original_context));
  }
  if (a.rope_attn_factor != 0) {
    writer.set(k + "rope.scaling.attn_factor", gguf::Value::float32(a.rope_attn_factor));
  }
  writer.set(k + "rope.freq_base", gguf::Value::float32(p.rope_freq_base));
  if (a.encoder) {
    writer.set(k + "attention.layer_norm_epsilon", gguf::Value::float32(kLayerNormEps));
    writer.set(k + "attention.causal", gguf::Value::boolean(false));
  } else {
    writer.set(k + "attention.layer_norm_rms_epsilon", gguf::Value::float32(kRmsEps));
  }
  if (a.sliding_window) {
    writer.set(k + "attention.sliding_window", gguf::Value::uint32(p.sliding_window));
  }
  if (a.attn_softcap != 0) {
    writer.set(k + "attn_logit_softcapping", gguf::Value::float32(a.attn_softcap));
  }
  if (a.final_softcap != 0) {
    writer.set(k + "final_logit_softcapping", gguf::Value::float32(a.final_softcap));
  }
  if (a.swa_rope_base != 0) {
    writer.set(k + "rope.freq_base_swa", gguf::Value::float32(a.swa_rope_base));
  }
  for (auto [key, value] : {std::pair{"embedding_scale", a.embedding_scale},
                            {"residual_scale", a.residual_scale},
                            {"logit_scale", a.logit_scale},
                            {"attention.scale", a.attention_scale}}) {
    if (value != 0) writer.set(k + key, gguf::Value::float32(value));
  }
  if (a.yarn_factor != 0) {
    writer.set(k + "rope.scaling.type", gguf::Value::string("yarn"));
    writer.set(k + "rope.scaling.factor", gguf::Value::float32(a.yarn_factor));
    writer.set(k + "rope.scaling.original_context_length",
               gguf::Value::uint32(a.yarn_original_context));
  }
  if (a.temperature_scale != 0) {
    writer.set(k + "attention.temperature_scale", gguf::Value::float32(a.temperature_scale));
  }
  if (a.rope_linear_factor != 0) {
    writer.set(k + "rope.scaling.type", gguf::Value::string("linear"));
    writer.set(k + "rope.scaling.factor", gguf::Value::float32(a.rope_linear_factor));
  }
}

Result<DType> synth_type(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  if (upper == "F16") return DType::kF16;
  if (upper == "F32") return DType::kF32;
  return make_error(ErrorCode::kInvalidArgument,
                    "unsupported weight type '" + name + "' for synth; use F16 or F32");
}

// Appends "<|reserved_special_token_i|>" control tokens (GGUF token type 3, score 0) to the
// copied tokens, token types and scores until there are n_vocab.
void pad_vocabulary(const gguf::File& vocab, uint64_t n_vocab, gguf::Writer& writer) {
  const gguf::Array* tokens = vocab.get_array("tokenizer.ggml.tokens");
  if (tokens->values.size() >= n_vocab) return;
  constexpr int64_t kControlToken = 3;
  gguf::Array padded_tokens = *tokens;
  for (uint64_t i = 0; padded_tokens.values.size() < n_vocab; ++i) {
    padded_tokens.values.push_back(
        gguf::Value::string("<|reserved_special_token_" + std::to_string(i) + "|>"));
  }
  writer.set("tokenizer.ggml.tokens", gguf::Value{gguf::ValueType::kArray, padded_tokens});
  if (const gguf::Array* types = vocab.get_array("tokenizer.ggml.token_type")) {
    gguf::Array padded = *types;
    padded.values.resize(n_vocab, gguf::Value::int32(kControlToken));
    writer.set("tokenizer.ggml.token_type", gguf::Value{gguf::ValueType::kArray, padded});
  }
  if (const gguf::Array* scores = vocab.get_array("tokenizer.ggml.scores")) {
    gguf::Array padded = *scores;
    padded.values.resize(n_vocab, gguf::Value::float32(0.0f));
    writer.set("tokenizer.ggml.scores", gguf::Value{gguf::ValueType::kArray, padded});
  }
}

}  // namespace

std::vector<std::string> synth_architecture_names() { return names_of(kArchitectures); }

std::vector<std::string> synth_preset_names() { return names_of(kPresets); }

Status synthesize_model(const SynthOptions& options, const WriteProgressCallback& progress) {
  STRATA_RETURN_IF_ERROR(check_thread_count(options.threads));
  STRATA_ASSIGN_OR_RETURN(const Preset* preset, find_named(kPresets, options.preset, "preset"));
  STRATA_ASSIGN_OR_RETURN(const SynthArch* arch,
                          find_named(kArchitectures, options.arch, "architecture"));
  STRATA_ASSIGN_OR_RETURN(DType type, synth_type(options.type));
  if (options.output_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "no output path; pass -o OUT.gguf");
  }
  Result<std::unique_ptr<gguf::File>> vocab = gguf::File::open(options.vocab_path);
  if (!vocab.ok()) {
    return make_error(vocab.error().code,
                      "vocabulary file " + options.vocab_path + ": " + vocab.error().message);
  }
  const gguf::Array* tokens = (*vocab)->get_array("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->values.empty()) {
    return make_error(ErrorCode::kInvalidFile,
                      "vocabulary file " + options.vocab_path +
                          " has no tokenizer.ggml.tokens; pass --vocab with a model's GGUF");
  }
  const uint64_t n_copied = tokens->values.size();
  if (options.n_vocab != 0 && options.n_vocab < n_copied) {
    return make_error(ErrorCode::kInvalidArgument, "--n-vocab " + std::to_string(options.n_vocab) +
                                                       " is below the " + std::to_string(n_copied) +
                                                       " tokens of " + options.vocab_path +
                                                       "; pass 0 or a larger size");
  }
  const uint64_t n_vocab = std::max(options.n_vocab, n_copied);
  Preset p = *preset;
  if (arch->embd_head_dim) p.head_dim = p.n_embd / p.n_heads;

  gguf::Writer writer;
  writer.set("general.architecture", gguf::Value::string(arch->name));
  // Not the architecture's name: the reference engine sets token attributes by names it finds
  // in general.name ("phi3"), and the copied vocabulary lacks the tokens it then looks up.
  writer.set("general.name", gguf::Value::string(std::string("strata synth ") + p.name));
  writer.set("general.file_type",
             gguf::Value::uint32(type == DType::kF16 ? kFileTypeMostlyF16 : kFileTypeAllF32));
  write_hyperparameters(p, *arch, n_vocab, writer);
  if (options.pooling_type >= 0) {
    writer.set(std::string(arch->name) + ".pooling_type",
               gguf::Value::uint32(static_cast<uint32_t>(options.pooling_type)));
  }
  for (const auto& [key, value] : (*vocab)->metadata()) {
    if (key.starts_with("tokenizer.")) writer.set(key, value);
  }
  pad_vocabulary(**vocab, n_vocab, writer);

  const std::vector<SynthTensor> plan = tensor_plan(p, *arch, n_vocab, type);
  uint64_t bytes_total = 0;
  for (const SynthTensor& t : plan) {
    bytes_total += row_bytes(t.type, t.dims[0]) * (t.dims.size() > 1 ? t.dims[1] : 1);
  }
  ThreadPool pool(static_cast<size_t>(std::max(options.threads, 0)));
  Timer timer;
  WriteProgress state{0, plan.size(), "", 0, bytes_total, 0};
  for (size_t i = 0; i < plan.size(); ++i) {
    const SynthTensor* t = &plan[i];
    const size_t rows = t->dims.size() > 1 ? t->dims[1] : 1;
    const size_t stride = row_bytes(t->type, t->dims[0]);
    STRATA_RETURN_IF_ERROR(writer.add_tensor_generator(
        t->name, t->type, t->dims, [&, t, i, rows, stride](uint8_t* dst) {
          pool.parallel_for(
              rows, [&](size_t r, size_t) { fill_row(*t, options.seed, i, r, dst + r * stride); });
          state.tensor_index = i + 1;
          state.tensor_name = t->name;
          state.bytes_done += rows * stride;
          state.elapsed_seconds = timer.elapsed_seconds();
          if (progress) progress(state);
        }));
  }
  return writer.write(options.output_path);
}

}  // namespace strata
