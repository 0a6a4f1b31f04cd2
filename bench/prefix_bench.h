// `strata bench --prefix-cache N`: what prefix caching saves a chat client. A system prompt of N
// random tokens is sent with one question (cold: nothing cached), then with another (warm: the
// system prompt's pages are found), then a conversation of --turns turns goes on from the first,
// each turn's prompt the whole history plus a new question, as chat clients resend it. Time to
// first token per request, with the prompt tokens and those the cache held.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

struct PrefixCacheRequest {
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;
  double ttft_ms = 0;
};

struct PrefixCacheResult {
  int prefix_tokens = 0;
  PrefixCacheRequest cold;                // system prompt + question 1: nothing cached
  PrefixCacheRequest warm;                // system prompt + question 2: the prompt's pages cached
  std::vector<PrefixCacheRequest> turns;  // the conversation, turn 1 being `cold`
  double warm_speedup() const { return warm.ttft_ms > 0 ? cold.ttft_ms / warm.ttft_ms : 0; }
};

inline constexpr int kPrefixQuestionTokens = 16;
inline constexpr int kPrefixAnswerTokens = 32;

// Positions the test needs in one sequence: the prefix and every turn's question and answer.
inline int prefix_cache_context(int prefix_tokens, int turns) {
  return prefix_tokens + turns * (kPrefixQuestionTokens + kPrefixAnswerTokens) + 1;
}

// Random token ids (at least one), as llama-bench feeds: the content does not change the work
// of a forward pass.
std::vector<TokenId> random_prompt(size_t n, size_t n_vocab, std::mt19937_64& rng);

// The engine must have prefix caching enabled.
Result<PrefixCacheResult> run_prefix_cache(Engine& engine, int prefix_tokens, int turns,
                                           std::mt19937_64& rng);

}  // namespace strata::bench
