// A sequence's constraint rolls back accepted tokens exactly: the mask after rollback is the mask
// before those tokens, including across a lazy trigger's activation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/constraint.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"

namespace strata::engine {
namespace {

// Tokens: "a", "b", "<call>", "x", "y", and an end-of-generation token.
std::shared_ptr<const grammar::CompiledGrammar> compile(const std::string& gbnf) {
  auto vocabulary = grammar::TokenVocabulary::from_pieces({"a", "b", "<call>", "x", "y", ""}, {5});
  auto parsed = grammar::parse_gbnf(gbnf);
  EXPECT_TRUE(parsed.ok());
  auto compiled = grammar::CompiledGrammar::compile(*parsed, vocabulary);
  EXPECT_TRUE(compiled.ok());
  return *compiled;
}

std::vector<bool> allowed(SequenceConstraint& c, size_t n_generated) {
  std::vector<bool> out;
  if (!c.fill_mask(n_generated)) return std::vector<bool>(6, true);
  for (int32_t id = 0; id < 6; ++id) out.push_back(c.mask().is_allowed(id));
  return out;
}

TEST(SequenceConstraintTest, RollbackRestoresTheMaskBeforeTheTokens) {
  SequenceConstraint c(compile("root ::= \"a\" \"b\"* \"x\""), {}, 100);
  const std::vector<bool> start = allowed(c, 0);
  ASSERT_TRUE(c.accept(0).ok());  // a
  const std::vector<bool> after_a = allowed(c, 1);
  ASSERT_TRUE(c.accept(1).ok());  // b
  ASSERT_TRUE(c.accept(3).ok());  // x
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(c.n_accepted(), 3u);
  c.rollback(2);
  EXPECT_EQ(c.n_accepted(), 1u);
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(allowed(c, 1), after_a);
  c.rollback(5);  // at most what was accepted
  EXPECT_EQ(c.n_accepted(), 0u);
  EXPECT_EQ(allowed(c, 0), start);
}

TEST(SequenceConstraintTest, RollbackUndoesATriggersActivation) {
  SequenceConstraint c(compile("root ::= \"<call>\" \"x\"+"), {"<call>"}, 100);
  ASSERT_TRUE(c.accept(0).ok());  // free text before the trigger
  EXPECT_FALSE(c.fill_mask(1));
  ASSERT_TRUE(c.accept(2).ok());  // the trigger: the grammar takes over
  ASSERT_TRUE(c.fill_mask(2));
  EXPECT_TRUE(c.mask().is_allowed(3));
  EXPECT_FALSE(c.mask().is_allowed(0));
  c.rollback(1);
  EXPECT_FALSE(c.fill_mask(1));  // free again
  ASSERT_TRUE(c.accept(2).ok());
  ASSERT_TRUE(c.accept(3).ok());
  EXPECT_TRUE(c.complete());
}

}  // namespace
}  // namespace strata::engine
