// Prefix caching through the engine on stories260K: outputs are the same with and without it
// (shared and unshared prompts, several streams, a hit on pages another sequence is still
// filling), hits are reported, salts keep requests apart.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "strata/engine.h"

namespace strata {
namespace {

const char* kModel = "../shared/models/stories260K.gguf";

std::unique_ptr<Engine> make_engine(bool prefix_cache, int max_sequences = 4,
                                    int batch_tokens = 40) {
  EngineOptions options;
  options.model_path = kModel;
  options.threads = 2;
  options.max_sequences = max_sequences;
  options.batch_tokens = batch_tokens;
  options.prefix_cache.enabled = prefix_cache;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

GenerationRequest greedy(std::vector<TokenId> prompt, int n, std::string salt = "") {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = n;
  r.sampling.temperature = 0;
  r.cache_salt = std::move(salt);
  return r;
}

struct Outcome {
  std::vector<TokenId> tokens;
  size_t cached = 0;
};

Outcome run_alone(Engine& engine, const GenerationRequest& r) {
  Outcome out;
  Result<GenerationStats> s = engine.generate(r, [&](const TokenEvent& e) {
    if (e.token >= 0) out.tokens.push_back(e.token);
    return true;
  });
  EXPECT_TRUE(s.ok());
  if (s.ok()) out.cached = s->cached_tokens;
  return out;
}

// Submits requests, the i-th after `delays[i]` steps, and runs them all to the end.
std::vector<Outcome> run_together(Engine& engine, const std::vector<GenerationRequest>& requests,
                                  const std::vector<int>& delays) {
  std::vector<Outcome> out(requests.size());
  int step = 0;
  size_t submitted = 0;
  while (submitted < requests.size() || engine.has_work()) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (delays[i] != step) continue;
      GenerationRequest r = requests[i];
      r.report_admission = true;
      EXPECT_TRUE(engine
                      .submit(r,
                              [&out, i](const TokenEvent& e) {
                                if (e.admitted) out[i].cached = e.cached_tokens;
                                if (e.token >= 0) out[i].tokens.push_back(e.token);
                                return true;
                              })
                      .ok());
      ++submitted;
    }
    if (engine.has_work()) {
      EXPECT_TRUE(engine.step().ok());
    }
    ++step;
  }
  return out;
}

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park. She ran to the ball and kicked it very "
    "high. The ball flew over the trees and landed in a pond. Lily was sad because she could not "
    "get her ball. Then a kind duck swam to the ball and pushed it back to her.";

TEST(PrefixCacheEngineTest, SecondRequestReusesThePromptPagesAndSaysSo) {
  std::unique_ptr<Engine> engine = make_engine(true, 1, 64);
  ASSERT_TRUE(engine);
  const std::vector<TokenId> prompt = engine->tokenize(kStory, true, true);
  ASSERT_GT(prompt.size(), 70u);
  const Outcome first = run_alone(*engine, greedy(prompt, 24));
  const Outcome second = run_alone(*engine, greedy(prompt, 24));
  EXPECT_EQ(first.cached, 0u);
  EXPECT_EQ(second.cached, (prompt.size() - 1) / 32 * 32);  // whole pages, not the last token
  EXPECT_EQ(second.tokens, first.tokens);
  const EngineLoad load = engine->load();
  EXPECT_EQ(load.prefix_cache_queries, 2 * prompt.size());
  EXPECT_EQ(load.prefix_cache_hits, second.cached);
  EXPECT_GT(load.prefix_cache_pages, 0u);
  // Another salt shares nothing, and still gets the same tokens.
  const Outcome salted = run_alone(*engine, greedy(prompt, 24, "tenant-b"));
  EXPECT_EQ(salted.cached, 0u);
  EXPECT_EQ(salted.tokens, first.tokens);
}

TEST(PrefixCacheEngineTest, OutputsAreTheSameWithAndWithoutTheCacheWhateverTheMix) {
  std::unique_ptr<Engine> cached = make_engine(true);
  std::unique_ptr<Engine> plain = make_engine(false);
  ASSERT_TRUE(cached && plain);
  const std::string story = kStory;
  const std::vector<std::string> texts = {
      story + " The end.",
      story + " Lily said thank you to the duck.",
      "Tom had a small dog.",  // shares nothing
      story + " Lily said thank you to the duck and they played.",
      story.substr(0, 150),  // a prefix of the others, ending inside a page
      "Tom had a small dog. The dog liked to run.",
  };
  std::vector<GenerationRequest> requests;
  for (const std::string& t : texts)
    requests.push_back(greedy(cached->tokenize(t, true, true), 32));
  std::vector<Outcome> expected;
  for (const GenerationRequest& r : requests) expected.push_back(run_alone(*plain, r));

  // The first runs alone into the cache's empty pool, 40 prompt tokens a step; the second is
  // admitted in the step that ends the first's prompt (its fourth), so it starts on the pages the
  // first filled while the first still writes its last prompt page; the rest come together a
  // little later.
  ASSERT_EQ(requests[0].prompt.size(), 142u);
  const std::vector<Outcome> got = run_together(*cached, requests, {0, 2, 4, 4, 5, 6});
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i << ": " << texts[i];
  }
  EXPECT_EQ(got[1].cached, 96u);  // positions [0, 120) were computed when it was admitted
  EXPECT_LT(got[1].cached, (requests[1].prompt.size() - 1) / 32 * 32);
  EXPECT_GT(got[3].cached, got[1].cached);
  EXPECT_EQ(got[2].cached, 0u);

  // Again, all at once, now that everything is cached: still the same tokens.
  const std::vector<Outcome> again = run_together(*cached, requests, {0, 0, 0, 0, 0, 0});
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(again[i].tokens, expected[i].tokens) << "request " << i;
    EXPECT_EQ(again[i].cached, (requests[i].prompt.size() - 1) / 32 * 32) << "request " << i;
  }
}

TEST(PrefixCacheEngineTest, SharedPrefixIsHeldOnceByConcurrentStreams) {
  std::unique_ptr<Engine> engine = make_engine(true, 8, 512);
  ASSERT_TRUE(engine);
  const std::vector<TokenId> prefix =
      engine->tokenize(std::string(kStory) + " " + kStory, true, true);
  run_alone(*engine, greedy(prefix, 1));  // warms the cache
  size_t max_used = 0;
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> p = prefix;
    p.push_back(static_cast<TokenId>(300 + i));
    requests.push_back(greedy(p, 8));
  }
  for (const GenerationRequest& r : requests) ASSERT_TRUE(engine->submit(r, nullptr).ok());
  while (engine->has_work()) {
    ASSERT_TRUE(engine->step().ok());
    max_used = std::max(max_used, engine->load().kv_pages_used);
  }
  // The prefix's whole pages are held once; each stream owns only its tail (one or two pages).
  const size_t shared = prefix.size() / 32;
  ASSERT_GE(shared, 5u);
  EXPECT_LE(max_used, shared + 8 * 2);
  EXPECT_EQ(engine->load().prefix_cache_hits, 8 * shared * 32);
}

}  // namespace
}  // namespace strata
