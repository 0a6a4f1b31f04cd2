// uniqueItems over unbounded items (unique_items.h): instances labelled by hand and by
// nlohmann's JSON equality, masks against the naive definition (a token is allowed iff
// accept_token takes it) while generating, and rollback.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"
#include "test_grammars.h"

namespace strata::grammar {
namespace {

using Json = nlohmann::json;

// Every string of 1..3 bytes over the bytes JSON arrays of short items are made of, so pieces
// end items in every way: `"]`, `1,`, `[1,1`, `},{`...
std::shared_ptr<const TokenVocabulary> json_pieces() {
  static const auto vocabulary = [] {
    std::vector<std::string> pieces = testing::all_strings("[]{}\",:1a.\\ ", 3);
    pieces.push_back("</s>");
    const auto eog = static_cast<int32_t>(pieces.size() - 1);
    return TokenVocabulary::from_pieces(std::move(pieces), {eog});
  }();
  return vocabulary;
}

std::shared_ptr<const CompiledGrammar> compile_schema(const std::string& schema) {
  auto gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.error().message;
  if (!gbnf.ok()) return nullptr;
  auto grammar = parse_gbnf(*gbnf);
  EXPECT_TRUE(grammar.ok()) << grammar.error().message << "\n" << *gbnf;
  if (!grammar.ok()) return nullptr;
  auto compiled = CompiledGrammar::compile(*grammar, json_pieces());
  EXPECT_TRUE(compiled.ok()) << compiled.error().message;
  return compiled.ok() ? *compiled : nullptr;
}

using testing::accepts;

// The oracle: every array of the instance holds pairwise unequal items (nlohmann's == compares
// numbers by value and objects without order).
bool all_arrays_distinct(const Json& v) {
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      for (size_t j = i + 1; j < v.size(); ++j) {
        if (v[i] == v[j]) return false;
      }
    }
  }
  if (v.is_structured()) {
    for (const Json& child : v) {
      if (!all_arrays_distinct(child)) return false;
    }
  }
  return true;
}

constexpr const char* kMixedItems = R"({"type":"array","uniqueItems":true,"maxItems":5,
  "items":{"anyOf":[{"type":"string","maxLength":2},{"type":"number"},
    {"type":"array","uniqueItems":true,"items":{"type":"integer"}},
    {"type":"object","properties":{"a":{"type":"integer"}, "b":{}},"additionalProperties":false}]}})";

TEST(UniqueItems, ItemsEqualAsJsonValuesAreRefused) {
  auto g = compile_schema(kMixedItems);
  ASSERT_TRUE(g);
  const std::vector<std::pair<std::string, bool>> cases = {
      {R"([])", true},
      {R"(["a","b","ab"])", true},
      {R"(["a","a"])", false},
      {R"(["a", "b" ,"a"])", false},
      {R"(["a","\u0061"])", false},  // one string, two spellings
      {R"(["\\","\\\\"])", true},
      {R"([1,11,1.5,"1"])", true},
      {R"([1,1.0])", false},  // one number, two spellings
      {R"([1,10e-1])", false},
      {R"([11,1 ,11])", false},
      {R"([[1],[1,11],[11,1]])", true},
      {R"([[1],[1]])", false},
      {R"([[1,1]])", false},  // the inner array is unique too
      {R"([{"a":1},{"a":11},{"b":1},{"a":1,"b":1}])", true},
      {R"([{"a":1,"b":[1]},{"b":[1],"a":1}])", false},  // objects compare without order
      {R"([{"a":1}, {"a": 1}])", false},
      {R"([{"b":"a"},{"b":["a"]},"a",["a"]])", false},  // ["a"] is not an integer array
      {R"([{"b":"a"},{"b":["a"]},"a"])", true},
      {R"([{"b":[1,1]}])", true},  // "b" is any value: a plain array may repeat
  };
  for (const auto& [text, valid] : cases) EXPECT_EQ(accepts(g, text), valid) << text;
}

// Generates outputs token by token from random allowed tokens; at every step the mask must be
// exactly the tokens accept_token takes, and every finished output must pass the oracle (all
// arrays of these schemas are unique ones).
TEST(UniqueItems, MasksAgreeWithAcceptWhileGenerating) {
  for (
      const char* schema :
      {kMixedItems,
       R"({"type":"array","uniqueItems":true,"items":{"type":"string","maxLength":1}})",
       R"({"type":"array","uniqueItems":true,"items":{"type":"array","maxItems":2,"uniqueItems":true,
             "items":{"type":"array","uniqueItems":true,"items":{"type":"integer"}}}})"}) {
    SCOPED_TRACE(schema);
    auto g = compile_schema(schema);
    ASSERT_TRUE(g);
    const size_t n_vocab = json_pieces()->size();
    std::mt19937 rng(7);
    int finished = 0;
    for (int run = 0; run < 60; ++run) {
      GrammarMatcher m(g);
      std::string text;
      for (int step = 0; step < 40 && !m.is_terminated(); ++step) {
        std::vector<uint32_t> mask((n_vocab + 31) / 32, 0);
        m.fill_next_token_bitmask(mask);
        std::vector<int32_t> allowed;
        for (size_t id = 0; id < n_vocab; ++id) {
          const bool in_mask = (mask[id / 32] >> (id % 32)) & 1;
          const bool takes = m.accept_token(static_cast<int32_t>(id));
          if (takes) m.rollback(1);
          ASSERT_EQ(in_mask, takes)
              << "token '" << json_pieces()->piece(id) << "' after '" << text << "'";
          if (in_mask) allowed.push_back(static_cast<int32_t>(id));
        }
        if (allowed.empty()) break;
        const int32_t id = allowed[rng() % allowed.size()];
        if (json_pieces()->is_eog(id)) {
          ASSERT_TRUE(m.accept_token(id));
          break;
        }
        ASSERT_TRUE(m.accept_token(id));
        text += json_pieces()->piece(id);
      }
      if (m.can_end() || m.is_terminated()) {
        ++finished;
        const Json parsed = Json::parse(text, nullptr, false);
        ASSERT_FALSE(parsed.is_discarded()) << text;
        EXPECT_TRUE(all_arrays_distinct(parsed)) << text;
      }
    }
    EXPECT_GT(finished, 0);
  }
}

TEST(UniqueItems, RollbackForgetsTheItemsItUndoes) {
  auto g = compile_schema(R"({"type":"array","uniqueItems":true,"items":{"type":"string"}})");
  ASSERT_TRUE(g);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_string("["));
  ASSERT_TRUE(m.accept_string("\"a\","));
  ASSERT_TRUE(m.accept_string("\"b\","));
  EXPECT_FALSE(m.accept_string("\"b\""));
  EXPECT_FALSE(m.accept_string("\"a\""));
  m.rollback(1);  // "b" is no longer written
  EXPECT_TRUE(m.accept_string("\"b\"]"));
  EXPECT_TRUE(m.can_end());
  m.rollback(2);  // back to `[`: nothing written
  EXPECT_TRUE(m.accept_string("\"a\"]"));
}

// A string the grammar must end right away (one character here) cannot dodge a duplicate once
// it has written the character: the engine's mask (the one with a budget) refuses the character
// already, the plain one only the closing quote, which would leave nothing to sample.
TEST(UniqueItems, ItemsTheGrammarWouldForceIntoADuplicateAreRefusedEarly) {
  auto g = compile_schema(
      R"({"type":"array","uniqueItems":true,"items":{"type":"string","pattern":"^[a1]$"}})");
  ASSERT_TRUE(g);
  const auto id_of = [&](std::string_view piece) {
    std::vector<int32_t> ids;
    json_pieces()->find(piece, &ids);
    return ids.empty() ? -1 : ids[0];
  };
  const auto in = [](const std::vector<uint32_t>& mask, int32_t id) {
    return ((mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1) != 0;
  };
  const size_t words = (json_pieces()->size() + 31) / 32;
  for (const char* prefix : {"[\"a\",\"", "[\"a\","}) {
    SCOPED_TRACE(prefix);
    GrammarMatcher m(g);
    ASSERT_TRUE(m.accept_string(prefix));
    std::vector<uint32_t> plain(words), engine(words);
    m.fill_next_token_bitmask(plain);
    m.fill_next_token_bitmask(engine, 100);
    const bool in_string = std::string_view(prefix).ends_with("\"");
    for (const char* piece : {"a", "\"a", " \"a", "\"a\""}) {
      const int32_t id = id_of(piece);
      ASSERT_GE(id, 0) << piece;
      if (std::string_view(piece).ends_with("\"a\"") || in_string != (piece[0] == 'a')) continue;
      EXPECT_TRUE(in(plain, id)) << piece;
      EXPECT_FALSE(in(engine, id)) << piece;
    }
    for (const char* piece : {"1", "\"1", " \"1"}) {
      const int32_t id = id_of(piece);
      if (in_string != (piece[0] == '1')) continue;
      EXPECT_TRUE(in(engine, id)) << piece;
    }
  }
}

TEST(UniqueItems, HandWrittenGbnfRulesOpenUniqueArrays) {
  auto grammar = parse_gbnf(
      "root ::= unique-array-tags\n"
      "unique-array-tags ::= \"[\" (tag (\",\" tag)*)? \"]\"\n"
      "tag ::= [a-c]+\n");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  auto compiled = CompiledGrammar::compile(*grammar, json_pieces());
  ASSERT_TRUE(compiled.ok());
  // Items need not be JSON strings: a bare word is a literal-like scalar to the lexer.
  EXPECT_TRUE(accepts(*compiled, "[a,b,ab]"));
  EXPECT_FALSE(accepts(*compiled, "[ab,b,ab]"));

  auto bad = parse_gbnf("root ::= unique-array-x\nunique-array-x ::= \"(\" \")\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("must start every alternative with \"[\""), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace strata::grammar
