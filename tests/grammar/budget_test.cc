// Budget-aware masks: the shortest completion of a parse state, and random walks that must end
// as complete sentences within their token budget however the tokens are chosen.
#include <gtest/gtest.h>

#include <initializer_list>
#include <random>

#include "grammar/json_schema.h"
#include "test_grammars.h"

namespace strata::grammar {
namespace {

using testing::byte_vocabulary;
using testing::compile_or_die;

TEST(BudgetTest, DistanceIsTheShortestCompletion) {
  auto g = compile_or_die(R"(root ::= "{\"k\":" [0-9]+ ("," "\"m\":" [a-z]{2,3})? "}")",
                          byte_vocabulary());
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  EXPECT_EQ(m.distance_to_end(), 7u);  // {"k":0}
  ASSERT_TRUE(m.accept_string("{\"k\":12"));
  EXPECT_EQ(m.distance_to_end(), 1u);  // }
  ASSERT_TRUE(m.accept_string(","));
  EXPECT_EQ(m.distance_to_end(), 7u);  // "m":ab}
  ASSERT_TRUE(m.accept_string("\"m\":abc}"));
  EXPECT_EQ(m.distance_to_end(), 0u);
}

TEST(BudgetTest, RecursiveRulesCountTheirShortestDerivation) {
  auto g = compile_or_die(testing::kJsonGrammar, byte_vocabulary());
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  EXPECT_EQ(m.distance_to_end(), 1u);  // a one-digit number
  ASSERT_TRUE(m.accept_string("{\"a\": [[{\"b"));
  EXPECT_EQ(m.distance_to_end(), 7u);  // ":0}]]}
}

// Single bytes plus tokens that open several structures at once.
std::shared_ptr<const TokenVocabulary> walk_vocabulary() {
  std::vector<std::string> pieces;
  pieces.reserve(300);
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char* p : {"{\"", "\":", "[[[[", "[{\"", "\"abc", "((((", "while (", "int x", "\": [",
                        "{\"a\": {\"b\": [", "aaaaaaaa", "12345"}) {
    pieces.emplace_back(p);
  }
  pieces.push_back("");  // end of generation
  const auto eog = static_cast<int32_t>(pieces.size() - 1);
  return TokenVocabulary::from_pieces(std::move(pieces), {eog});
}

// Picks uniformly among the allowed tokens until end of generation or the budget; returns
// whether the output is a complete sentence.
bool random_walk(const std::shared_ptr<const CompiledGrammar>& g, size_t budget, bool use_budget,
                 std::mt19937& rng) {
  GrammarMatcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  std::vector<int32_t> allowed;
  for (size_t i = 0; i < budget && !m.is_terminated(); ++i) {
    if (use_budget) {
      m.fill_next_token_bitmask(words, budget - i);
    } else {
      m.fill_next_token_bitmask(words);
    }
    allowed.clear();
    for (size_t id = 0; id < g->vocabulary().size(); ++id) {
      if ((words[id / 32] >> (id % 32)) & 1) allowed.push_back(static_cast<int32_t>(id));
    }
    if (allowed.empty()) return false;
    const int32_t pick = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    EXPECT_TRUE(m.accept_token(pick));
  }
  return m.can_end() || m.is_terminated();
}

// Inside a string the state repeats while the budget shrinks: the distances kept for it must
// give the masks a fresh walk gives, including the step where the room left excludes a token.
TEST(BudgetTest, RepeatedStatesKeepTheirDistances) {
  std::vector<std::string> pieces;
  pieces.reserve(300);
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.emplace_back("\",\"");  // closes an item and opens the next
  pieces.emplace_back("aaaa");
  pieces.emplace_back("");  // end of generation
  const auto next_item = static_cast<int32_t>(pieces.size() - 3);
  const auto eog = static_cast<int32_t>(pieces.size() - 1);
  auto g = compile_or_die(R"(root ::= "[" ("\"" [a-z]* "\"" ("," "\"" [a-z]* "\"")*)? "]")",
                          TokenVocabulary::from_pieces(std::move(pieces), {eog}));
  ASSERT_NE(g, nullptr);
  GrammarMatcher reused(g), fresh(g);
  fresh.set_reuse_masks(false);
  ASSERT_TRUE(reused.accept_string("[\"") && fresh.accept_string("[\""));
  std::vector<uint32_t> a(g->mask_words()), b(g->mask_words());
  std::vector<bool> next_item_allowed;
  for (size_t budget = 8; budget >= 2; --budget) {
    reused.fill_next_token_bitmask(a, budget);
    fresh.fill_next_token_bitmask(b, budget);
    ASSERT_EQ(a, b) << "budget " << budget;
    next_item_allowed.push_back((a[next_item / 32] >> (next_item % 32)) & 1);
    ASSERT_TRUE(reused.accept_token('a') && fresh.accept_token('a'));
  }
  // `","` leaves 3 bytes to the end ("]), so it fits while 3 tokens may follow it.
  EXPECT_TRUE(next_item_allowed.front());
  EXPECT_FALSE(next_item_allowed.back());
}

// The budgeted mask by definition: the allowed tokens (of `whole`, the mask without a budget)
// after which the output can end within budget - 1 more tokens, found by feeding each and asking
// its distance; when none can, the whole mask.
std::vector<uint32_t> budget_mask_by_definition(GrammarMatcher& m, const CompiledGrammar& g,
                                                size_t budget, const std::vector<uint32_t>& whole) {
  std::vector<uint32_t> expected(g.mask_words(), 0u);
  for (size_t id = 0; id < g.vocabulary().size(); ++id) {
    if (!((whole[id / 32] >> (id % 32)) & 1)) continue;
    const auto token = static_cast<int32_t>(id);
    bool fits = g.vocabulary().is_eog(token);
    if (!fits && m.accept_token(token)) {
      fits = m.distance_to_end() <= budget - 1;
      m.rollback(1);
    }
    if (fits) expected[id / 32] |= 1u << (id % 32);
  }
  bool any = false;
  for (uint32_t w : expected) any = any || w != 0;
  return any ? expected : whole;
}

// The budgeted masks after each prefix, at budgets 1-12, against the definition.
void expect_masks_after_prefixes_match_definition(const char* json_schema,
                                                  std::initializer_list<const char*> prefixes) {
  auto schema = json_schema_to_gbnf(json_schema);
  ASSERT_TRUE(schema.ok());
  auto g = compile_or_die(*schema, walk_vocabulary());
  ASSERT_NE(g, nullptr);
  for (const char* prefix : prefixes) {
    for (size_t budget = 1; budget <= 12; ++budget) {
      GrammarMatcher m(g);
      ASSERT_TRUE(m.accept_string(prefix)) << prefix;
      std::vector<uint32_t> words(g->mask_words()), whole(g->mask_words());
      m.fill_next_token_bitmask(whole);
      m.fill_next_token_bitmask(words, budget);
      EXPECT_EQ(words, budget_mask_by_definition(m, *g, budget, whole))
          << prefix << " budget " << budget;
    }
  }
}

// Inside strings (flat frames) only the tokens that may leave the string are walked; the mask
// must still be exactly the allowed tokens after which the output can end within the room, by
// feeding each and asking its distance (or, when none fits, the grammar's whole mask).
TEST(BudgetTest, StringsNearTheEndMatchTheDefinition) {
  expect_masks_after_prefixes_match_definition(
      R"({"type":"array","minItems":2,"items":{"type":"string","maxLength":5}})",
      {"[\"", "[\"ab", "[\"abcde", "[\"a\",\"", "[\"a\", \"bcd", "[\"\\n"});
}

// Inside a free string that may end (an additional property's key or value), the closing
// quote's frame goes on into nested values while the characters' frames are short: the masks
// there must still match the definition.
TEST(BudgetTest, FreeStringsThatMayEndMatchTheDefinition) {
  expect_masks_after_prefixes_match_definition(
      R"({"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]})",
      {"{\"a\":\"x\",\"", "{\"a\":\"x\",\"zz", "{\"a\":\"\",\"k\":\"v", "{\"a\":\"\",\"k\":[\"v",
       "{\"a\":\"\",\"k\":{\"q\":\"r"});
}

// One matcher along random walks, its budgeted mask checked against the definition at every
// step: walks of many tokens remember their steps for the walk only, and a memory kept past it
// would read node ids the pool has since given to other stacks.
TEST(BudgetTest, MasksAlongOneMatcherMatchTheDefinition) {
  auto schema = json_schema_to_gbnf(
      R"({"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]})");
  ASSERT_TRUE(schema.ok());
  auto g = compile_or_die(*schema, walk_vocabulary());
  ASSERT_NE(g, nullptr);
  const size_t n_vocab = g->vocabulary().size();
  std::mt19937 rng(5);
  for (int run = 0; run < 12; ++run) {
    GrammarMatcher m(g);
    const size_t max_tokens = 10 + static_cast<size_t>(run);
    for (size_t step = 0; step < max_tokens; ++step) {
      const size_t budget = max_tokens - step;
      std::vector<uint32_t> words(g->mask_words()), whole(g->mask_words());
      m.fill_next_token_bitmask(whole);
      m.fill_next_token_bitmask(words, budget);
      ASSERT_EQ(words, budget_mask_by_definition(m, *g, budget, whole))
          << "run " << run << " step " << step;
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < n_vocab; ++id) {
        if ((words[id / 32] >> (id % 32)) & 1) allowed.push_back(static_cast<int32_t>(id));
      }
      ASSERT_FALSE(allowed.empty());
      const int32_t token = allowed[rng() % allowed.size()];
      if (g->vocabulary().is_eog(token)) break;
      ASSERT_TRUE(m.accept_token(token));
      if (m.is_terminated()) break;
    }
  }
}

TEST(BudgetTest, RandomWalksEndWithinTheirBudget) {
  auto schema = json_schema_to_gbnf(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}},
      "child": {"type": "object", "properties": {"id": {"type": "integer"}},
                "required": ["id"]}
    },
    "required": ["name", "tags", "child"]})");
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  const std::string_view grammars[] = {testing::kJsonGrammar, testing::kArithmeticGrammar,
                                       testing::kCLikeGrammar, *schema};
  const auto vocab = walk_vocabulary();
  for (std::string_view text : grammars) {
    auto g = compile_or_die(text, vocab);
    ASSERT_NE(g, nullptr) << text;
    std::mt19937 rng(7);
    int unguarded_complete = 0;
    for (int run = 0; run < 40; ++run) {
      const size_t budget = 64 + static_cast<size_t>(run);
      EXPECT_TRUE(random_walk(g, budget, /*use_budget=*/true, rng)) << text << " run " << run;
      unguarded_complete += random_walk(g, budget, /*use_budget=*/false, rng);
    }
    // The guard is what makes the walks end: without it most of them run out mid-sentence.
    EXPECT_LT(unguarded_complete, 30) << text;
  }
}

// One token can commit to a branch far longer than the shortest one (naming the tool whose
// arguments are longest): the guard must look that far ahead, not only its fixed margin.
TEST(BudgetTest, LongBranchesAreClosedWhileTheyStillFit) {
  auto g = compile_or_die(R"(root ::= "{" ("s" | "l" "x"{150}) "}")", byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->grammar().max_choice_jump(), 150u);
  for (size_t budget : {100, 140, 200}) {
    GrammarMatcher m(g);
    std::vector<uint32_t> words(g->mask_words());
    ASSERT_TRUE(m.accept_string("{"));
    m.fill_next_token_bitmask(words, budget);
    const bool long_allowed = (words['l' / 32] >> ('l' % 32)) & 1;
    EXPECT_EQ(long_allowed, budget >= 152) << budget;  // l, 150 x, }
    EXPECT_TRUE((words['s' / 32] >> ('s' % 32)) & 1);
  }
}

TEST(BudgetTest, LeavesTheMaskWholeWhenTheBudgetCannotBeMet) {
  auto g = compile_or_die(R"(root ::= "abcdefgh")", byte_vocabulary());
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  m.fill_next_token_bitmask(words, 3);  // 8 bytes cannot fit in 3 tokens
  EXPECT_TRUE((words['a' / 32] >> ('a' % 32)) & 1);
}

}  // namespace
}  // namespace strata::grammar
