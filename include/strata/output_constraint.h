// The output constraint of a request, apart from the engine so that the tool-call formats
// (strata/tool_calls.h, implemented below the engine) can build one.
#pragma once

#include <string>
#include <vector>

namespace strata {

// What the output must match. The engine compiles it when the request is submitted (a malformed
// grammar or schema fails submit() with a message naming the problem) and masks every step so
// only tokens that keep the output inside the language can be drawn; end-of-generation tokens are
// allowed only where the language may end.
enum class ConstraintKind {
  kNone,
  kGrammar,     // `text` is a GBNF grammar (llama.cpp's format); `root` names the start rule
  kJsonSchema,  // `text` is a JSON Schema (drafts 4, 7, 2020-12)
  kJsonObject,  // any JSON object (OpenAI's response_format json_object)
};

// What a JSON Schema `format` means. kAssert (the default, as ajv with ajv-formats): a string
// with format date-time, email, uri, uuid, ipv4/ipv6, hostname, duration, byte, ... must be one.
// kAnnotate (the 2020-12 specification's default, and what JSONSchemaBench's validators do):
// formats are annotations and constrain nothing.
enum class FormatPolicy { kAssert, kAnnotate };

struct OutputConstraint {
  ConstraintKind kind = ConstraintKind::kNone;
  std::string text;
  std::string root = "root";
  // JSON Schema keywords the compiler cannot enforce fail the request unless this is set, in
  // which case they are dropped (the output is then only as strict as the rest of the schema).
  bool best_effort = false;
  FormatPolicy formats = FormatPolicy::kAssert;
  // Lazy constraint (tool calls with tool_choice "auto"): the output is free until one of these
  // strings appears in it; from the trigger's first byte on it must match the grammar, which
  // therefore starts with the trigger. Empty: the grammar holds from the first token.
  std::vector<std::string> triggers;
};

}  // namespace strata
