// Which rules the signature memo treats as interchangeable levels of a repetition chain: the
// "at most" and "exactly" chains the parser writes, self-recursion, and the rules that must not
// count (both kinds of alternatives, tail calls to different rules).
#include "grammar/repetition_chains.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {
namespace {

std::shared_ptr<const Grammar> parse_or_die(const std::string& gbnf) {
  auto grammar = parse_gbnf(gbnf);
  EXPECT_TRUE(grammar.ok()) << (grammar.ok() ? "" : grammar.error().message);
  return grammar.ok() ? *grammar : nullptr;
}

// Per rule name: its chain shape and levels below (kNone, 0 for rules that are no level).
struct Level {
  uint32_t shape;
  uint32_t below;
};
std::map<std::string, Level> levels(const Grammar& g) {
  std::vector<uint32_t> set_ids(g.n_byte_sets());
  std::iota(set_ids.begin(), set_ids.end(), 0u);
  const RepetitionChains chains(g, set_ids);
  std::map<std::string, Level> out;
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    out[g.rules()[r].name] = {chains.shape(r), chains.levels_below(r)};
  }
  return out;
}

constexpr uint32_t kNone = RepetitionChains::kNone;

TEST(RepetitionChains, AtMostChainLevelsShareOneShapeAndCountTheLevelsBelow) {
  // [a-z]{0,5}: the first copy is written in place, then root_4 .. root_1 are "at most 4 .. 1
  // more"; root_1 (no tail call) is no level.
  const auto g = parse_or_die("root ::= [a-z]{0,5} \"!\"");
  ASSERT_EQ(g->to_string(),
            "root ::= [!] | [a-z] root_4 [!]\n"
            "root_4 ::= [a-z] root_3 | \"\"\n"
            "root_3 ::= [a-z] root_2 | \"\"\n"
            "root_2 ::= [a-z] root_1 | \"\"\n"
            "root_1 ::= [a-z] | \"\"\n");
  auto l = levels(*g);
  EXPECT_EQ(l["root"].shape, kNone);
  EXPECT_EQ(l["root_1"].shape, kNone);
  EXPECT_NE(l["root_4"].shape, kNone);
  EXPECT_EQ(l["root_3"].shape, l["root_4"].shape);
  EXPECT_EQ(l["root_2"].shape, l["root_4"].shape);
  EXPECT_EQ(l["root_4"].below, 2u);
  EXPECT_EQ(l["root_3"].below, 1u);
  EXPECT_EQ(l["root_2"].below, 0u);
}

TEST(RepetitionChains, ExactChainsOfARuleAreLevels) {
  // x{6} of a rule of two alternatives: each copy inlines x before its tail call; every
  // alternative has the tail call.
  const auto g = parse_or_die("root ::= x{6}\nx ::= \"a\" | \"bc\"");
  ASSERT_EQ(g->to_string(),
            "root ::= [a] root_6 | [b] [c] root_6\n"
            "root_6 ::= [b] [c] root_5 | [a] root_5\n"
            "root_5 ::= [b] [c] root_4 | [a] root_4\n"
            "root_4 ::= [b] [c] root_3 | [a] root_3\n"
            "root_3 ::= [b] [c] root_2 | [a] root_2\n"
            "root_2 ::= [b] [c] | [a]\n");
  auto l = levels(*g);
  EXPECT_EQ(l["root_2"].shape, kNone);
  for (const char* name : {"root_5", "root_4", "root_3"}) {
    EXPECT_EQ(l[name].shape, l["root_6"].shape) << name;
  }
  EXPECT_EQ(l["root_6"].below, 3u);
  EXPECT_EQ(l["root_3"].below, 0u);
  // root lists its alternatives in another order: a shape of its own, nothing below.
  EXPECT_NE(l["root"].shape, l["root_6"].shape);
  EXPECT_EQ(l["root"].below, 0u);
}

TEST(RepetitionChains, SelfRecursionIsEndless) {
  const auto g = parse_or_die("root ::= b \"!\"\nb ::= [a-z] b | \"\"");
  auto l = levels(*g);
  EXPECT_NE(l["b"].shape, kNone);
  EXPECT_EQ(l["b"].below, RepetitionChains::kEndless);
}

TEST(RepetitionChains, RulesThatCouldEndEarlyOrBranchAreNoLevels) {
  // a: a tail alternative beside a non-empty one that ends, and no empty one (the levels' min
  // lengths would differ); c: tail calls to two different rules. f has an empty alternative,
  // which makes every min length 0: a level whatever else it has.
  const auto g = parse_or_die(
      "root ::= a c f \"!\"\n"
      "a ::= \"x\" a | \"yz\"\n"
      "c ::= \"x\" d | \"y\" e\n"
      "d ::= \"q\" | \"rs\"\n"
      "e ::= \"t\" | \"uv\"\n"
      "f ::= \"x\" f | \"yz\" | \"\"");
  auto l = levels(*g);
  for (const char* name : {"a", "c"}) EXPECT_EQ(l[name].shape, kNone) << name;
  EXPECT_EQ(l["f"].below, RepetitionChains::kEndless);
}

TEST(RepetitionChains, ByteSetsAndCallsTellShapesApart) {
  // Chains that differ only in their character class, or only in a call before the tail.
  const auto g = parse_or_die(
      "root ::= [a-c]{0,4} \"|\" [d-f]{0,4} \"|\" p{0,4} \"|\" q{0,4}\n"
      "p ::= \"x\" y \"!\"\n"
      "q ::= \"x\" z \"!\"\n"
      "y ::= \"1\" | \"22\"\n"
      "z ::= \"3\" | \"44\"");
  std::set<uint32_t> shapes;
  size_t n_levels = 0;
  for (const auto& [name, level] : levels(*g)) {
    if (level.shape == kNone || level.below == 0) continue;
    shapes.insert(level.shape);
    ++n_levels;
  }
  // [a-c]: root_3 (its first copy is written in root); the others: two levels each.
  EXPECT_EQ(n_levels, 7u) << g->to_string();
  EXPECT_EQ(shapes.size(), 4u) << g->to_string();
}

}  // namespace
}  // namespace strata::grammar
