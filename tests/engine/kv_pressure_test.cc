// The engine with a KV pool smaller than its sequences need (stories260K): sequences short of
// pages wait or are preempted and recomputed, never failed, and each gets exactly the tokens it
// gets alone.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "strata/engine.h"

namespace strata {
namespace {

constexpr int kContext = 256, kPageSize = 16;

std::unique_ptr<Engine> make_engine(int max_sequences, int kv_pages) {
  EngineOptions options;
  options.model_path = "../shared/models/stories260K.gguf";
  options.threads = 2;
  options.max_sequences = max_sequences;
  options.batch_tokens = 64;
  options.context = kContext;
  options.page_size = kPageSize;
  options.kv.pages = kv_pages;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

GenerationRequest long_request(Engine& engine, const std::string& prompt, int n) {
  GenerationRequest r;
  r.prompt = engine.tokenize(prompt, true, true);
  r.max_tokens = n;
  r.sampling.temperature = 0;
  r.ignore_eos = true;  // every request runs to max_tokens, so all of them need many pages
  r.report_admission = true;
  return r;
}

struct Outcome {
  std::vector<TokenId> tokens;
  FinishReason finish = FinishReason::kNone;
  std::string error;
  int admissions = 0;
};

TokenCallback record(Outcome& out) {
  return [&out](const TokenEvent& e) {
    if (e.admitted) ++out.admissions;
    if (e.token >= 0) out.tokens.push_back(e.token);
    if (e.finish != FinishReason::kNone) {
      out.finish = e.finish;
      out.error = e.error;
    }
    return true;
  };
}

std::vector<TokenId> alone(Engine& engine, const GenerationRequest& r) {
  Outcome out;
  EXPECT_TRUE(engine.generate(r, record(out)).ok());
  return out.tokens;
}

// 8 requests of ~230 positions (15 pages of 16) each, into a pool of 48 pages: room for 3.
TEST(KvPressureTest, EightLongRequestsIntoRoomForThreeAllComplete) {
  const int pages_for_three = 3 * kContext / kPageSize;
  std::unique_ptr<Engine> engine = make_engine(/*max_sequences=*/8, pages_for_three);
  ASSERT_TRUE(engine);
  const std::vector<std::string> prompts = {
      "Once upon a time", "The little dog",      "Tom and Sam went", "She had a red ball",
      "One day, a bird",  "Lily wanted to play", "The sun was",      "A big bear"};
  std::vector<GenerationRequest> requests;
  std::vector<std::vector<TokenId>> expected;
  for (const std::string& p : prompts) {
    requests.push_back(long_request(*engine, p, 220));
    expected.push_back(alone(*engine, requests.back()));
  }
  std::vector<Outcome> outcomes(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    ASSERT_TRUE(engine->submit(requests[i], record(outcomes[i])).ok());
  size_t peak_pages = 0;
  while (engine->has_work()) {
    ASSERT_TRUE(engine->step().ok());
    peak_pages = std::max(peak_pages, engine->load().kv_pages_used);
  }
  EXPECT_LE(peak_pages, static_cast<size_t>(pages_for_three));
  EXPECT_GT(engine->load().preemptions, 0u);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].finish, FinishReason::kLength) << i << ": " << outcomes[i].error;
    EXPECT_TRUE(outcomes[i].error.empty()) << i;
    EXPECT_EQ(outcomes[i].tokens, expected[i]) << "request " << i;
    EXPECT_EQ(outcomes[i].admissions, 1) << i;  // reported once, however often it was preempted
  }
  EXPECT_EQ(engine->load().kv_pages_used, 0u);
}

// Two sequences that each fit alone but not together: the second admitted is preempted, the
// first runs on undisturbed, and the second resumes from its tokens once pages are free.
TEST(KvPressureTest, TheMostRecentlyAdmittedIsPreemptedAndRecomputed) {
  std::unique_ptr<Engine> engine = make_engine(/*max_sequences=*/2, /*kv_pages=*/20);
  ASSERT_TRUE(engine);
  GenerationRequest first = long_request(*engine, "Once upon a time", 200);
  GenerationRequest second = long_request(*engine, "The little dog", 200);
  const std::vector<TokenId> first_alone = alone(*engine, first);
  const std::vector<TokenId> second_alone = alone(*engine, second);
  EXPECT_EQ(engine->load().preemptions, 0u);

  Outcome a, b;
  ASSERT_TRUE(engine->submit(first, record(a)).ok());
  ASSERT_TRUE(engine->submit(second, record(b)).ok());
  ASSERT_TRUE(engine->step().ok());
  EXPECT_EQ(engine->load().running, 2u);
  bool first_finished_first = false;
  while (engine->has_work()) {
    ASSERT_TRUE(engine->step().ok());
    if (a.finish != FinishReason::kNone && b.finish == FinishReason::kNone)
      first_finished_first = true;
  }
  EXPECT_GE(engine->load().preemptions, 1u);
  EXPECT_TRUE(first_finished_first);  // the first was never preempted
  EXPECT_EQ(a.tokens, first_alone);
  EXPECT_EQ(b.tokens, second_alone);
  EXPECT_EQ(a.finish, FinishReason::kLength);
  EXPECT_EQ(b.finish, FinishReason::kLength);
}

}  // namespace
}  // namespace strata
