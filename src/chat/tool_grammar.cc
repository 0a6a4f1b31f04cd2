// The output constraint for tool calls: one GBNF grammar in which every tool's call is its
// name as a literal followed by its arguments, compiled from the tool's `parameters` JSON Schema.
// Each tool's schema grammar is renamed into its own namespace (t0-..., t1-...) and joined
// under the format's wrapper.
#include <nlohmann/json.hpp>

#include "grammar/compile_meter.h"
#include "grammar/json_schema.h"
#include "strata/json_depth.h"
#include "strata/tool_calls.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

// At most this many calls in one reply: a bound, so a constrained model cannot call forever.
constexpr int kMaxParallelCalls = 4;

bool is_rule_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Copies a quoted literal or character class starting at s[i] (its opening delimiter) up to and
// including the closing one, honouring backslash escapes; returns the index after it.
size_t copy_delimited(std::string_view s, size_t i, char close, std::string& out) {
  out += s[i++];
  while (i < s.size() && s[i] != close) {
    if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
    out += s[i++];
  }
  if (i < s.size()) out += s[i++];
  return i;
}

// GBNF with every rule name (definitions and references) prefixed; literals, character classes,
// repetition counts and comments are copied as they are.
std::string prefix_rule_names(std::string_view gbnf, const std::string& prefix) {
  std::string out;
  out.reserve(gbnf.size() * 5 / 4);
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '"') {
      i = copy_delimited(gbnf, i, '"', out);
    } else if (c == '[') {
      i = copy_delimited(gbnf, i, ']', out);
    } else if (c == '{') {
      i = copy_delimited(gbnf, i, '}', out);
    } else if (c == '#') {
      while (i < gbnf.size() && gbnf[i] != '\n') out += gbnf[i++];
    } else if (is_rule_char(c)) {
      out += prefix;
      while (i < gbnf.size() && is_rule_char(gbnf[i])) out += gbnf[i++];
    } else {
      out += gbnf[i++];
    }
  }
  return out;
}

// A GBNF literal matching `text` exactly.
std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct Tool {
  std::string name;
  std::string parameters;  // JSON Schema text
};

Result<std::vector<Tool>> read_tools(std::string_view tools_json) {
  // Each tool's parameters are dumped below, which recurses once per level.
  if (const size_t depth = json_nesting_depth(tools_json); depth > kMaxJsonDepth) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'tools' nests arrays and objects " + std::to_string(depth) +
                          " levels deep; at most " + std::to_string(kMaxJsonDepth) +
                          " are accepted");
  }
  const Json tools = Json::parse(tools_json.begin(), tools_json.end(), nullptr, false);
  if (!tools.is_array() || tools.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "'tools' must be a non-empty array");
  }
  std::vector<Tool> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "'" + where + "' must be {\"type\": \"function\", \"function\": {...}}");
    }
    const Json& fn = t["function"];
    if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "'" + where + ".function.name' must be a non-empty string");
    }
    Tool tool{fn["name"].get<std::string>(), R"({"type": "object"})"};
    if (fn.contains("parameters")) {
      if (!fn["parameters"].is_object()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "'" + where + ".function.parameters' must be a JSON Schema object");
      }
      tool.parameters = fn["parameters"].dump();
    }
    out.push_back(std::move(tool));
  }
  return out;
}

}  // namespace

Result<OutputConstraint> tool_call_constraint(ToolCallFormat format, std::string_view tools_json,
                                              const ToolChoice& choice, bool parallel,
                                              const CompileBudget& budget) {
  OutputConstraint constraint;
  if (choice.mode == ToolChoiceMode::kNone) return constraint;
  STRATA_ASSIGN_OR_RETURN(std::vector<Tool> tools, read_tools(tools_json));
  if (choice.mode == ToolChoiceMode::kFunction) {
    std::erase_if(tools, [&](const Tool& t) { return t.name != choice.function; });
    if (tools.empty()) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "'tool_choice' names the function '" + choice.function + "', which is not among 'tools'");
    }
    parallel = false;
  }

  // call ::= call-0 | call-1 | ...; call-i is {"name": "<name>", "<args key>": <t{i}-root>}.
  const std::string args_key = format == ToolCallFormat::kLlama3 ? "parameters" : "arguments";
  std::string grammar, calls;
  // One meter for all the tools: the budget and the work cap bound the request, not each tool.
  grammar::CompileMeter meter(budget);
  for (size_t i = 0; i < tools.size(); ++i) {
    Result<std::string> schema = grammar::json_schema_to_gbnf(tools[i].parameters, {}, &meter);
    if (!schema.ok()) {
      return make_error(
          schema.error().code,
          "tool '" + tools[i].name + "': its parameters schema: " + schema.error().message);
    }
    const std::string prefix = "t" + std::to_string(i) + "-";
    grammar += prefix_rule_names(*schema, prefix) + "\n";
    const std::string name_json = Json(tools[i].name).dump();
    grammar += "call-" + std::to_string(i) + " ::= \"{\" tc-ws " + gbnf_literal("\"name\"") +
               " tc-ws \":\" tc-ws " + gbnf_literal(name_json) + " tc-ws \",\" tc-ws " +
               gbnf_literal("\"" + args_key + "\"") + " tc-ws \":\" tc-ws " + prefix +
               "root tc-ws \"}\"\n";
    calls += (i == 0 ? "" : " | ") + std::string("call-") + std::to_string(i);
  }
  grammar += "call ::= " + calls + "\n";
  grammar += "tc-ws ::= [ \\t\\n]{0,4}\n";
  // More calls after the first: `sep call`, up to the bound, when parallel calls are allowed.
  auto more = [&](const std::string& separated_call) {
    return parallel ? " (" + separated_call + "){0," + std::to_string(kMaxParallelCalls - 1) + "}"
                    : std::string();
  };
  switch (format) {
    case ToolCallFormat::kHermes:
      grammar += "hermes-call ::= \"<tool_call>\" [\\n]? call [\\n]? \"</tool_call>\"\n";
      grammar += "root ::= hermes-call" + more("[\\n]{0,2} hermes-call") + "\n";
      constraint.triggers = {"<tool_call>"};
      break;
    case ToolCallFormat::kLlama3:
      grammar += "root ::= call\n";  // Llama 3.x calls one tool per reply
      constraint.triggers = {"{\"name\""};
      break;
    case ToolCallFormat::kMistral:
      // [TOOL_CALLS] is a control token no grammar can write; the array follows it or stands
      // alone, and the parser accepts both.
      grammar += "root ::= \"[\" tc-ws call" + more("tc-ws \",\" tc-ws call") + " tc-ws \"]\"\n";
      constraint.triggers = {"[{"};
      break;
    case ToolCallFormat::kGeneric:
      grammar += "root ::= \"{\" tc-ws " + gbnf_literal("\"tool_calls\"") +
                 " tc-ws \":\" tc-ws \"[\" tc-ws call" + more("tc-ws \",\" tc-ws call") +
                 " tc-ws \"]\" tc-ws \"}\"\n";
      constraint.triggers = {"{\"tool_calls\""};
      break;
  }
  if (choice.mode != ToolChoiceMode::kAuto) constraint.triggers.clear();
  constraint.kind = ConstraintKind::kGrammar;
  constraint.text = std::move(grammar);
  constraint.root = "root";
  return constraint;
}

}  // namespace strata
