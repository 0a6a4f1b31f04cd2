// GBNF front end: load-time errors (one per class, with line:column) and acceptance of the
// grammars users publish, on strings whose membership is decided by hand.
#include <gtest/gtest.h>

#include "test_grammars.h"

namespace strata::grammar {
namespace {

using testing::accepts;
using testing::byte_vocabulary;
using testing::compile_or_die;

std::string load_error(std::string_view text) {
  auto g = parse_gbnf(text);
  return g.ok() ? std::string("(loaded)") : g.error().message;
}

TEST(GbnfErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(load_error("root ::= \"abc"), "GBNF 1:10: unterminated string literal");
  EXPECT_EQ(load_error("root ::= (\"a\"\n"), "GBNF 2:1: expected ')'");
  EXPECT_EQ(load_error("root = \"a\""), "GBNF 1:6: expected '::=' after rule name");
  EXPECT_EQ(load_error("root ::= [a-"), "GBNF 1:10: unterminated character class");
  EXPECT_EQ(load_error("root ::= \"\\q\""), "GBNF 1:11: unknown escape '\\q'");
  EXPECT_EQ(load_error("root ::= * \"a\""), "GBNF 1:10: '*' with nothing to repeat");
  EXPECT_EQ(load_error("root ::= \"a\"{3,2}"), "GBNF 1:13: repetition {m,n} with n < m");
  EXPECT_EQ(load_error("root ::= \"a\"\nroot ::= \"b\""), "GBNF 2:1: rule 'root' is defined twice");
  EXPECT_EQ(load_error("root ::= \"a\" )"), "GBNF 1:14: unexpected ')'");
  EXPECT_EQ(load_error("root ::= [z-a]"), "GBNF 1:10: character range out of order");
  EXPECT_EQ(load_error("root ::= \"\\x4\""), "GBNF 1:14: expected 2 hex digits");
}

TEST(GbnfErrors, UndefinedAndMissingRoot) {
  EXPECT_EQ(load_error("root ::= \"a\" thing\n"), "GBNF 1:14: undefined rule 'thing'");
  EXPECT_EQ(load_error("start ::= \"a\""),
            "GBNF: no rule named 'root' (the start rule); define it as `root ::= ...`");
  EXPECT_TRUE(parse_gbnf("start ::= \"a\"", "start").ok());
}

TEST(GbnfErrors, LeftRecursionDirectIndirectAndThroughNullablePrefix) {
  EXPECT_EQ(load_error("root ::= root \"a\" | \"a\""),
            "GBNF 1:1: rule 'root' is left-recursive: it can reach itself without consuming input");
  EXPECT_NE(load_error("root ::= a \"x\"\na ::= b \"y\" | \"z\"\nb ::= root | \"w\"")
                .find("left-recursive"),
            std::string::npos);
  EXPECT_NE(load_error("root ::= e root \"a\" | \"b\"\ne ::= \"c\"?").find("left-recursive"),
            std::string::npos);
  EXPECT_NE(load_error("root ::= (\"a\"? root) \"b\" | \"c\"").find("left-recursive"),
            std::string::npos);
  // Right recursion and recursion after a consumed byte are fine.
  EXPECT_TRUE(parse_gbnf("root ::= \"a\" root | \"b\"").ok());
  EXPECT_TRUE(parse_gbnf("root ::= \"(\" root \")\" root | ").ok());
}

TEST(GbnfErrors, UnmatchableRules) {
  EXPECT_EQ(load_error("root ::= \"a\" root"),
            "GBNF 1:1: rule 'root' cannot match any finite string (unmatchable)");
  EXPECT_EQ(load_error("root ::= \"x\" | loop\nloop ::= \"a\" loop"),
            "GBNF 2:1: rule 'loop' cannot match any finite string (unmatchable)");
  EXPECT_NE(load_error("root ::= [^\\x00-\\U0010FFFF]").find("unmatchable"), std::string::npos);
}

TEST(GbnfErrors, RepetitionBoundsTooLarge) {
  EXPECT_EQ(load_error("root ::= \"a\"{1,100000}"),
            "GBNF 1:16: repetition bound too large (at most 10000)");
  // 150 different units, each repeated up to 9,000 times: 2.7M rules.
  std::string many = "root ::=";
  for (int i = 0; i < 150; ++i) many += " \"a" + std::to_string(i) + "\"{0,9000}";
  EXPECT_NE(load_error(many).find("grammar too large"), std::string::npos);
  // Bounded repetitions of one unit share their rules "at most i more": one chain of 9,000.
  std::string shared = "root ::=";
  for (int i = 0; i < 150; ++i) shared += " \"a\"{0,9000}";
  EXPECT_TRUE(parse_gbnf(shared).ok());
}

// The repetitions below share the rules "at most i more a" (and "at most i more x"); each keeps
// its own bounds.
TEST(Gbnf, BoundedRepetitionsOfOneUnitKeepTheirOwnBounds) {
  // The longer repetition comes first, so the shorter one reuses a rule from inside its chain.
  auto g = compile_or_die(R"(root ::= "a"{1,4} "-" "a"{0,2} "-" x{0,3} "-" x{1,2}
x ::= "x" | "y")",
                          byte_vocabulary());
  ASSERT_NE(g, nullptr);
  for (const char* text : {"a--xyx-y", "aaaa-aa--xy", "aa-a-y-x"}) {
    EXPECT_TRUE(accepts(g, text)) << text;
  }
  for (const char* text : {"aaaaa---x", "a-aaa--x", "--x-x", "a--xxxx-x", "a--x-", "a--x-xyx"}) {
    EXPECT_FALSE(accepts(g, text)) << text;
  }
}

TEST(GbnfErrors, ExponentiallyAmbiguousGrammarIsAnErrorNotAHang) {
  // Each + wraps the repetition before it: 40 levels, two ways to continue at each level.
  const std::string text = "root ::= \"a\" [b-c]*" + std::string(40, '+');
  auto g = parse_gbnf(text);
  ASSERT_TRUE(g.ok());
  auto compiled = CompiledGrammar::compile(*g, byte_vocabulary());
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.error().message.find("too ambiguous"), std::string::npos);
}

TEST(GbnfErrors, DeepNestingIsAnErrorNotACrash) {
  std::string text = "root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')');
  EXPECT_NE(load_error(text).find("nested too deeply"), std::string::npos);
}

TEST(Gbnf, CommentsMultiLineRulesAndEscapes) {
  auto g = compile_or_die(
      "# comment\nroot ::= \"a\" # trailing\n  | \"\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\" ",
      byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "a"));
  EXPECT_TRUE(accepts(g, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\\""));
  EXPECT_FALSE(accepts(g, "A"));
}

TEST(Gbnf, CharacterClassesAreOverCodePoints) {
  auto g =
      compile_or_die("root ::= [a-c\\u00e0-\\u00ff\\U0001F600-\\U0001F64F]+", byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "abc\xC3\xA0\xC3\xBF\xF0\x9F\x98\x80"));
  EXPECT_FALSE(accepts(g, "d"));
  EXPECT_FALSE(accepts(g, "\xC3\x9F"));  // U+00DF is below the range
  EXPECT_FALSE(accepts(g, "\xC3"));      // half a character is not a sentence

  auto negated = compile_or_die("root ::= [^a\\u00e9]", byte_vocabulary());
  ASSERT_NE(negated, nullptr);
  EXPECT_TRUE(accepts(negated, "b"));
  EXPECT_TRUE(accepts(negated, "\xC3\xA8"));          // è
  EXPECT_TRUE(accepts(negated, "\xE2\x82\xAC"));      // €
  EXPECT_TRUE(accepts(negated, "\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(accepts(negated, "\xC3\xA9"));         // é
  EXPECT_FALSE(accepts(negated, "a"));
  EXPECT_FALSE(accepts(negated, "\xED\xA0\x80"));  // a surrogate is not UTF-8
  EXPECT_FALSE(accepts(negated, "\xC0\x80"));      // overlong
  EXPECT_FALSE(accepts(negated, "\xFF"));

  auto any = compile_or_die("root ::= .{2}", byte_vocabulary());
  ASSERT_NE(any, nullptr);
  EXPECT_TRUE(accepts(any, "\n\xE2\x82\xAC"));
  EXPECT_FALSE(accepts(any, "abc"));
}

TEST(Gbnf, RepetitionCounts) {
  auto g = compile_or_die("root ::= \"ab\"{2,3} \"c\"{2,} \"d\"{1} \"e\"?", byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "ababccd"));
  EXPECT_TRUE(accepts(g, "abababcccccde"));
  EXPECT_FALSE(accepts(g, "abccd"));
  EXPECT_FALSE(accepts(g, "ababababccd"));
  EXPECT_FALSE(accepts(g, "ababcd"));
  EXPECT_FALSE(accepts(g, "ababccdd"));
}

// Rules with the same structure become one rule (the compiled grammar then walks the vocabulary
// once for them); rules that differ anywhere, however deep, stay apart.
TEST(Gbnf, StructurallyEqualRulesAreMergedAndOthersKept) {
  auto equal = parse_gbnf(
      "root ::= a \",\" b \";\" c\n"
      "a ::= [x] a | \"y\"\n"
      "b ::= [x] b | \"y\"\n"
      "c ::= \"(\" d \")\" c | \"y\"\n"  // a cycle of two rules, twice
      "d ::= \"(\" c \")\" d | \"y\"\n");
  ASSERT_TRUE(equal.ok()) << equal.error().message;
  auto apart = parse_gbnf(
      "root ::= a \",\" b \";\" c\n"
      "a ::= [x] a | \"y\"\n"
      "b ::= [x] b | \"z\"\n"
      "c ::= \"(\" d \")\" c | \"y\"\n"
      "d ::= \"(\" c \")\" d | \"z\"\n");
  ASSERT_TRUE(apart.ok()) << apart.error().message;
  EXPECT_EQ((*equal)->rules().size(), 3u) << (*equal)->to_string();  // root, a, c
  EXPECT_EQ((*apart)->rules().size(), 5u) << (*apart)->to_string();

  auto merged = CompiledGrammar::compile(*equal, byte_vocabulary());
  auto kept = CompiledGrammar::compile(*apart, byte_vocabulary());
  ASSERT_TRUE(merged.ok() && kept.ok());
  EXPECT_TRUE(accepts(*merged, "xxy,y;((y)y)y"));
  EXPECT_TRUE(accepts(*kept, "xxy,z;((y)z)y"));
  EXPECT_FALSE(accepts(*kept, "xxy,y;y"));
  EXPECT_FALSE(accepts(*kept, "y,z;((y)y)y"));
}

TEST(Gbnf, JsonGrammar) {
  auto g = compile_or_die(testing::kJsonGrammar, byte_vocabulary());
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"{}", "[]", "0", "-12.5e+3", "\"a\\\"b\\u00e9\\n\"", "true",
                         "{\"a\": [1, 2, {\"b\": null}], \"c\": \"\xE2\x82\xAC\"}",
                         "[\n  1,\n  2\n]", "{\"k\":false} "}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad : {"{", "[1,]", "01", "{\"a\" 1}", "\"\\x\"", "tru", "{'a': 1}",
                          "\"tab\there\"", "[1 2]", "{\"a\":1}}", "1."}) {
    EXPECT_FALSE(accepts(g, bad)) << bad;
  }
}

TEST(Gbnf, ArithmeticGrammar) {
  auto g = compile_or_die(testing::kArithmeticGrammar, byte_vocabulary());
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"1", "1+2*3", "(1 + 2) * -3.5", "--4", "((7))/2 - 1"}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad : {"", "1+", "(1", "1 2", "1.", "*2", "()"}) {
    EXPECT_FALSE(accepts(g, bad)) << bad;
  }
}

TEST(Gbnf, ListGrammar) {
  auto g = compile_or_die(testing::kListGrammar, byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "- one\n- two \xC3\xA9\n"));
  EXPECT_FALSE(accepts(g, "- one"));
  EXPECT_FALSE(accepts(g, "- \n"));
  EXPECT_FALSE(accepts(g, "* one\n"));
  EXPECT_FALSE(accepts(g, "- a\n- b\n- c\n- d\n- e\n- f\n"));  // at most 5 items
}

TEST(Gbnf, CLikeGrammar) {
  auto g = compile_or_die(testing::kCLikeGrammar, byte_vocabulary());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g,
                      "int main() {\n  int x = 3;\n  while (x > 0) { x = x - 1; }\n"
                      "  return f(x, 2);\n}\n"));
  EXPECT_TRUE(accepts(g, "void f(char* s, int n){return;}"));
  EXPECT_FALSE(accepts(g, "int main() { return 1 }"));
  EXPECT_FALSE(accepts(g, "float f() {}"));
  EXPECT_FALSE(accepts(g, "int 1x() {}"));
}

TEST(Gbnf, IsTerminatedWhenNothingMayFollow) {
  auto g = compile_or_die("root ::= \"a\" \"b\"?", byte_vocabulary());
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept_string("a"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.is_terminated());
  ASSERT_TRUE(m.accept_string("b"));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_string("b"));
  EXPECT_TRUE(m.is_terminated());
}

}  // namespace
}  // namespace strata::grammar
