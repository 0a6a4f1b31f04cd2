// Sampler: turns one sequence's logits into the next token, with that sequence's processors,
// truncation settings and seeded RNG.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "sampling/candidates.h"
#include "sampling/logit_processor.h"
#include "sampling/rng.h"
#include "sampling/sampling_params.h"

namespace strata::sampling {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampledToken {
  int32_t id = -1;
  // With params.logprobs: log-softmax of the processed logits (after penalties, biases and
  // masks; before truncation and temperature, as OpenAI reports it) for the chosen token, and
  // the params.top_logprobs best tokens, best first. Otherwise 0 and empty.
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;
};

class Sampler {
 public:
  // Validates params and builds the processor chain from them: repetition penalty, then
  // frequency/presence penalties, then logit bias.
  static Result<Sampler> create(const SamplingParams& params);

  // Appends a processor that runs after the built-in ones. A grammar's mask is not one: the
  // engine step applies it to the logit row before sample() (its "mask" phase).
  void add_processor(std::unique_ptr<LogitProcessor> processor);

  // Applies the chain to a copy of `logits`, then picks a token: argmax (lowest id on ties)
  // when temperature == 0, else top-k -> top-p -> min-p -> temperature -> softmax -> draw.
  // Fails when logits is empty, holds NaN or +infinity, or every token is banned.
  Result<SampledToken> sample(std::span<const float> logits, const SequenceHistory& history);
  // Verifies a guessed token (speculative decoding) against these logits. Greedy: the argmax, as
  // sample() picks it (the guess stands when they agree). Otherwise the rejection rule of
  // speculative sampling for a proposer that puts all its mass on the guess (Leviathan et al.,
  // q = one-hot): the guess is kept with probability p(guess) under every setting sample() uses,
  // else a token is drawn from p without the guess, renormalised; either way the token returned
  // is distributed exactly as sample()'s.
  Result<SampledToken> verify(std::span<const float> logits, const SequenceHistory& history,
                              int32_t guess);

  const SamplingParams& params() const { return params_; }

 private:
  explicit Sampler(const SamplingParams& params);

  // Applies the processors and keeps the unbanned tokens in candidates_.
  Status prepare(std::span<const float> logits, const SequenceHistory& history);
  void truncate();  // top-k, top-p, min-p
  int32_t draw(float temperature);
  // The weights softmax(logit / T) of candidates_ in weights_; returns their total.
  double fill_weights(float temperature);
  void fill_logprobs(int32_t chosen, SampledToken& out);

  SamplingParams params_;
  LogitProcessorChain chain_;
  SplitMix64 rng_;
  // Scratch reused across steps to avoid per-token allocation on large vocabularies.
  std::vector<float> logits_;
  std::vector<Candidate> candidates_;
  std::vector<float> weights_;
};

}  // namespace strata::sampling
