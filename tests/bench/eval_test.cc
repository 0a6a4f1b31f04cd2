// `strata eval`: the statistics against hand-derived values and textbook intervals, and the whole
// run on stories260K against figures this test computes itself from Engine::evaluate.
#include "bench/eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_files.h"

namespace strata::bench {
namespace {

using test_files::kStories;
using test_files::TempFile;

TEST(EvalStatsTest, NegativeLogLikelihoodIsMinusLogSoftmax) {
  // softmax(0, ln 2, ln 3) = (1/6, 2/6, 3/6)
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f)};
  EXPECT_NEAR(negative_log_likelihood(logits, 2), std::log(2.0), 1e-6);
  EXPECT_NEAR(negative_log_likelihood(logits, 0), std::log(6.0), 1e-6);
  // Shifting every logit changes nothing, even far past exp's range.
  const std::vector<float> shifted = {1000.0f, 1000.0f + std::log(2.0f), 1000.0f + std::log(3.0f)};
  EXPECT_NEAR(negative_log_likelihood(shifted, 2), std::log(2.0), 1e-4);
}

TEST(EvalStatsTest, KlDivergenceOfKnownDistributions) {
  // P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
  const std::vector<float> p = {0.0f, 0.0f}, q = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(kl_divergence(p, q), 0.5 * std::log(4.0 / 3.0), 1e-6);
  EXPECT_EQ(kl_divergence(q, q), 0.0);
  EXPECT_GT(kl_divergence(q, p), 0.0);
  EXPECT_NE(kl_divergence(q, p), kl_divergence(p, q));  // not symmetric
  const std::vector<float> far = {-500.0f, 500.0f};
  EXPECT_TRUE(std::isfinite(kl_divergence(p, far)));
}

TEST(EvalStatsTest, WilsonIntervalMatchesTextbookValues) {
  // 5 of 10: (0.2366, 0.7634); 0 of 10: (0, 0.2775), the published Wilson score values.
  Interval half = wilson_interval(5, 10), none = wilson_interval(0, 10);
  EXPECT_NEAR(half.low, 0.236593, 1e-6);
  EXPECT_NEAR(half.high, 0.763407, 1e-6);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_NEAR(none.high, 0.277533, 1e-6);
  EXPECT_NEAR(wilson_interval(10, 10).low, 0.722467, 1e-6);
  EXPECT_NEAR(wilson_interval(466, 472).low, 0.972547, 1e-6);
  EXPECT_EQ(wilson_interval(0, 0).low, 0.0);
  EXPECT_EQ(wilson_interval(0, 0).high, 1.0);
}

TEST(EvalStatsTest, TextIsCutIntoWholeChunksThatStartWithBos) {
  const std::vector<TokenId> text = {1, 10, 11, 12, 13, 14, 15, 16, 17, 18};
  const std::vector<std::vector<TokenId>> chunks = chunk_text(text, 1, 3, 0);
  ASSERT_EQ(chunks.size(), 3u);  // the tenth token is left over
  EXPECT_EQ(chunks[0], (std::vector<TokenId>{1, 10, 11}));
  EXPECT_EQ(chunks[1], (std::vector<TokenId>{1, 13, 14}));  // 12 gives way to BOS
  EXPECT_EQ(chunks[2], (std::vector<TokenId>{1, 16, 17}));
  EXPECT_EQ(chunk_text(text, 1, 3, 2).size(), 2u);
  EXPECT_EQ(chunk_text(text, std::nullopt, 5, 0)[1], (std::vector<TokenId>{14, 15, 16, 17, 18}));
  EXPECT_TRUE(chunk_text(text, 1, 11, 0).empty());
}

// llama-perplexity's own figure for stories260K on story.txt with 128-token chunks (in
// ../shared/models/reference/perplexity): the same chunks, scored positions and mean.
TEST(EvalTest, PerplexityOfATextMatchesLlamaPerplexity) {
  std::ifstream in("../shared/models/reference/perplexity/ppl_ctx128.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  EvalOptions o;
  o.engine.model_path = kStories;
  o.engine.threads = 2;
  o.engine.kv.attention = AttentionMode::kExact;  // the reference build's f16 accumulation
  o.text_path = "../shared/models/reference/perplexity/story.txt";
  o.chunk_tokens = want["n_ctx"];
  Result<EvalReport> r = run_eval(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sequences, want["n_chunks"].get<size_t>());
  EXPECT_EQ(r->positions, want["scored_tokens_total"].get<size_t>());
  // The reference prints 4 and 5 decimals.
  EXPECT_NEAR(r->perplexity.value, want["final_ppl"].get<double>(), 1e-4);
  EXPECT_NEAR(r->perplexity.std_error, want["final_ppl_uncertainty"].get<double>(), 1e-5);
}

// The reference cases as a token file: prompt (with BOS) and the 64 generated tokens per line.
std::vector<std::vector<TokenId>> write_reference_cases(const std::string& path) {
  std::vector<std::vector<TokenId>> cases;
  std::ofstream out(path);
  for (const char* name : {"once_upon_a_time", "the_little_dog", "long_200"}) {
    std::ifstream in(std::string("../shared/models/reference/") + name + ".json");
    const nlohmann::json j = nlohmann::json::parse(in);
    std::vector<TokenId> tokens = j["prompt_tokens_with_bos"].get<std::vector<TokenId>>();
    for (TokenId t : j["generated_token_ids"].get<std::vector<TokenId>>()) tokens.push_back(t);
    for (TokenId t : tokens) out << t << ' ';
    out << '\n';
    cases.push_back(std::move(tokens));
  }
  return cases;
}

EvalOptions stories_options(const std::string& tokens_path) {
  EvalOptions o;
  o.engine.model_path = kStories;
  o.engine.threads = 2;
  o.tokens_path = tokens_path;
  return o;
}

TEST(EvalTest, PerplexityIsTheModelsOwnLikelihoodAndAModelAgreesWithItself) {
  TempFile tokens("eval_cases.txt");
  const std::vector<std::vector<TokenId>> cases = write_reference_cases(tokens.path());
  EvalOptions o = stories_options(tokens.path());
  o.reference_path = kStories;
  Result<EvalReport> r = run_eval(o);
  ASSERT_TRUE(r.ok()) << r.error().message;

  // The perplexity, from logits this test takes from the engine and a log-softmax of its own.
  EngineOptions eo;
  eo.model_path = kStories;
  eo.context = 512;
  std::unique_ptr<Engine> engine = std::move(Engine::create(eo)).value();
  double nll = 0;
  size_t predictions = 0, positions = 0;
  for (const std::vector<TokenId>& tokens : cases) {
    const std::vector<float> logits = engine->evaluate(tokens, true).value();
    const size_t n_vocab = engine->model().n_vocab;
    for (size_t pos = 0; pos + 1 < tokens.size(); ++pos) {
      const float* l = logits.data() + pos * n_vocab;
      double sum = 0;
      for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(double(l[i]));
      nll += std::log(sum) - l[tokens[pos + 1]];
      ++predictions;
    }
    positions += tokens.size();
  }
  EXPECT_EQ(r->sequences, cases.size());
  EXPECT_EQ(r->positions, positions);
  EXPECT_NEAR(r->perplexity.value, std::exp(nll / predictions), 1e-6 * r->perplexity.value);
  EXPECT_GT(r->perplexity.std_error, 0);
  // The reference cases are the model's own greedy continuations: a low perplexity.
  EXPECT_LT(r->perplexity.value, 5.0);

  // Against itself: the same figures, every top-1 token the same, no divergence.
  EXPECT_EQ(r->reference_perplexity.value, r->perplexity.value);
  EXPECT_EQ(r->fidelity.top1_same, r->positions);
  EXPECT_EQ(r->fidelity.kld_max, 0.0);
  EXPECT_EQ(r->fidelity.mean_abs_logit_diff, 0.0);

  const nlohmann::json j = nlohmann::json::parse(format_eval_json(*r));
  EXPECT_EQ(j["top1_agreement"], 1.0);
  EXPECT_EQ(j["positions"], positions);
  EXPECT_NE(format_eval_table(*r).find("same top-1 token as the reference: 100.00%"),
            std::string::npos)
      << format_eval_table(*r);
}

// The reference may read its KV cache otherwise than the model: the same file with fast attention
// against exact strays a little (the f16 cache read in f32 instead of rounded as the reference
// engine does), where the same settings agree to the bit (above).
TEST(EvalTest, TheReferenceMayUseItsOwnAttention) {
  TempFile tokens("eval_cases.txt");
  write_reference_cases(tokens.path());
  EvalOptions o = stories_options(tokens.path());
  o.reference_path = kStories;
  o.engine.kv.attention = AttentionMode::kFast;
  o.reference_attention = AttentionMode::kExact;
  Result<EvalReport> r = run_eval(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->fidelity.mean_abs_logit_diff, 0.0);
  EXPECT_LT(r->fidelity.kld_mean, 1e-4);
  EXPECT_NEAR(r->perplexity.value, r->reference_perplexity.value,
              1e-3 * r->reference_perplexity.value);
}

TEST(EvalTest, ATextIsScoredOnTheSecondHalfOfEachChunk) {
  TempFile text("eval_text.txt");
  {
    std::ofstream out(text.path());
    for (int i = 0; i < 8; ++i) out << test_files::kText << ' ';
  }
  EvalOptions o = stories_options("");
  o.text_path = text.path();
  o.chunk_tokens = 64;
  o.max_chunks = 3;
  Result<EvalReport> r = run_eval(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sequences, 3u);
  EXPECT_EQ(r->positions, 3u * 31);  // positions 32..62 of each 64-token chunk
  EXPECT_FALSE(r->has_reference);
  EXPECT_GT(r->perplexity.value, 1.0);
  EXPECT_EQ(format_eval_table(*r).find("top-1"), std::string::npos);
}

TEST(EvalTest, BadInputIsAClearError) {
  auto expect_error = [](const EvalOptions& o, ErrorCode code, const std::string& words) {
    Result<EvalReport> r = run_eval(o);
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
  };
  EvalOptions o = stories_options("");
  expect_error(o, ErrorCode::kInvalidArgument, "exactly one input");
  o.tokens_path = "../shared/models/no_such_tokens.txt";
  expect_error(o, ErrorCode::kNotFound, "cannot open");

  TempFile bad("eval_bad.txt");
  std::ofstream(bad.path()) << "1 2 3\n4 five 6\n";
  expect_error(stories_options(bad.path()), ErrorCode::kInvalidArgument, "line 2: 'five'");
  std::ofstream(bad.path()) << "1 2 3\n4 5 99999\n";
  expect_error(stories_options(bad.path()), ErrorCode::kInvalidArgument, "99999");
  std::ofstream(bad.path()) << "1 2 3\n\n7\n";
  expect_error(stories_options(bad.path()), ErrorCode::kInvalidArgument, "line 3 has one token");
  std::ofstream(bad.path()) << "\n\n";
  expect_error(stories_options(bad.path()), ErrorCode::kInvalidArgument, "no token ids");

  std::ofstream(bad.path()) << "Once upon a time";
  o = stories_options("");
  o.text_path = bad.path();
  o.chunk_tokens = 128;
  expect_error(o, ErrorCode::kInvalidArgument, "fewer than one chunk");
}

}  // namespace
}  // namespace strata::bench
