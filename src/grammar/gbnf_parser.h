// GBNF (llama.cpp's grammar format) read into rules over Unicode code points. Repetitions are
// expanded here the way llama.cpp expands them (x{m,n}: m copies, then n-m nested optional
// rules; x*: a right-recursive rule), so the result has only sequences, alternatives, character
// classes and rule references. Checks that need the whole grammar (undefined rules, left
// recursion, unmatchable rules) are the builder's (grammar_builder.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace strata::grammar::gbnf {

struct CodepointRange {
  uint32_t first = 0;
  uint32_t last = 0;  // inclusive
};

struct Item {
  enum class Kind : uint8_t { kChars, kRule };
  Kind kind = Kind::kChars;
  bool negated = false;                // kChars: [^...] or `.` (negated empty class)
  std::vector<CodepointRange> ranges;  // kChars
  uint32_t rule = 0;                   // kRule
};

using Sequence = std::vector<Item>;

struct Rule {
  std::string name;
  std::vector<Sequence> alternatives;
  bool defined = false;
  size_t defined_at = 0;  // byte offset of the definition (for messages)
  size_t used_at = 0;     // byte offset of the first reference
  uint32_t origin = 0;    // the written rule a generated (group, repetition) rule belongs to
  bool generated = false;
};

struct ParsedGrammar {
  std::vector<Rule> rules;
};

// Repetition bounds above this are rejected ({m,n} expands to about n copies).
inline constexpr uint32_t kMaxRepetition = 10000;
// Items after expansion above this are rejected (nested repetitions multiply). Room for the
// grammar of a JSON Schema object with 20,000 properties (each key's characters are items);
// the time to build it is bounded by the compile meter (compile_meter.h).
inline constexpr size_t kMaxItems = size_t{1} << 21;
// Parentheses nested deeper than this are rejected (the parser recurses on them).
inline constexpr int kMaxNesting = 200;

Result<ParsedGrammar> parse(std::string_view text);

// "line:column" (1-based, columns in bytes) of a byte offset, for error messages.
std::string location(std::string_view text, size_t offset);

}  // namespace strata::grammar::gbnf
