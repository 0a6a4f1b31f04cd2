// ECMA-262 regular expressions (the subset JSON Schema `pattern` uses) compiled to a GBNF
// expression over the JSON-escaped text of a string body.
//
// JSON Schema matches `pattern` against the decoded string, but a grammar constrains the JSON
// text, so every character the regex admits is emitted in its canonical JSON form: `"` as `\"`,
// `\` as `\\`, control characters as their short escape or `\u00XX`. Supported: literals,
// escapes (\d \D \w \W \s \S, \t \n \r \f \v \0 \xHH \uHHHH, escaped punctuation), `.`,
// classes with ranges and negation, groups (capturing, `(?:`, `(?<name>`), alternation,
// quantifiers `* + ? {n} {n,} {n,m}` (lazy forms accept the same language), and the anchors
// `^`/`$` at the ends of a top-level alternative. JSON Schema patterns are not anchored: an
// alternative without `^` (or `$`) admits any text before (or after) it. Lookaround,
// backreferences, word boundaries and Unicode property escapes are kUnsupported errors that
// name the construct.
#pragma once

#include <string>
#include <string_view>

#include "strata/result.h"

namespace strata::grammar {

// Returns a GBNF expression (no rule definitions, no surrounding quotes) that matches exactly
// the JSON string bodies whose decoded text the pattern matches and whose length in characters
// lies in [min_length, max_length] (max_length -1: unbounded). A length bound the pattern does
// not imply is applied when an alternative has a single variable-length part that repeats one
// character class (`^[a-z][a-z0-9_]*$`); otherwise it is a kUnsupported error.
Result<std::string> regex_to_gbnf(std::string_view pattern, long min_length = 0,
                                  long max_length = -1);

// GBNF expression for one JSON-encoded character of a string body (a plain character or an
// escape sequence).
std::string json_char_gbnf();

// `text` as a GBNF string literal, with quotes; `"`, `\` and non-printable bytes escaped.
std::string gbnf_literal(std::string_view text);

// `text` (UTF-8) as it appears inside a JSON string: the canonical JSON escapes (as nlohmann's
// dump writes them).
std::string json_escape(std::string_view text);

}  // namespace strata::grammar
