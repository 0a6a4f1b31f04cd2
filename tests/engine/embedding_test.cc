// Embedding requests (GenerationRequest::embed) against the reference engine: synthetic files
// with mean pooling (llama, nomic-bert), last-token pooling (qwen3, as Qwen3-Embedding) and CLS
// pooling (bert, as bge) embed 20 texts with cosine at least 0.9999 to llama.cpp's vectors
// (tests/engine/reference/; made as tests/model/reference/README.md says); the encoders also a
// 202-token text, longer than a step's token budget. Embeddings run batched with each other and
// with generation in the step loop, and come out the same as one at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/model_tools.h"
#include "test_files.h"

namespace strata {
namespace {

struct Reference {
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::vector<float>> embeddings;
};

Reference read_reference(const std::string& arch) {
  std::ifstream in("tests/engine/reference/embeddings-" + arch + ".json");
  EXPECT_TRUE(in.good()) << arch;
  const nlohmann::json j = nlohmann::json::parse(in);
  return {j["prompts"].get<std::vector<std::vector<TokenId>>>(),
          j["embeddings"].get<std::vector<std::vector<float>>>()};
}

bool is_encoder(const std::string& arch) { return arch.ends_with("bert"); }

// A synthetic model file (tiny-gqa, F32, seed 0; encoders with BERT's vocabulary), removed with
// the object.
class SynthFile {
 public:
  SynthFile(const std::string& arch, int pooling_type) : file_("embedding-" + arch + ".gguf") {
    SynthOptions o;
    o.arch = arch;
    o.preset = "tiny-gqa";
    o.type = "F32";
    o.vocab_path = is_encoder(arch) ? "../shared/testdata/vocab/ggml-vocab-bert-bge.gguf"
                                    : test_files::kStories;
    o.pooling_type = pooling_type;
    o.output_path = file_.path();
    o.threads = 2;
    EXPECT_TRUE(synthesize_model(o).ok());
  }
  const std::string& path() const { return file_.path(); }

 private:
  test_files::TempFile file_;
};

std::unique_ptr<Engine> make_engine(const std::string& path, int max_sequences,
                                    std::optional<Pooling> pooling = std::nullopt) {
  EngineOptions options;
  options.model_path = path;
  options.threads = 2;
  options.max_sequences = max_sequences;
  options.batch_tokens = 64;  // several steps for 20 texts: chunks of prompts mix
  options.pooling = pooling;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

class EmbeddingTest : public ::testing::TestWithParam<std::pair<const char*, int>> {};

TEST_P(EmbeddingTest, MatchesTheReferenceEngineBatchedOrAlone) {
  const auto [arch, pooling_type] = GetParam();
  const Reference ref = read_reference(arch);
  ASSERT_EQ(ref.prompts.size(), is_encoder(arch) ? 21u : 20u);
  const SynthFile file(arch, pooling_type);
  const std::string& path = file.path();
  std::unique_ptr<Engine> batched = make_engine(path, 4);
  ASSERT_TRUE(batched);
  constexpr Pooling kByType[] = {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast};
  EXPECT_EQ(batched->model().pooling, kByType[pooling_type]);
  EXPECT_EQ(batched->model().encoder, is_encoder(arch));
  Result<std::vector<std::vector<float>>> all = batched->embed(ref.prompts);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), ref.prompts.size());
  std::unique_ptr<Engine> alone = make_engine(path, 1);
  for (size_t i = 0; i < ref.prompts.size(); ++i) {
    const std::vector<float>& e = (*all)[i];
    ASSERT_EQ(e.size(), ref.embeddings[i].size());
    EXPECT_GE(cosine(e, ref.embeddings[i]), 0.9999) << "text " << i;
    double norm = 0;
    for (float x : e) norm += double{x} * x;
    EXPECT_NEAR(norm, 1.0, 1e-5);
    Result<std::vector<std::vector<float>>> one = alone->embed({&ref.prompts[i], 1});
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_GE(cosine((*one)[0], e), 1 - 1e-9) << "text " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Poolings, EmbeddingTest,
                         ::testing::Values(std::pair{"llama", 1}, std::pair{"qwen3", 3},
                                           std::pair{"bert", 2}, std::pair{"nomic-bert", 1}),
                         [](const auto& info) {
                           std::string name = info.param.first;
                           std::erase(name, '-');
                           return name;
                         });

// An encoder has no output head: generation is refused with a message that says what it can do,
// and so is a context past the positions BERT learned.
TEST(EmbeddingTest, AnEncoderEmbedsButDoesNotGenerate) {
  const SynthFile file("bert", 2);
  std::unique_ptr<Engine> engine = make_engine(file.path(), 1);
  ASSERT_TRUE(engine);
  GenerationRequest generate;
  generate.prompt = {101, 1996, 102};
  generate.max_tokens = 4;
  Result<uint64_t> refused = engine->submit(generate, [](const TokenEvent&) { return true; });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("embedding model"), std::string::npos);
  EXPECT_FALSE(engine->evaluate(generate.prompt, false).ok());

  EngineOptions options;
  options.model_path = file.path();
  options.context = 1024;  // the file learned 512 positions
  Result<std::unique_ptr<Engine>> too_long = Engine::create(options);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("512"), std::string::npos);
}

// An embedding request runs in the same steps as a generation and leaves it as it would be alone.
TEST(EmbeddingTest, MixesWithGenerationInTheStepLoop) {
  const Reference ref = read_reference("qwen3");
  const SynthFile file("qwen3", 3);
  std::unique_ptr<Engine> engine = make_engine(file.path(), 2);
  ASSERT_TRUE(engine);
  GenerationRequest generate;
  generate.prompt = ref.prompts[0];
  generate.max_tokens = 12;
  generate.sampling.temperature = 0;
  std::vector<TokenId> alone;
  ASSERT_TRUE(engine
                  ->generate(generate,
                             [&](const TokenEvent& e) {
                               if (e.token >= 0) alone.push_back(e.token);
                               return true;
                             })
                  .ok());

  std::vector<TokenId> mixed;
  std::vector<float> embedding;
  ASSERT_TRUE(engine
                  ->submit(generate,
                           [&](const TokenEvent& e) {
                             if (e.token >= 0) mixed.push_back(e.token);
                             return true;
                           })
                  .ok());
  GenerationRequest embed;
  embed.prompt = ref.prompts[1];
  embed.embed = true;
  ASSERT_TRUE(engine
                  ->submit(embed,
                           [&](const TokenEvent& e) {
                             EXPECT_LT(e.token, 0);
                             if (e.finish == FinishReason::kStop) embedding = e.embedding;
                             return true;
                           })
                  .ok());
  while (engine->has_work()) ASSERT_TRUE(engine->step().ok());
  EXPECT_EQ(mixed, alone);
  EXPECT_GE(cosine(embedding, ref.embeddings[1]), 0.9999);
}

TEST(EmbeddingTest, AModelWithoutPoolingIsRefusedUnlessToldHow) {
  const SynthFile file("llama", -1);
  const std::string& path = file.path();
  std::unique_ptr<Engine> engine = make_engine(path, 1);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->model().pooling, Pooling::kNone);
  const std::vector<TokenId> prompt = {1, 300, 301};
  Result<std::vector<std::vector<float>>> refused = engine->embed({&prompt, 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("--pooling"), std::string::npos);
  std::unique_ptr<Engine> told = make_engine(path, 1, Pooling::kCls);
  Result<std::vector<std::vector<float>>> cls = told->embed({&prompt, 1});
  ASSERT_TRUE(cls.ok()) << cls.error().message;
  // CLS pooling reads position 0 only: another continuation gives the same vector.
  const std::vector<TokenId> other = {1, 400, 401, 402};
  Result<std::vector<std::vector<float>>> cls2 = told->embed({&other, 1});
  ASSERT_TRUE(cls2.ok());
  EXPECT_EQ((*cls)[0], (*cls2)[0]);
}

}  // namespace
}  // namespace strata
