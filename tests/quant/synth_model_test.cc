// synthesize_model: synthesized models load and compute, are reproducible from their seed and
// drawn at the documented scales. (quantize_model is tested in quantize_test.cc.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "strata/engine.h"
#include "strata/model_tools.h"
#include "test_files.h"

namespace strata {
namespace {

using test_files::kStories;
using test_files::kText;
using test_files::read_bytes;
using test_files::TempFile;

std::unique_ptr<Engine> load(const std::string& path) {
  EngineOptions options;
  options.model_path = path;
  options.threads = 2;
  options.context = 256;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

std::unique_ptr<gguf::File> open_gguf(const std::string& path) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f).value() : nullptr;
}

// Every element of a tensor as f32.
std::vector<float> tensor_values(const gguf::TensorInfo& t) {
  std::vector<float> v(t.n_elements);
  const size_t cols = t.dims[0], stride = row_bytes(t.type, cols);
  for (size_t r = 0; r < t.rows(); ++r) {
    kernels::dequantize_row(t.type, t.data + r * stride, v.data() + r * cols, cols);
  }
  return v;
}

Status synth(const std::string& path, const std::string& type, uint64_t seed,
             const std::string& preset = "tiny") {
  SynthOptions o;
  o.preset = preset;
  o.output_path = path;
  o.type = type;
  o.seed = seed;
  o.threads = 2;
  return synthesize_model(o);
}

TEST(SynthTest, TinyLoadsAndGivesFiniteVariedLogits) {
  TempFile file("tiny_f16.gguf");
  std::vector<WriteProgress> progress;
  SynthOptions o;
  o.output_path = file.path();
  o.seed = 1;
  Status s = synthesize_model(o, [&](const WriteProgress& p) { progress.push_back(p); });
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().tensor_index, progress.back().tensor_count);
  EXPECT_EQ(progress.back().bytes_done, progress.back().bytes_total);

  std::unique_ptr<Engine> engine = load(file.path());
  ASSERT_TRUE(engine);
  const ModelSummary& m = engine->model();
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.n_embd, 256u);
  EXPECT_EQ(m.n_layers, 4u);
  EXPECT_EQ(m.n_heads, 8u);
  EXPECT_EQ(m.n_kv_heads, 4u);
  EXPECT_EQ(m.n_vocab, 512u);  // stories260K's vocabulary
  EXPECT_EQ(m.n_ctx_train, 8192u);

  const std::vector<TokenId> tokens = engine->tokenize(kText, true, false);
  ASSERT_GT(tokens.size(), 20u);
  Result<std::vector<float>> logits = engine->evaluate(tokens, true);
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  ASSERT_EQ(logits->size(), tokens.size() * m.n_vocab);
  std::vector<size_t> argmax;
  for (size_t p = 0; p < tokens.size(); ++p) {
    const float* row = logits->data() + p * m.n_vocab;
    double sum = 0, sum_sq = 0;
    for (size_t v = 0; v < m.n_vocab; ++v) {
      ASSERT_TRUE(std::isfinite(row[v])) << "position " << p << " token " << v;
      sum += row[v];
      sum_sq += double{row[v]} * row[v];
    }
    const double mean = sum / m.n_vocab, var = sum_sq / m.n_vocab - mean * mean;
    // O(1) logits: neither constant nor blown up by the depth.
    EXPECT_GT(var, 1e-3) << "position " << p;
    EXPECT_LT(var, 1e3) << "position " << p;
    argmax.push_back(std::max_element(row, row + m.n_vocab) - row);
  }
  // Different contexts give different predictions somewhere.
  EXPECT_GT(std::set<size_t>(argmax.begin(), argmax.end()).size(), 1u);
}

TEST(SynthTest, SameSeedGivesTheSameFileAndAnotherSeedDoesNot) {
  TempFile a("seed_a.gguf"), b("seed_b.gguf"), c("seed_c.gguf");
  ASSERT_TRUE(synth(a.path(), "F32", 7).ok());
  ASSERT_TRUE(synth(b.path(), "F32", 7).ok());
  ASSERT_TRUE(synth(c.path(), "F32", 8).ok());
  const std::vector<uint8_t> bytes_a = read_bytes(a.path());
  ASSERT_GT(bytes_a.size(), 1000000u);
  EXPECT_TRUE(bytes_a == read_bytes(b.path()));
  const std::vector<uint8_t> bytes_c = read_bytes(c.path());
  ASSERT_EQ(bytes_a.size(), bytes_c.size());
  EXPECT_FALSE(bytes_a == bytes_c);
}

TEST(SynthTest, WeightsFollowTheDocumentedScalesAndF16IsRoundedF32) {
  TempFile f32("scale_f32.gguf"), f16("scale_f16.gguf");
  ASSERT_TRUE(synth(f32.path(), "F32", 3).ok());
  ASSERT_TRUE(synth(f16.path(), "F16", 3).ok());
  std::unique_ptr<gguf::File> a = open_gguf(f32.path()), b = open_gguf(f16.path());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->get_uint("general.file_type"), 0u);  // LLAMA_FTYPE_ALL_F32
  EXPECT_EQ(b->get_uint("general.file_type"), 1u);  // LLAMA_FTYPE_MOSTLY_F16

  // std = 1/sqrt(fan_in) for projections, 1/sqrt(fan_in * 2 * n_layers) for W_o and W_down.
  const std::map<std::string, double> want_std = {
      {"blk.0.attn_q.weight", 1 / std::sqrt(256.0)},
      {"blk.2.ffn_gate.weight", 1 / std::sqrt(256.0)},
      {"blk.1.attn_output.weight", 1 / std::sqrt(256.0 * 8)},
      {"blk.3.ffn_down.weight", 1 / std::sqrt(768.0 * 8)},
      {"token_embd.weight", 1 / std::sqrt(256.0)},
  };
  for (const auto& [name, want] : want_std) {
    const gguf::TensorInfo* t = a->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    const std::vector<float> v = tensor_values(*t);
    double sum = 0, sum_sq = 0;
    for (float x : v) {
      sum += x;
      sum_sq += double{x} * x;
    }
    const double mean = sum / v.size(), stddev = std::sqrt(sum_sq / v.size() - mean * mean);
    EXPECT_NEAR(stddev / want, 1.0, 0.02) << name;
    EXPECT_LT(std::fabs(mean), 0.02 * want) << name;

    const gguf::TensorInfo* h = b->find_tensor(name);
    ASSERT_NE(h, nullptr);
    ASSERT_EQ(h->type, DType::kF16);
    const std::vector<float> rounded = tensor_values(*h);
    ASSERT_EQ(rounded.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(rounded[i], fp16_to_fp32(fp32_to_fp16(v[i]))) << name << " element " << i;
    }
  }
  for (const char* norm :
       {"output_norm.weight", "blk.0.attn_norm.weight", "blk.3.ffn_norm.weight"}) {
    const gguf::TensorInfo* t = b->find_tensor(norm);
    ASSERT_NE(t, nullptr) << norm;
    EXPECT_EQ(t->type, DType::kF32);
    for (float x : tensor_values(*t)) ASSERT_EQ(x, 1.0f) << norm;
  }
  // The tokenizer is the vocabulary file's.
  std::unique_ptr<gguf::File> vocab = open_gguf(kStories);
  ASSERT_TRUE(vocab);
  for (const auto& [key, value] : vocab->metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    const gguf::Value* copied = b->find(key);
    ASSERT_NE(copied, nullptr) << key;
    EXPECT_TRUE(*copied == value) << key;
  }
}

// --n-vocab pads the copied vocabulary with control tokens: the model has that many rows, the
// copied tokens keep their ids and text, and the padding never comes out of the tokenizer.
TEST(SynthTest, PaddedVocabularyKeepsTheCopiedTokensAndAddsControlTokens) {
  TempFile out("padded.gguf");
  SynthOptions o;
  o.output_path = out.path();
  o.n_vocab = 1000;
  o.threads = 2;
  ASSERT_TRUE(synthesize_model(o).ok());
  std::unique_ptr<gguf::File> file = open_gguf(out.path());
  std::unique_ptr<gguf::File> stories = open_gguf(kStories);
  ASSERT_TRUE(file && stories);
  const gguf::Array* tokens = file->get_array("tokenizer.ggml.tokens");
  const gguf::Array* types = file->get_array("tokenizer.ggml.token_type");
  const gguf::Array* scores = file->get_array("tokenizer.ggml.scores");
  ASSERT_TRUE(tokens && types && scores);
  ASSERT_EQ(tokens->values.size(), 1000u);
  ASSERT_EQ(types->values.size(), 1000u);
  ASSERT_EQ(scores->values.size(), 1000u);
  const gguf::Array* original = stories->get_array("tokenizer.ggml.tokens");
  for (size_t i = 0; i < original->values.size(); ++i) {
    ASSERT_EQ(*tokens->values[i].as_string(), *original->values[i].as_string()) << i;
  }
  EXPECT_EQ(*tokens->values[512].as_string(), "<|reserved_special_token_0|>");
  EXPECT_EQ(*tokens->values[999].as_string(), "<|reserved_special_token_487|>");
  EXPECT_EQ(types->values[999].as_int(), 3);  // control
  EXPECT_EQ(file->require_tensor("token_embd.weight").value()->rows(), 1000u);

  std::unique_ptr<Engine> engine = load(out.path());
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->model().n_vocab, 1000u);
  EXPECT_EQ(engine->tokenize(kText, true, false), load(kStories)->tokenize(kText, true, false));

  o.n_vocab = 100;  // below the copied 512
  EXPECT_EQ(synthesize_model(o).error().code, ErrorCode::kInvalidArgument);
}

TEST(SynthTest, PresetNamesAreTheDocumentedOnes) {
  const std::vector<std::string> presets = synth_preset_names();
  EXPECT_EQ(presets, (std::vector<std::string>{"tiny", "tiny-gqa", "llama-1b", "llama-3b",
                                               "llama-8b", "gemma3-1b", "bert-base"}));
}

TEST(SynthTest, BadOptionsAreErrors) {
  TempFile out("bad.gguf");
  EXPECT_EQ(synth(out.path(), "F16", 0, "llama-70b").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(synth(out.path(), "Q4_0", 0).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(synth("", "F16", 0).error().code, ErrorCode::kInvalidArgument);
  SynthOptions o;
  o.output_path = out.path();
  o.vocab_path = "../shared/models/does_not_exist.gguf";
  Status s = synthesize_model(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("does_not_exist"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out.path()));
}

}  // namespace
}  // namespace strata
