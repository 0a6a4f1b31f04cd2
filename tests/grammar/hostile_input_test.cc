// Hostile schemas and grammars: nesting that would overflow a thread's stack in a recursive
// walk, and sizes that made compilation quadratic, replayed from an attack on the server. Every
// case must end in an error (or a grammar), never a crash, and the compile budget must stop
// work that runs past its deadline or is cancelled.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/compile_meter.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/regex_to_gbnf_automaton.h"
#include "strata/json_depth.h"
#include "test_grammars.h"

namespace strata::grammar {
namespace {

using Clock = std::chrono::steady_clock;

// Ten times kMaxJsonDepth and the depths of the attack (20k in a schema, 30k in a tool).
constexpr size_t kDepths[] = {10 * kMaxJsonDepth, 20000, 100000};

std::string nested_arrays(size_t depth) {
  return "{\"x\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

// Schemas inside schemas: {"type":"object","properties":{"a":{...}}}, `levels` times.
std::string nested_schemas(size_t levels) {
  std::string text;
  for (size_t i = 0; i < levels; ++i) text += R"({"type":"object","properties":{"a":)";
  text += "{}";
  for (size_t i = 0; i < levels; ++i) text += "}}";
  return text;
}

// An object of `n` required string properties.
std::string flat_object(size_t n) {
  std::string properties, required;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = "\"p" + std::to_string(i) + "\"";
    properties += (i ? "," : "") + name + R"(:{"type":"string"})";
    required += (i ? "," : "") + name;
  }
  return R"({"type":"object","properties":{)" + properties + "},\"required\":[" + required + "]}";
}

void expect_too_deep(const Result<std::string>& result, size_t depth) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(result.error().message.find(std::to_string(depth)), std::string::npos)
      << result.error().message;
  EXPECT_NE(result.error().message.find(std::to_string(kMaxJsonDepth)), std::string::npos)
      << result.error().message;
}

TEST(HostileSchemaTest, DeepTextIsRefusedBeforeParsing) {
  for (size_t depth : kDepths) {
    SCOPED_TRACE(depth);
    expect_too_deep(json_schema_to_gbnf(nested_arrays(depth)), depth + 1);
    JsonSchemaOptions best_effort;
    best_effort.best_effort = true;
    expect_too_deep(json_schema_to_gbnf(nested_arrays(depth), best_effort), depth + 1);
    const std::string schemas = nested_schemas(depth / 2);
    expect_too_deep(json_schema_to_gbnf(schemas), json_nesting_depth(schemas));
  }
}

TEST(HostileSchemaTest, DeepParsedDocumentIsRefusedWithoutRecursion) {
  for (size_t depth : kDepths) {
    SCOPED_TRACE(depth);
    // nlohmann's parser and destructor do not recurse; everything in between must not either.
    for (const std::string& text : {nested_arrays(depth), nested_schemas(depth / 2)}) {
      const auto doc = nlohmann::ordered_json::parse(text);
      auto result = parsed_json_schema_to_gbnf(doc);
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
      EXPECT_NE(result.error().message.find(std::to_string(kMaxJsonDepth)), std::string::npos);
      // The converter on its own (it indexes $ids as it is built) refuses it too.
      auto direct = json_schema_detail::Converter(doc, {}).run();
      ASSERT_FALSE(direct.ok());
      EXPECT_EQ(direct.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

TEST(HostileSchemaTest, DepthWithinTheLimitStillCompiles) {
  // A constant 500 levels deep is a legal value, written as a literal.
  const std::string deep_const =
      R"({"const":)" + std::string(500, '[') + std::string(500, ']') + "}";
  EXPECT_TRUE(json_schema_to_gbnf(deep_const).ok());
  EXPECT_TRUE(parsed_json_schema_to_gbnf(nlohmann::ordered_json::parse(deep_const)).ok());
  // Schemas inside schemas past the converter's own nesting bound: an error, not a crash.
  auto deep = json_schema_to_gbnf(nested_schemas(250));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, ErrorCode::kUnsupported);
}

TEST(HostileSchemaTest, DeepInstanceIsRefusedByTheReorderer) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  auto ordered = order_instance_like_schema(R"({"type":"array"})", deep);
  ASSERT_FALSE(ordered.ok());
  EXPECT_EQ(ordered.error().code, ErrorCode::kInvalidArgument);
  auto schema = order_instance_like_schema(nested_arrays(20000), "[]");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(schema.error().code, ErrorCode::kInvalidArgument);
}

TEST(HostileSchemaTest, LookaheadsNestedOrRepeatedAreRefused) {
  std::string repeated = "^";
  for (int i = 0; i < 20000; ++i) repeated += "(?=a)";
  for (const std::string& pattern : {"^" + std::string(30000, '(') + std::string(30000, ')'),
                                     "^" +
                                         [] {
                                           std::string nested;
                                           for (int i = 0; i < 30000; ++i) nested += "(?=";
                                           return nested + "a" + std::string(30000, ')');
                                         }(),
                                     repeated, "^((?!" + std::string(30000, '(') + ").)*$",
                                     std::string("^(?![)a"), std::string("^((?!a).")}) {
    auto dfa = CharDfa::from_pattern(pattern);
    ASSERT_FALSE(dfa.ok()) << pattern.substr(0, 40);
  }
}

TEST(HostileSchemaTest, DeeplyNestedPatternGroupsAreRefused) {
  const std::string pattern = std::string(100000, '(') + "a" + std::string(100000, ')');
  auto gbnf = regex_to_gbnf(pattern);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_EQ(gbnf.error().code, ErrorCode::kUnsupported);
  auto dfa = CharDfa::from_pattern(pattern);
  ASSERT_FALSE(dfa.ok());
  EXPECT_EQ(dfa.error().code, ErrorCode::kUnsupported);
  EXPECT_FALSE(json_schema_detail::regex_search(pattern, "a").has_value());
  // The same pattern in each place a schema holds one.
  const nlohmann::ordered_json as_json = pattern;
  for (const std::string& schema :
       {R"({"type":"string","pattern":)" + as_json.dump() + "}",
        R"({"type":"string","not":{"pattern":)" + as_json.dump() + "}}",
        R"({"type":"object","properties":{"a":{}},"patternProperties":{)" + as_json.dump() +
            ":{}}}",
        R"({"type":"object","propertyNames":{"pattern":)" + as_json.dump() + "}}"}) {
    SCOPED_TRACE(schema.substr(0, 60));
    auto result = json_schema_to_gbnf(schema);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ErrorCode::kUnsupported);
  }
  // A group nesting real patterns use is still fine.
  EXPECT_TRUE(regex_to_gbnf("^((a|b)(c(d)?))+$").ok());
}

TEST(HostileSchemaTest, LongNameAgainstAPatternDoesNotRecurse) {
  // libstdc++'s std::regex matches one stack frame per character: a 100,000-character name
  // against a pattern would overflow the stack. The name is left to "cannot be enforced".
  const std::string name(100000, 'a');
  EXPECT_FALSE(json_schema_detail::regex_search("^(a|b)*$", name).has_value());
  EXPECT_EQ(json_schema_detail::regex_search("^(a|b)*$", "abba"), true);
  const std::string schema = R"({"type":"object","properties":{")" + name +
                             R"(":{"type":"string"}},"patternProperties":{"^(a|b)*$":{}}})";
  auto result = json_schema_to_gbnf(schema);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnsupported);
}

// A pattern under a long maxLength needs a product automaton past the state cap: it is refused
// as soon as the construction passes the cap (minimizing the cut-off product took minutes).
TEST(HostileSchemaTest, LengthBoundPastTheAutomatonCapIsRefusedPromptly) {
  auto gbnf = json_schema_to_gbnf(
      R"({"type": "string", "pattern": "^data:image/(png|svg\\+xml);base64,[0-9a-zA-Z+/=]*$",
          "maxLength": 30000})");
  ASSERT_FALSE(gbnf.ok());
  EXPECT_EQ(gbnf.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(gbnf.error().message.find("states"), std::string::npos) << gbnf.error().message;
}

TEST(HostileGbnfTest, DeepParenthesesAreAnError) {
  const std::string text =
      "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')') + "\n";
  auto grammar = parse_gbnf(text);
  ASSERT_FALSE(grammar.ok());
  EXPECT_EQ(grammar.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(grammar.error().message.find("nested too deeply"), std::string::npos);
}

// A chain of 100,000 rules written callers first: the fixpoints over the rules (productive,
// nullable, shortest sentences, FIRST and FOLLOW) ran one pass per rule of such a chain.
TEST(HostileGbnfTest, LongRuleChainBuilds) {
  constexpr int kRules = 100000;
  std::string text = "root ::= r0\n";
  for (int i = 0; i < kRules; ++i) {
    text += "r" + std::to_string(i) + " ::= \"a\" " +
            (i + 1 < kRules ? "r" + std::to_string(i + 1) : std::string("\"b\"")) + " | \"c\"\n";
  }
  CompileMeter meter;
  auto grammar = parse_gbnf(text, "root", &meter);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  // The shortest sentence is "c"; every rule of the chain settled.
  EXPECT_EQ((*grammar)->rule_min_length((*grammar)->root()), 1u);
  auto compiled = CompiledGrammar::compile(*grammar, testing::byte_vocabulary(), &meter);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  EXPECT_TRUE(testing::accepts(*compiled, std::string(1000, 'a') + "c"));
}

// The whole pipeline (schema -> GBNF -> grammar -> token sets) on a flat object, counted.
Result<uint64_t> work_of_flat_object(size_t n, const CompileBudget& budget = {}) {
  CompileMeter meter(budget);
  STRATA_ASSIGN_OR_RETURN(std::string gbnf, json_schema_to_gbnf(flat_object(n), {}, &meter));
  STRATA_ASSIGN_OR_RETURN(auto grammar, parse_gbnf(gbnf, "root", &meter));
  STRATA_ASSIGN_OR_RETURN(auto compiled,
                          CompiledGrammar::compile(grammar, testing::byte_vocabulary(), &meter));
  if (!compiled) return make_error(ErrorCode::kInternal, "no grammar");
  return meter.used();
}

TEST(CompileBudgetTest, WorkGrowsLinearlyWithProperties) {
  auto small = work_of_flat_object(2000);
  auto large = work_of_flat_object(8000);
  ASSERT_TRUE(small.ok()) << small.error().message;
  ASSERT_TRUE(large.ok()) << large.error().message;
  const double ratio = static_cast<double>(*large) / static_cast<double>(*small);
  EXPECT_GT(ratio, 3.0);  // the units do count the work (a fixed part makes it under 4)
  EXPECT_LT(ratio, 5.0);  // and it is linear (quadratic would be 16)
}

TEST(CompileBudgetTest, TwentyThousandRequiredPropertiesCompile) {
  auto work = work_of_flat_object(20000);
  ASSERT_TRUE(work.ok()) << work.error().message;
  EXPECT_LT(*work, kMaxCompileWork / 10);
}

TEST(CompileBudgetTest, DeadlineStopsALargeSchema) {
  const std::string schema = flat_object(100000);
  CompileBudget budget;
  budget.deadline = Clock::now() + std::chrono::milliseconds(50);
  CompileMeter meter(budget);
  auto gbnf = json_schema_to_gbnf(schema, {}, &meter);
  Result<std::shared_ptr<const Grammar>> grammar =
      gbnf.ok() ? parse_gbnf(*gbnf, "root", &meter)
                : Result<std::shared_ptr<const Grammar>>(gbnf.error());
  Result<std::shared_ptr<const CompiledGrammar>> compiled =
      grammar.ok() ? CompiledGrammar::compile(*grammar, testing::byte_vocabulary(), &meter)
                   : Result<std::shared_ptr<const CompiledGrammar>>(grammar.error());
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_NE(compiled.error().message.find("--timeout"), std::string::npos);
}

TEST(CompileBudgetTest, BestEffortDoesNotSwallowTheDeadline) {
  JsonSchemaOptions best_effort;
  best_effort.best_effort = true;
  CompileBudget budget;
  budget.deadline = Clock::now() - std::chrono::seconds(1);
  CompileMeter meter(budget);
  auto gbnf = json_schema_to_gbnf(
      R"({"oneOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object"}]})",
      best_effort, &meter);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_EQ(gbnf.error().code, ErrorCode::kDeadlineExceeded);
}

TEST(CompileBudgetTest, CancelledFlagStopsEveryStage) {
  std::atomic<bool> cancelled{true};
  CompileBudget budget;
  budget.cancelled = &cancelled;
  {
    CompileMeter meter(budget);
    auto gbnf = json_schema_to_gbnf(flat_object(10), {}, &meter);
    ASSERT_FALSE(gbnf.ok());
    EXPECT_EQ(gbnf.error().code, ErrorCode::kCancelled);
  }
  {
    CompileMeter meter(budget);
    auto grammar = parse_gbnf(testing::kJsonGrammar, "root", &meter);
    ASSERT_FALSE(grammar.ok());
    EXPECT_EQ(grammar.error().code, ErrorCode::kCancelled);
  }
  {
    auto grammar = parse_gbnf(testing::kJsonGrammar);
    ASSERT_TRUE(grammar.ok());
    CompileMeter meter(budget);
    auto compiled = CompiledGrammar::compile(*grammar, testing::byte_vocabulary(), &meter);
    ASSERT_FALSE(compiled.ok());
    EXPECT_EQ(compiled.error().code, ErrorCode::kCancelled);
  }
  // Not set: the same work goes through.
  cancelled = false;
  CompileMeter meter(budget);
  EXPECT_TRUE(json_schema_to_gbnf(flat_object(10), {}, &meter).ok());
}

TEST(CompileBudgetTest, WorkCapIsOutOfRange) {
  CompileMeter meter({}, /*max_work=*/10000);
  auto gbnf = json_schema_to_gbnf(flat_object(5000), {}, &meter);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_EQ(gbnf.error().code, ErrorCode::kOutOfRange);
  EXPECT_NE(gbnf.error().message.find("too large"), std::string::npos);
}

}  // namespace
}  // namespace strata::grammar
