// Token masks against the naive definition: a token is allowed iff accept_token succeeds on the
// matcher (then undone). Random small grammars over a small vocabulary whose tokens split
// multi-byte characters; rollback restores masks exactly; end-of-generation iff can_end.
#include <gtest/gtest.h>

#include <random>

#include "test_grammars.h"

namespace strata::grammar {
namespace {

// Pieces: every string of 1..3 bytes over {a, b, c, \xC3, \xA9} (so "é" = C3 A9 arrives whole
// or split), an empty (special) token and an end-of-generation token.
std::shared_ptr<const TokenVocabulary> small_vocabulary() {
  std::vector<std::string> pieces{""};
  for (std::string& s : testing::all_strings("abc\xC3\xA9", 3)) pieces.push_back(std::move(s));
  pieces.push_back("</s>");  // end of generation; its text never reaches the grammar
  const auto eog = static_cast<int32_t>(pieces.size() - 1);
  return TokenVocabulary::from_pieces(std::move(pieces), {eog});
}

std::vector<uint32_t> mask_of(GrammarMatcher& m, size_t n_vocab) {
  std::vector<uint32_t> words((n_vocab + 31) / 32 + 1, 0xFFFFFFFFu);
  m.fill_next_token_bitmask(words);
  EXPECT_EQ(words.back(), 0u) << "words past the vocabulary must be cleared";
  words.pop_back();
  return words;
}

std::vector<uint32_t> naive_mask(GrammarMatcher& m, size_t n_vocab) {
  std::vector<uint32_t> words((n_vocab + 31) / 32, 0);
  for (size_t id = 0; id < n_vocab; ++id) {
    const size_t before = m.n_accepted_tokens();
    if (m.accept_token(static_cast<int32_t>(id))) {
      words[id / 32] |= 1u << (id % 32);
      m.rollback(1);
    }
    EXPECT_EQ(m.n_accepted_tokens(), before);
  }
  return words;
}

bool allowed(const std::vector<uint32_t>& words, size_t id) {
  return (words[id / 32] >> (id % 32)) & 1;
}

// With `repetitive`, grammars also have long counted repetitions and rules that copy another
// rule's body: what the compiled grammar's sharing between positions (equal rules merged,
// positions alike for the longest token's length) must get right.
std::string random_grammar(std::mt19937& rng, bool repetitive = false) {
  static const char* kAtoms[] = {"\"a\"", "\"b\"", "\"ab\"", "\"\\u00e9\"", "\"c\"",
                                 "[a-b]", "[^a]",  ".",      "[a\\u00e9]",  "\"\""};
  static const char* kSuffixes[] = {"", "", "", "?", "*", "+", "{1,2}", "{0,3}"};
  static const char* kLongSuffixes[] = {"", "", "{0,12}", "{5,9}", "*", "{7}", "{1,2}", "{0,3}"};
  const char* const* suffixes = repetitive ? kLongSuffixes : kSuffixes;
  const int n_rules = 1 + static_cast<int>(rng() % 4);
  std::string text, body;
  for (int r = 0; r < n_rules; ++r) {
    text += (r == 0 ? std::string("root") : "r" + std::to_string(r)) + " ::=";
    if (repetitive && r >= 2 && rng() % 2 == 0) {
      text += body + "\n";  // the same body as the rule before
      continue;
    }
    const size_t body_start = text.size();
    const int n_alts = 1 + static_cast<int>(rng() % 3);
    for (int a = 0; a < n_alts; ++a) {
      if (a > 0) text += " |";
      const int n_items = static_cast<int>(rng() % 4);
      for (int i = 0; i < n_items; ++i) {
        std::string item;
        // Long repetitions of a rule reference (root{5,9} with root nullable) are ambiguous
        // enough to overflow the parse: only atoms repeat long.
        const char* const* item_suffixes = suffixes;
        const unsigned pick = rng() % 14;
        if (pick < 10) {
          item = kAtoms[pick];
        } else if (pick < 13) {
          item = n_rules > 1 ? "r" + std::to_string(1 + rng() % (n_rules - 1)) : "root";
          item_suffixes = kSuffixes;
        } else {
          item = "(" + std::string(kAtoms[rng() % 10]) + " | " + kAtoms[rng() % 10] + ")";
        }
        text += " " + item + item_suffixes[rng() % 8];
      }
    }
    body = text.substr(body_start);
    text += "\n";
  }
  return text;
}

class MaskOracleWalk : public ::testing::TestWithParam<bool> {};

TEST_P(MaskOracleWalk, RandomGrammarsMatchNaiveMasksAlongRandomWalks) {
  auto vocab = small_vocabulary();
  const size_t n_vocab = vocab->size();
  std::mt19937 rng(1234);
  int compiled = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const std::string text = random_grammar(rng, GetParam());
    auto grammar = parse_gbnf(text);
    if (!grammar.ok()) continue;  // undefined rules, left recursion, ... (tested elsewhere)
    auto c = CompiledGrammar::compile(*grammar, vocab);
    ASSERT_TRUE(c.ok());
    ++compiled;
    GrammarMatcher m(*c);
    std::vector<std::vector<uint32_t>> masks;
    for (int step = 0; step < 10; ++step) {
      const auto fast = mask_of(m, n_vocab);
      const auto naive = naive_mask(m, n_vocab);
      ASSERT_EQ(fast, naive) << "grammar:\n" << text << "step " << step;
      EXPECT_EQ(allowed(fast, n_vocab - 1), m.can_end()) << text;
      EXPECT_FALSE(allowed(fast, 0)) << "the empty special token is never allowed";
      masks.push_back(fast);
      std::vector<int32_t> choices;
      for (size_t id = 0; id + 1 < n_vocab; ++id) {
        if (allowed(fast, id)) choices.push_back(static_cast<int32_t>(id));
      }
      // Highly ambiguous grammars (root ::= [a-b] .+ root+) multiply the live stacks with
      // every byte; a short walk covers them.
      if (choices.empty() || m.n_stacks() > 200) break;
      ASSERT_TRUE(m.accept_token(choices[rng() % choices.size()]));
    }
    // Rolling back to any earlier step gives that step's mask again.
    while (m.n_accepted_tokens() > 0) {
      const size_t back = 1 + rng() % m.n_accepted_tokens();
      m.rollback(back);
      ASSERT_EQ(mask_of(m, n_vocab), masks[m.n_accepted_tokens()]) << text;
    }
  }
  EXPECT_GT(compiled, 250);
}

INSTANTIATE_TEST_SUITE_P(Grammars, MaskOracleWalk, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Repetitive" : "Plain"; });

TEST(MaskOracle, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  auto vocab = small_vocabulary();
  auto g = testing::compile_or_die("root ::= \"ab\" \"c\"*", vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  const auto eog = static_cast<int32_t>(vocab->size() - 1);
  EXPECT_FALSE(m.accept_token(eog));
  ASSERT_TRUE(m.accept_string("ab"));
  EXPECT_TRUE(allowed(mask_of(m, vocab->size()), static_cast<size_t>(eog)));
  ASSERT_TRUE(m.accept_token(eog));
  EXPECT_TRUE(m.is_terminated());
  const auto after = mask_of(m, vocab->size());
  EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](uint32_t w) { return w == 0; }));
  m.rollback(1);
  EXPECT_TRUE(m.accept_string("ccc"));
}

TEST(MaskOracle, RejectedTokenLeavesStateUnchanged) {
  auto vocab = small_vocabulary();
  auto g = testing::compile_or_die(testing::kJsonGrammar, vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_string("a"));
  EXPECT_EQ(m.n_accepted_tokens(), 0u);
  EXPECT_TRUE(m.accept_string("[\"\xC3"));  // half of é
  EXPECT_FALSE(m.accept_string("\""));      // a string cannot close inside a character
  EXPECT_TRUE(m.accept_string("\xA9\"]"));
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace strata::grammar
