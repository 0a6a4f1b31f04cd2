// Tool calls: format detection on real chat templates, parsing each family's replies, and the
// constraint grammar accepting exactly well-formed calls with valid arguments.
#include "strata/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"

namespace strata {
namespace {

std::string read_template(const std::string& name) {
  std::ifstream in("../shared/testdata/chat-templates/templates/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ToolCallFormatTest, DetectsTheFamilyOfRealTemplates) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
      {"Qwen3.5-4B.jinja", ToolCallFormat::kGeneric},  // XML arguments: not implemented
      {"GLM-4.6.jinja", ToolCallFormat::kGeneric},
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::kGeneric},
  };
  for (const auto& [file, format] : cases) {
    const std::string source = read_template(file);
    ASSERT_FALSE(source.empty()) << file;
    EXPECT_EQ(detect_tool_call_format(source), format) << file;
  }
  EXPECT_TRUE(template_renders_tools(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")));
  EXPECT_FALSE(template_renders_tools(read_template("google-gemma-2-2b-it.jinja")));
}

TEST(ToolCallParseTest, HermesCallsAndSurroundingText) {
  const ParsedReply r = parse_tool_calls(
      ToolCallFormat::kHermes,
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
      "</tool_call>");
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(r.tool_calls[0].arguments), nlohmann::json({{"city", "Paris"}}));
  EXPECT_EQ(r.tool_calls[1].name, "get_time");
  EXPECT_EQ(r.tool_calls[1].arguments, "{}");
}

TEST(ToolCallParseTest, EachFamilysFormat) {
  ParsedReply r = parse_tool_calls(ToolCallFormat::kLlama3,
                                   R"(<|python_tag|>{"name": "f", "parameters": {"x": 1}})");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"x":1})");
  r = parse_tool_calls(ToolCallFormat::kMistral,
                       R"([TOOL_CALLS][{"name": "f", "arguments": {"x": 1}, "id": "abcdefghi"}])");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "abcdefghi");
  r = parse_tool_calls(ToolCallFormat::kMistral, R"([{"name": "f", "arguments": {}}])");
  EXPECT_EQ(r.tool_calls.size(), 1u);  // the control token is not in the text
  r = parse_tool_calls(ToolCallFormat::kGeneric,
                       R"({"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b"}]})");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[1].name, "b");
}

TEST(ToolCallParseTest, NumbersPastDoubleRangeAndExactDigitsSurvive) {
  // Valid JSON that nlohmann alone refuses (overflow), and digits a round trip would change.
  const ParsedReply r = parse_tool_calls(
      ToolCallFormat::kGeneric,
      R"({"tool_calls": [{"name": "f", "arguments": {"big": 2E822, "x": 1.50, "n": -0, )"
      R"("s": "1e999 \" 7"}}]})");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"big":2E822,"x":1.50,"n":-0,"s":"1e999 \" 7"})");
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kLlama3, R"({"name": 5, "parameters": {}})")
                  .tool_calls.empty());
}

// A model may generate arguments nested without bound; past the JSON depth limit the reply is
// text, not a call whose tree would be walked recursively.
TEST(ToolCallParseTest, ArgumentsNestedPastTheLimitStayContent) {
  const size_t depth = 100'000;
  const std::string reply =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": " + std::string(depth, '[') +
      std::string(depth, ']') + "}}\n</tool_call>";
  const ParsedReply r = parse_tool_calls(ToolCallFormat::kHermes, reply);
  EXPECT_TRUE(r.tool_calls.empty());
  // Within the limit the same shape is a call.
  const std::string shallow =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": " + std::string(100, '[') +
      std::string(100, ']') + "}}\n</tool_call>";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHermes, shallow).tool_calls.size(), 1u);
}

TEST(ToolCallParseTest, TextThatIsNotACallStaysContent) {
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3,
                           ToolCallFormat::kMistral, ToolCallFormat::kGeneric}) {
    for (const char* text : {"Hello there.", "{\"name\": 3}", "[1, 2]", "<tool_call>{broken",
                             "{\"tool_calls\": \"no\"}"}) {
      const ParsedReply r = parse_tool_calls(f, text);
      EXPECT_TRUE(r.tool_calls.empty()) << tool_call_format_name(f) << ": " << text;
      EXPECT_EQ(r.content, text) << tool_call_format_name(f);
    }
  }
}

constexpr const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"},
                                      "unit": {"enum": ["c", "f"]}},
    "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": false}}}
])";

// Whether the constraint's grammar accepts `text` as a complete reply.
bool accepts(const OutputConstraint& c, const std::string& text) {
  Result<std::shared_ptr<const grammar::Grammar>> g = grammar::parse_gbnf(c.text, c.root);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message) << "\n" << c.text;
  if (!g.ok()) return false;
  std::vector<std::string> bytes(256);
  for (int b = 0; b < 256; ++b) bytes[b] = std::string(1, static_cast<char>(b));
  auto compiled = grammar::CompiledGrammar::compile(
      *g, grammar::TokenVocabulary::from_pieces(std::move(bytes), {}));
  EXPECT_TRUE(compiled.ok());
  if (!compiled.ok()) return false;
  grammar::GrammarMatcher m(*compiled);
  return m.accept_string(text) && m.can_end();
}

TEST(ToolCallConstraintTest, RequiredAcceptsOnlyValidCallsInTheFormat) {
  Result<OutputConstraint> c =
      tool_call_constraint(ToolCallFormat::kHermes, kTools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->triggers.empty());
  EXPECT_TRUE(accepts(*c,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts(*c,
                      "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -2}}"
                      "</tool_call>\n<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 3, "
                      "\"b\": 4}}</tool_call>"));
  EXPECT_FALSE(accepts(*c, "Sure!"));
  EXPECT_FALSE(accepts(*c, "<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(
      accepts(*c, "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>"));
  EXPECT_FALSE(accepts(*c,
                       "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\", \"unit\": \"k\"}}</tool_call>"));

  Result<OutputConstraint> generic =
      tool_call_constraint(ToolCallFormat::kGeneric, kTools, {ToolChoiceMode::kFunction, "add"});
  ASSERT_TRUE(generic.ok()) << generic.error().message;
  EXPECT_TRUE(
      accepts(*generic, R"({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]})"));
  EXPECT_FALSE(accepts(*generic,
                       R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "x"}}]})"));
  // A named function means exactly one call.
  EXPECT_FALSE(accepts(*generic,
                       R"({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, )"
                       R"({"name": "add", "arguments": {"a": 1, "b": 2}}]})"));

  Result<OutputConstraint> llama =
      tool_call_constraint(ToolCallFormat::kLlama3, kTools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(llama.ok());
  EXPECT_TRUE(accepts(*llama, R"({"name": "add", "parameters": {"a": 1, "b": 2}})"));
  Result<OutputConstraint> mistral =
      tool_call_constraint(ToolCallFormat::kMistral, kTools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(mistral.ok());
  EXPECT_TRUE(accepts(*mistral, R"([{"name": "add", "arguments": {"a": 1, "b": 2}}])"));
}

TEST(ToolCallConstraintTest, AutoIsLazyAndNoneIsFree) {
  Result<OutputConstraint> c =
      tool_call_constraint(ToolCallFormat::kHermes, kTools, {ToolChoiceMode::kAuto, ""});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->triggers, std::vector<std::string>{"<tool_call>"});
  Result<OutputConstraint> none =
      tool_call_constraint(ToolCallFormat::kHermes, kTools, {ToolChoiceMode::kNone, ""});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->kind, ConstraintKind::kNone);
}

TEST(ToolCallConstraintTest, BadToolsAreErrorsNamingTheProblem) {
  const ToolChoice required{ToolChoiceMode::kRequired, ""};
  Result<OutputConstraint> c = tool_call_constraint(ToolCallFormat::kHermes, "{}", required);
  ASSERT_FALSE(c.ok());
  c = tool_call_constraint(ToolCallFormat::kHermes, R"([{"type": "function"}])", required);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("tools[0]"), std::string::npos);
  c = tool_call_constraint(ToolCallFormat::kHermes, kTools, {ToolChoiceMode::kFunction, "zz"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("zz"), std::string::npos);
  c = tool_call_constraint(
      ToolCallFormat::kHermes,
      R"([{"type": "function", "function": {"name": "f", "parameters": {"not": {}}}}])", required);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("tool 'f'"), std::string::npos);
}

}  // namespace
}  // namespace strata
