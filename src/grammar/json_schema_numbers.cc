// Numeric ranges as grammars over decimal digits. An integer range [a, b] splits by digit count;
// within one count, the classic recursion on the leading digit yields at most 2 * digits
// alternatives (a[0] then the rest of a up to 9..9, the digits strictly between, b[0] then 0..0
// up to the rest of b).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grammar/json_schema_internal.h"
#include "grammar/regex_to_gbnf.h"

namespace strata::grammar::json_schema_detail {
std::string join_alternatives(const std::vector<std::string>& alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

namespace {

std::string any_digits(size_t count) {
  if (count == 0) return "";
  if (count == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(count) + "}";
}

// Decimal strings of equal length, lo <= hi: all strings of that length between them.
std::string same_length_range(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "";
  const size_t rest = lo.size() - 1;
  auto tail = [](const std::string& head, const std::string& more) {
    if (more.empty()) return head;
    return head + " " + more;
  };
  if (lo[0] == hi[0]) {
    return tail(digit_class(lo[0], lo[0]), same_length_range(lo.substr(1), hi.substr(1)));
  }
  if (lo.substr(1) == std::string(rest, '0') && hi.substr(1) == std::string(rest, '9')) {
    return tail(digit_class(lo[0], hi[0]), any_digits(rest));
  }
  std::vector<std::string> alternatives;
  alternatives.push_back(
      tail(digit_class(lo[0], lo[0]), same_length_range(lo.substr(1), std::string(rest, '9'))));
  if (lo[0] + 1 <= hi[0] - 1) {
    alternatives.push_back(tail(
        digit_class(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)), any_digits(rest)));
  }
  alternatives.push_back(
      tail(digit_class(hi[0], hi[0]), same_length_range(std::string(rest, '0'), hi.substr(1))));
  return join_alternatives(alternatives);
}

int64_t power_of_ten(size_t exponent) {
  int64_t p = 1;
  for (size_t i = 0; i < exponent; ++i) p *= 10;
  return p;
}

constexpr int64_t kUnbounded = -1;

// Non-negative integers written without leading zeros, lo <= n <= hi (hi kUnbounded: up to
// kMaxIntegerDigits digits).
std::string nonnegative_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alternatives;
  const size_t lo_digits = std::to_string(lo).size();
  const size_t hi_digits = hi != kUnbounded ? std::to_string(hi).size() : lo_digits;
  for (size_t d = lo_digits; d <= hi_digits; ++d) {
    const int64_t first = std::max(lo, d == 1 ? int64_t{0} : power_of_ten(d - 1));
    int64_t last = d >= 19 ? INT64_MAX : power_of_ten(d) - 1;
    if (hi != kUnbounded) last = std::min(last, hi);
    if (first > last) continue;
    alternatives.push_back(same_length_range(std::to_string(first), std::to_string(last)));
  }
  if (hi == kUnbounded && lo_digits < static_cast<size_t>(kMaxIntegerDigits)) {
    alternatives.push_back("[1-9] [0-9]{" + std::to_string(lo_digits) + "," +
                           std::to_string(kMaxIntegerDigits - 1) + "}");
  }
  return join_alternatives(alternatives);
}

const char* kExponent = "([eE] [-+]? [0-9]{1,3})?";

// Non-negative decimals m (no exponent) with lo <(=) m <(=) hi; lo, hi integers.
std::string magnitude_range(int64_t lo, bool lo_exclusive, int64_t hi, bool hi_exclusive) {
  std::vector<std::string> alternatives;
  const bool bounded = hi != kUnbounded;
  // Integer part in [lo', hi - 1]: any fraction keeps the value inside the bounds.
  const int64_t int_lo = lo_exclusive ? lo + 1 : lo;
  const int64_t int_hi = bounded ? hi - 1 : kUnbounded;
  if (!bounded || int_lo <= int_hi) {
    std::string any = nonnegative_range(int_lo, int_hi) + " " + kAnyFraction;
    if (int_lo == 0 && !bounded) any += std::string(" ") + kExponent;
    alternatives.push_back(any);
  }
  // Integer part lo with a non-zero fraction: just above an exclusive lower bound.
  if (lo_exclusive && (!bounded || lo < hi)) {
    alternatives.push_back(nonnegative_range(lo, lo) + " " + kNonzeroFraction);
  }
  // The upper bound itself, as an integer or with zeros after the point.
  if (bounded && !hi_exclusive && (hi > lo || (hi == lo && !lo_exclusive))) {
    alternatives.push_back(nonnegative_range(hi, hi) + " " + kZeroFraction);
  }
  if (alternatives.empty()) return "";
  return join_alternatives(alternatives);
}

bool integral_and_small(double v) { return std::floor(v) == v && std::fabs(v) < 1e15; }

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lower, std::optional<int64_t> upper) {
  std::vector<std::string> alternatives;
  if (!upper || *upper >= 0) {
    alternatives.push_back(
        nonnegative_range(lower ? std::max<int64_t>(*lower, 0) : 0, upper ? *upper : kUnbounded));
  }
  if (!lower || *lower < 0) {
    // -n for n in [max(1, -upper), -lower].
    const int64_t lo = upper ? std::max<int64_t>(1, -*upper) : 1;
    const int64_t hi = lower ? -*lower : kUnbounded;
    if (hi == kUnbounded || lo <= hi) alternatives.push_back("\"-\" " + nonnegative_range(lo, hi));
  }
  if (alternatives.empty()) return "";
  return join_alternatives(alternatives);
}

Result<std::string> number_range_gbnf(std::optional<Bound> lower, std::optional<Bound> upper) {
  for (const auto& bound : {lower, upper}) {
    if (bound && !integral_and_small(bound->value)) return decimal_range_gbnf(lower, upper);
  }
  const auto as_int = [](const Bound& b) { return static_cast<int64_t>(b.value); };
  std::vector<std::string> alternatives;
  // x >= 0 part.
  if (!upper || as_int(*upper) > 0 || (as_int(*upper) == 0 && !upper->exclusive)) {
    int64_t lo = 0;
    bool lo_exclusive = false;
    if (lower && as_int(*lower) >= 0) {
      lo = as_int(*lower);
      lo_exclusive = lower->exclusive;
    }
    const int64_t hi = upper ? as_int(*upper) : kUnbounded;
    const std::string part = magnitude_range(lo, lo_exclusive, hi, upper && upper->exclusive);
    if (!part.empty()) alternatives.push_back(part);
  }
  // x < 0 part, as "-" and the magnitude -x (never zero: "-0" is left to the first part).
  if (!lower || as_int(*lower) < 0) {
    int64_t lo = 0;
    bool lo_exclusive = true;
    if (upper && as_int(*upper) < 0) {
      lo = -as_int(*upper);
      lo_exclusive = upper->exclusive;
    }
    const int64_t hi = lower ? -as_int(*lower) : kUnbounded;
    const std::string part = magnitude_range(lo, lo_exclusive, hi, lower && lower->exclusive);
    if (!part.empty()) alternatives.push_back("\"-\" " + part);
  }
  if (alternatives.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "number bounds admit no value");
  }
  return join_alternatives(alternatives);
}

std::string integers_above_int64(const std::string& max) {
  const std::string first = std::to_string(static_cast<uint64_t>(INT64_MAX) + 1);  // 19 digits
  if (max.size() == first.size()) return same_length_range(first, max);
  return join_alternatives({same_length_range(first, std::string(first.size(), '9')),
                            same_length_range("1" + std::string(max.size() - 1, '0'), max)});
}

namespace {

// Fraction digits from position i of d (possibly none: the rest read as zeros) whose d-digit
// value lies in [lo, hi] (d-digit strings), the digits so far having equalled lo's when
// `tight_lo` and hi's when `tight_hi`. `some`: one or more digits; `none`: stopping here fits.
struct FractionDigits {
  std::optional<std::string> some;
  bool none = false;
};
FractionDigits fraction_digits(const std::string& lo, const std::string& hi, size_t i,
                               bool tight_lo, bool tight_hi) {
  FractionDigits out;
  out.none = !tight_lo || lo.find_first_not_of('0', i) == std::string::npos;
  if (i == lo.size()) return out;
  const char first = tight_lo ? lo[i] : '0', last = tight_hi ? hi[i] : '9';
  std::vector<std::string> alternatives;
  // A digit strictly inside the bounds' digits frees every later one.
  const char inner_first = tight_lo ? static_cast<char>(first + 1) : first;
  const char inner_last = tight_hi ? static_cast<char>(last - 1) : last;
  const std::string free_rest =
      i + 1 < lo.size() ? " [0-9]{0," + std::to_string(lo.size() - i - 1) + "}" : "";
  if (inner_first <= inner_last) {
    alternatives.push_back(digit_class(inner_first, inner_last) + free_rest);
  }
  // A digit equal to a tight bound's keeps that bound tight.
  std::vector<char> edges;
  if (tight_lo) edges.push_back(first);
  if (tight_hi && !(tight_lo && last == first)) edges.push_back(last);
  for (const char c : edges) {
    const FractionDigits next =
        fraction_digits(lo, hi, i + 1, tight_lo && c == lo[i], tight_hi && c == hi[i]);
    if (!next.some && !next.none) continue;
    std::string tail;
    if (next.some) tail = " " + (next.none ? "(" + *next.some + ")?" : *next.some);
    alternatives.push_back(digit_class(c, c) + tail);
  }
  if (!alternatives.empty()) out.some = join_alternatives(alternatives);
  return out;
}

}  // namespace

std::optional<std::string> multiple_of_gbnf(double step, std::optional<Bound> lower,
                                            std::optional<Bound> upper) {
  if (!(step > 0) || !std::isfinite(step)) return std::nullopt;
  if (step >= 1 && std::floor(step) == step && step < 1e15) {
    if (!lower || !upper || std::fabs(lower->value) > 1e15 || std::fabs(upper->value) > 1e15) {
      return std::nullopt;
    }
    // The first and last multiples inside the bounds.
    double first = std::ceil(lower->value / step) * step;
    if (lower->exclusive && first == lower->value) first += step;
    double last = std::floor(upper->value / step) * step;
    if (upper->exclusive && last == upper->value) last -= step;
    if (first > last) return std::nullopt;
    const auto k = static_cast<int64_t>(step);
    const auto lo = static_cast<int64_t>(first), hi = static_cast<int64_t>(last);
    if ((hi - lo) / k + 1 > kMaxListedMultiples) return std::nullopt;
    std::vector<std::string> values;
    for (int64_t v = lo; v <= hi; v += k) values.push_back(gbnf_literal(std::to_string(v)));
    return join_alternatives(values);
  }
  // step = 10^-d: the multiples are the numbers whose fraction digits past the d-th are all 0.
  const int d = static_cast<int>(std::lround(-std::log10(step)));
  if (d < 1 || d > 15 || std::fabs(step - std::pow(10.0, -d)) > 1e-9 * step) return std::nullopt;
  const std::string fraction = "(\".\" [0-9]{1," + std::to_string(d) + "} \"0\"{0," +
                               std::to_string(kMaxFractionDigits - d) + "})?";
  if (!upper && (!lower || (lower->value == 0 && !lower->exclusive))) {
    return std::string(lower ? "" : "\"-\"? ") + "(\"0\" | [1-9] [0-9]{0,19}) " + fraction;
  }
  // Bounds as counts of steps: x = n 10^-d with n_lo <= n <= n_hi (a bound between two
  // multiples moves to the one inside; 99.99 is 9999 hundredths, not 9998.999...).
  const double scale = std::pow(10.0, d);
  const auto steps = [&](const Bound& b, bool lower_side) -> std::optional<int64_t> {
    const double v = b.value * scale;
    if (!(std::fabs(v) < 1e15)) return std::nullopt;
    const double nearest = std::round(v);
    // A few units in the last place of v: a bound written as a multiple reads back within them.
    if (std::fabs(v - nearest) <= std::max(1e-6, 4 * DBL_EPSILON * std::fabs(v))) {
      return static_cast<int64_t>(nearest) + (b.exclusive ? (lower_side ? 1 : -1) : 0);
    }
    return static_cast<int64_t>(lower_side ? std::ceil(v) : std::floor(v));
  };
  std::optional<int64_t> lo, hi;
  if (lower && !(lo = steps(*lower, true))) return std::nullopt;
  if (upper && !(hi = steps(*upper, false))) return std::nullopt;
  if (lo && hi && *lo > *hi) return std::nullopt;
  const auto unit = static_cast<int64_t>(std::llround(scale));
  const auto padded = [&](int64_t n) {
    std::string digits = std::to_string(n % unit);
    return std::string(static_cast<size_t>(d) - digits.size(), '0') + digits;
  };
  const std::string zeros(static_cast<size_t>(d), '0'), nines(static_cast<size_t>(d), '9');
  // What follows a whole part for fractions in [lo, hi]: "." and digits, then zeros.
  const auto fraction_in = [&](const std::string& low, const std::string& high) {
    const FractionDigits f = fraction_digits(low, high, 0, true, true);
    if (!f.some) return std::string();
    return "(\".\" " + *f.some + " \"0\"{0," + std::to_string(kMaxFractionDigits - d) + "})" +
           (f.none ? "?" : "");
  };
  // Magnitudes of at least a steps, and at most b when `bounded`.
  const auto magnitudes = [&](int64_t a, bool bounded, int64_t b) {
    const int64_t whole_a = a / unit;
    const std::string first = gbnf_literal(std::to_string(whole_a));
    if (!bounded) {
      return join_alternatives(
          {first + " " + fraction_in(padded(a), nines),
           "(" + integer_range_gbnf(whole_a + 1, std::nullopt) + ") " + fraction});
    }
    const int64_t whole_b = b / unit;
    if (whole_a == whole_b) return first + " " + fraction_in(padded(a), padded(b));
    std::vector<std::string> alternatives = {first + " " + fraction_in(padded(a), nines)};
    if (whole_a + 1 <= whole_b - 1) {
      alternatives.push_back("(" + integer_range_gbnf(whole_a + 1, whole_b - 1) + ") " + fraction);
    }
    alternatives.push_back(gbnf_literal(std::to_string(whole_b)) + " " +
                           fraction_in(zeros, padded(b)));
    return join_alternatives(alternatives);
  };
  std::vector<std::string> signs;
  if (!hi || *hi >= 0) {
    signs.push_back(magnitudes(lo ? std::max<int64_t>(*lo, 0) : 0, hi.has_value(), hi.value_or(0)));
  }
  if (!lo || *lo < 0) {
    // -m with m <= -lo, and m >= -hi when hi is negative.
    signs.push_back("\"-\" " +
                    magnitudes(hi && *hi < 0 ? -*hi : 0, lo.has_value(), -lo.value_or(0)));
  }
  return join_alternatives(signs);
}

}  // namespace strata::grammar::json_schema_detail
