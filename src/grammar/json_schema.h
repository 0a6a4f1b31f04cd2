// JSON Schema (drafts 4, 6, 7, 2019-09, 2020-12 as real schemas use them) compiled to GBNF.
//
// The grammar accepts exactly the JSON texts that are valid under the schema and written in
// its canonical shape: object keys in a fixed order (the schema's `properties` order, required
// keys present, optional ones skippable, then any additional keys), numbers and strings as
// JSON writes them, whitespace between tokens bounded so that a model cannot loop on spaces.
// `not`, `if`/`then`/`else`, the dependency keywords and oneOf branches that may overlap are
// rewritten through an exact negation (json_schema_negate.cc); patterns that combine (format
// with pattern, negated patterns, lengths a pattern does not bound, patternProperties next to
// additionalProperties, propertyNames) become automata over code points; uniqueItems over a
// small finite item set and minProperties/maxProperties count; number bounds may have
// fractions. A validation keyword the grammar cannot enforce exactly (uniqueItems over
// unbounded items, `multipleOf` on non-integers, `not` of additionalProperties, remote `$ref`,
// ...) is a kUnsupported error that names it and where it sits, unless `best_effort` is set, in
// which case it is dropped. Keys: an object's additional members may repeat a key (duplicate
// keys are outside what the grammar promises; minProperties/maxProperties count them).
// Keywords next to a $ref apply in every draft, as ajv applies them (drafts 4 to 7 say to
// ignore them): the grammar keeps the values valid under both readings.
// Annotation keywords (title, description, default, examples, $comment, ...) are ignored, and
// so are `format` values that no validator asserts (OpenAPI's int32, byte, ...).
//
// This header matches the agreed API (grammar_api.md); JsonSchemaOptions has two fields more
// (max_indent, and the draft override).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "strata/result.h"

namespace strata::grammar {

class CompileMeter;

struct JsonSchemaOptions {
  // Drop keywords the grammar cannot enforce instead of failing.
  bool best_effort = false;
  // Spaces allowed between two tokens on one line.
  int max_whitespace = 4;
  // Spaces allowed after a newline between two tokens (pretty-printed JSON indents by 2 or 4
  // per level; 40 covers 10 levels of 4, 20 of 2).
  int max_indent = 40;
  // `format` asserted (as ajv with ajv-formats does: a date-time must be one) or only an
  // annotation (the 2020-12 specification's default, and what JSONSchemaBench's validators do):
  // then every `format` is ignored, as if it were absent.
  bool assert_formats = true;
};

// JSON text parsed with objects in their written order (a repeated key keeps its first place and
// its last value, as nlohmann's parser does), in time linear in the text: nlohmann's own
// ordered_json parser searches an object's keys for each new one, quadratic in its size (100,000
// properties: minutes). Text nested deeper than kMaxJsonDepth is refused before parsing;
// `meter` is charged per member and stops the parse past its budget.
Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text,
                                                  CompileMeter* meter = nullptr);

// GBNF text whose rule `root` accepts the JSON values valid under the schema. Text nested deeper
// than kMaxJsonDepth (src/base/json_depth.h) is refused before it is parsed (kInvalidArgument).
// `meter` (compile_meter.h) counts the work against a deadline, a cancellation flag and a cap
// (kDeadlineExceeded, kCancelled, kOutOfRange); without one only the cap applies.
Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options = {},
                                        CompileMeter* meter = nullptr);

// The same for a schema already parsed (ordered, so that objects keep the schema's key order).
// A document nested deeper than kMaxJsonDepth is refused before anything recursive touches it.
Result<std::string> parsed_json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                               const JsonSchemaOptions& options = {},
                                               CompileMeter* meter = nullptr);

// The JSON text `instance_json` rewritten in the key order the grammar of `schema_json` uses
// (declared properties in schema order, then required names not declared, then the others in
// their original order; recursively), compact (indent < 0) or pretty-printed. JSON objects are
// unordered, so this is the same value; tests and benchmarks use it to feed valid instances.
Result<std::string> order_instance_like_schema(std::string_view schema_json,
                                               std::string_view instance_json, int indent = -1);

// GBNF text whose rule `root` accepts any JSON object (OpenAI's json_object mode).
std::string json_object_gbnf(const JsonSchemaOptions& options = {});

}  // namespace strata::grammar
