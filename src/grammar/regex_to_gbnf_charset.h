// Sets of Unicode code points and the ECMA-262 character atoms that denote them, shared by the
// two regex back ends: regex_to_gbnf.cc (patterns written straight into GBNF) and
// regex_to_gbnf_automaton.cc (patterns as automata that can be complemented and intersected).
// Defined in regex_to_gbnf_charset.cc, except parse_char_atom, parse_repeat_braces and
// check_group_nesting, which are regex_to_gbnf.cc's parser.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/result.h"

namespace strata::grammar::regex_detail {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of Unicode code points as sorted, disjoint, non-adjacent closed ranges.
class CharSet {
 public:
  void add(uint32_t lo, uint32_t hi) {
    ranges_.emplace_back(lo, hi);
    normalize();
  }
  void add(const CharSet& other) {
    ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
    normalize();
  }
  CharSet complement() const {
    CharSet out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : ranges_) {
      if (lo > next) out.ranges_.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
    return out;
  }
  CharSet intersect(const CharSet& other) const {
    CharSet out;
    for (const auto& [a, b] : ranges_) {
      for (const auto& [c, d] : other.ranges_) {
        const uint32_t lo = std::max(a, c), hi = std::min(b, d);
        if (lo <= hi) out.ranges_.emplace_back(lo, hi);
      }
    }
    out.normalize();
    return out;
  }
  bool contains(uint32_t c) const {
    for (const auto& [lo, hi] : ranges_) {
      if (c >= lo && c <= hi) return true;
    }
    return false;
  }
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  void normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges_) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges_ = std::move(merged);
  }
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

CharSet range_set(uint32_t lo, uint32_t hi);
// What `.` matches: everything but the line terminators.
CharSet dot_set();
// What \d, \w and \s match (ECMA-262: ASCII digits, ASCII word characters, and the WhiteSpace
// and LineTerminator code points).
CharSet digit_set();
CharSet word_set();
CharSet space_set();

// GBNF for the JSON-encoded characters whose decoded code point is in `set`: plain characters
// as a class, `"` and `\` and control characters as their JSON escapes.
std::string charset_gbnf(const CharSet& set);

// One character atom of `pattern` at `pos` ('[...]', '.', an escape or a literal code point)
// and the offset after it; errors as regex_to_gbnf reports them.
Result<CharSet> parse_char_atom(std::string_view pattern, size_t pos, size_t* end);
// A quantifier {n}, {n,} or {n,m} at `pos` (max -1: unbounded); false when the brace is literal.
bool parse_repeat_braces(std::string_view pattern, size_t pos, int* min, int* max, size_t* end);

// Groups nested deeper than this are refused: both back ends, and std::regex where the converter
// matches names against patterns, parse groups by recursion. Real patterns nest a few levels.
inline constexpr int kMaxGroupNesting = 100;

// kUnsupported when `pattern` nests groups deeper than kMaxGroupNesting (parentheses outside
// character classes and escapes), measured without recursion.
Status check_group_nesting(std::string_view pattern);

}  // namespace strata::grammar::regex_detail
