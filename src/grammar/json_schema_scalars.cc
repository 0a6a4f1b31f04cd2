// JSON Schema to GBNF: scalar values. Strings (lengths, patterns, formats and their negations,
// through regex_to_gbnf or, when they combine, automata), numbers (ranges, non-integers),
// literals for enum/const, and enum members checked against the scalar keywords.
#include <algorithm>
#include <cmath>
#include <optional>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/regex_to_gbnf_automaton.h"

namespace strata::grammar::json_schema_detail {
namespace {

// A string schema's own constraints: its length bounds, the patterns it must match (a known
// format is one of them) and those it must not (from a negation). `unsupported_format` names a
// standard format the grammar cannot enforce.
struct StringConstraints {
  long min_length = 0, max_length = -1;
  std::vector<std::string> patterns, not_patterns;
  std::string unsupported_format;
};

StringConstraints string_constraints(const Json& schema) {
  StringConstraints c;
  if (schema.contains("minLength") && schema["minLength"].is_number()) {
    c.min_length = static_cast<long>(std::ceil(schema["minLength"].get<double>()));
  }
  if (schema.contains("maxLength") && schema["maxLength"].is_number()) {
    c.max_length = static_cast<long>(std::floor(schema["maxLength"].get<double>()));
  }
  if (schema.contains("pattern") && schema["pattern"].is_string()) {
    c.patterns.push_back(schema["pattern"].get<std::string>());
  }
  // More patterns an allOf asked for (merge keeps the first as `pattern`).
  if (schema.contains("$strata:patterns") && schema["$strata:patterns"].is_array()) {
    for (const Json& p : schema["$strata:patterns"]) {
      if (p.is_string()) c.patterns.push_back(p.get<std::string>());
    }
  }
  if (schema.contains("$strata:notPattern") && schema["$strata:notPattern"].is_array()) {
    for (const Json& p : schema["$strata:notPattern"]) {
      if (p.is_string()) c.not_patterns.push_back(p.get<std::string>());
    }
  }
  if (schema.contains("format") && schema["format"].is_string()) {
    const std::string format = schema["format"].get<std::string>();
    bool unsupported = false;
    std::optional<std::string> regex = format_regex(format, &unsupported);
    if (unsupported) c.unsupported_format = format;
    if (regex) c.patterns.push_back(*regex);
  }
  return c;
}

}  // namespace

Result<bool> Converter::scalar_keywords_allow(const Json& schema, const Json& value,
                                              const std::string& path) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    const StringConstraints c = string_constraints(schema);
    if (c.patterns.empty() && c.not_patterns.empty() && c.min_length == 0 && c.max_length < 0) {
      return true;
    }
    auto dfa = string_automaton(c.patterns, c.not_patterns, {}, c.min_length, c.max_length);
    if (!dfa.ok()) return make_error(dfa.error().code, dfa.error().message + " (at " + path + ")");
    return dfa->accepts(text);
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (schema.contains("$strata:notInteger") && std::floor(v) == v) return false;
    const auto bound = [&](const char* key) -> std::optional<double> {
      if (schema.contains(key) && schema[key].is_number()) return schema[key].get<double>();
      return std::nullopt;
    };
    const auto flag = [&](const char* key) {
      return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
    };
    if (auto m = bound("minimum"); m && (flag("exclusiveMinimum") ? v <= *m : v < *m)) return false;
    if (auto m = bound("maximum"); m && (flag("exclusiveMaximum") ? v >= *m : v > *m)) return false;
    if (auto m = bound("exclusiveMinimum"); m && v <= *m) return false;
    if (auto m = bound("exclusiveMaximum"); m && v >= *m) return false;
  }
  return true;
}

Result<std::string> Converter::excluded_values(const Json& schema, const std::string& type,
                                               const std::string& path) {
  if (!schema.contains("$strata:notEnum") || !schema["$strata:notEnum"].is_array())
    return std::string();
  std::vector<std::string> strings;
  bool excludes_true = false, excludes_false = false, excludes_null = false, others = false;
  for (const Json& value : schema["$strata:notEnum"]) {
    if (!value_has_type(value, type) && !(type == "number" && value.is_number())) continue;
    if (value.is_string()) {
      strings.push_back(value.get<std::string>());
    } else if (value.is_boolean()) {
      (value.get<bool>() ? excludes_true : excludes_false) = true;
    } else if (value.is_null()) {
      excludes_null = true;
    } else if (!value.is_number()) {
      others = true;  // numbers: number_grammar splits its range at them
    }
  }
  if (others) {
    return make_error(ErrorCode::kUnsupported, "'not' of an enum/const member of type " + type +
                                                   " at " + path +
                                                   " cannot be enforced by a grammar");
  }
  if (excludes_null) return make_error(ErrorCode::kInvalidArgument, "null excluded at " + path);
  if (excludes_true && excludes_false) {
    return make_error(ErrorCode::kInvalidArgument, "both booleans excluded at " + path);
  }
  if (excludes_true) return std::string("\"false\"");
  if (excludes_false) return std::string("\"true\"");
  if (!strings.empty()) return string_grammar(schema, path, strings);
  return std::string();
}

Result<std::string> Converter::visit_type(const Json& schema, const std::string& type,
                                          const std::string& path) {
  if (type == "null") return base("null");
  if (type == "boolean") return base("boolean");
  if (type == "string") return string_grammar(schema, path, {});
  if (type == "number") return number_grammar(schema, /*integer=*/false, path);
  if (type == "integer") return number_grammar(schema, /*integer=*/true, path);
  if (type == "object") return object_grammar(schema, path);
  if (type == "array") return array_grammar(schema, path);
  return make_error(ErrorCode::kInvalidArgument, "unknown type '" + type + "' at " + path);
}

Result<std::string> Converter::literal(const Json& value) {
  if (value.is_string()) {
    return gbnf_literal("\"" + json_escape(value.get<std::string>()) + "\"");
  }
  if (value.is_number_integer()) {
    // JSON Schema compares numbers by value: 1 and 1.0 are the same enum member.
    return "(" + gbnf_literal(value.dump()) + " (\".0\")?)";
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::floor(v) == v && std::fabs(v) < 1e15) {
      const std::string whole = std::to_string(static_cast<int64_t>(v));
      return "(" + gbnf_literal(whole) + " | " + gbnf_literal(whole + ".0") + ")";
    }
  }
  if (value.is_array()) {
    std::string out = "\"[\" " + base("ws");
    for (size_t i = 0; i < value.size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string item, literal(value[i]));
      out += (i ? " \",\" ws " : " ") + item + " ws";
    }
    return out + " \"]\"";
  }
  if (value.is_object()) {
    std::string out = "\"{\" " + base("ws");
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      STRATA_ASSIGN_OR_RETURN(std::string item_gbnf, literal(item));
      out += (first ? " " : " \",\" ws ") + gbnf_literal("\"" + json_escape(key) + "\"") +
             " ws \":\" ws " + item_gbnf + " ws";
      first = false;
    }
    return out + " \"}\"";
  }
  return gbnf_literal(value.dump());
}

Result<std::string> Converter::string_grammar(const Json& schema, const std::string& path,
                                              const std::vector<std::string>& excluded) {
  const StringConstraints constraints = string_constraints(schema);
  long min_length = constraints.min_length, max_length = constraints.max_length;
  const std::vector<std::string>& patterns = constraints.patterns;
  const std::vector<std::string>& not_patterns = constraints.not_patterns;
  if (max_length >= 0 && max_length < min_length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "maxLength < minLength at " + path + ": no string is valid");
  }
  if (!constraints.unsupported_format.empty()) {
    STRATA_RETURN_IF_ERROR(unenforceable("format '" + constraints.unsupported_format + "'", path));
  }
  const std::string quote = gbnf_literal("\"");
  // The automaton of all the string constraints, built when first needed and only once.
  std::optional<Result<CharDfa>> automaton;
  const auto get_automaton = [&]() -> Result<CharDfa>& {
    if (!automaton) {
      automaton = string_automaton(patterns, not_patterns, excluded, min_length, max_length);
    }
    return *automaton;
  };
  const auto quoted = [&](const CharDfa& dfa) {
    const std::string start = dfa.to_gbnf(
        [&] { return new_rule(path + "/string"); },
        [&](const std::string& name, std::string body) { set_rule(name, std::move(body)); });
    return quote + " " + start + " " + quote;
  };
  const bool one_pattern = patterns.size() == 1 && not_patterns.empty() && excluded.empty();
  // A pattern, written as a small deterministic automaton: its right-linear rules keep every
  // token inside the string's own rules until the closing quote, so masks are decided when the
  // grammar is compiled. Written directly (regex_to_gbnf), a counted group `(a|b){40}` calls a
  // one-character rule mid-sequence, which nearly every token leaves after its first byte, to
  // be walked again at each mask: 1-30 ms on a 102K vocabulary.
  if (one_pattern && min_length == 0 && max_length < 0) {
    const Result<CharDfa>& dfa = get_automaton();
    if (dfa.ok() && !dfa->empty() && dfa->size() <= kMaxFlatStringStates) return quoted(*dfa);
  }
  if (one_pattern) {
    auto body = regex_to_gbnf(patterns[0], min_length, max_length);
    if (body.ok()) return quote + " " + *body + " " + quote;
    if (body.error().code != ErrorCode::kUnsupported) {
      return make_error(body.error().code, body.error().message + " (at " + path + ")");
    }
  }
  if (!patterns.empty() || !not_patterns.empty() || !excluded.empty()) {
    const Result<CharDfa>& dfa = get_automaton();
    if (dfa.ok()) {
      if (dfa->empty()) {
        return make_error(ErrorCode::kInvalidArgument, "no string at " + path +
                                                           " satisfies its pattern, format, "
                                                           "length and exclusions together");
      }
      return quoted(*dfa);
    }
    if (dfa.error().code != ErrorCode::kUnsupported || !options_.best_effort) {
      return make_error(dfa.error().code, dfa.error().message + " (at " + path + ")");
    }
  }
  if (min_length == 0 && max_length < 0) return base("string");
  // The GBNF parser repeats at most 10000 times; longer bounds count in blocks of 1000:
  // n = 1000 q + s characters, and "at most r" splits at r's block count.
  constexpr long kMaxRepeat = 10000, kBlock = 1000, kMaxLength = kBlock * kMaxRepeat;
  if (min_length > kMaxLength || max_length > kMaxLength) {
    STRATA_RETURN_IF_ERROR(unenforceable("a string length bound above 10000000", path));
    min_length = std::min(min_length, kMaxLength);
    if (max_length > kMaxLength) max_length = -1;
  }
  const std::string c = base("char");
  const auto times = [&](const std::string& item, long lo, long hi) {
    if (hi == lo) return lo == 0 ? std::string() : item + "{" + std::to_string(lo) + "}";
    if (hi < 0) return item + "{" + std::to_string(lo) + ",}";
    return item + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  };
  // n characters, then `then`, as right-recursive rules `r_k ::= char r_(k-1)`: each starts with
  // `char`, which the grammar builder inlines, so the parse stays one flat stack and a token's
  // fate is known when the grammar is compiled. Written as `char{n}`, the calls of `char` in the
  // middle of a sequence would leave nearly every token to the mask-time check, 15-30 ms on a
  // 102K vocabulary at every one of those characters.
  const auto chain = [&](long n, std::string then) {
    for (long k = 0; k < n; ++k) {
      const std::string name = new_rule(path + "/chars");
      set_rule(name, then.empty() ? c : c + " " + then);
      then = name;
    }
    return then;
  };
  // Blocks stay one rule of 1000 calls: as a chain they would cost seconds of compile time for
  // the masks of strings longer than 10000 characters.
  std::string block;
  const auto get_block = [&] {
    if (block.empty()) {
      block = new_rule(path + "/block");
      set_rule(block, c + "{" + std::to_string(kBlock) + "}");
    }
    return block;
  };
  const auto at_most = [&](long r) {
    if (r <= kMaxRepeat) return times(c, 0, r);  // nested optionals: as flat as a chain
    const long q = r / kBlock, rem = r % kBlock;
    return "(" + times(get_block(), 0, q - 1) + " " + times(c, 0, kBlock - 1) + " | " +
           times(get_block(), q, q) + (rem ? " " + times(c, 0, rem) : "") + ")";
  };
  const std::string more = max_length == min_length ? std::string()
                           : max_length < 0         ? c + "*"
                                                    : at_most(max_length - min_length);
  // min = 1000 q + s characters: q blocks, then a chain of s ending in what may follow.
  const long min_blocks = min_length / kBlock;
  const std::string blocks = min_blocks > 0 ? times(get_block(), min_blocks, min_blocks) : "";
  std::string body = chain(min_length % kBlock, more);
  if (!blocks.empty()) body = blocks + (body.empty() ? "" : " " + body);
  return quote + " " + body + " " + quote;
}

Result<CharDfa> Converter::string_automaton(const std::vector<std::string>& patterns,
                                            const std::vector<std::string>& not_patterns,
                                            const std::vector<std::string>& excluded,
                                            long min_length, long max_length) {
  CharDfa dfa = CharDfa::any();
  const auto check = [](const CharDfa& d) -> Status {
    if (d.size() > kMaxDfaStates) {
      return make_error(ErrorCode::kUnsupported, "string constraints whose automaton exceeds " +
                                                     std::to_string(kMaxDfaStates) + " states");
    }
    return ok_status();
  };
  for (const std::string& pattern : patterns) {
    STRATA_ASSIGN_OR_RETURN(CharDfa one, CharDfa::from_pattern(pattern));
    dfa = dfa.intersect(one);
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  for (const std::string& pattern : not_patterns) {
    STRATA_ASSIGN_OR_RETURN(CharDfa one, CharDfa::from_pattern(pattern));
    dfa = dfa.intersect(one.complement());
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  if (!excluded.empty()) {
    dfa = dfa.intersect(CharDfa::literals(excluded).complement());
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  if (min_length > 0 || max_length >= 0) {
    dfa = dfa.with_length(min_length, max_length);
    STRATA_RETURN_IF_ERROR(check(dfa));
  }
  return dfa;
}

Result<std::string> Converter::number_grammar(const Json& schema, bool integer,
                                              const std::string& path) {
  if (schema.contains("$strata:notInteger")) {
    if (integer) {
      return make_error(ErrorCode::kInvalidArgument, "an integer that is not one at " + path);
    }
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                            "multipleOf", "$strata:notEnum"}) {
      if (schema.contains(key)) {
        return make_error(ErrorCode::kUnsupported, "'not' of an integer next to '" +
                                                       std::string(key) + "' at " + path +
                                                       " cannot be enforced by a grammar");
      }
    }
    // Written without an exponent, with a fraction that is not all zeros.
    return std::string("\"-\"? (\"0\" | [1-9] [0-9]{0,19}) \".\" \"0\"{0,23} [1-9] [0-9]{0,23}");
  }
  std::optional<double> step;  // a multipleOf still to enforce
  // A number that multipleOf: 1 makes integral may still be written 6000.0, as it is a number.
  const std::string zero_fraction = integer ? "" : std::string(" ") + kZeroFraction;
  if (schema.contains("multipleOf") && schema["multipleOf"].is_number()) {
    const double s = schema["multipleOf"].get<double>();
    if (s == 1.0) {
      integer = true;
    } else if (!(integer && s > 0 && s < 1 && std::fabs(std::round(1 / s) - 1 / s) < 1e-9)) {
      step = s;  // else every integer is a multiple (of 0.5, of 0.1, ...)
    }
  }
  std::optional<Bound> lower, upper;
  const auto read = [&](const char* inclusive_key, const char* exclusive_key,
                        std::optional<Bound>* bound, bool lower_side) {
    const auto tighter = [&](Bound b) {
      if (!*bound) {
        *bound = b;
        return;
      }
      const bool better = lower_side ? (b.value > (*bound)->value) : (b.value < (*bound)->value);
      if (better || (b.value == (*bound)->value && b.exclusive)) *bound = b;
    };
    if (schema.contains(inclusive_key) && schema[inclusive_key].is_number()) {
      const bool draft4_exclusive = schema.contains(exclusive_key) &&
                                    schema[exclusive_key].is_boolean() &&
                                    schema[exclusive_key].get<bool>();
      tighter(Bound{schema[inclusive_key].get<double>(), draft4_exclusive});
    }
    if (schema.contains(exclusive_key) && schema[exclusive_key].is_number()) {
      tighter(Bound{schema[exclusive_key].get<double>(), true});
    }
  };
  read("minimum", "exclusiveMinimum", &lower, true);
  read("maximum", "exclusiveMaximum", &upper, false);
  // OpenAPI's int32 format bounds the value, as validators such as ajv-formats assert it
  // (int64, float and double constrain nothing a JSON number can hold).
  if (schema.contains("format") && schema["format"] == "int32") {
    if (!lower || lower->value < -2147483648.0) lower = Bound{-2147483648.0, false};
    if (!upper || upper->value > 2147483647.0) upper = Bound{2147483647.0, false};
  }
  // Values `not` excluded (sorted, distinct).
  std::vector<double> excluded;
  if (schema.contains("$strata:notEnum") && schema["$strata:notEnum"].is_array()) {
    for (const Json& v : schema["$strata:notEnum"]) {
      if (v.is_number()) excluded.push_back(v.get<double>());
    }
  }
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  if (step) {
    if (excluded.empty()) {
      if (std::optional<std::string> multiples = multiple_of_gbnf(*step, lower, upper)) {
        return *multiples;
      }
    }
    STRATA_RETURN_IF_ERROR(unenforceable("'multipleOf'", path));  // best effort: dropped
  }
  if (integer) {
    constexpr double kLimit = 9.2e18;
    std::optional<int64_t> lo, hi;
    if (lower && std::fabs(lower->value) < kLimit) {
      lo = static_cast<int64_t>(lower->exclusive ? std::floor(lower->value) + 1
                                                 : std::ceil(lower->value));
    }
    if (upper && std::fabs(upper->value) < kLimit) {
      hi = static_cast<int64_t>(upper->exclusive ? std::ceil(upper->value) - 1
                                                 : std::floor(upper->value));
    }
    // An inclusive maximum written as an integer past int64 (2^63 - 1 rounds up as a double):
    // the int64 range, then the integers above it up to the exact maximum, digit by digit.
    std::string above_int64;
    if (upper && !upper->exclusive && upper->value >= kLimit && (!lo || *lo >= 0) &&
        schema.contains("maximum") && schema["maximum"].is_number_unsigned() &&
        schema["maximum"].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      hi = INT64_MAX;
      above_int64 = integers_above_int64(std::to_string(schema["maximum"].get<uint64_t>()));
    }
    std::vector<int64_t> holes;
    for (double v : excluded) {
      if (std::floor(v) == v && std::fabs(v) < kLimit && (!lo || v >= *lo) && (!hi || v <= *hi)) {
        holes.push_back(static_cast<int64_t>(v));
      }
    }
    if (!lo && !hi && holes.empty()) return base("integer") + zero_fraction;
    if (lo && hi && *lo > *hi) {
      return make_error(ErrorCode::kInvalidArgument, "no integer is within the bounds at " + path);
    }
    // The range between the excluded values.
    std::vector<std::string> pieces;
    std::optional<int64_t> from = lo;
    for (int64_t hole : holes) {
      if (!from || *from <= hole - 1) pieces.push_back(integer_range_gbnf(from, hole - 1));
      from = hole + 1;
    }
    if (!from || !hi || *from <= *hi) pieces.push_back(integer_range_gbnf(from, hi));
    if (!above_int64.empty()) pieces.push_back(above_int64);
    if (pieces.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "no integer is left at " + path);
    }
    if (zero_fraction.empty()) return join_alternatives(pieces);
    return "(" + join_alternatives(pieces) + ")" + zero_fraction;
  }
  if (!excluded.empty()) {
    // Open intervals between the excluded values (each bound exclusive at a hole).
    std::vector<std::string> pieces;
    std::optional<Bound> from = lower;
    const auto add = [&](std::optional<Bound> a, std::optional<Bound> b) -> Status {
      auto piece = number_range_gbnf(a, b);
      if (piece.ok()) {
        pieces.push_back(*piece);
      } else if (piece.error().code != ErrorCode::kInvalidArgument) {
        return make_error(piece.error().code, piece.error().message + " (at " + path + ")");
      }
      return ok_status();
    };
    for (double hole : excluded) {
      if ((lower && hole < lower->value) || (upper && hole > upper->value)) continue;
      STRATA_RETURN_IF_ERROR(add(from, Bound{hole, true}));
      from = Bound{hole, true};
    }
    STRATA_RETURN_IF_ERROR(add(from, upper));
    if (pieces.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "no number is left at " + path);
    }
    return join_alternatives(pieces);
  }
  if (!lower && !upper) return base("number");
  auto range = number_range_gbnf(lower, upper);
  if (range.ok()) return range;
  if (range.error().code == ErrorCode::kUnsupported) {
    STRATA_RETURN_IF_ERROR(unenforceable(range.error().message, path));
    return base("number");
  }
  return make_error(range.error().code, range.error().message + " (at " + path + ")");
}

}  // namespace strata::grammar::json_schema_detail
