#include "bench/prefix_bench.h"

namespace strata::bench {
namespace {

// Runs one request; its answer (exactly kPrefixAnswerTokens tokens) is appended to `answer`.
Result<PrefixCacheRequest> ask(Engine& engine, const std::vector<TokenId>& prompt,
                               std::vector<TokenId>& answer) {
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = kPrefixAnswerTokens;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  STRATA_ASSIGN_OR_RETURN(GenerationStats s, engine.generate(r, [&](const TokenEvent& e) {
    if (e.token >= 0) answer.push_back(e.token);
    return true;
  }));
  return PrefixCacheRequest{prompt.size(), s.cached_tokens, s.prompt_seconds * 1e3};
}

}  // namespace

Result<PrefixCacheResult> run_prefix_cache(Engine& engine, int prefix_tokens, int turns,
                                           std::mt19937_64& rng) {
  const size_t n_vocab = engine.model().n_vocab;
  PrefixCacheResult result;
  result.prefix_tokens = prefix_tokens;
  const std::vector<TokenId> system =
      random_prompt(static_cast<size_t>(prefix_tokens), n_vocab, rng);
  auto question = [&] { return random_prompt(kPrefixQuestionTokens, n_vocab, rng); };

  std::vector<TokenId> history = system;
  const std::vector<TokenId> first = question();
  history.insert(history.end(), first.begin(), first.end());
  std::vector<TokenId> answer;
  STRATA_ASSIGN_OR_RETURN(result.cold, ask(engine, history, answer));
  result.turns.push_back(result.cold);

  std::vector<TokenId> other = system;
  const std::vector<TokenId> second = question();
  other.insert(other.end(), second.begin(), second.end());
  std::vector<TokenId> ignored;
  STRATA_ASSIGN_OR_RETURN(result.warm, ask(engine, other, ignored));

  for (int turn = 1; turn < turns; ++turn) {
    history.insert(history.end(), answer.begin(), answer.end());
    const std::vector<TokenId> next = question();
    history.insert(history.end(), next.begin(), next.end());
    answer.clear();
    STRATA_ASSIGN_OR_RETURN(PrefixCacheRequest r, ask(engine, history, answer));
    result.turns.push_back(r);
  }
  return result;
}

}  // namespace strata::bench
