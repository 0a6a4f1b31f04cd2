#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/rng.h"

namespace strata::sampling {
namespace {

// Deterministic pseudo-random logits from a 64-bit LCG (Knuth's MMIX constants), independent
// of the sampler's own generator.
std::vector<float> lcg_logits(size_t n, uint64_t seed) {
  std::vector<float> logits(n);
  uint64_t state = seed;
  for (float& logit : logits) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    logit = static_cast<float>(state >> 40) / static_cast<float>(1u << 24) * 20.0f - 10.0f;
  }
  return logits;
}

size_t argmax(const std::vector<float>& x) {
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

Sampler make_sampler(const SamplingParams& params) {
  Result<Sampler> sampler = Sampler::create(params);
  EXPECT_TRUE(sampler.ok()) << sampler.error().message;
  return std::move(sampler).value();
}

int32_t sample_id(Sampler& sampler, const std::vector<float>& logits,
                  const SequenceHistory& history = {}) {
  Result<SampledToken> token = sampler.sample(logits, history);
  EXPECT_TRUE(token.ok()) << token.error().message;
  return token.ok() ? token->id : -1;
}

// Plain probability-only settings: no truncation, no penalties.
SamplingParams pure_params(float temperature, uint64_t seed) {
  SamplingParams params = greedy_params();
  params.temperature = temperature;
  params.seed = seed;
  return params;
}

// Pearson's chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probabilities,
                  int draws) {
  double statistic = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probabilities[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double expected = probabilities[i] * draws;
    statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return statistic;
}

TEST(SplitMix64Test, MatchesTheReferenceSequence) {
  // First outputs of splitmix64.c (Vigna) for seed 0.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(rng.next(), 0x06C45D188009454Full);
  SplitMix64 unit(0);
  EXPECT_EQ(unit.next_unit(),
            static_cast<double>(0xE220A8397B1DCDAFull >> 11) / 9007199254740992.0);
}

TEST(SamplerTest, GreedyIsArgmax) {
  Sampler sampler = make_sampler(greedy_params());
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> logits = lcg_logits(5000, seed);
    EXPECT_EQ(sample_id(sampler, logits), static_cast<int32_t>(argmax(logits)));
  }
}

TEST(SamplerTest, GreedyBreaksTiesTowardTheLowestId) {
  Sampler sampler = make_sampler(greedy_params());
  EXPECT_EQ(sample_id(sampler, {1.0f, 3.0f, 2.0f, 3.0f, 3.0f}), 1);
}

TEST(SamplerTest, TopKOfOneIsGreedyAtAnyTemperature) {
  for (float temperature : {0.1f, 1.0f, 5.0f, 100.0f}) {
    SamplingParams params = pure_params(temperature, 42);
    params.top_k = 1;
    Sampler sampler = make_sampler(params);
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const std::vector<float> logits = lcg_logits(3000, seed);
      EXPECT_EQ(sample_id(sampler, logits), static_cast<int32_t>(argmax(logits))) << temperature;
    }
    EXPECT_EQ(sample_id(sampler, {1.0f, 3.0f, 2.0f, 3.0f}), 1);
  }
}

TEST(SamplerTest, FixedSeedReproducesDrawsAndAnotherSeedDiffers) {
  const std::vector<float> logits = lcg_logits(1000, 7);
  SamplingParams params;  // llama.cpp defaults: top_k 40, top_p 0.95, min_p 0.05, T 0.8
  params.temperature = 1.5f;
  params.min_p = 0.0f;
  params.seed = 1234;
  Sampler first = make_sampler(params);
  Sampler second = make_sampler(params);
  params.seed = 1235;
  Sampler other = make_sampler(params);
  std::vector<int32_t> a, b, c;
  for (int i = 0; i < 200; ++i) {
    a.push_back(sample_id(first, logits));
    b.push_back(sample_id(second, logits));
    c.push_back(sample_id(other, logits));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplerTest, FrequenciesMatchTheTemperedSoftmax) {
  const std::vector<float> logits = {0.5f, 1.0f, -0.3f, 2.0f, 0.0f, 1.5f, -1.0f, 0.7f};
  constexpr float kTemperature = 0.8f;
  std::vector<double> probabilities(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    probabilities[i] = std::exp(static_cast<double>(logits[i]) / kTemperature);
    total += probabilities[i];
  }
  for (double& p : probabilities) p /= total;

  Sampler sampler = make_sampler(pure_params(kTemperature, 2024));
  constexpr int kDraws = 100000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(sample_id(sampler, logits))];
  // 7 degrees of freedom: P(chi2 > 40) is about 1e-6.
  EXPECT_LT(chi_square(counts, probabilities, kDraws), 40.0);
}

TEST(SamplerTest, TruncationRenormalisesOverTheKeptTokens) {
  // Probabilities at T = 1: 0.4, 0.25, 0.2, 0.1, 0.05 (ids 0..4). top_k = 4 drops id 4; top_p =
  // 0.8 over the renormalised rest (0.42, 0.26, 0.21, 0.11; cumulative 0.89 at id 2) drops id 3;
  // min_p = 0.3 (p >= 0.12) drops nothing more. T = 2 then draws ids 0..2 with weights p^(1/2).
  const std::vector<double> base = {0.4, 0.25, 0.2, 0.1, 0.05};
  std::vector<float> logits;
  for (double p : base) logits.push_back(static_cast<float>(std::log(p)));
  SamplingParams params = pure_params(2.0f, 99);
  params.top_k = 4;
  params.top_p = 0.8f;
  params.min_p = 0.3f;
  std::vector<double> expected = {std::sqrt(0.4), std::sqrt(0.25), std::sqrt(0.2), 0.0, 0.0};
  double total = expected[0] + expected[1] + expected[2];
  for (double& p : expected) p /= total;

  Sampler sampler = make_sampler(params);
  constexpr int kDraws = 60000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(sample_id(sampler, logits))];
  EXPECT_LT(chi_square(counts, expected, kDraws), 35.0);  // 2 dof: P(> 35) ~ 3e-8
}

TEST(SamplerTest, MinPExcludesUnlikelyTokens) {
  // p = 0.5, 0.3, 0.15, 0.05; min_p = 0.25 keeps p >= 0.125: ids 0, 1, 2.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  SamplingParams params = pure_params(1.0f, 5);
  params.min_p = 0.25f;
  Sampler sampler = make_sampler(params);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < 5000; ++i) ++counts[static_cast<size_t>(sample_id(sampler, logits))];
  EXPECT_EQ(counts[3], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(SamplerTest, PenaltiesChangeTheChoice) {
  // Token 0 leads by 1; generated once with frequency penalty 1.5 it drops to 0.5 - 1.5 < 0.
  const std::vector<float> logits = {1.5f, 0.5f, 0.0f};
  const std::vector<int32_t> generated = {0};
  SamplingParams params = greedy_params();
  params.frequency_penalty = 1.5f;
  Sampler sampler = make_sampler(params);
  EXPECT_EQ(sample_id(sampler, logits, {{}, generated}), 1);
  EXPECT_EQ(sample_id(sampler, logits, {}), 0);

  params = greedy_params();
  params.repeat_penalty = 4.0f;  // 1.5 / 4 = 0.375 < 0.5
  Sampler repeat = make_sampler(params);
  EXPECT_EQ(sample_id(repeat, logits, {generated, {}}), 1);
}

TEST(SamplerTest, LogitBiasBansAToken) {
  const std::vector<float> logits = {1.0f, 9.0f, 2.0f};
  SamplingParams params = pure_params(1.0f, 3);
  params.logit_bias[1] = -INFINITY;
  Sampler sampler = make_sampler(params);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(sample_id(sampler, logits), 1);

  params = greedy_params();
  params.logit_bias[1] = -INFINITY;
  Sampler greedy = make_sampler(params);
  EXPECT_EQ(sample_id(greedy, logits), 2);
}

TEST(SamplerTest, TokenMaskForbidsTokens) {
  constexpr size_t kVocab = 300;
  const std::vector<float> logits = lcg_logits(kVocab, 11);
  TokenBitmask allowed(kVocab, /*allowed=*/false);
  for (int32_t id : {3, 77, 150, 299}) allowed.allow(id);
  Sampler sampler = make_sampler(pure_params(3.0f, 8));
  sampler.add_processor(std::make_unique<TokenMask>(allowed));
  for (int i = 0; i < 2000; ++i) EXPECT_TRUE(allowed.is_allowed(sample_id(sampler, logits)));
}

TEST(SamplerTest, ReportsBadInputInsteadOfSampling) {
  Sampler sampler = make_sampler(pure_params(1.0f, 1));
  EXPECT_FALSE(sampler.sample({}, {}).ok());
  const std::vector<float> with_nan = {1.0f, NAN, 0.0f};
  EXPECT_FALSE(sampler.sample(with_nan, {}).ok());
  const std::vector<float> all_banned = {-INFINITY, -INFINITY};
  Result<SampledToken> banned = sampler.sample(all_banned, {});
  ASSERT_FALSE(banned.ok());
  EXPECT_NE(banned.error().message.find("banned"), std::string::npos);
}

TEST(SamplerTest, CreateRejectsInvalidParams) {
  SamplingParams params;
  params.temperature = -1.0f;
  Result<Sampler> sampler = Sampler::create(params);
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.error().message.find("temperature"), std::string::npos);
}

TEST(SamplerTest, LogprobsAreTheLogSoftmaxOfProcessedPreTemperatureLogits) {
  const std::vector<float> logits = {0.3f, 2.0f, -1.0f, 1.2f, 1.2f, 0.0f};
  const std::vector<int32_t> generated = {1};
  SamplingParams params = pure_params(2.5f, 77);
  params.top_k = 2;  // truncation must not change the reported distribution
  params.presence_penalty = 1.0f;
  params.logit_bias[5] = -INFINITY;
  params.logprobs = true;
  params.top_logprobs = 3;

  // Independent expectation: penalise id 1 by 1, drop id 5, log-softmax in double.
  std::vector<double> processed = {0.3, 1.0, -1.0, 1.2, 1.2};
  double normalizer = 0.0;
  for (double x : processed) normalizer += std::exp(x);
  normalizer = std::log(normalizer);

  Sampler sampler = make_sampler(params);
  for (int i = 0; i < 20; ++i) {
    Result<SampledToken> token = sampler.sample(logits, {{}, generated});
    ASSERT_TRUE(token.ok());
    // top_k = 2 over the processed logits {1.2 (id 3), 1.2 (id 4)}.
    ASSERT_TRUE(token->id == 3 || token->id == 4) << token->id;
    EXPECT_NEAR(token->logprob, processed[static_cast<size_t>(token->id)] - normalizer, 1e-5);
    ASSERT_EQ(token->top_logprobs.size(), 3u);
    EXPECT_EQ(token->top_logprobs[0].id, 3);
    EXPECT_EQ(token->top_logprobs[1].id, 4);
    EXPECT_EQ(token->top_logprobs[2].id, 1);
    for (const TokenLogprob& entry : token->top_logprobs) {
      EXPECT_NEAR(entry.logprob, processed[static_cast<size_t>(entry.id)] - normalizer, 1e-5);
    }
  }
}

TEST(SamplerTest, NoLogprobsUnlessAsked) {
  Sampler sampler = make_sampler(pure_params(1.0f, 1));
  Result<SampledToken> token = sampler.sample(std::vector<float>{1.0f, 2.0f}, {});
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->logprob, 0.0f);
  EXPECT_TRUE(token->top_logprobs.empty());
}

TEST(SamplerTest, LargeVocabularyTopPWithoutTopK) {
  // 128K logits where ids 0..9 hold almost all the mass: the nucleus must come from them.
  std::vector<float> logits = lcg_logits(128256, 5);
  for (float& logit : logits) logit -= 30.0f;  // in [-40, -20)
  for (int32_t id = 0; id < 10; ++id) logits[static_cast<size_t>(id)] = 5.0f + 0.1f * id;
  SamplingParams params = pure_params(1.0f, 9);
  params.top_p = 0.9f;
  Sampler sampler = make_sampler(params);
  for (int i = 0; i < 50; ++i) EXPECT_LT(sample_id(sampler, logits), 10);
}

}  // namespace
}  // namespace strata::sampling

namespace strata::sampling {
namespace {

// verify(): whatever the guess, the token it returns is distributed as sample()'s: the guess
// kept with probability p(guess), else a draw from p without it (speculative sampling with a
// proposer that is sure of its guess). Checked against the exact truncated, tempered softmax for
// a likely guess, an unlikely one and one that truncation removes.
TEST(SamplerTest, VerifyingAGuessKeepsTheSamplingDistribution) {
  const std::vector<double> base = {0.4, 0.25, 0.2, 0.1, 0.05};
  std::vector<float> logits;
  for (double p : base) logits.push_back(static_cast<float>(std::log(p)));
  SamplingParams params = pure_params(2.0f, 7);
  params.top_k = 4;
  params.top_p = 0.8f;  // keeps ids 0..2 (see TruncationRenormalisesOverTheKeptTokens)
  std::vector<double> expected = {std::sqrt(0.4), std::sqrt(0.25), std::sqrt(0.2), 0.0, 0.0};
  const double total = expected[0] + expected[1] + expected[2];
  for (double& p : expected) p /= total;

  for (int32_t guess : {0, 2, 4}) {
    Sampler sampler = make_sampler(params);
    constexpr int kDraws = 20000;
    std::vector<int> counts(logits.size(), 0);
    int kept = 0;
    for (int i = 0; i < kDraws; ++i) {
      Result<SampledToken> token = sampler.verify(logits, {}, guess);
      ASSERT_TRUE(token.ok());
      ++counts[static_cast<size_t>(token->id)];
      kept += token->id == guess;
    }
    EXPECT_LT(chi_square(counts, expected, kDraws), 35.0) << "guess " << guess;  // 2 dof
    // The guess stands as often as the model would pick it.
    EXPECT_NEAR(static_cast<double>(kept) / kDraws, expected[static_cast<size_t>(guess)], 0.015);
  }
}

TEST(SamplerTest, VerifyingGreedilyIsTheArgmax) {
  const std::vector<float> logits = lcg_logits(100, 3);
  Sampler sampler = make_sampler(greedy_params());
  const auto best = static_cast<int32_t>(argmax(logits));
  EXPECT_EQ(sampler.verify(logits, {}, best)->id, best);
  EXPECT_EQ(sampler.verify(logits, {}, best == 0 ? 1 : 0)->id, best);
}

}  // namespace
}  // namespace strata::sampling
