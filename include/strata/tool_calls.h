// OpenAI-style tool calls: which format a model's chat template teaches it, the output
// constraint that makes its calls always parse, and the parser that turns a reply into calls.
//
// The formats of the major template families:
//   kHermes   (Hermes 2 Pro, Qwen 2/2.5/3):  <tool_call>\n{"name": ..., "arguments":
//   {...}}\n</tool_call> kLlama3   (Llama 3.1/3.2/3.3 JSON calls): {"name": ..., "parameters":
//   {...}}
//             (optionally after <|python_tag|>)
//   kMistral  (Mistral Nemo, Small, Large): [TOOL_CALLS][{"name": ..., "arguments": {...}, "id":
//   ...}] kGeneric  (templates that know no tools): {"tool_calls": [{"name": ..., "arguments":
//   {...}}]}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/compile_budget.h"
#include "strata/output_constraint.h"
#include "strata/result.h"

namespace strata {

enum class ToolCallFormat { kGeneric, kHermes, kLlama3, kMistral };
const char* tool_call_format_name(ToolCallFormat format);

// The format a chat template's source (tokenizer.chat_template) uses for tool calls.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

// True when the template renders the `tools` variable itself; otherwise the caller puts
// tool_system_prompt() in front of the conversation so the model learns of the tools.
bool template_renders_tools(std::string_view template_source);

// OpenAI's tool_choice.
enum class ToolChoiceMode { kNone, kAuto, kRequired, kFunction };
struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string function;  // with kFunction
};

// A system message that lists the tools (OpenAI `tools` JSON array) and shows the call format.
Result<std::string> tool_system_prompt(ToolCallFormat format, std::string_view tools_json);

// The output constraint for a request with tools:
//   kNone: none (kind kNone);
//   kRequired / kFunction: the whole reply is one or more calls (one with kFunction or when
//     parallel is false) whose names exist and whose arguments match the tool's `parameters`
//     JSON Schema;
//   kAuto: free text, until the reply starts a call (the format's trigger); from there on the
//     call is constrained as above.
// Fails (kInvalidArgument / kUnsupported, naming the tool) when the tools JSON is malformed or
// nests deeper than 512 levels, a parameter schema cannot be compiled, or kFunction names no
// tool; with kDeadlineExceeded / kCancelled when converting the parameter schemas outruns
// `budget`, kOutOfRange past the fixed work cap (strata/compile_budget.h).
Result<OutputConstraint> tool_call_constraint(ToolCallFormat format, std::string_view tools_json,
                                              const ToolChoice& choice, bool parallel = true,
                                              const CompileBudget& budget = {});

struct ToolCall {
  std::string id;  // from the reply when the format carries one (Mistral), else empty
  std::string name;
  std::string arguments;  // a JSON object as text
};

struct ParsedReply {
  std::string content;  // text outside the calls, trimmed
  std::vector<ToolCall> tool_calls;
};

// Splits a finished reply into text and calls. Text that only looks like a call (malformed
// JSON, no name) stays content.
ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view reply);

// The same split while the reply is generated, as OpenAI streams it: push() each piece of text
// and send the delta it returns; finish() at the end sends what was held back. Content goes
// out as soon as it can no longer be the start of a call (trimmed, like parse_tool_calls's);
// a call goes out once its name is complete (first = true, with the name), then its arguments'
// JSON text as it grows. A reply that looks like a call but never parses may already have sent
// call deltas; with the tool-call constraint on, calls always parse.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format);

  struct CallDelta {
    size_t index = 0;    // the call's position in the reply
    bool first = false;  // the call's first delta: carries the name
    std::string name;
    std::string arguments;  // text to append to the call's arguments
  };
  struct Delta {
    std::string content;  // text to append to the message content
    std::vector<CallDelta> calls;
    bool empty() const { return content.empty() && calls.empty(); }
  };

  Delta push(std::string_view text);
  Delta finish();

 private:
  struct Scan;
  Scan scan(bool final) const;
  Delta diff(const Scan& scan);

  ToolCallFormat format_;
  std::string text_;                // the reply so far
  std::string content_sent_;        // content sent so far
  std::vector<size_t> calls_sent_;  // per call begun: arguments bytes sent
};

}  // namespace strata
