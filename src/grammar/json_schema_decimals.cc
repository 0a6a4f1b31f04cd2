// Number ranges whose bounds are not integers (minimum 0.3, exclusiveMaximum 2.75): a decimal
// text compares with a bound whole part first, then fraction digit by digit (0.f against the
// bound's fraction, missing digits read as zeros). Numbers are written without an exponent.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "grammar/json_schema_internal.h"

namespace strata::grammar::json_schema_detail {
namespace {

struct Decimal {
  int64_t whole = 0;
  std::string fraction;  // digits after the point, no trailing zeros
};

// The shortest fixed-point text that reads back as `magnitude` (>= 0, < 1e15).
std::optional<Decimal> to_decimal(double magnitude) {
  for (int digits = 0; digits <= 15; ++digits) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", digits, magnitude);
    if (std::strtod(buf, nullptr) != magnitude) continue;
    const std::string text = buf;
    const size_t point = text.find('.');
    Decimal out;
    out.whole = std::strtoll(text.substr(0, point).c_str(), nullptr, 10);
    if (point != std::string::npos) out.fraction = text.substr(point + 1);
    while (!out.fraction.empty() && out.fraction.back() == '0') out.fraction.pop_back();
    return out;
  }
  return std::nullopt;
}

std::string digits_between(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string join(const std::vector<std::string>& alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

// Fraction digits (at least one) whose value is >= 0.f (> when strict); f non-empty.
std::string digits_above(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  if (f[0] < '9') alternatives.push_back(digits_between(f[0] + 1, '9') + " [0-9]{0,23}");
  const std::string rest = f.substr(1);
  const std::string next = !rest.empty() ? digits_above(rest, strict)
                           : strict      ? "\"0\"{0,22} [1-9] [0-9]{0,22}"
                                         : "[0-9]{0,23}";
  alternatives.push_back(digits_between(f[0], f[0]) + " " + next);
  return join(alternatives);
}

// Fraction digits (at least one) whose value is <= 0.f (< when strict); f non-empty; nullopt
// when none is.
std::optional<std::string> digits_below(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  if (f[0] > '0') alternatives.push_back(digits_between('0', f[0] - 1) + " [0-9]{0,23}");
  const std::string rest = f.substr(1);
  if (rest.empty()) {
    if (!strict) alternatives.push_back(digits_between(f[0], f[0]) + " \"0\"{0,23}");
  } else if (auto sub = digits_below(rest, strict)) {
    // Stopping early leaves the value below the bound.
    alternatives.push_back(digits_between(f[0], f[0]) + " (" + *sub + ")?");
  }
  if (alternatives.empty()) return std::nullopt;
  return join(alternatives);
}

// Fraction digits (at least one) whose value v has 0 < v <= 0.f (< when strict); f non-empty.
std::optional<std::string> digits_nonzero_below(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  const std::string rest = f.substr(1);
  if (f[0] > '0') {
    // A smaller first digit: non-zero somewhere.
    if (f[0] > '1') alternatives.push_back(digits_between('1', f[0] - 1) + " [0-9]{0,23}");
    alternatives.push_back("\"0\" \"0\"{0,22} [1-9] [0-9]{0,22}");
    // The same first digit (non-zero already): what digits_below allows after it.
    if (rest.empty()) {
      if (!strict) alternatives.push_back(digits_between(f[0], f[0]) + " \"0\"{0,23}");
    } else if (auto sub = digits_below(rest, strict)) {
      alternatives.push_back(digits_between(f[0], f[0]) + " (" + *sub + ")?");
    }
  } else if (auto sub = digits_nonzero_below(rest, strict)) {
    alternatives.push_back("\"0\" " + *sub);  // f has no trailing zeros: rest is non-empty
  }
  if (alternatives.empty()) return std::nullopt;
  return join(alternatives);
}

// What may follow the whole part for a value >= whole.f (> when strict).
std::string fraction_at_least(const std::string& f, bool strict) {
  if (f.empty()) return strict ? "\".\" \"0\"{0,23} [1-9] [0-9]{0,23}" : "(\".\" [0-9]{1,24})?";
  return "\".\" " + digits_above(f, strict);
}

// What may follow the whole part for a value <= whole.f (< when strict); nullopt when nothing.
std::optional<std::string> fraction_at_most(const std::string& f, bool strict) {
  if (f.empty()) return strict ? std::nullopt : std::optional<std::string>("(\".\" \"0\"{1,24})?");
  auto below = digits_below(f, strict);
  return "(\".\" " + *below + ")?";  // no fraction: whole < whole.f
}

// Non-negative decimals m with lo <(=) m and m <(=) hi (hi nullopt: unbounded).
Result<std::optional<std::string>> magnitude(const Decimal& lo, bool lo_strict,
                                             const std::optional<Decimal>& hi, bool hi_strict) {
  std::vector<std::string> alternatives;
  const auto whole = [](int64_t a, int64_t b) { return integer_range_gbnf(a, b); };
  // Whole part strictly between the bounds' whole parts: any fraction.
  if (!hi) {
    alternatives.push_back(integer_range_gbnf(lo.whole + 1, std::nullopt) +
                           " (\".\" [0-9]{1,24})?");
  } else if (lo.whole + 1 <= hi->whole - 1) {
    alternatives.push_back(whole(lo.whole + 1, hi->whole - 1) + " (\".\" [0-9]{1,24})?");
  }
  if (!hi || lo.whole < hi->whole) {
    alternatives.push_back(whole(lo.whole, lo.whole) + " " +
                           fraction_at_least(lo.fraction, lo_strict));
    if (hi) {
      if (auto f = fraction_at_most(hi->fraction, hi_strict)) {
        alternatives.push_back(whole(hi->whole, hi->whole) + " " + *f);
      }
    }
  } else if (lo.whole == hi->whole) {
    if (!lo.fraction.empty() || lo_strict) {
      if (hi->fraction.empty()) return std::optional<std::string>();  // above lo is above hi
      if (!lo.fraction.empty()) {
        return make_error(ErrorCode::kUnsupported,
                          "number bounds that share their whole part and both have fractions");
      }
      // whole < m <(=) whole.f: a non-zero fraction up to hi's.
      if (auto f = digits_nonzero_below(hi->fraction, hi_strict)) {
        alternatives.push_back(whole(lo.whole, lo.whole) + " \".\" " + *f);
      }
      if (alternatives.empty()) return std::optional<std::string>();
      return std::optional<std::string>(join(alternatives));
    }
    if (auto f = fraction_at_most(hi->fraction, hi_strict)) {
      alternatives.push_back(whole(lo.whole, lo.whole) + " " + *f);
    }
  }
  if (alternatives.empty()) return std::optional<std::string>();
  return std::optional<std::string>(join(alternatives));
}

}  // namespace

Result<std::string> decimal_range_gbnf(std::optional<Bound> lower, std::optional<Bound> upper) {
  for (const auto& bound : {lower, upper}) {
    if (bound && !(std::fabs(bound->value) < 1e15)) {
      return make_error(ErrorCode::kUnsupported,
                        "a number bound beyond 1e15 on a number that may have a fraction");
    }
  }
  const auto dec = [](double v) { return to_decimal(std::fabs(v)); };
  std::vector<std::string> alternatives;
  // x >= 0.
  if (!upper || upper->value > 0 || (upper->value == 0 && !upper->exclusive)) {
    Decimal lo;
    bool lo_strict = false;
    if (lower && lower->value >= 0) {
      auto d = dec(lower->value);
      if (!d) return make_error(ErrorCode::kUnsupported, "a number bound with too many digits");
      lo = *d;
      lo_strict = lower->exclusive;
    }
    std::optional<Decimal> hi;
    if (upper) hi = dec(upper->value);
    if (upper && !hi)
      return make_error(ErrorCode::kUnsupported, "a number bound with too many digits");
    STRATA_ASSIGN_OR_RETURN(auto part, magnitude(lo, lo_strict, hi, upper && upper->exclusive));
    if (part) alternatives.push_back(*part);
  }
  // x < 0, as "-" and the magnitude -x > 0.
  if (!lower || lower->value < 0) {
    Decimal lo;
    bool lo_strict = true;
    if (upper && upper->value < 0) {
      auto d = dec(upper->value);
      if (!d) return make_error(ErrorCode::kUnsupported, "a number bound with too many digits");
      lo = *d;
      lo_strict = upper->exclusive;
    }
    std::optional<Decimal> hi;
    if (lower) hi = dec(lower->value);
    if (lower && !hi)
      return make_error(ErrorCode::kUnsupported, "a number bound with too many digits");
    STRATA_ASSIGN_OR_RETURN(auto part, magnitude(lo, lo_strict, hi, lower && lower->exclusive));
    if (part) alternatives.push_back("\"-\" " + *part);
  }
  if (alternatives.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "number bounds admit no value");
  }
  return join(alternatives);
}

}  // namespace strata::grammar::json_schema_detail
