// The engine's state of one request.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/constraint.h"
#include "engine/stop_matcher.h"
#include "kv/kv_cache.h"
#include "sampling/sampler.h"
#include "strata/engine.h"
#include "tokenizer/tokenizer.h"

namespace strata::engine {

struct Sequence {
  uint64_t id = 0;              // also its KV sequence id
  std::vector<TokenId> tokens;  // prompt, then generated tokens
  size_t n_prompt = 0;
  size_t n_computed = 0;  // leading tokens whose keys/values are in the KV cache
  size_t max_length = 0;  // n_prompt + max_tokens, capped by the context
  bool ignore_eos = false;

  std::unique_ptr<sampling::Sampler> sampler;
  std::unique_ptr<tokenizer::StreamingDetokenizer> detokenizer;
  std::unique_ptr<StopMatcher> stop;
  SequenceConstraint* constraint = nullptr;  // owned by the sampler's processor chain
  TokenCallback on_token;

  FinishReason finish = FinishReason::kNone;

  size_t n_generated() const { return tokens.size() - n_prompt; }
  // Tokens still to run through the model before the next sample.
  size_t n_pending() const { return tokens.size() - n_computed; }
};

}  // namespace strata::engine
