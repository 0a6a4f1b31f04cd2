// Engine behaviour on stories260K: batching and chunking do not change results, requests end
// cleanly, bad input is refused.
#include "strata/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

namespace strata {
namespace {

const char* kModel = "../shared/models/stories260K.gguf";

std::unique_ptr<Engine> make_engine(int max_sequences = 1, int batch_tokens = 512,
                                    int context = 0) {
  EngineOptions options;
  options.model_path = kModel;
  options.threads = 2;
  options.max_sequences = max_sequences;
  options.batch_tokens = batch_tokens;
  options.context = context;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

GenerationRequest greedy(std::vector<TokenId> prompt, int n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = n;
  r.sampling.temperature = 0;
  return r;
}

std::vector<TokenId> run_alone(Engine& engine, const GenerationRequest& r) {
  std::vector<TokenId> out;
  Result<GenerationStats> s = engine.generate(r, [&](const TokenEvent& e) {
    if (e.token >= 0) out.push_back(e.token);
    return true;
  });
  EXPECT_TRUE(s.ok());
  return out;
}

TEST(EngineTest, ConcurrentRequestsGetTheTokensTheyGetAlone) {
  std::unique_ptr<Engine> engine = make_engine(/*max_sequences=*/4, /*batch_tokens=*/16);
  ASSERT_TRUE(engine);
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog",
                                            "Tom and Sam went", "", "She had a red ball"};
  std::vector<std::vector<TokenId>> alone;
  alone.reserve(prompts.size());
  for (const std::string& p : prompts) {
    alone.push_back(run_alone(*engine, greedy(engine->tokenize(p, true, true), 40)));
  }

  // All at once: prompt chunks and decode tokens of different requests share each step.
  std::map<size_t, std::vector<TokenId>> together;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<TokenId>& out = together[i];
    Result<uint64_t> id = engine->submit(greedy(engine->tokenize(prompts[i], true, true), 40),
                                         [&out](const TokenEvent& e) {
                                           if (e.token >= 0) out.push_back(e.token);
                                           return true;
                                         });
    ASSERT_TRUE(id.ok());
  }
  while (engine->has_work()) ASSERT_TRUE(engine->step().ok());
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(together[i], alone[i]) << "prompt " << i;
}

TEST(EngineTest, ChunkedPromptGivesTheSameLogits) {
  std::unique_ptr<Engine> whole = make_engine(1, 512);
  std::unique_ptr<Engine> chunked = make_engine(1, 7);
  ASSERT_TRUE(whole && chunked);
  std::vector<TokenId> tokens = whole->tokenize(
      "Once upon a time, there was a little girl named Lily. She loved to play", true, true);
  Result<std::vector<float>> a = whole->evaluate(tokens);
  Result<std::vector<float>> b = chunked->evaluate(tokens);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_NEAR((*a)[i], (*b)[i], 1e-4) << i;
}

TEST(EngineTest, AllPositionLogitsEndWithTheLastPosition) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  std::vector<TokenId> tokens = engine->tokenize("The little dog", true, true);
  Result<std::vector<float>> last = engine->evaluate(tokens);
  Result<std::vector<float>> all = engine->evaluate(tokens, /*all_positions=*/true);
  ASSERT_TRUE(last.ok() && all.ok());
  const size_t V = engine->model().n_vocab;
  ASSERT_EQ(all->size(), tokens.size() * V);
  for (size_t i = 0; i < V; ++i) EXPECT_NEAR((*all)[(tokens.size() - 1) * V + i], (*last)[i], 1e-5);
}

TEST(EngineTest, SeededSamplingIsReproducible) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  GenerationRequest r;
  r.prompt = engine->tokenize("Once upon a time", true, true);
  r.max_tokens = 30;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 1234;
  std::vector<TokenId> a = run_alone(*engine, r);
  std::vector<TokenId> b = run_alone(*engine, r);
  r.sampling.seed = 99;
  std::vector<TokenId> c = run_alone(*engine, r);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(EngineTest, CancelledRequestFreesItsSequence) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  int seen = 0;
  Result<GenerationStats> s = engine->generate(greedy(engine->tokenize("Once", true, true), 50),
                                               [&](const TokenEvent&) { return ++seen < 5; });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->finish, FinishReason::kCancelled);
  EXPECT_EQ(seen, 5);
  EXPECT_FALSE(engine->has_work());
}

TEST(EngineTest, CancelByIdReturnsPagesAtOnce) {
  std::unique_ptr<Engine> engine = make_engine(/*max_sequences=*/2);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->load().kv_pages_used, 0u);
  std::vector<FinishReason> finishes;
  auto record = [&](const TokenEvent& e) {
    if (e.finish != FinishReason::kNone) finishes.push_back(e.finish);
    return true;
  };
  Result<uint64_t> a =
      engine->submit(greedy(engine->tokenize("Once upon", true, true), 50), record);
  Result<uint64_t> b = engine->submit(greedy(engine->tokenize("The dog", true, true), 50), record);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(engine->load().waiting, 2u);
  ASSERT_TRUE(engine->step().ok());
  const EngineLoad both = engine->load();
  EXPECT_EQ(both.running, 2u);
  EXPECT_EQ(both.waiting, 0u);
  EXPECT_GE(both.kv_pages_used, 2u);  // at least one page per sequence

  EXPECT_TRUE(engine->cancel(*a));
  EXPECT_FALSE(engine->cancel(*a));  // already gone
  EXPECT_FALSE(engine->cancel(9999));
  const EngineLoad one = engine->load();
  EXPECT_EQ(one.running, 1u);
  EXPECT_LT(one.kv_pages_used, both.kv_pages_used);
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0], FinishReason::kCancelled);

  while (engine->has_work()) ASSERT_TRUE(engine->step().ok());
  EXPECT_EQ(engine->load().kv_pages_used, 0u);
  EXPECT_EQ(engine->load().running, 0u);
}

TEST(EngineTest, CancelFromAnotherRequestsCallbackIsSafe) {
  std::unique_ptr<Engine> engine = make_engine(/*max_sequences=*/2);
  ASSERT_TRUE(engine);
  uint64_t victim = 0;
  FinishReason victim_finish = FinishReason::kNone;
  Result<uint64_t> a =
      engine->submit(greedy(engine->tokenize("Once", true, true), 20), [&](const TokenEvent&) {
        engine->cancel(victim);
        return true;
      });
  Result<uint64_t> b =
      engine->submit(greedy(engine->tokenize("Tom", true, true), 20), [&](const TokenEvent& e) {
        if (e.finish != FinishReason::kNone) victim_finish = e.finish;
        return true;
      });
  ASSERT_TRUE(a.ok() && b.ok());
  victim = *b;
  while (engine->has_work()) ASSERT_TRUE(engine->step().ok());
  EXPECT_EQ(victim_finish, FinishReason::kCancelled);
  EXPECT_EQ(engine->load().kv_pages_used, 0u);
}

TEST(EngineTest, FullWaitingQueueRefusesAtOnce) {
  EngineOptions options;
  options.model_path = kModel;
  options.threads = 1;
  options.max_waiting = 2;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  ASSERT_TRUE(engine.ok());
  const GenerationRequest r = greedy((*engine)->tokenize("Once", true, true), 4);
  EXPECT_TRUE((*engine)->submit(r, {}).ok());
  EXPECT_TRUE((*engine)->submit(r, {}).ok());
  Result<uint64_t> third = (*engine)->submit(r, {});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kUnavailable);
  while ((*engine)->has_work()) ASSERT_TRUE((*engine)->step().ok());
  EXPECT_TRUE((*engine)->submit(r, {}).ok());  // room again once the queue drains
}

TEST(EngineTest, LogprobsMatchTheLogSoftmaxOfTheLogits) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  const std::vector<TokenId> prompt = engine->tokenize("Once upon a time", true, true);
  Result<std::vector<float>> logits = engine->evaluate(prompt);
  ASSERT_TRUE(logits.ok());
  double sum = 0;
  const float top = *std::max_element(logits->begin(), logits->end());
  for (float l : *logits) sum += std::exp(static_cast<double>(l - top));
  const double log_z = top + std::log(sum);

  GenerationRequest r = greedy(prompt, 1);
  r.logprobs = true;
  r.top_logprobs = 3;
  TokenEvent first;
  ASSERT_TRUE(engine
                  ->generate(r,
                             [&](const TokenEvent& e) {
                               if (e.token >= 0) first = e;
                               return true;
                             })
                  .ok());
  ASSERT_EQ(first.top_logprobs.size(), 3u);
  EXPECT_EQ(first.top_logprobs[0].token, first.token);  // greedy picks the most likely
  EXPECT_NEAR(first.logprob, (*logits)[static_cast<size_t>(first.token)] - log_z, 1e-3);
  for (const TokenLogprob& t : first.top_logprobs)
    EXPECT_NEAR(t.logprob, (*logits)[static_cast<size_t>(t.token)] - log_z, 1e-3);
  EXPECT_GE(first.top_logprobs[1].logprob, first.top_logprobs[2].logprob);
}

TEST(EngineTest, StopStringEndsGenerationBeforeIt) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  GenerationRequest r = greedy(engine->tokenize("Once upon a time", true, true), 64);
  r.stop = {"Lily"};  // the greedy continuation is ", there was a little girl named Lily. ..."
  std::string text;
  Result<GenerationStats> s = engine->generate(r, [&](const TokenEvent& e) {
    text += e.text;
    return true;
  });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->finish, FinishReason::kStop);
  EXPECT_EQ(text, ", there was a little girl named ");
}

TEST(EngineTest, PromptLongerThanTheContextIsRefused) {
  std::unique_ptr<Engine> engine = make_engine(1, 512, /*context=*/16);
  ASSERT_TRUE(engine);
  std::vector<TokenId> prompt(16, 300);
  Result<uint64_t> id = engine->submit(greedy(prompt, 4), nullptr);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kOutOfRange);
  EXPECT_NE(id.error().message.find("16"), std::string::npos);
  // A prompt that fits ends with "length" when the context is full.
  Result<GenerationStats> s = engine->generate(greedy(std::vector<TokenId>(10, 300), 100), nullptr);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->finish, FinishReason::kLength);
  EXPECT_EQ(s->generated_tokens, 6u);
}

TEST(EngineTest, BadInputIsAnErrorNotACrash) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  EXPECT_FALSE(engine->submit(greedy({1, 100000}, 4), nullptr).ok());
  EXPECT_FALSE(engine->submit(greedy({}, 4), nullptr).ok());
  GenerationRequest r = greedy({1}, 4);
  r.sampling.temperature = -1;
  EXPECT_FALSE(engine->submit(r, nullptr).ok());
  EngineOptions options;
  options.model_path = "/nonexistent.gguf";
  Result<std::unique_ptr<Engine>> missing = Engine::create(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent.gguf"), std::string::npos);
}

// The KV cache is allocated whole at start: one larger than the machine's memory is refused with
// what to change, not attempted. stories260K holds 640 bytes of f16 KV per position (5 layers,
// k and v of 32), so 2^31 - 1 positions for 1024 sequences is about 1.3 PiB, past any machine.
TEST(EngineTest, AKvCacheThatCannotFitIsRefusedWithWhatToChange) {
  EngineOptions options;
  options.model_path = kModel;
  options.context = std::numeric_limits<int>::max();
  options.max_sequences = 1024;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error().code, ErrorCode::kOutOfRange);
  EXPECT_NE(engine.error().message.find("lower the context size"), std::string::npos)
      << engine.error().message;
}

// --kv-memory: a cache over the budget is refused at start, naming what it needs and what the
// default tiers would take; those tiers then start within the same budget. The testbed target
// has heads of 64, which the rotated tiers can hold (stories260K's 8 fall back to f16).
TEST(EngineTest, AKvCacheOverItsMemoryBudgetIsRefusedNamingTheTiersThatFit) {
  EngineOptions options;
  options.model_path = "models/testbed/target.gguf";
  options.context = 8192;
  options.kv.memory_bytes = size_t{8} << 20;  // f16 needs 24 MiB here, the default tiers ~6
  Result<std::unique_ptr<Engine>> refused = Engine::create(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kOutOfRange);
  const std::string& why = refused.error().message;
  EXPECT_NE(why.find("more than --kv-memory 8.0 MiB"), std::string::npos) << why;
  EXPECT_NE(why.find("--kv-tiers default would take"), std::string::npos) << why;
  EXPECT_EQ(why.find("also over it"), std::string::npos) << why;

  options.kv.tiers = default_kv_tiers();
  Result<std::unique_ptr<Engine>> tiered = Engine::create(options);
  ASSERT_TRUE(tiered.ok()) << tiered.error().message;
  GenerationRequest request;
  request.prompt = (*tiered)->tokenize("Once upon a time", true, false);
  request.max_tokens = 8;
  request.ignore_eos = true;
  Result<GenerationStats> out =
      (*tiered)->generate(request, [](const TokenEvent&) { return true; });
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->generated_tokens, 8u);
}

// --kv-offload: the coldest arena lives in a file, so it does not count against --kv-memory; a
// cache refused in memory starts and gives the same tokens. A folder that cannot hold the file
// is refused with its name.
TEST(EngineTest, OffloadedPagesLeaveTheMemoryBudgetAndKeepTheOutput) {
  const std::string dir = ::testing::TempDir() + "strata-kv-offload";
  std::filesystem::create_directories(dir);
  auto run = [](const EngineOptions& options) {
    Result<std::unique_ptr<Engine>> engine = Engine::create(options);
    EXPECT_TRUE(engine.ok()) << engine.error().message;
    std::vector<TokenId> tokens;
    if (!engine.ok()) return tokens;
    GenerationRequest request;
    request.prompt = (*engine)->tokenize("Once upon a time, there was a dog", true, false);
    request.max_tokens = 300;  // past the first page of the testbed's cold tier
    request.ignore_eos = true;
    request.sampling.temperature = 0;
    EXPECT_TRUE((*engine)
                    ->generate(request,
                               [&tokens](const TokenEvent& e) {
                                 if (e.token >= 0) tokens.push_back(e.token);
                                 return true;
                               })
                    .ok());
    return tokens;
  };
  EngineOptions options;
  options.model_path = "models/testbed/target.gguf";
  options.context = 8192;
  options.kv.tiers = *parse_kv_tiers("sink=0,hot=64,cold=r4");
  const std::vector<TokenId> in_memory = run(options);
  options.kv.memory_bytes = size_t{1} << 20;  // the hot tier fits; the cold one (~4 MiB) not
  Result<std::unique_ptr<Engine>> refused = Engine::create(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kOutOfRange);
  options.kv.offload_dir = dir;
  EXPECT_EQ(run(options), in_memory);
  EXPECT_EQ(in_memory.size(), 300u);
  options.kv.offload_dir = dir + "/missing";
  Result<std::unique_ptr<Engine>> nowhere = Engine::create(options);
  ASSERT_FALSE(nowhere.ok());
  EXPECT_NE(nowhere.error().message.find("--kv-offload " + dir + "/missing"), std::string::npos)
      << nowhere.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata
