// Reads the shared GGUF files and checks facts documented in ../shared (models/reference/README.md
// and testdata/vocab/README.md), not values taken from strata's own output.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace strata::gguf {
namespace {

constexpr char kStories[] = "../shared/models/stories260K.gguf";
constexpr uint64_t kStoriesSize = 1185376;

class StoriesTest : public ::testing::TestWithParam<MappedFile::Mode> {};

TEST_P(StoriesTest, HeaderAndHyperparameters) {
  Result<std::unique_ptr<File>> r = File::open(kStories, GetParam());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const File& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);  // no general.alignment key: the spec default
  EXPECT_EQ(f.image().size(), kStoriesSize);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.context_length"), 2048);
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f.get_int("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(f.get_uint("llama.context_length"), 2048u);
  std::optional<double> eps = f.get_float("llama.attention.layer_norm_rms_epsilon");
  ASSERT_TRUE(eps.has_value());
  EXPECT_NEAR(*eps, 1e-5, 1e-10);
  EXPECT_FALSE(f.get_int("no.such.key").has_value());
  EXPECT_EQ(f.find("no.such.key"), nullptr);
  // An integer key read as a string is absent, not converted.
  EXPECT_FALSE(f.get_string("llama.block_count").has_value());
}

TEST_P(StoriesTest, TokenizerArrays) {
  Result<std::unique_ptr<File>> r = File::open(kStories, GetParam());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Array* tokens = (*r)->get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->element_type, ValueType::kString);
  ASSERT_EQ(tokens->values.size(), 512u);
  // SentencePiece specials at the ids the README gives: UNK 0, BOS 1, EOS 2.
  EXPECT_EQ(*tokens->values[0].as_string(), "<unk>");
  EXPECT_EQ(*tokens->values[1].as_string(), "<s>");
  EXPECT_EQ(*tokens->values[2].as_string(), "</s>");
  const Array* scores = (*r)->get_array("tokenizer.ggml.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->element_type, ValueType::kFloat32);
  EXPECT_EQ(scores->values.size(), 512u);
  const Array* types = (*r)->get_array("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  ASSERT_EQ(types->values.size(), 512u);
  EXPECT_EQ(types->values[0].as_int(), 2);  // unknown
  EXPECT_EQ(types->values[1].as_int(), 3);  // control
}

TEST_P(StoriesTest, TensorShapesFollowFromHyperparameters) {
  Result<std::unique_ptr<File>> r = File::open(kStories, GetParam());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const File& f = **r;
  // n_embd 64, vocab 512, KV width 4 heads x head_dim 8 = 32, FFN 172.
  std::vector<std::pair<std::string, std::vector<uint64_t>>> expected = {
      {"token_embd.weight", {64, 512}}, {"output_norm.weight", {64}}, {"output.weight", {64, 512}}};
  for (int layer = 0; layer < 5; ++layer) {
    std::string p = "blk." + std::to_string(layer) + ".";
    expected.push_back({p + "attn_q.weight", {64, 64}});
    expected.push_back({p + "attn_k.weight", {64, 32}});
    expected.push_back({p + "attn_v.weight", {64, 32}});
    expected.push_back({p + "attn_output.weight", {64, 64}});
    expected.push_back({p + "attn_norm.weight", {64}});
    expected.push_back({p + "ffn_gate.weight", {64, 172}});
    expected.push_back({p + "ffn_down.weight", {172, 64}});
    expected.push_back({p + "ffn_up.weight", {64, 172}});
    expected.push_back({p + "ffn_norm.weight", {64}});
  }
  ASSERT_EQ(f.tensors().size(), expected.size());
  uint64_t total_bytes = 0;
  for (const auto& [name, dims] : expected) {
    Result<const TensorInfo*> t = f.require_tensor(name);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ((*t)->type, DType::kF32) << name;
    EXPECT_EQ((*t)->dims, dims) << name;
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    EXPECT_EQ((*t)->n_elements, n) << name;
    EXPECT_EQ((*t)->n_bytes, n * 4) << name;
    EXPECT_EQ((*t)->rows(), n / dims[0]) << name;
    EXPECT_EQ((*t)->offset % 32, 0u) << name;
    EXPECT_EQ((*t)->data, f.image().data() + f.data_offset() + (*t)->offset) << name;
    total_bytes += n * 4;
  }
  // The F32 sizes are all multiples of 32, so the data section is exactly the tensors and it
  // ends at the end of the file.
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.data_offset() + total_bytes, kStoriesSize);
  // The RMSNorm weights of a trained model are finite and not all zero.
  const TensorInfo* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  const auto* w = reinterpret_cast<const float*>(norm->data);
  float sum = 0;
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(std::isfinite(w[i]));
    sum += std::fabs(w[i]);
  }
  EXPECT_GT(sum, 0.0f);
}

TEST_P(StoriesTest, MissingTensorIsNotFound) {
  Result<std::unique_ptr<File>> r = File::open(kStories, GetParam());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->find_tensor("blk.5.attn_q.weight"), nullptr);
  Result<const TensorInfo*> t = (*r)->require_tensor("blk.5.attn_q.weight");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kNotFound);
  EXPECT_NE(t.error().message.find("'blk.5.attn_q.weight'"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Modes, StoriesTest,
                         ::testing::Values(MappedFile::Mode::kMmap, MappedFile::Mode::kResident));

TEST(GgufOpen, MissingFileIsNotFound) {
  Result<std::unique_ptr<File>> r = File::open("../shared/models/no-such-model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TEST(GgufOpen, ErrorsNameThePath) {
  // A file that exists but is not GGUF: the reference README.
  Result<std::unique_ptr<File>> r = File::open("../shared/models/reference/README.md");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(r.error().message.find("README.md"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("not a GGUF file"), std::string::npos) << r.error().message;
}

// One row of the table in ../shared/testdata/vocab/README.md.
struct VocabFacts {
  const char* file;
  const char* arch;
  const char* model;
  size_t vocab_size;
  size_t merges;  // 0: no tokenizer.ggml.merges key
  int64_t bos;    // -1: no bos key
  int64_t eos;
};

class VocabTest : public ::testing::TestWithParam<VocabFacts> {};

TEST_P(VocabTest, MatchesReadme) {
  const VocabFacts& v = GetParam();
  Result<std::unique_ptr<File>> r = File::open(std::string("../shared/testdata/vocab/") + v.file);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const File& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.tensors().empty());  // vocab-only
  EXPECT_EQ(f.get_string("general.architecture"), v.arch);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), v.model);
  const Array* tokens = f.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->values.size(), v.vocab_size);
  const Array* merges = f.get_array("tokenizer.ggml.merges");
  EXPECT_EQ(merges ? merges->values.size() : 0, v.merges);
  if (v.bos >= 0) {
    EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), v.bos);
    EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), v.eos);
  } else {
    EXPECT_EQ(f.find("tokenizer.ggml.bos_token_id"), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Readme, VocabTest,
    ::testing::Values(
        VocabFacts{"ggml-vocab-baichuan.gguf", "baichuan", "llama", 64000, 0, 1, 2},
        VocabFacts{"ggml-vocab-bert-bge.gguf", "bert", "bert", 30522, 0, -1, -1},
        VocabFacts{"ggml-vocab-deepseek-coder.gguf", "llama", "gpt2", 32256, 31757, 32013, 32014},
        VocabFacts{"ggml-vocab-deepseek-llm.gguf", "llama", "gpt2", 102400, 99757, 100000, 100001},
        VocabFacts{"ggml-vocab-falcon.gguf", "falcon", "gpt2", 65024, 64784, 11, 11},
        VocabFacts{"ggml-vocab-gpt-2.gguf", "gpt2", "gpt2", 50257, 50000, 50256, 50256},
        VocabFacts{"ggml-vocab-gpt-neox.gguf", "gptneox", "gpt2", 50432, 50009, 0, 0},
        VocabFacts{"ggml-vocab-llama-spm.gguf", "llama", "llama", 32000, 0, 1, 2},
        VocabFacts{"ggml-vocab-phi-3.gguf", "phi3", "llama", 32064, 0, 1, 32000},
        VocabFacts{"ggml-vocab-starcoder.gguf", "starcoder2", "gpt2", 49152, 48872, 0, 0}),
    [](const ::testing::TestParamInfo<VocabFacts>& info) {
      std::string name = info.param.file;
      name = name.substr(11, name.size() - 11 - 5);  // strip "ggml-vocab-" and ".gguf"
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

TEST(GgufVocab, AddBosTokenIsBool) {
  Result<std::unique_ptr<File>> r =
      File::open("../shared/testdata/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_FALSE((*r)->get_int("tokenizer.ggml.add_bos_token").has_value());
}

}  // namespace
}  // namespace strata::gguf
