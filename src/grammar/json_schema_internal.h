// Pieces of the JSON Schema converter that do not need the schema tree: numeric ranges as digit
// grammars, and `format` values as regular expressions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/result.h"

namespace strata::grammar::json_schema_detail {

// Decimal digits allowed in an integer part or a fraction (bounds the text a model can write).
inline constexpr int kMaxIntegerDigits = 20;
inline constexpr int kMaxFractionDigits = 24;
// A string's pattern (without length bounds) is written as its automaton up to this many states
// (each state a rule of a few positions per character class; email's and uri's fit). With length
// bounds the product automaton grows with the bound: compiling 500-state products cost 50 s
// instead of 5, so those keep regex_to_gbnf's form.
inline constexpr size_t kMaxFlatStringStates = 256;

// A numeric bound of `minimum`/`maximum` after folding in exclusiveMinimum/exclusiveMaximum.
struct Bound {
  double value = 0;
  bool exclusive = false;
};

// "(a | b | ...)", or the one alternative.
std::string join_alternatives(const std::vector<std::string>& alternatives);

// One decimal digit from lo to hi: "d" when they are equal, else [lo-hi].
std::string digit_class(char lo, char hi);

// What may follow a number's whole part (kMaxFractionDigits digits at most): any fraction or
// none, a fraction with a non-zero digit, and a fraction of zeros or none.
inline constexpr const char* kAnyFraction = "(\".\" [0-9]{1,24})?";
inline constexpr const char* kNonzeroFraction = "\".\" \"0\"{0,23} [1-9] [0-9]{0,23}";
inline constexpr const char* kZeroFraction = "(\".\" \"0\"{1,24})?";

// GBNF for the JSON integers n with lower <= n <= upper (each side optional, bounds integral).
std::string integer_range_gbnf(std::optional<int64_t> lower, std::optional<int64_t> upper);

// The integers in (2^63 - 1, max], max a decimal string of at most 20 digits above 2^63 - 1
// (uint64 maxima: an int64 range cannot reach them).
std::string integers_above_int64(const std::string& max);

// `multipleOf: step` within the bounds, where a grammar can say it exactly and compactly: an
// integer step with both bounds (the multiples listed, at most kMaxListedMultiples of them), or a
// step of 10^-d (0.1, 0.01, ...) with inclusive integer bounds or none (at most d fraction
// digits before trailing zeros). nullopt otherwise.
inline constexpr int64_t kMaxListedMultiples = 512;
std::optional<std::string> multiple_of_gbnf(double step, std::optional<Bound> lower,
                                            std::optional<Bound> upper);

// GBNF for JSON numbers within the bounds, written without an exponent (except a non-negative
// number with no upper bound, which may use one). Bounds must be integers of magnitude below
// 1e15; other bounds are kUnsupported.
Result<std::string> number_range_gbnf(std::optional<Bound> lower, std::optional<Bound> upper);

// Like number_range_gbnf, for bounds that need not be integers (|bound| < 1e15, at most 15
// fraction digits); written without exponents.
Result<std::string> decimal_range_gbnf(std::optional<Bound> lower, std::optional<Bound> upper);

// The anchored ECMA-262 regex for a `format` that the grammar enforces; nullopt for a format it
// does not know. `*unsupported` is set for a standard format it knows but does not enforce.
std::optional<std::string> format_regex(const std::string& format, bool* unsupported);

}  // namespace strata::grammar::json_schema_detail
