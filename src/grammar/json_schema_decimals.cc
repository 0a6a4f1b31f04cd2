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

// Fraction digits (at least one) whose value is >= 0.f (> when strict); f non-empty.
std::string digits_above(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  if (f[0] < '9') alternatives.push_back(digit_class(f[0] + 1, '9') + " [0-9]{0,23}");
  const std::string rest = f.substr(1);
  const std::string next = !rest.empty() ? digits_above(rest, strict)
                           : strict      ? "\"0\"{0,22} [1-9] [0-9]{0,22}"
                                         : "[0-9]{0,23}";
  alternatives.push_back(digit_class(f[0], f[0]) + " " + next);
  return join_alternatives(alternatives);
}

// Fraction digits (at least one) whose value is <= 0.f (< when strict); f non-empty; nullopt
// when none is.
std::optional<std::string> digits_below(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  if (f[0] > '0') alternatives.push_back(digit_class('0', f[0] - 1) + " [0-9]{0,23}");
  const std::string rest = f.substr(1);
  if (rest.empty()) {
    if (!strict) alternatives.push_back(digit_class(f[0], f[0]) + " \"0\"{0,23}");
  } else if (auto sub = digits_below(rest, strict)) {
    // Stopping early leaves the value below the bound.
    alternatives.push_back(digit_class(f[0], f[0]) + " (" + *sub + ")?");
  }
  if (alternatives.empty()) return std::nullopt;
  return join_alternatives(alternatives);
}

// Fraction digits (at least one) whose value v has 0 < v <= 0.f (< when strict); f non-empty.
std::optional<std::string> digits_nonzero_below(const std::string& f, bool strict) {
  std::vector<std::string> alternatives;
  const std::string rest = f.substr(1);
  if (f[0] > '0') {
    // A smaller first digit: non-zero somewhere.
    if (f[0] > '1') alternatives.push_back(digit_class('1', f[0] - 1) + " [0-9]{0,23}");
    alternatives.push_back("\"0\" \"0\"{0,22} [1-9] [0-9]{0,22}");
    // The same first digit (non-zero already): what digits_below allows after it.
    if (rest.empty()) {
      if (!strict) alternatives.push_back(digit_class(f[0], f[0]) + " \"0\"{0,23}");
    } else if (auto sub = digits_below(rest, strict)) {
      alternatives.push_back(digit_class(f[0], f[0]) + " (" + *sub + ")?");
    }
  } else if (auto sub = digits_nonzero_below(rest, strict)) {
    alternatives.push_back("\"0\" " + *sub);  // f has no trailing zeros: rest is non-empty
  }
  if (alternatives.empty()) return std::nullopt;
  return join_alternatives(alternatives);
}

// What may follow the whole part for a value >= whole.f (> when strict).
std::string fraction_at_least(const std::string& f, bool strict) {
  if (f.empty()) return strict ? kNonzeroFraction : kAnyFraction;
  return "\".\" " + digits_above(f, strict);
}

// What may follow the whole part for a value <= whole.f (< when strict); nullopt when nothing.
std::optional<std::string> fraction_at_most(const std::string& f, bool strict) {
  if (f.empty()) return strict ? std::nullopt : std::optional<std::string>(kZeroFraction);
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
    alternatives.push_back(integer_range_gbnf(lo.whole + 1, std::nullopt) + " " + kAnyFraction);
  } else if (lo.whole + 1 <= hi->whole - 1) {
    alternatives.push_back(whole(lo.whole + 1, hi->whole - 1) + " " + kAnyFraction);
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
      return std::optional<std::string>(join_alternatives(alternatives));
    }
    if (auto f = fraction_at_most(hi->fraction, hi_strict)) {
      alternatives.push_back(whole(lo.whole, lo.whole) + " " + *f);
    }
  }
  if (alternatives.empty()) return std::optional<std::string>();
  return std::optional<std::string>(join_alternatives(alternatives));
}

}  // namespace

Result<std::string> decimal_range_gbnf(std::optional<Bound> lower, std::optional<Bound> upper) {
  for (const auto& bound : {lower, upper}) {
    if (bound && !(std::fabs(bound->value) < 1e15)) {
      return make_error(ErrorCode::kUnsupported,
                        "a number bound beyond 1e15 on a number that may have a fraction");
    }
  }
  // One sign's half as magnitudes |x| from `near` (the bound nearer zero; none: from zero,
  // included or not) to `far` (none: unbounded).
  const auto half = [](const std::optional<Bound>& near, bool zero_strict,
                       const std::optional<Bound>& far) -> Result<std::optional<std::string>> {
    const auto too_many_digits = [] {
      return make_error(ErrorCode::kUnsupported, "a number bound with too many digits");
    };
    Decimal lo;
    bool lo_strict = zero_strict;
    if (near) {
      auto d = to_decimal(std::fabs(near->value));
      if (!d) return too_many_digits();
      lo = *d;
      lo_strict = near->exclusive;
    }
    std::optional<Decimal> hi;
    if (far) {
      hi = to_decimal(std::fabs(far->value));
      if (!hi) return too_many_digits();
    }
    return magnitude(lo, lo_strict, hi, far && far->exclusive);
  };
  std::vector<std::string> alternatives;
  // x >= 0.
  if (!upper || upper->value > 0 || (upper->value == 0 && !upper->exclusive)) {
    const bool lower_near = lower && lower->value >= 0;
    STRATA_ASSIGN_OR_RETURN(auto part,
                            half(lower_near ? lower : std::nullopt, /*zero_strict=*/false, upper));
    if (part) alternatives.push_back(*part);
  }
  // x < 0, as "-" and the magnitude -x > 0.
  if (!lower || lower->value < 0) {
    const bool upper_near = upper && upper->value < 0;
    STRATA_ASSIGN_OR_RETURN(auto part,
                            half(upper_near ? upper : std::nullopt, /*zero_strict=*/true, lower));
    if (part) alternatives.push_back("\"-\" " + *part);
  }
  if (alternatives.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "number bounds admit no value");
  }
  return join_alternatives(alternatives);
}

}  // namespace strata::grammar::json_schema_detail
