// stories260K against the reference implementation's outputs in ../shared/models/reference/:
// prompt tokens, 64 greedy tokens and last-position logits of every case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "strata/engine.h"

namespace strata {
namespace {

const char* kModel = "../shared/models/stories260K.gguf";
const char* kReferenceDir = "../shared/models/reference";

std::vector<std::string> reference_cases() {
  std::vector<std::string> names;
  if (!std::filesystem::exists(kReferenceDir)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(kReferenceDir)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(kReferenceDir) + "/" + GetParam() + ".json");
    ASSERT_TRUE(in) << "missing reference case " << GetParam();
    reference_ = nlohmann::json::parse(in);
    EngineOptions options;
    options.model_path = kModel;
    options.threads = 2;
    // The reference build accumulated attention in f16: the mode that rounds as it did.
    options.kv.attention = AttentionMode::kExact;
    Result<std::unique_ptr<Engine>> engine = Engine::create(options);
    ASSERT_TRUE(engine.ok()) << engine.error().message;
    engine_ = std::move(engine).value();
  }

  nlohmann::json reference_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(ReferenceTest, PromptTokensMatch) {
  const std::string prompt = reference_["prompt"];
  EXPECT_EQ(engine_->tokenize(prompt, true, true),
            reference_["prompt_tokens_with_bos"].get<std::vector<TokenId>>());
  EXPECT_EQ(engine_->tokenize(prompt, false, true),
            reference_["prompt_tokens_no_bos"].get<std::vector<TokenId>>());
}

TEST_P(ReferenceTest, GreedyTokensMatch) {
  GenerationRequest request;
  request.prompt = reference_["prompt_tokens_with_bos"].get<std::vector<TokenId>>();
  request.max_tokens = reference_["n_predict"];
  request.sampling.temperature = 0;
  std::vector<TokenId> generated;
  std::string text;
  Result<GenerationStats> stats = engine_->generate(request, [&](const TokenEvent& e) {
    if (e.token >= 0) generated.push_back(e.token);
    text += e.text;
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(generated, reference_["generated_token_ids"].get<std::vector<TokenId>>());
  EXPECT_EQ(text, reference_["generated_text"].get<std::string>());
  EXPECT_EQ(stats->finish, FinishReason::kLength);
}

TEST_P(ReferenceTest, LastPositionLogitsMatch) {
  std::ifstream in(std::string(kReferenceDir) + "/" + GetParam() + ".logits.f32.bin",
                   std::ios::binary);
  ASSERT_TRUE(in);
  std::vector<float> want(512);
  in.read(reinterpret_cast<char*>(want.data()),
          static_cast<std::streamsize>(want.size() * sizeof(float)));
  ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(want.size() * sizeof(float)));

  Result<std::vector<float>> got =
      engine_->evaluate(reference_["prompt_tokens_with_bos"].get<std::vector<TokenId>>());
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), want.size());
  double max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i)
    max_diff = std::max(max_diff, std::abs(double{(*got)[i]} - want[i]));
  RecordProperty("max_abs_logit_diff", std::to_string(max_diff));
  std::printf("%s: max |logit - reference| = %.3g\n", GetParam().c_str(), max_diff);
  // The argmax is the first greedy token: it must agree exactly.
  EXPECT_EQ(std::max_element(got->begin(), got->end()) - got->begin(),
            std::max_element(want.begin(), want.end()) - want.begin());
  // F32 weights sum in the reference's order (kernels/dot_f32_ordered-inl.h), so every case,
  // the 205-token one included, agrees to a few ulp; 1e-4 leaves room for non-FMA targets.
  EXPECT_LE(max_diff, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, ReferenceTest, ::testing::ValuesIn(reference_cases()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReferenceTest);

}  // namespace
}  // namespace strata
