// Speculative decoding: the n-gram proposer and the draft length (unit), and through the engine
// on stories260K: greedy outputs with speculation equal those without, for several streams at
// once, with a grammar, stop strings and penalties; sampled ones follow the same distribution.
#include "engine/speculation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/model_tools.h"

namespace strata {
namespace {

using engine::best_draft_length;
using engine::DraftLength;
using engine::RecentMedian;
using engine::StepCost;
// The proposer over a literal list of tokens.
std::vector<TokenId> propose_ngram(const std::vector<TokenId>& tokens, size_t n_min, size_t n_max,
                                   size_t max_draft) {
  return engine::propose_ngram(tokens, n_min, n_max, max_draft);
}

TEST(NgramProposerTest, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  // ... 1 2 3 [9 9] ... 1 2 3 [7 7] ... 1 2 3: the latest "1 2 3" was followed by 7 7.
  const std::vector<TokenId> t = {5, 1, 2, 3, 9, 9, 6, 1, 2, 3, 7, 7, 8, 1, 2, 3};
  EXPECT_EQ(propose_ngram(t, 2, 4, 2), (std::vector<TokenId>{7, 7}));
  EXPECT_EQ(propose_ngram(t, 2, 4, 4), (std::vector<TokenId>{7, 7, 8, 1}));
  // The longest n-gram wins: "8 1 2 3" never occurred before, "1 2 3" did.
  EXPECT_EQ(propose_ngram({4, 5, 6, 1, 5, 6}, 2, 3, 1), (std::vector<TokenId>{1}));
  // Nothing to find.
  EXPECT_TRUE(propose_ngram({1, 2, 3, 4}, 2, 4, 8).empty());
  EXPECT_TRUE(propose_ngram({1, 2, 3, 4, 1}, 2, 4, 8).empty());  // a 1-gram is below the minimum
  EXPECT_EQ(propose_ngram({1, 2, 3, 4, 1}, 1, 4, 2), (std::vector<TokenId>{2, 3}));
  EXPECT_TRUE(propose_ngram({}, 1, 4, 8).empty());
}

TEST(NgramProposerTest, ALoopShorterThanTheDraftFillsIt) {
  // A period-2 loop: the continuation runs into the end and goes on with itself.
  EXPECT_EQ(propose_ngram({3, 4, 3, 4, 3, 4}, 2, 2, 5), (std::vector<TokenId>{3, 4, 3, 4, 3}));
  EXPECT_EQ(propose_ngram({9, 9, 9}, 2, 2, 4), (std::vector<TokenId>{9, 9, 9, 9}));
}

// A step over n positions taking a + b·n seconds, seen for n = 1..9 (plain decode and drafts).
StepCost linear_cost(double a, double b, double draft_pass) {
  StepCost cost;
  for (int round = 0; round < 40; ++round) {
    for (size_t n = 1; n <= 9; ++n) cost.record_step(n, a + b * static_cast<double>(n));
  }
  cost.set_draft_pass(draft_pass);
  return cost;
}

TEST(StepCostTest, FitsAStepAsLinearInItsPositions) {
  const StepCost cost = linear_cost(2e-3, 5e-4, 0);
  EXPECT_NEAR(cost.step(5), 4.5e-3, 1e-9);
  EXPECT_NEAR(cost.step(12), 8e-3, 1e-9);
  // Only ever one n: what a position adds is unknown, taken as nothing.
  StepCost flat;
  for (int i = 0; i < 10; ++i) flat.record_step(1, 3e-3);
  EXPECT_NEAR(flat.step(9), 3e-3, 1e-12);
  EXPECT_EQ(StepCost().step(4), 0);
  flat.set_draft_pass(2e-3);
  EXPECT_NEAR(flat.proposal(SpeculationKind::kDraft, 2), 4e-3, 1e-12);
  EXPECT_EQ(flat.proposal(SpeculationKind::kDraft, 0), 0);
  EXPECT_EQ(flat.proposal(SpeculationKind::kNgram, 5), 0);  // no lookup timed yet
}

// Steps of one position at 0.34 ms, then a first draft's 9 positions, cold, at 2 ms (as the
// testbed's first draft ran here). The fit through them prices 2 positions at 0.55 ms; once a
// probe has run 2 positions in 0.45 ms, that is their price, and one guess at 0.07 ms a pass
// pays when it is kept 3 times in 4.
TEST(StepCostTest, StepsOfAFewPositionsCostWhatTheyTookLast) {
  StepCost cost;
  for (int i = 0; i < 20; ++i) cost.record_step(1, 3.4e-4);
  cost.record_step(9, 2e-3);
  cost.set_draft_pass(7e-5);
  EXPECT_NEAR(cost.step(2), 3.4e-4 + (2e-3 - 3.4e-4) / 8, 1e-5);
  EXPECT_EQ(best_draft_length(0.75, 1, 1, SpeculationKind::kDraft, cost, false), 0u);
  cost.record_step(2, 4.5e-4);
  EXPECT_EQ(cost.step(2), 4.5e-4);
  EXPECT_LE(cost.step(9), 2e-3);  // one step: the fit's price where it is lower
  EXPECT_EQ(best_draft_length(0.75, 1, 1, SpeculationKind::kDraft, cost, false), 1u);
  // Past the measured lengths, the fit.
  EXPECT_GT(cost.step(5), cost.step(2));
  EXPECT_LT(cost.step(5), cost.step(9));
  // Two steps of a length: their lower one, whatever the fit says.
  cost.record_step(9, 2.2e-3);
  EXPECT_EQ(cost.step(9), 2e-3);
}

// A length that ran once, slowly (2.4 ms against 0.45, as a busy machine gave the testbed's
// first step of two positions), costs what the fit through the other lengths says: priced at its
// one step, it was never run again to correct it, and the sequence stopped guessing.
TEST(StepCostTest, OneSlowStepDoesNotPriceItsLengthOut) {
  StepCost cost;
  for (int i = 0; i < 20; ++i) {
    cost.record_step(1, 3.0e-4);
    cost.record_step(3, 5.6e-4);
  }
  cost.set_draft_pass(6e-5);
  cost.record_step(2, 2.4e-3);
  EXPECT_LT(cost.step(2), 6e-4);
  EXPECT_EQ(best_draft_length(0.95, 1, 1, SpeculationKind::kDraft, cost, false), 1u);
  // A second step of the length, at its usual cost, is its price from then on.
  cost.record_step(2, 4.4e-4);
  EXPECT_EQ(cost.step(2), 4.4e-4);
}

// A sequence's acceptance starts from what the sequences before it kept with the same proposer
// (worth DraftLength::kHistoryWeight guesses), and its own verifications soon outweigh it.
TEST(DraftLengthTest, ASequenceStartsFromWhatTheOnesBeforeItKept) {
  engine::AcceptanceCounts history;
  EXPECT_TRUE(history.empty());
  for (int i = 0; i < 30; ++i) history.record(1, i % 10 == 0 ? 0 : 1);
  EXPECT_FALSE(history.empty());
  DraftLength d(8, 0, history);
  EXPECT_GT(d.acceptance(), 0.75);
  EXPECT_NEAR(d.acceptance(), history.at_most(DraftLength::kHistoryWeight).acceptance(), 1e-12);
  for (int i = 0; i < 4; ++i) d.record(1, 0);
  EXPECT_LT(d.acceptance(), 0.5);
  // Scaling keeps the estimate where it was, only its weight changes.
  EXPECT_NEAR(history.at_most(4).acceptance(), history.acceptance(), 0.1);
  EXPECT_DOUBLE_EQ(engine::AcceptanceCounts().at_most(4).acceptance(), 0.5);
}

// With no sequence before it to start from, a sequence makes DraftLength::kFirstVerifications
// verifications before one miss can pause it (the testbed's first guess after a prompt cut
// mid-word is often missed, and α = 1/3 then paused its reply for most of 256 tokens); with a
// history of misses it pauses at once.
TEST(DraftLengthTest, AFirstMissDoesNotPauseASequenceWithNothingBeforeIt) {
  const StepCost testbed = linear_cost(0.30e-3, 0.07e-3, 0.06e-3);
  DraftLength fresh(8);
  fresh.record(8, 0);
  EXPECT_EQ(best_draft_length(fresh.acceptance(), 8, 1, SpeculationKind::kDraft, testbed, false),
            0u);
  for (size_t i = 1; i < DraftLength::kFirstVerifications; ++i) {
    EXPECT_GT(fresh.next(8, 1, SpeculationKind::kDraft, testbed), 0u) << "verification " << i;
    fresh.record(1, 1);
  }
  engine::AcceptanceCounts misses;
  for (int i = 0; i < 10; ++i) misses.record(2, 0);
  DraftLength warned(8, 0, misses);
  EXPECT_EQ(warned.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
}

// A first draft pass of 2 ms, then passes of 0.07 ms (the testbed's draft on this machine): the
// cost of a guess is the passes' usual time at once, and the latest window's when it moves.
TEST(RecentMedianTest, ASlowFirstPassDoesNotSetTheCostOfAGuess) {
  RecentMedian pass;
  EXPECT_EQ(pass.value(), 0);
  pass.add(2e-3);
  EXPECT_EQ(pass.value(), 2e-3);
  for (int i = 0; i < 7; ++i) pass.add(7e-5 + 1e-6 * i);
  EXPECT_NEAR(pass.value(), 7.3e-5, 1e-12);
  // The cost of a guess depends on what a draft of that cost would be allowed to do.
  StepCost cost = linear_cost(3.4e-4, 1e-4, 0);
  cost.set_draft_pass(pass.value());
  EXPECT_EQ(best_draft_length(0.97, 1, 1, SpeculationKind::kDraft, cost, false), 1u);
  cost.set_draft_pass(2e-3);
  EXPECT_EQ(best_draft_length(0.97, 1, 1, SpeculationKind::kDraft, cost, false), 0u);
  for (int i = 0; i < 8; ++i) pass.add(3e-4);
  EXPECT_EQ(pass.value(), 3e-4);
}

TEST(DraftLengthTest, BestLengthWeighsKeptGuessesAgainstWhatTheyCost) {
  // The testbed pair on a 2-core CPU: a target step 0.30 ms + 0.07 ms per position (compute
  // bound), a draft pass 0.146 ms. At α = 0.5 a guess costs more than it brings (1.5 tokens in
  // 0.586 ms against 1 in 0.37); at 0.7 one guess pays (1.7 in 0.586) and two do not; at 0.95
  // four are best.
  const StepCost testbed = linear_cost(0.30e-3, 0.07e-3, 0.146e-3);
  EXPECT_EQ(best_draft_length(0.5, 8, 1, SpeculationKind::kDraft, testbed, false), 0u);
  EXPECT_EQ(best_draft_length(0.5, 8, 1, SpeculationKind::kDraft, testbed, true), 1u);
  EXPECT_EQ(best_draft_length(0.7, 8, 1, SpeculationKind::kDraft, testbed, false), 1u);
  EXPECT_EQ(best_draft_length(0.95, 8, 1, SpeculationKind::kDraft, testbed, false), 4u);
  // Eight streams: a guess slows every one of them.
  EXPECT_EQ(best_draft_length(0.7, 8, 8, SpeculationKind::kDraft, testbed, false), 0u);
  // Bound by memory bandwidth (a 1B model: 20 ms a step, 0.1 ms a position), prompt lookup is
  // worth its whole length at α = 0.8, and two guesses even at α = 0.1.
  const StepCost bandwidth = linear_cost(20e-3, 0.1e-3, 0);
  EXPECT_EQ(best_draft_length(0.8, 8, 1, SpeculationKind::kNgram, bandwidth, false), 8u);
  EXPECT_EQ(best_draft_length(0.1, 8, 1, SpeculationKind::kNgram, bandwidth, false), 2u);
  // Costs not measured yet: the longest draft, which measures them.
  EXPECT_EQ(best_draft_length(0.5, 6, 1, SpeculationKind::kDraft, StepCost(), false), 6u);
}

TEST(DraftLengthTest, FollowsTheAcceptanceAndPausesWhenGuessingDoesNotPay) {
  const StepCost testbed = linear_cost(0.30e-3, 0.07e-3, 0.146e-3);
  DraftLength d(8);
  EXPECT_DOUBLE_EQ(d.acceptance(), 0.5);
  for (int i = 0; i < 20; ++i) d.record(4, 4);
  EXPECT_GT(d.acceptance(), 0.95);
  EXPECT_GE(d.next(8, 1, SpeculationKind::kDraft, testbed), 4u);
  EXPECT_EQ(d.next(2, 1, SpeculationKind::kDraft, testbed), 2u);  // the step's share caps it
  // Misses bring α down until no guess pays: the sequence pauses 4 steps, then probes with one.
  for (int i = 0; i < 20; ++i) d.record(2, 0);
  EXPECT_LT(d.acceptance(), 0.25);
  EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
  EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 1u);
  d.record(1, 0);
  // Still no gain: the next pause is twice as long.
  EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
  EXPECT_EQ(d.next(8, 1, SpeculationKind::kDraft, testbed), 1u);
  // Probes that hit bring guessing back.
  for (int i = 0; i < 12; ++i) d.record(1, 1);
  EXPECT_GT(d.next(8, 1, SpeculationKind::kDraft, testbed), 0u);
  EXPECT_EQ(DraftLength(0).next(8, 1, SpeculationKind::kNgram, testbed), 0u);
  // Each guess costing as much as a token (a step 0.4 ms per position, a draft pass 0.4 ms):
  // not even guesses that are always right pay, so the pauses end without a probe.
  const StepCost hopeless = linear_cost(0, 0.4e-3, 0.4e-3);
  DraftLength h(8);
  for (int i = 0; i < 20; ++i) h.record(2, 0);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(h.next(8, 1, SpeculationKind::kDraft, hopeless), 0u);
  // A floor (--draft-min) guesses whatever the costs, within the step's share.
  DraftLength floor(8, 3);
  for (int i = 0; i < 20; ++i) floor.record(3, 0);
  EXPECT_EQ(floor.next(8, 1, SpeculationKind::kDraft, testbed), 3u);
  EXPECT_EQ(floor.next(2, 1, SpeculationKind::kDraft, testbed), 2u);
}

TEST(DraftLengthTest, ManyStreamsLeaveNoRoomForGuesses) {
  EXPECT_EQ(engine::guesses_per_sequence(1, 1), 15u);
  EXPECT_EQ(engine::guesses_per_sequence(4, 4), 3u);
  EXPECT_EQ(engine::guesses_per_sequence(4, 1), 12u);
  EXPECT_EQ(engine::guesses_per_sequence(8, 8), 1u);
  EXPECT_EQ(engine::guesses_per_sequence(16, 16), 0u);
  EXPECT_EQ(engine::guesses_per_sequence(3, 0), 0u);
}

const char* kModel = "../shared/models/stories260K.gguf";

std::unique_ptr<Engine> make_engine(SpeculationKind kind, const std::string& draft = "",
                                    const SparseAttentionPolicy& sparse = {},
                                    int draft_threads = 0) {
  EngineOptions options;
  options.speculative.draft_threads = draft_threads;
  // With a draft pool of its own, lengths are fixed: they would otherwise follow measured costs.
  if (draft_threads > 0) options.speculative.max_draft = 2;
  options.kv.sparse = sparse;
  options.model_path = kModel;
  options.threads = 2;
  options.max_sequences = 4;
  options.batch_tokens = 64;
  options.speculative.kind = kind;
  options.speculative.draft_model = draft;
  options.speculative.ngram_min = 1;  // guesses often, so that many are rejected too
  // stories260K is so small that a step costs as much per position as a token, and guesses
  // would rarely pay: these tests verify guesses, so every step makes some.
  options.speculative.min_draft = 2;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// Runs the requests together; returns each one's text and finish reason.
std::vector<std::pair<std::string, FinishReason>> run_together(
    Engine& engine, const std::vector<GenerationRequest>& requests) {
  std::vector<std::pair<std::string, FinishReason>> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_TRUE(engine
                    .submit(requests[i],
                            [&out, i](const TokenEvent& e) {
                              out[i].first += e.text;
                              if (e.finish != FinishReason::kNone) out[i].second = e.finish;
                              return true;
                            })
                    .ok());
  }
  while (engine.has_work()) EXPECT_TRUE(engine.step().ok());
  return out;
}

// Requests of every kind the step treats apart: plain, a stop string, penalties, a grammar.
std::vector<GenerationRequest> mixed_requests(Engine& engine) {
  std::vector<GenerationRequest> requests;
  auto add = [&](const std::string& prompt, int n) -> GenerationRequest& {
    GenerationRequest& r = requests.emplace_back();
    r.prompt = engine.tokenize(prompt, true, true);
    r.max_tokens = n;
    r.sampling.temperature = 0;
    return r;
  };
  add("Once upon a time", 300);
  add("The little dog ran and ran and ran", 200).stop = {"park"};
  add("Tom and Sam went to the", 250).sampling.repeat_penalty = 1.3f;
  GenerationRequest& freq = add("She had a red ball. She had a", 200);
  freq.sampling.frequency_penalty = 0.5f;
  freq.sampling.presence_penalty = 0.3f;
  GenerationRequest& json = add("Once upon a time", 120);
  json.constraint.kind = ConstraintKind::kJsonObject;
  add("Lily", 400).ignore_eos = true;
  return requests;
}

// The mixed requests, run together on each engine, give the same text and finish on both.
void expect_same_outputs(Engine& plain, Engine& spec) {
  const std::vector<GenerationRequest> requests = mixed_requests(plain);
  const auto expected = run_together(plain, requests);
  const auto got = run_together(spec, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(got[i].first, expected[i].first) << "request " << i;
    EXPECT_EQ(got[i].second, expected[i].second) << "request " << i;
  }
}

TEST(SpeculationEngineTest, GreedyOutputsAreTheSameWithAndWithoutGuesses) {
  std::unique_ptr<Engine> plain = make_engine(SpeculationKind::kNone);
  std::unique_ptr<Engine> spec = make_engine(SpeculationKind::kNgram);
  ASSERT_TRUE(plain && spec);
  expect_same_outputs(*plain, *spec);
  const EngineLoad load = spec->load();
  EXPECT_GT(load.spec_drafts, 20u);
  EXPECT_GT(load.spec_accepted_tokens, 0u);
  EXPECT_LT(load.spec_accepted_tokens, load.spec_draft_tokens);  // some guesses were wrong
  ASSERT_FALSE(load.spec_accepted_per_position.empty());
  EXPECT_EQ(load.spec_accepted_per_position[0] >= load.spec_accepted_per_position.back(), true);
  EXPECT_EQ(plain->load().spec_drafts, 0u);
}

TEST(SpeculationEngineTest, ADraftModelsGuessesLeaveTheOutputAsItIs) {
  // The model as its own draft: its greedy guesses are the model's, all accepted.
  std::unique_ptr<Engine> plain = make_engine(SpeculationKind::kNone);
  std::unique_ptr<Engine> spec = make_engine(SpeculationKind::kDraft, kModel);
  ASSERT_TRUE(plain && spec);
  expect_same_outputs(*plain, *spec);
  const EngineLoad load = spec->load();
  EXPECT_GT(load.spec_drafts, 50u);
  // Only the grammar's and the penalties' requests see guesses fail: the draft knows neither.
  EXPECT_GT(static_cast<double>(load.spec_accepted_tokens),
            0.7 * static_cast<double>(load.spec_draft_tokens));
}

// The draft on a pool of its own (--draft-threads 1) guesses what it guesses on the model's two
// threads (--draft-threads 2, the model's pool): the same output, drafts and kept guesses.
TEST(SpeculationEngineTest, ADraftOnItsOwnThreadsGuessesTheSame) {
  std::unique_ptr<Engine> shared = make_engine(SpeculationKind::kDraft, kModel, {}, 2);
  std::unique_ptr<Engine> own = make_engine(SpeculationKind::kDraft, kModel, {}, 1);
  ASSERT_TRUE(shared && own);
  expect_same_outputs(*shared, *own);
  const EngineLoad a = shared->load(), b = own->load();
  EXPECT_GT(b.spec_drafts, 50u);
  EXPECT_EQ(b.spec_drafts, a.spec_drafts);
  EXPECT_EQ(b.spec_draft_tokens, a.spec_draft_tokens);
  EXPECT_EQ(b.spec_accepted_tokens, a.spec_accepted_tokens);

  EngineOptions bad;
  bad.model_path = kModel;
  bad.speculative.draft_model = kModel;
  bad.speculative.kind = SpeculationKind::kDraft;
  bad.speculative.draft_threads = -1;
  const Result<std::unique_ptr<Engine>> refused = Engine::create(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("--draft-threads"), std::string::npos);
}

TEST(SpeculationEngineTest, SparseAttentionReadsTheSamePagesWithAndWithoutGuesses) {
  // A budget of 96 positions leaves most of a few hundred unread: a verified guess must choose
  // its pages as the decode step it stands for would, or the output drifts from plain decoding.
  SparseAttentionPolicy sparse;
  sparse.enabled = true;
  sparse.budget = 96;
  sparse.window = 32;
  sparse.sinks = 32;
  sparse.dense_layers = 1;
  std::unique_ptr<Engine> plain = make_engine(SpeculationKind::kNone, "", sparse);
  std::unique_ptr<Engine> spec = make_engine(SpeculationKind::kNgram, "", sparse);
  ASSERT_TRUE(plain && spec);
  expect_same_outputs(*plain, *spec);
  EXPECT_GT(spec->load().spec_accepted_tokens, 0u);
}

TEST(SpeculationEngineTest, ADraftWithAnotherVocabularyIsRefused) {
  // A draft whose vocabulary outgrows the model's: it could guess ids the model has not.
  const std::string bigger = ::testing::TempDir() + "strata_draft_600.gguf";
  SynthOptions synth;
  synth.output_path = bigger;
  synth.n_vocab = 600;
  ASSERT_TRUE(synthesize_model(synth).ok());
  EngineOptions options;
  options.model_path = kModel;
  options.speculative.draft_model = bigger;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(engine.error().message.find("vocabulary"), std::string::npos);
  std::remove(bigger.c_str());
  // Asking for a draft's guesses with no draft loaded.
  options.speculative = {};
  options.speculative.kind = SpeculationKind::kDraft;
  EXPECT_FALSE(Engine::create(options).ok());
  std::unique_ptr<Engine> plain = make_engine(SpeculationKind::kNone);
  GenerationRequest r;
  r.prompt = plain->tokenize("Lily", true, true);
  r.speculation = SpeculationKind::kDraft;
  EXPECT_FALSE(plain->submit(r, nullptr).ok());
}

TEST(SpeculationEngineTest, ARequestCanTurnItOffOrCapTheDraft) {
  std::unique_ptr<Engine> spec = make_engine(SpeculationKind::kNgram);
  ASSERT_TRUE(spec);
  GenerationRequest r;
  r.prompt = spec->tokenize("Lily", true, true);
  r.max_tokens = 200;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  r.speculation = SpeculationKind::kNone;
  ASSERT_TRUE(spec->generate(r, {}).ok());
  EXPECT_EQ(spec->load().spec_drafts, 0u);
  r.speculation.reset();
  r.max_draft = 2;
  ASSERT_TRUE(spec->generate(r, {}).ok());
  EXPECT_GT(spec->load().spec_drafts, 0u);
  EXPECT_LE(spec->load().spec_accepted_per_position.size(), 2u);
  r.max_draft = kMaxDraft + 1;
  EXPECT_FALSE(spec->generate(r, {}).ok());
}

// The second token of 4,000 sampled replies (temperature 1), with and without n-gram guesses.
// The first token is drawn from the prompt's logits either way; the second is where the prompt's
// repetition makes the proposer guess, so with guesses it is drawn by the verification rule
// (keep the guess with probability p(guess), else resample from the rest). Both must follow the
// model's distribution: a two-sample chi-square test over the tokens seen at least 10 times
// (rarer ones pooled) must not reject at p = 0.001. Measured: chi2 22.8 on 33 df; accepting
// every guess gives 961, resampling without removing the guess 388.
TEST(SpeculationEngineTest, SampledTokensFollowTheSameDistributionWithGuesses) {
  constexpr int kDraws = 4000;
  auto second_tokens = [](SpeculationKind kind) {
    std::unique_ptr<Engine> engine = make_engine(kind);
    std::map<TokenId, int> counts;
    if (!engine) return counts;
    const std::vector<TokenId> prompt = engine->tokenize(
        "Once upon a time, there was a little girl. Once upon a time, there was a "
        "little girl. Once upon a time, there was a",
        true, true);
    for (int first = 0; first < kDraws; first += 4) {
      std::vector<std::vector<TokenId>> out(4);
      for (int i = 0; i < 4; ++i) {
        GenerationRequest r;
        r.prompt = prompt;
        r.max_tokens = 3;  // room for a guess after the first token
        r.ignore_eos = true;
        r.sampling.temperature = 1.0f;
        // Other seeds with guesses: the two samples are independent.
        r.sampling.seed = static_cast<uint64_t>(first + i) * 7919 + 1 +
                          (kind == SpeculationKind::kNone ? 0 : 1000003);
        EXPECT_TRUE(engine
                        ->submit(r,
                                 [&out, i](const TokenEvent& e) {
                                   if (e.token >= 0) out[i].push_back(e.token);
                                   return true;
                                 })
                        .ok());
      }
      while (engine->has_work()) EXPECT_TRUE(engine->step().ok());
      for (const std::vector<TokenId>& tokens : out) {
        if (tokens.size() >= 2) ++counts[tokens[1]];
      }
    }
    if (kind != SpeculationKind::kNone) {
      EXPECT_GT(engine->load().spec_drafts, size_t{kDraws / 2});
    }
    return counts;
  };
  const std::map<TokenId, int> plain = second_tokens(SpeculationKind::kNone);
  const std::map<TokenId, int> guessed = second_tokens(SpeculationKind::kNgram);
  std::map<TokenId, std::pair<int, int>> both;
  for (const auto& [token, n] : plain) both[token].first = n;
  for (const auto& [token, n] : guessed) both[token].second = n;
  double chi2 = 0;
  int df = -1, pooled_a = 0, pooled_b = 0;
  for (const auto& [token, ab] : both) {
    if (ab.first + ab.second < 10) {
      pooled_a += ab.first, pooled_b += ab.second;
      continue;
    }
    const double d = ab.first - ab.second;
    chi2 += d * d / (ab.first + ab.second);
    ++df;
  }
  if (pooled_a + pooled_b > 0) {
    const double d = pooled_a - pooled_b;
    chi2 += d * d / (pooled_a + pooled_b);
    ++df;
  }
  ASSERT_GE(df, 2) << "too few distinct tokens to compare";
  // Wilson-Hilferty: chi2/df is near-normal after a cube root; z > 3.09 is p < 0.001.
  const double k = df, v = 2.0 / (9.0 * k);
  const double z = (std::cbrt(chi2 / k) - (1.0 - v)) / std::sqrt(v);
  std::printf("second token: %zu kinds, chi2 %.1f on %d df, z %.2f\n", both.size(), chi2, df, z);
  EXPECT_LT(z, 3.09) << "chi2 " << chi2 << " on " << df << " degrees of freedom";
}

}  // namespace
}  // namespace strata
