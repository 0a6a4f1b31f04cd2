// Logit processors: per-sequence edits of the logits between the forward pass and the draw
// (penalties, biases, allowed-token masks).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "sampling/token_bitmask.h"

namespace strata::sampling {

// The token ids a sequence has seen so far. Ids outside the logits' range are ignored.
struct SequenceHistory {
  std::span<const int32_t> prompt;
  std::span<const int32_t> generated;
};

class LogitProcessor {
 public:
  virtual ~LogitProcessor() = default;
  // Edits `logits` (one per vocabulary entry) in place.
  virtual void apply(std::span<float> logits, const SequenceHistory& history) = 0;
};

// Runs processors in the order they were added.
class LogitProcessorChain : public LogitProcessor {
 public:
  void add(std::unique_ptr<LogitProcessor> processor);
  bool empty() const { return processors_.empty(); }
  size_t size() const { return processors_.size(); }
  void apply(std::span<float> logits, const SequenceHistory& history) override;

 private:
  std::vector<std::unique_ptr<LogitProcessor>> processors_;
};

// llama.cpp's repetition penalty (CTRL, Keskar et al. 2019): each distinct token among the last
// `last_n` tokens of prompt + generated (-1 = all) has a positive logit divided by `penalty`
// and any other logit multiplied by it, once, however often it occurs.
class RepetitionPenalty : public LogitProcessor {
 public:
  RepetitionPenalty(float penalty, int32_t last_n) : penalty_(penalty), last_n_(last_n) {}
  void apply(std::span<float> logits, const SequenceHistory& history) override;

 private:
  float penalty_;
  int32_t last_n_;
  std::vector<int32_t> window_;  // scratch, reused across steps
};

// OpenAI frequency and presence penalties over the generated tokens:
// logit[j] -= frequency * count[j] + presence * (count[j] > 0).
class FrequencyPresencePenalty : public LogitProcessor {
 public:
  FrequencyPresencePenalty(float frequency, float presence)
      : frequency_(frequency), presence_(presence) {}
  void apply(std::span<float> logits, const SequenceHistory& history) override;

 private:
  float frequency_;
  float presence_;
  std::vector<int32_t> sorted_;  // scratch, reused across steps
};

// Adds a fixed bias per token id; a bias of -infinity bans the token.
class LogitBias : public LogitProcessor {
 public:
  explicit LogitBias(const std::map<int32_t, float>& bias);
  void apply(std::span<float> logits, const SequenceHistory& history) override;

 private:
  std::vector<std::pair<int32_t, float>> bias_;
};

// Bans every token its mask does not allow. The owner (a grammar matcher, for one) rewrites
// mask() before each step.
class TokenMask : public LogitProcessor {
 public:
  explicit TokenMask(TokenBitmask mask) : mask_(std::move(mask)) {}
  TokenBitmask& mask() { return mask_; }
  const TokenBitmask& mask() const { return mask_; }
  void apply(std::span<float> logits, const SequenceHistory& history) override;

 private:
  TokenBitmask mask_;
};

}  // namespace strata::sampling
