// Per-request sampling settings, with the defaults llama.cpp and the OpenAI API use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "base/result.h"

namespace strata::sampling {

struct SamplingParams {
  // 0 selects greedy decoding (argmax); otherwise logits are divided by it before the softmax.
  float temperature = 0.8f;
  int32_t top_k = 40;   // keep the k most likely tokens; 0 = off
  float top_p = 0.95f;  // keep the smallest set whose probability mass reaches top_p; 1 = off
  float min_p = 0.05f;  // keep tokens with p >= min_p * p_max; 0 = off

  // llama.cpp repetition penalty over the last repeat_last_n tokens of prompt + generated text
  // (-1 = the whole history, 0 = off). 1 = off.
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  // OpenAI penalties over generated tokens: logit -= frequency * count + presence * (count > 0).
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;

  // Added to a token's logit before sampling; -infinity bans the token.
  std::map<int32_t, float> logit_bias;

  // Seeds the sampler's own RNG, so a fixed seed gives the same draws on every platform.
  // Picking a fresh seed for requests that carry none is the caller's job.
  uint64_t seed = 0;

  // OpenAI `logprobs` / `top_logprobs` (llama.cpp n_probs): report the chosen token's log
  // probability and that of the top_logprobs most likely tokens.
  bool logprobs = false;
  int32_t top_logprobs = 0;

  // Checks every field against its allowed range. vocab_size, when non-zero, also bounds the
  // token ids in logit_bias. The error names the field and its range.
  Status validate(size_t vocab_size = 0) const;
};

// The most alternatives `top_logprobs` may ask for (the OpenAI API's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

// Settings for plain argmax decoding with no penalties.
inline SamplingParams greedy_params() {
  SamplingParams params;
  params.temperature = 0.0f;
  params.top_k = 0;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  return params;
}

}  // namespace strata::sampling
