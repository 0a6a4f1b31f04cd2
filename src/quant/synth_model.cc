// `strata synth`: a Llama GGUF with seeded random weights at the shapes of real models.
//
// Scales: a projection with fan_in inputs draws from N(0, 1/fan_in), so a unit-RMS input (after
// RMSNorm) gives unit-variance outputs. W_o and W_down write into the residual stream; drawing
// them from N(0, 1/(fan_in * 2 * n_layers)) makes the 2 * n_layers residual additions sum to
// variance ~1, so activations stay finite over every depth. Embeddings and the output
// projection use 1/n_embd, which keeps logits O(1) as in trained models. Norm weights are 1.
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
  uint32_t n_embd, n_layers, n_heads, n_kv_heads, n_ff;
  float rope_freq_base;  // Llama 3.x uses 500000; Llama 2 (and the tiny preset) 10000
  bool tied_embeddings;  // output.weight absent: the output projection reuses token_embd
};

constexpr Preset kPresets[] = {
    {"tiny", 256, 4, 8, 4, 768, 10000.0f, false},
    {"llama-1b", 2048, 16, 32, 8, 8192, 500000.0f, true},
    {"llama-3b", 3072, 28, 24, 8, 8192, 500000.0f, true},
    {"llama-8b", 4096, 32, 32, 8, 14336, 500000.0f, false},
};
constexpr uint32_t kContextLength = 8192;
constexpr float kRmsEps = 1e-5f;
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
  double stddev;  // 0: every element is 1 (norm weights)
};

std::vector<SynthTensor> tensor_plan(const Preset& p, uint64_t n_vocab, DType type) {
  const uint64_t head_dim = p.n_embd / p.n_heads;
  const uint64_t q_dim = p.n_heads * head_dim, kv_dim = p.n_kv_heads * head_dim;
  const double residual = 2.0 * p.n_layers;
  auto matrix = [&](std::string name, uint64_t cols, uint64_t rows, double var_scale) {
    return SynthTensor{std::move(name), {cols, rows}, type, 1.0 / std::sqrt(cols * var_scale)};
  };
  auto norm = [&](std::string name) {
    return SynthTensor{std::move(name), {p.n_embd}, DType::kF32, 0.0};
  };
  std::vector<SynthTensor> plan;
  plan.push_back(matrix("token_embd.weight", p.n_embd, n_vocab, 1.0));
  plan.push_back(norm("output_norm.weight"));
  if (!p.tied_embeddings) plan.push_back(matrix("output.weight", p.n_embd, n_vocab, 1.0));
  for (uint32_t i = 0; i < p.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    plan.push_back(norm(b + "attn_norm.weight"));
    plan.push_back(matrix(b + "attn_q.weight", p.n_embd, q_dim, 1.0));
    plan.push_back(matrix(b + "attn_k.weight", p.n_embd, kv_dim, 1.0));
    plan.push_back(matrix(b + "attn_v.weight", p.n_embd, kv_dim, 1.0));
    plan.push_back(matrix(b + "attn_output.weight", q_dim, p.n_embd, residual));
    plan.push_back(norm(b + "ffn_norm.weight"));
    plan.push_back(matrix(b + "ffn_gate.weight", p.n_embd, p.n_ff, 1.0));
    plan.push_back(matrix(b + "ffn_up.weight", p.n_embd, p.n_ff, 1.0));
    plan.push_back(matrix(b + "ffn_down.weight", p.n_ff, p.n_embd, residual));
  }
  return plan;
}

// Fills one row of `cols` elements of `t` (the tensor at `index` in the plan).
void fill_row(const SynthTensor& t, uint64_t seed, size_t index, size_t row, uint8_t* dst) {
  const size_t cols = t.dims[0];
  RowRandom rng(seed, index, row);
  const float scale = static_cast<float>(t.stddev / kIrwinHallStd);
  for (size_t c = 0; c < cols; ++c) {
    const float v = t.stddev == 0 ? 1.0f : static_cast<float>(rng.next_centred_sum()) * scale;
    if (t.type == DType::kF16) {
      const uint16_t h = fp32_to_fp16(v);
      std::memcpy(dst + 2 * c, &h, 2);
    } else {
      std::memcpy(dst + 4 * c, &v, 4);
    }
  }
}

Result<const Preset*> find_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  std::string names;
  for (const std::string& n : synth_preset_names()) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown preset '" + name + "'; use one of: " + names);
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

std::vector<std::string> synth_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

Status synthesize_model(const SynthOptions& options, const WriteProgressCallback& progress) {
  STRATA_RETURN_IF_ERROR(check_thread_count(options.threads));
  STRATA_ASSIGN_OR_RETURN(const Preset* preset, find_preset(options.preset));
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
  const Preset& p = *preset;

  gguf::Writer writer;
  writer.set("general.architecture", gguf::Value::string("llama"));
  writer.set("general.name", gguf::Value::string(std::string("strata synth ") + p.name));
  writer.set("general.file_type",
             gguf::Value::uint32(type == DType::kF16 ? kFileTypeMostlyF16 : kFileTypeAllF32));
  writer.set("llama.vocab_size", gguf::Value::uint32(static_cast<uint32_t>(n_vocab)));
  writer.set("llama.context_length", gguf::Value::uint32(kContextLength));
  writer.set("llama.embedding_length", gguf::Value::uint32(p.n_embd));
  writer.set("llama.block_count", gguf::Value::uint32(p.n_layers));
  writer.set("llama.feed_forward_length", gguf::Value::uint32(p.n_ff));
  writer.set("llama.attention.head_count", gguf::Value::uint32(p.n_heads));
  writer.set("llama.attention.head_count_kv", gguf::Value::uint32(p.n_kv_heads));
  writer.set("llama.rope.dimension_count", gguf::Value::uint32(p.n_embd / p.n_heads));
  writer.set("llama.rope.freq_base", gguf::Value::float32(p.rope_freq_base));
  writer.set("llama.attention.layer_norm_rms_epsilon", gguf::Value::float32(kRmsEps));
  for (const auto& [key, value] : (*vocab)->metadata()) {
    if (key.starts_with("tokenizer.")) writer.set(key, value);
  }
  pad_vocabulary(**vocab, n_vocab, writer);

  const std::vector<SynthTensor> plan = tensor_plan(p, n_vocab, type);
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
