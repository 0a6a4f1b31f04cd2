#include "sampling/logit_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

namespace strata::sampling {
namespace {

TEST(RepetitionPenaltyTest, DividesPositiveAndMultipliesNegativeOncePerToken) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 3.0f, 0.0f};
  const std::vector<int32_t> prompt = {0, 4};
  const std::vector<int32_t> generated = {1, 1, 1};
  RepetitionPenalty penalty(2.0f, 64);
  penalty.apply(logits, {prompt, generated});
  // Token 0 (2 > 0): 2 / 2 = 1. Token 1 (seen 3 times, -2 <= 0): -2 * 2 = -4, once only.
  // Token 4 (0, not > 0): 0 * 2 = 0. Tokens 2 and 3 were never seen.
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 1.0f, 3.0f, 0.0f}));
}

TEST(RepetitionPenaltyTest, WindowIsTheLastNOfPromptAndGenerated) {
  const std::vector<int32_t> prompt = {0, 2};
  const std::vector<int32_t> generated = {1};
  std::vector<float> logits = {4.0f, 4.0f, 4.0f, 4.0f};
  RepetitionPenalty last_two(2.0f, 2);  // window = {2, 1}
  last_two.apply(logits, {prompt, generated});
  EXPECT_EQ(logits, (std::vector<float>{4.0f, 2.0f, 2.0f, 4.0f}));

  logits = {4.0f, 4.0f, 4.0f, 4.0f};
  RepetitionPenalty whole(2.0f, -1);  // window = {0, 2, 1}
  whole.apply(logits, {prompt, generated});
  EXPECT_EQ(logits, (std::vector<float>{2.0f, 2.0f, 2.0f, 4.0f}));

  logits = {4.0f, 4.0f, 4.0f, 4.0f};
  RepetitionPenalty off(2.0f, 0);
  off.apply(logits, {prompt, generated});
  EXPECT_EQ(logits, (std::vector<float>{4.0f, 4.0f, 4.0f, 4.0f}));
}

TEST(FrequencyPresencePenaltyTest, SubtractsCountTimesFrequencyPlusPresence) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> prompt = {1, 1, 3};  // the prompt does not count
  const std::vector<int32_t> generated = {2, 0, 2, 2};
  FrequencyPresencePenalty penalty(0.5f, 0.25f);
  penalty.apply(logits, {prompt, generated});
  // Token 0: 1 - (0.5 * 1 + 0.25) = 0.25. Token 2: 1 - (0.5 * 3 + 0.25) = -0.75.
  EXPECT_EQ(logits, (std::vector<float>{0.25f, 1.0f, -0.75f, 1.0f}));
}

TEST(LogitBiasTest, AddsBiasAndBans) {
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  LogitBias bias({{0, 1.5f}, {2, -INFINITY}, {7, 5.0f}, {-3, 5.0f}});  // 7, -3: not in vocab
  bias.apply(logits, {});
  EXPECT_EQ(logits, (std::vector<float>{2.5f, 2.0f, -INFINITY}));
}

TEST(TokenMaskTest, BansDisallowedTokensAndCanBeRewritten) {
  TokenMask mask(TokenBitmask(4, /*allowed=*/true));
  mask.mask().forbid(1);
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, 4.0f};
  mask.apply(logits, {});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -INFINITY, 3.0f, 4.0f}));

  mask.mask().allow(1);
  mask.mask().forbid(3);
  logits = {1.0f, 2.0f, 3.0f, 4.0f};
  mask.apply(logits, {});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 2.0f, 3.0f, -INFINITY}));
}

TEST(LogitProcessorChainTest, RunsProcessorsInOrder) {
  // Bias then penalty: (1 + 1) / 2 = 1. Penalty then bias would give 1 / 2 + 1 = 1.5.
  LogitProcessorChain chain;
  chain.add(std::make_unique<LogitBias>(std::map<int32_t, float>{{0, 1.0f}}));
  chain.add(std::make_unique<RepetitionPenalty>(2.0f, 64));
  chain.add(nullptr);  // ignored
  EXPECT_EQ(chain.size(), 2u);
  std::vector<float> logits = {1.0f, 1.0f};
  const std::vector<int32_t> generated = {0};
  chain.apply(logits, {{}, generated});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 1.0f}));
}

TEST(LogitProcessorTest, HistoryIdsOutsideTheVocabularyAreIgnored) {
  const std::vector<int32_t> generated = {-5, 2, 1000000};
  std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  RepetitionPenalty repetition(2.0f, -1);
  repetition.apply(logits, {{}, generated});
  FrequencyPresencePenalty frequency(1.0f, 0.0f);
  frequency.apply(logits, {{}, generated});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 1.0f, -0.5f}));
}

}  // namespace
}  // namespace strata::sampling
