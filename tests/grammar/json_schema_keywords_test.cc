// JSON Schema keywords the converter enforces by rewriting (not, if/then/else, dependencies,
// overlapping oneOf), by automata over code points (patterns combined, complemented, bounded;
// patternProperties next to additionalProperties; propertyNames), and by counting (uniqueItems
// over small enums, minProperties/maxProperties, contains). Each case lists instances written
// by hand with the verdict the specification gives them; the grammar must agree on every one.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex_to_gbnf_automaton.h"
#include "grammar/token_vocabulary.h"

namespace strata::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> pieces;
    pieces.reserve(256);
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    return TokenVocabulary::from_pieces(std::move(pieces), {});
  }();
  return vocabulary;
}

bool accepts(const std::shared_ptr<const CompiledGrammar>& grammar, const std::string& text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_string(text) && matcher.can_end();
}

struct Case {
  const char* name;
  const char* schema;
  std::vector<std::string> valid;
  std::vector<std::string> invalid;
};

void check(const Case& c, const JsonSchemaOptions& options = {}) {
  SCOPED_TRACE(c.name);
  auto gbnf = json_schema_to_gbnf(c.schema, options);
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  auto grammar = parse_gbnf(*gbnf);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message << "\n" << *gbnf;
  auto compiled = CompiledGrammar::compile(*grammar, byte_vocabulary());
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  for (const std::string& text : c.valid) {
    auto ordered = order_instance_like_schema(c.schema, text);
    ASSERT_TRUE(ordered.ok()) << text;
    EXPECT_TRUE(accepts(*compiled, *ordered)) << "valid instance rejected: " << *ordered;
  }
  for (const std::string& text : c.invalid) {
    auto ordered = order_instance_like_schema(c.schema, text);
    ASSERT_TRUE(ordered.ok()) << text;
    EXPECT_FALSE(accepts(*compiled, *ordered)) << "invalid instance accepted: " << *ordered;
  }
}

// The converter merges an allOf level by level: the members' own properties, then the allOf
// lists the members hold (appended to the merged schema's and visited after). The instance
// reorderer must put keys in the same order, or the benchmark's valid instances are refused
// (JSONSchemaBench o67449: a nested allOf of $refs beside two more $refs).
TEST(JsonSchemaKeywords, NestedAllOfKeysComeInTheConvertersOrder) {
  const char* schema = R"({"definitions": {
      "a": {"type": "object", "properties": {"entry": {"type": "string"}}},
      "b": {"type": "object", "properties": {"env": {"type": "string"}}},
      "c": {"type": "object", "properties": {"run": {"type": "string"},
                                             "runner": {"type": "string"}}}},
    "type": "object",
    "allOf": [{"allOf": [{"$ref": "#/definitions/a"}, {"$ref": "#/definitions/b"}]},
              {"$ref": "#/definitions/c"}]})";
  const std::string instance = R"({"entry":"x","env":"y","run":"z","runner":"w"})";
  auto ordered = order_instance_like_schema(schema, instance);
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(*ordered, R"({"run":"z","runner":"w","entry":"x","env":"y"})");
  check({"nested allOf", schema, {instance, R"({"entry":"x","runner":"w"})"}, {R"({"run":1})"}});
}

TEST(JsonSchemaKeywords, Not) {
  for (const Case& c : std::vector<Case>{
           {"not type",
            R"({"not":{"type":["string","object"]}})",
            {"1", "null", "[1]", "true"},
            {R"("a")", "{}"}},
           {"not enum of strings",
            R"({"type":"string","not":{"enum":["a","bc"]}})",
            {R"("")", R"("b")", R"("abc")", R"("bcd")"},
            {R"("a")", R"("bc")", "1"}},
           {"not const object, keys in another order",
            R"({"enum":[{"a":1,"b":2},3],"not":{"const":{"b":2,"a":1}}})",
            {"3"},
            {R"({"a":1,"b":2})"}},
           {"not enum of integers",
            R"({"type":"integer","minimum":0,"not":{"enum":[0,2,5]}})",
            {"1", "3", "4", "6", "100"},
            {"0", "2", "5", "-1", "1.5"}},
           {"not const of a number",
            R"({"type":"number","maximum":2,"not":{"const":1}})",
            {"0.5", "1.5", "-3", "2", "1.01"},
            {"1", "1.0", "2.5"}},
           {"not const boolean", R"({"type":"boolean","not":{"const":true}})", {"false"}, {"true"}},
           {"not required",
            R"({"type":"object","not":{"required":["a","b"]}})",
            {"{}", R"({"a":1})", R"({"b":1,"c":2})"},
            {R"({"a":1,"b":2})"}},
           {"not pattern",
            R"({"type":"string","not":{"pattern":"^x.*y$"}})",
            {R"("xy1")", R"("ax y")", R"("")"},
            {R"("xy")", R"("x--y")"}},
           {"not items",
            R"({"type":"array","not":{"items":{"type":"integer"}}})",
            {R"([1,"a"])", R"([null])"},
            {"[]", "[1,2]"}},
           {"not format",
            R"({"not":{"format":"date"}})",
            {R"("2024-13-01")", R"("x")"},
            {R"("2024-01-31")", R"("2024-02-29")", "7", "null"}},
           {"not minProperties",
            R"({"type":"object","not":{"minProperties":2}})",
            {"{}", R"({"a":1})"},
            {R"({"a":1,"b":2})"}},
           {"not additionalProperties false: a key outside the names",
            R"({"type":"object","properties":{"a":{"type":"integer"}},
                "not":{"properties":{"a":{}},"additionalProperties":false}})",
            {R"({"b":1})", R"({"a":1,"c":2})", R"({"c":2,"d":3})"},
            {"{}", R"({"a":1})"}},
           // Some member other than a holds a non-string: b (declared) or an additional one.
           {"not additionalProperties with a schema",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{}},
                "not":{"properties":{"a":{}},"additionalProperties":{"type":"string"}}})",
            {R"({"b":1})", R"({"a":1,"c":null})", R"({"c":[1],"d":"s"})", R"({"c":"s","d":[1]})",
             R"({"b":"s","c":"s","d":{}})"},
            {"{}", R"({"a":1})", R"({"b":"s"})", R"({"a":1,"c":"x"})", R"({"c":"x","d":"y"})"}},
           // {"minimum": 3} holds for every non-number, so only numbers below 3 remain.
           {"not anyOf",
            R"({"not":{"anyOf":[{"type":"string"},{"minimum":3}]}})",
            {"2", "-1", "2.5"},
            {R"("s")", "3", "7", "null", "{}"}},
       }) {
    check(c);
  }
}

TEST(JsonSchemaKeywords, IfThenElse) {
  check({"discriminator const",
         R"({"type":"object","properties":{"kind":{"type":"string"},"n":{"type":"integer"},
             "s":{"type":"string"}},
             "if":{"properties":{"kind":{"const":"num"}}},
             "then":{"required":["n"]},"else":{"required":["s"]}})",
         {R"({"kind":"num","n":1})", R"({"n":2})", R"({"kind":"str","s":"x"})",
          R"({"kind":"str","n":1,"s":"x"})"},
         {R"({"kind":"num","s":"x"})", R"({"kind":"str","n":1})", R"({"kind":"other"})"}});
  check({"then only",
         R"({"if":{"type":"string"},"then":{"minLength":2}})",
         {"1", "\"ab\"", "null"},
         {"\"a\"", "\"\""}});
}

TEST(JsonSchemaKeywords, Dependencies) {
  check({"draft 7 dependencies, both forms",
         R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
             "properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"integer"}},
             "dependencies":{"a":["b"],"c":{"properties":{"b":{"const":"x"}},"required":["b"]}}})",
         {"{}", R"({"b":"y"})", R"({"a":"1","b":"2"})", R"({"b":"x","c":1})",
          R"({"a":"1","b":"x","c":3})"},
         {R"({"a":"1"})", R"({"c":1})", R"({"b":"y","c":1})"}});
  check({"dependentRequired and dependentSchemas",
         R"({"type":"object","dependentRequired":{"x":["y","z"]},
             "dependentSchemas":{"y":{"properties":{"z":{"type":"integer"}}}}})",
         {"{}", R"({"y":1,"z":2})", R"({"x":0,"y":1,"z":2})", R"({"z":"s"})"},
         {R"({"x":0,"y":1})", R"({"y":1,"z":"s"})"}});
}

// Keywords next to a $ref apply in every draft, as ajv applies them (drafts 4 to 7 say to
// ignore them; the grammar keeps the values valid under both readings).
TEST(JsonSchemaKeywords, RefSiblingsApplyInEveryDraft) {
  check({"draft 7 if/then/else over a $ref with properties next to it",
         R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
             "definitions":{"Doc":{"type":"object","additionalProperties":false,
               "properties":{"description":{"type":"string"},"url":{"_format":"uri"}},
               "required":["url","description"]}},
             "properties":{"doc":{"$ref":"#/definitions/Doc"},
               "stability":{"enum":["stable","beta"]}},
             "required":["doc","stability"],
             "if":{"properties":{"stability":{"const":"stable"}}},
             "then":{"properties":{"doc":{"$ref":"#/definitions/Doc",
               "properties":{"url":{"type":"string"}}}}},
             "else":{"properties":{"doc":{"$ref":"#/definitions/Doc",
               "properties":{"url":{"type":["string","null"]}}}}}})",
         {R"({"doc":{"description":"","url":"x"},"stability":"stable"})",
          R"({"doc":{"description":"","url":null},"stability":"beta"})",
          R"({"doc":{"description":"d","url":"u"},"stability":"beta"})"},
         {R"({"doc":{"description":"","url":5},"stability":"beta"})",
          R"({"doc":{"description":"","url":null},"stability":"stable"})",
          R"({"doc":{"description":"","url":5},"stability":"stable"})",
          R"({"doc":{"description":"","url":"x","extra":1},"stability":"beta"})",
          R"({"doc":{"url":"x"},"stability":"beta"})"}});
  check({"draft 4 definition that adds type object next to its $ref",
         R"({"$schema":"http://json-schema.org/draft-04/schema","type":"object",
             "additionalProperties":false,
             "definitions":{"dictionary":{"$schema":"http://json-schema.org/draft-04/schema#",
               "patternProperties":{".*":{"type":"string"}},
               "properties":{"basic":{"type":"string"}},"required":["basic"]},
               "headlines":{"$ref":"#/definitions/dictionary",
                 "$schema":"http://json-schema.org/draft-04/schema#","type":"object",
                 "title":"Headlines"}},
             "properties":{"description":{"$ref":"#/definitions/headlines"},
               "headlines":{"$ref":"#/definitions/headlines"},"type":{"enum":["audio"]}},
             "required":["type"]})",
         {R"({"type":"audio"})",
          R"({"description":{"basic":"d"},"headlines":{"basic":"h","x":"y"},"type":"audio"})"},
         {R"({"description":null,"type":"audio"})", R"({"headlines":63e5,"type":"audio"})",
          R"({"headlines":"s","type":"audio"})", R"({"headlines":{"x":"y"},"type":"audio"})",
          R"({"headlines":{"basic":1},"type":"audio"})",
          R"({"headlines":{"basic":"h","x":1},"type":"audio"})"}});
  check({"draft 4 maxItems next to a $ref",
         R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"object",
             "definitions":{"list":{"type":"array","items":{"type":"string"}}},
             "properties":{"parent":{"$ref":"#/definitions/list","maxItems":1}}})",
         {"{}", R"({"parent":[]})", R"({"parent":["a"]})"},
         {R"({"parent":["a","b"]})", R"({"parent":[1]})", R"({"parent":"a"})"}});
}

TEST(JsonSchemaKeywords, OverlappingOneOfBranchesExcludeEachOther) {
  check({"required-only branches",
         R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},
             "g":{"type":"integer"}},"additionalProperties":false,
             "oneOf":[{"required":["a","g"]},{"required":["b","g"]}]})",
         {R"({"a":"x","g":1})", R"({"b":"x","g":1})"},
         {R"({"a":"x","b":"y","g":1})", R"({"g":1})", R"({"a":"x"})"}});
  check({"any value or a string",
         R"({"oneOf":[{"description":"anything"},{"type":"string"}]})",
         {"1", "null", "[]", "{}"},
         {R"("s")"}});
  check({"branches with a const discriminator",
         R"({"type":"object","properties":{"shape":{"enum":["circle","square"]},
             "r":{"type":"number"},"side":{"type":"number"}},"required":["shape"],
             "oneOf":[{"properties":{"shape":{"const":"circle"}},"required":["r"]},
                      {"properties":{"shape":{"const":"square"}},"required":["side"]}]})",
         {R"({"shape":"circle","r":1})", R"({"shape":"square","side":2,"r":1})"},
         {R"({"shape":"circle","side":1})", R"({"shape":"square"})"}});
  // Closed objects that share their optional discriminator: {} matches both.
  check({"closed branches",
         R"({"oneOf":[{"type":"object","properties":{"k":{"const":"first"},
             "first":{"type":"boolean"}},"additionalProperties":false},
             {"type":"object","properties":{"k":{"const":"second"},"second":{"type":"boolean"}},
             "additionalProperties":false}]})",
         {R"({"k":"first"})", R"({"first":true})", R"({"k":"second","second":false})",
          R"({"second":true})"},
         {"{}", R"({"k":"first","second":true})", R"({"first":true,"second":true})"}});
}

TEST(JsonSchemaKeywords, PatternPropertiesNextToAdditionalAndDeclared) {
  check({"keys split by the patterns they match",
         R"({"type":"object","properties":{"id":{"type":"integer"}},
             "patternProperties":{"^x-":{"type":"string"},"y$":{"type":"boolean"}},
             "additionalProperties":{"type":"null"}})",
         {R"({"id":1,"x-a":"s","ky":true,"other":null})", "{}"},
         // "x-y" matches both patterns: a string and a boolean at once, so never valid.
         {R"({"x-a":1})", R"({"ky":"s"})", R"({"other":1})", R"({"x-y":true})", R"({"x-y":"s"})",
          R"({"id":"s"})"}});
  check({"closed with a pattern",
         R"({"patternProperties":{"^[a-z]+$":{"type":"integer"}},
             "additionalProperties":false})",
         {R"({"ab":1,"c":2})", "{}"},
         {R"({"Ab":1})", R"({"a1":2})", R"({"ab":"x"})"}});
}

TEST(JsonSchemaKeywords, PropertyNames) {
  check({"pattern",
         R"({"type":"object","propertyNames":{"pattern":"^[a-z_]+$","maxLength":3}})",
         {R"({"ab":1,"c_d":[]})", "{}"},
         {R"({"AB":1})", R"({"abcd":1})"}});
  check({"enum and declared",
         R"({"properties":{"x":{"type":"integer"},"q":{}},
             "propertyNames":{"enum":["x","y"]}})",
         {R"({"x":1,"y":"s"})", R"({"y":null})"},
         {R"({"q":1})", R"({"z":1})", R"({"x":"s"})"}});
}

TEST(JsonSchemaKeywords, CountingKeywords) {
  check({"uniqueItems over an enum",
         R"({"type":"array","uniqueItems":true,"items":{"enum":["a","b",1]},"minItems":1})",
         {R"(["a"])", R"(["b","a",1])", R"([1.0,"a"])"},
         {"[]", R"(["a","a"])", R"([1,"b",1])", R"([1,1.0])"}});
  check({"min and max properties with extras",
         R"({"type":"object","properties":{"a":{"type":"integer"}},"minProperties":2,
             "maxProperties":3})",
         {R"({"a":1,"b":2})", R"({"x":1,"y":2,"z":3})", R"({"a":1,"b":2,"c":3})"},
         {R"({"a":1})", "{}", R"({"a":1,"b":2,"c":3,"d":4})"}});
  check({"maxProperties 1, closed",
         R"({"properties":{"a":{},"b":{}},"additionalProperties":false,
             "maxProperties":1,"type":"object"})",
         {"{}", R"({"a":1})", R"({"b":2})"},
         {R"({"a":1,"b":2})"}});
  check({"contains",
         R"({"type":"array","items":{"type":"integer"},"contains":{"minimum":5}})",
         {"[5]", "[1,2,7]", "[9,1]"},
         {"[]", "[1,2]", R"([1,"x",6])"}});
}

TEST(JsonSchemaKeywords, StringsThroughAutomata) {
  check({"format and pattern together",
         R"({"type":"string","format":"uri","pattern":"^https://"})",
         {R"("https://example.org/a")"},
         {R"("http://example.org")", R"("https://exa mple")"}});
  check({"two patterns of one allOf, and its negation",
         R"({"allOf":[{"type":"string","pattern":"^a"},{"pattern":"b$"},{"pattern":"^.{3}$"}]})",
         {R"("axb")", R"("abb")"},
         {R"("ab")", R"("bab")", R"("axc")", R"("axxb")"}});
  // The $ref and its sibling merge into one schema of two patterns before the negation.
  check({"not of two merged patterns",
         R"({"$defs":{"a":{"pattern":"^a"}},"type":"string","not":{"$ref":"#/$defs/a",
             "pattern":"b$"}})",
         {R"("ba")", R"("a")", R"("b")", R"("")"},
         {R"("ab")", R"("axxb")"}});
  check({"anchor inside a group",
         R"({"type":"string","pattern":"^$|^(a+b)$"})",
         {R"("")", R"("aab")"},
         {R"("b")", R"("aabx")"}});
  check({"length the pattern does not bound",
         R"({"type":"string","pattern":"^[a-z]+-[a-z]+$","minLength":4,"maxLength":5})",
         {R"("ab-c")", R"("a-bcd")"},
         {R"("a-b")", R"("abc-de")"}});
  check({"a pattern that never matches leaves no string",
         R"({"type":["string","null"],"pattern":"x^"})",
         {"null"},
         {R"("x")", R"("")"}});
  check({"duration",
         R"({"type":"string","format":"duration"})",
         {R"("P1Y2M3DT4H5M6S")", R"("PT1S")", R"("P3W")", R"("P1D")"},
         {R"("P")", R"("PT")", R"("P1S")", R"("1D")"}});
  check({"int32",
         R"({"type":"integer","format":"int32","minimum":-5})",
         {"-5", "0", "2147483647"},
         {"-6", "2147483648", "99999999999"}});
  check({"byte (base64)",
         R"({"type":"string","format":"byte"})",
         {R"("")", R"("QUJD")", R"("QUI=")", R"("QQ==")", R"("a+/9")"},
         {R"("QUJ")", R"("QQ=")", R"("Q===")", R"("QU JD")", R"("QUJD=")"}});
}

TEST(JsonSchemaKeywords, LongStringBoundsCountInBlocks) {
  auto gbnf = json_schema_to_gbnf(R"({"type":"string","minLength":10001,"maxLength":12345})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  auto grammar = parse_gbnf(*gbnf);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  auto compiled = CompiledGrammar::compile(*grammar, byte_vocabulary());
  ASSERT_TRUE(compiled.ok());
  for (size_t n : {10000u, 10001u, 11000u, 12345u, 12346u}) {
    const bool expected = n >= 10001 && n <= 12345;
    EXPECT_EQ(accepts(*compiled, "\"" + std::string(n, 'a') + "\""), expected) << n;
  }
}

TEST(JsonSchemaKeywords, UnenforceableFormsStillNameTheKeyword) {
  for (const char* schema :
       {R"({"not":{"multipleOf":2}})",
        R"({"type":"array","uniqueItems":true,"contains":{"type":"string"},"minContains":2})",
        R"({"oneOf":[{"type":"integer"},{"multipleOf":3}]})",
        R"({"type":"object","patternProperties":{"^x":{}},"not":{"additionalProperties":false}})",
        // 2^13 states: refused rather than truncated.
        R"({"type":"string","pattern":"^(a|b)*a(a|b){12}$","maxLength":100})"}) {
    auto gbnf = json_schema_to_gbnf(schema);
    ASSERT_FALSE(gbnf.ok()) << schema;
    EXPECT_EQ(gbnf.error().code, ErrorCode::kUnsupported) << gbnf.error().message;
  }
}

// --- the automaton against std::regex (ECMAScript, search semantics) ---

TEST(CharDfa, PatternsComplementsAndLengthsAgreeWithStdRegex) {
  const std::vector<std::string> patterns = {"^[a-z]+$",
                                             "ab",
                                             "^(foo|bar)+$",
                                             "x$|^y",
                                             "^$|(^(?:\\S+\\s+){0,2}\\S+$)",
                                             "^a{2,3}b?$",
                                             "[0-9]{3}",
                                             "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$"};
  const std::vector<std::string> texts = {
      "",        "a",  "ab",  "abc",   "foo", "foobar", "x",     "yx",   "xy",      "a b", "a b c",
      "a b c d", "aa", "aab", "aaaab", "123", "a1234",  "../a/", "a//b", "/x-1/..", "Ab"};
  for (const std::string& pattern : patterns) {
    auto dfa = CharDfa::from_pattern(pattern);
    ASSERT_TRUE(dfa.ok()) << pattern << ": " << dfa.error().message;
    const CharDfa complement = dfa->complement();
    const CharDfa short_ones = dfa->with_length(1, 3);
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (const std::string& text : texts) {
      const bool expected = std::regex_search(text, reference);
      EXPECT_EQ(dfa->accepts(text), expected) << pattern << " on '" << text << "'";
      EXPECT_EQ(complement.accepts(text), !expected) << pattern << " on '" << text << "'";
      EXPECT_EQ(short_ones.accepts(text), expected && !text.empty() && text.size() <= 3)
          << pattern << " on '" << text << "'";
    }
  }
  const CharDfa both =
      CharDfa::from_pattern("^a").value().intersect(CharDfa::from_pattern("b$").value());
  EXPECT_TRUE(both.accepts("ab"));
  EXPECT_TRUE(both.accepts("axxb"));
  EXPECT_FALSE(both.accepts("ba"));
  EXPECT_TRUE(CharDfa::from_pattern("a^").value().empty());
  const CharDfa names = CharDfa::literals({"id", "idx", "name"});
  EXPECT_TRUE(names.accepts("idx"));
  EXPECT_FALSE(names.accepts("i"));
  EXPECT_TRUE(names.complement().accepts("i"));
  EXPECT_FALSE(names.complement().accepts("name"));
}

// Lookaheads in the two shapes the automaton builds (leading ones, the tempered character),
// against std::regex on every string of up to 5 characters over the patterns' letters.
TEST(CharDfa, LookaheadsAgreeWithStdRegex) {
  const std::vector<std::string> patterns = {
      "^(?!ab)[a-c]+$",       "^(?=[^c]+$)(?!\\s+$)(.|\\n)+$", "^(?!^ca|b\\.).*",
      "^(?!(ab|ba)$)[a-c]*$", "^((?!(a|A)(b|B)).)*$",          "^(?:(?!cc)[abc])+$",
      "^(?=a)(?=.*c$)[a-c]*"};
  const std::string letters = "abcA. ";
  std::vector<std::string> texts = {""};
  for (size_t begin = 0, length = 1; length <= 5; ++length) {
    const size_t end = texts.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : letters) texts.push_back(texts[i] + c);
    }
    begin = end;
  }
  for (const std::string& pattern : patterns) {
    auto dfa = CharDfa::from_pattern(pattern);
    ASSERT_TRUE(dfa.ok()) << pattern << ": " << dfa.error().message;
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (const std::string& text : texts) {
      ASSERT_EQ(dfa->accepts(text), std::regex_search(text, reference))
          << pattern << " on '" << text << "'";
    }
  }
  // Other lookarounds stay refused, as does a tempered character whose avoided text may be
  // empty.
  for (const char* pattern : {"a(?=b)", "^(?!a)b|c", "(?<=a)b", "^((?!a*).)*$"}) {
    auto dfa = CharDfa::from_pattern(pattern);
    ASSERT_FALSE(dfa.ok()) << pattern;
    EXPECT_EQ(dfa.error().code, ErrorCode::kUnsupported) << pattern;
  }
}

// The format policy: asserted by default; as annotations, every `format` constrains nothing,
// including formats the grammar could not enforce, while a property named "format" stays one.
TEST(JsonSchemaFormats, AssertedByDefaultIgnoredAsAnnotations) {
  const char* schema =
      R"({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
          "host": {"type": "string", "format": "hostname"},
          "format": {"const": "x"}}, "required": ["when", "format"],
          "additionalProperties": false})";
  auto asserted = json_schema_to_gbnf(schema);
  ASSERT_FALSE(asserted.ok());  // hostname is not enforced: refused, naming it
  EXPECT_NE(asserted.error().message.find("hostname"), std::string::npos);
  const char* dated = R"({"type": "string", "format": "date-time"})";
  check({"asserted", dated, {R"("2024-02-29T12:00:00Z")"}, {R"("not a date")", R"("x")"}});
  JsonSchemaOptions annotate;
  annotate.assert_formats = false;
  check({"annotated", dated, {R"("2024-02-29T12:00:00Z")", R"("not a date")", R"("x")"}, {"1"}},
        annotate);
  check({"annotated object",
         schema,
         {R"({"when": "yesterday", "host": "-not a host-", "format": "x"})"},
         {R"({"when": "2024-02-29T12:00:00Z", "format": "y"})",
          R"({"when": "2024-02-29T12:00:00Z"})"}},
        annotate);
}

// multipleOf where a grammar says it exactly: decimal steps 10^-d (at most d fraction digits
// before trailing zeros), integer steps between two bounds (the multiples listed), steps every
// integer meets on integers; other steps are still refused, naming the keyword.
TEST(JsonSchemaMultipleOf, DecimalStepsListedMultiplesAndRefusals) {
  check({"cents",
         R"({"type": "number", "multipleOf": 0.01})",
         {"1", "1.5", "1.25", "-3.10", "0.07", "12.500"},
         {"1.255", "0.001", "\"1\""}});
  check({"tenths from 0",
         R"({"type": "number", "multipleOf": 0.1, "minimum": 0})",
         {"0", "2.5", "100.0"},
         {"-1", "0.25", "-0.5"}});
  check({"cents between integer bounds",
         R"({"type": "number", "multipleOf": 0.01, "minimum": -5, "maximum": 10})",
         {"10", "10.00", "9.99", "-5", "-5.0", "-4.5", "0", "-0.01", "3.1", "-0"},
         {"10.01", "-5.01", "3.141", "11", "-6", "10.1", "-5.001"}});
  check({"percent to two places",
         R"({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 99.99})",
         {"99.99", "0", "0.01", "50.5", "99.9", "99.990", "7.00"},
         {"99.991", "100", "100.0", "-0.01", "99.999", "0.001"}});
  check({"cents up to a large bound that is a multiple",
         R"({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 40564632697.52})",
         {"40564632697.52", "40564632697.520", "40564632697.51", "0.5"},
         {"40564632697.53", "40564632698", "40564632697.521"}});
  check({"tenths between fractional bounds",
         R"({"type": "number", "multipleOf": 0.1, "minimum": 1.5, "maximum": 2.25})",
         {"1.5", "1.50", "2", "2.2", "2.20", "1.9"},
         {"1.4", "2.3", "2.25", "1.45", "1", "3"}});
  check({"hundredths strictly between 0 and 1",
         R"({"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0,
             "exclusiveMaximum": 1})",
         {"0.01", "0.99", "0.5", "0.10"},
         {"0", "0.00", "1", "1.0", "-0.5", "0.005"}});
  check({"negative hundredths",
         R"({"type": "number", "multipleOf": 0.01, "minimum": -2.5, "maximum": -1.25})",
         {"-2.5", "-1.25", "-2", "-1.3", "-2.49"},
         {"-2.51", "-1.24", "-1", "0", "1.5", "-1.255"}});
  check({"tenths from 2 up",
         R"({"type": "number", "multipleOf": 0.1, "minimum": 2})",
         {"2", "2.5", "100.1", "2.0"},
         {"1.9", "2.05", "-3", "0"}});
  check({"tenths below -1",
         R"({"type": "number", "multipleOf": 0.1, "maximum": -1})",
         {"-1", "-1.0", "-1.1", "-250.3"},
         {"-0.9", "0", "-1.05", "1"}});
  check({"a number of whole units",
         R"({"type": "number", "multipleOf": 1, "minimum": 0, "maximum": 99999999})",
         {"6000", "6000.0", "0", "99999999.00"},
         {"6000.5", "-1", "100000000", "1.01"}});
  check({"multiples of 16",
         R"({"type": "integer", "minimum": -40, "maximum": 40,
          "multipleOf": 16})",
         {"-32", "-16", "0", "16", "32"},
         {"8", "48", "-48", "33"}});
  check({"integers are multiples of 0.1",
         R"({"type": "integer", "multipleOf": 0.1})",
         {"7", "-12"},
         {"7.5"}});
  auto refused = json_schema_to_gbnf(R"({"type": "number", "multipleOf": 0.3})");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("multipleOf"), std::string::npos);
}

// A maximum past int64, as schemas of 64-bit unsigned ids write it, is exact: 2^63 - 1 and the
// maximum differ by less than a double can tell.
TEST(JsonSchemaIntegers, MaximumPastInt64IsExact) {
  check({"maximum past int64",
         R"({"type": "integer", "minimum": 0,
          "maximum": 9223372036854776000})",
         {"0", "9223372036854775807", "9223372036854775808", "9223372036854776000"},
         {"9223372036854776001", "12345678901234567890", "-1"}});
}

}  // namespace
}  // namespace strata::grammar
