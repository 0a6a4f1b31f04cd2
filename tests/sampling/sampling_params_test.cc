#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace strata::sampling {
namespace {

// Expects validate() to fail with a message that names `field`.
void expect_rejected(const SamplingParams& params, const std::string& field,
                     size_t vocab_size = 0) {
  Status status = params.validate(vocab_size);
  ASSERT_FALSE(status.ok()) << field;
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(status.error().message.find(field), std::string::npos) << status.error().message;
}

TEST(SamplingParamsTest, DefaultsAndGreedyAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  EXPECT_TRUE(greedy_params().validate().ok());
  EXPECT_EQ(greedy_params().temperature, 0.0f);
}

TEST(SamplingParamsTest, RejectsEachOutOfRangeField) {
  SamplingParams p;
  p.temperature = -0.1f;
  expect_rejected(p, "temperature");
  p = {};
  p.temperature = NAN;
  expect_rejected(p, "temperature");
  p = {};
  p.top_k = -1;
  expect_rejected(p, "top_k");
  p = {};
  p.top_p = 0.0f;
  expect_rejected(p, "top_p");
  p.top_p = 1.01f;
  expect_rejected(p, "top_p");
  p = {};
  p.min_p = -0.5f;
  expect_rejected(p, "min_p");
  p.min_p = 1.5f;
  expect_rejected(p, "min_p");
  p = {};
  p.repeat_penalty = 0.0f;
  expect_rejected(p, "repeat_penalty");
  p = {};
  p.repeat_last_n = -2;
  expect_rejected(p, "repeat_last_n");
  p = {};
  p.frequency_penalty = 2.5f;
  expect_rejected(p, "frequency_penalty");
  p = {};
  p.presence_penalty = -3.0f;
  expect_rejected(p, "presence_penalty");
  p = {};
  p.top_logprobs = kMaxTopLogprobs + 1;
  expect_rejected(p, "top_logprobs");
}

TEST(SamplingParamsTest, MessageGivesAllowedRange) {
  SamplingParams p;
  p.top_p = 2.0f;
  Status status = p.validate();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("(0, 1]"), std::string::npos) << status.error().message;
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
  SamplingParams p;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.repeat_last_n = -1;
  p.frequency_penalty = -2.0f;
  p.presence_penalty = 2.0f;
  p.top_logprobs = kMaxTopLogprobs;
  EXPECT_TRUE(p.validate().ok());
}

TEST(SamplingParamsTest, LogitBiasAllowsBansButNotNanOrPlusInfinity) {
  SamplingParams p;
  p.logit_bias[3] = -INFINITY;
  p.logit_bias[4] = 100.0f;
  EXPECT_TRUE(p.validate(10).ok());
  p.logit_bias[5] = INFINITY;
  expect_rejected(p, "logit_bias");
  p.logit_bias.erase(5);
  p.logit_bias[6] = NAN;
  expect_rejected(p, "logit_bias");
}

TEST(SamplingParamsTest, LogitBiasIdsMustBeInVocabulary) {
  SamplingParams p;
  p.logit_bias[-1] = 1.0f;
  expect_rejected(p, "logit_bias");
  p.logit_bias.clear();
  p.logit_bias[10] = 1.0f;
  EXPECT_TRUE(p.validate().ok());  // vocabulary size unknown: any id >= 0 passes
  EXPECT_TRUE(p.validate(11).ok());
  expect_rejected(p, "logit_bias", 10);
}

}  // namespace
}  // namespace strata::sampling
