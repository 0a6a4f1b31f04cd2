// The recursive-descent parser that writes an ECMA-262 pattern as GBNF (regex_to_gbnf.h). The
// code point sets it builds, and their JSON-encoded GBNF, are in regex_to_gbnf_charset.cc.
#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/regex_to_gbnf_charset.h"

namespace strata::grammar {
namespace {

using namespace regex_detail;  // NOLINT: the parser is this file's use of them

// Recursive-descent parser for the ECMA-262 pattern grammar, writing GBNF as it goes.
class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : pattern_(pattern) {}

  // One character atom at `pos` ('[...]', '.', an escape or a literal code point): its set,
  // and the offset after it.
  Result<CharSet> char_atom(size_t pos, size_t* end) {
    pos_ = pos;
    CharSet set;
    const char c = peek();
    if (c == '[') {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(set, parse_class());
    } else if (c == '.') {
      ++pos_;
      set = dot_set();
    } else if (c == '\\') {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(set, parse_escape(/*in_class=*/false));
    } else {
      STRATA_ASSIGN_OR_RETURN(uint32_t code, next_code_point());
      set = range_set(code, code);
    }
    *end = pos_;
    return set;
  }

  bool braces_at(size_t pos, int* min, int* max, size_t* end) {
    pos_ = pos;
    if (!parse_braces(min, max)) return false;
    *end = pos_;
    return true;
  }

  // One quantified atom of a sequence, with the lengths (in characters) it can match; -1 is
  // unbounded. A single-character atom under a quantifier keeps its parts so that a length
  // bound can tighten the quantifier.
  struct Item {
    std::string text;
    long min_len = 0, max_len = 0;
    bool char_repeat = false;
    std::string base;
    long qmin = 0, qmax = 0;
  };

  static std::string item_text(const Item& item) {
    if (!item.char_repeat) return item.text;
    if (item.qmin == 0 && item.qmax == -1) return "(" + item.base + ")*";
    if (item.qmin == 1 && item.qmax == -1) return "(" + item.base + ")+";
    if (item.qmin == 0 && item.qmax == 1) return "(" + item.base + ")?";
    if (item.qmin == item.qmax) return "(" + item.base + "){" + std::to_string(item.qmin) + "}";
    if (item.qmax == -1) return "(" + item.base + "){" + std::to_string(item.qmin) + ",}";
    return "(" + item.base + "){" + std::to_string(item.qmin) + "," + std::to_string(item.qmax) +
           "}";
  }

  static std::string sequence_text(const std::vector<Item>& items) {
    std::string out;
    for (const Item& item : items) {
      const std::string text = item_text(item);
      if (text.empty()) continue;
      out += (out.empty() ? "" : " ") + text;
    }
    return out.empty() ? "\"\"" : out;
  }

  static void sequence_lengths(const std::vector<Item>& items, long* min_len, long* max_len) {
    *min_len = 0;
    *max_len = 0;
    for (const Item& item : items) {
      *min_len += item.min_len;
      *max_len = (*max_len < 0 || item.max_len < 0) ? -1 : *max_len + item.max_len;
    }
  }

  // The whole pattern. A length bound (from minLength/maxLength; -1 = none) that the pattern
  // does not already imply is applied by retuning the one variable-length single-character
  // repetition of an alternative; other shapes are kUnsupported.
  Result<std::string> parse_top(long min_length, long max_length) {
    std::vector<std::string> alternatives;
    while (true) {
      bool anchored_start = false, anchored_end = false;
      STRATA_ASSIGN_OR_RETURN(std::vector<Item> items,
                              parse_sequence(/*top_level=*/true, &anchored_start, &anchored_end));
      Item any;
      any.char_repeat = true;
      any.base = json_char_gbnf();
      any.qmin = 0;
      any.qmax = -1;
      any.max_len = -1;
      if (!anchored_start) items.insert(items.begin(), any);
      if (!anchored_end) items.push_back(any);
      STRATA_RETURN_IF_ERROR(apply_length_bound(items, min_length, max_length));
      alternatives.push_back(sequence_text(items));
      if (at_end()) break;
      if (peek() != '|') return error("unbalanced ')'");
      ++pos_;
    }
    if (alternatives.size() == 1) return alternatives[0];
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
    return out + ")";
  }

 private:
  Status apply_length_bound(std::vector<Item>& items, long min_length, long max_length) {
    long lo = 0, hi = 0;
    sequence_lengths(items, &lo, &hi);
    const bool min_implied = lo >= min_length;
    const bool max_implied = max_length < 0 || (hi >= 0 && hi <= max_length);
    if (min_implied && max_implied) return ok_status();
    Item* variable = nullptr;
    for (Item& item : items) {
      if (item.min_len == item.max_len) continue;
      if (variable != nullptr || !item.char_repeat) {
        return unsupported("minLength/maxLength with a pattern whose length they cannot bound");
      }
      variable = &item;
    }
    if (variable == nullptr) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "pattern \"" + std::string(pattern_) + "\" admits no string within minLength/maxLength");
    }
    const long fixed = lo - variable->min_len;
    long qmin = std::max(variable->qmin, min_length - fixed);
    long qmax = variable->qmax;
    if (max_length >= 0) qmax = qmax < 0 ? max_length - fixed : std::min(qmax, max_length - fixed);
    if (qmax >= 0 && qmax < qmin) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "pattern \"" + std::string(pattern_) + "\" admits no string within minLength/maxLength");
    }
    variable->qmin = qmin;
    variable->qmax = qmax;
    variable->min_len = qmin;
    variable->max_len = qmax;
    return ok_status();
  }

  bool at_end() const { return pos_ >= pattern_.size(); }
  char peek() const { return pattern_[pos_]; }

  Error error(const std::string& what) const {
    return make_error(ErrorCode::kInvalidArgument, "pattern \"" + std::string(pattern_) + "\": " +
                                                       what + " at offset " + std::to_string(pos_));
  }
  Error unsupported(const std::string& what) const {
    return make_error(ErrorCode::kUnsupported, "pattern \"" + std::string(pattern_) +
                                                   "\": " + what + " is not supported (offset " +
                                                   std::to_string(pos_) + ")");
  }

  // Decodes one UTF-8 code point at pos_.
  Result<uint32_t> next_code_point() {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(pattern_[i]); };
    const uint8_t b0 = byte(pos_);
    int length = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (length == 0 || pos_ + length > pattern_.size()) return error("invalid UTF-8");
    uint32_t c = length == 1   ? b0
                 : length == 2 ? (b0 & 0x1F)
                 : length == 3 ? (b0 & 0x0F)
                               : (b0 & 7);
    for (int i = 1; i < length; ++i) {
      if ((byte(pos_ + i) >> 6) != 2) return error("invalid UTF-8");
      c = (c << 6) | (byte(pos_ + i) & 0x3F);
    }
    pos_ += length;
    return c;
  }

  Result<uint32_t> parse_hex(size_t digits) {
    if (pos_ + digits > pattern_.size()) return error("truncated hex escape");
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char h = pattern_[pos_ + i];
      int v = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (v < 0) return error("bad hex digit in escape");
      value = value * 16 + static_cast<uint32_t>(v);
    }
    pos_ += digits;
    return value;
  }

  // After a backslash: the set of code points the escape stands for. `in_class` makes \b the
  // backspace character rather than a word boundary.
  Result<CharSet> parse_escape(bool in_class) {
    if (at_end()) return error("pattern ends with '\\'");
    const char c = pattern_[pos_++];
    switch (c) {
      case 'd':
        return digit_set();
      case 'D':
        return digit_set().complement();
      case 'w':
        return word_set();
      case 'W':
        return word_set().complement();
      case 's':
        return space_set();
      case 'S':
        return space_set().complement();
      case 't':
        return range_set('\t', '\t');
      case 'n':
        return range_set('\n', '\n');
      case 'r':
        return range_set('\r', '\r');
      case 'f':
        return range_set('\f', '\f');
      case 'v':
        return range_set('\v', '\v');
      case '0':
        return range_set(0, 0);
      case 'b':
        if (in_class) return range_set('\b', '\b');
        return unsupported("the word boundary \\b");
      case 'B':
        return unsupported("the non-word-boundary \\B");
      case 'k':
        return unsupported("the named backreference \\k");
      case 'p':
      case 'P':
        return unsupported("the Unicode property escape \\" + std::string(1, c));
      case 'c': {
        if (at_end() || !std::isalpha(static_cast<unsigned char>(peek()))) {
          return range_set('\\', '\\');  // Annex B: "\c" without a letter is a backslash
        }
        const uint32_t letter = static_cast<unsigned char>(pattern_[pos_++]);
        return range_set(letter % 32, letter % 32);
      }
      case 'x': {
        STRATA_ASSIGN_OR_RETURN(uint32_t v, parse_hex(2));
        return range_set(v, v);
      }
      case 'u': {
        uint32_t v = 0;
        if (!at_end() && peek() == '{') {
          const size_t close = pattern_.find('}', pos_);
          if (close == std::string_view::npos || close - pos_ < 2 || close - pos_ > 7) {
            return error("bad \\u{...} escape");
          }
          ++pos_;
          STRATA_ASSIGN_OR_RETURN(v, parse_hex(close - pos_));
          ++pos_;
        } else {
          STRATA_ASSIGN_OR_RETURN(v, parse_hex(4));
          // A UTF-16 surrogate pair written as two escapes is one code point.
          if (v >= 0xD800 && v <= 0xDBFF && pattern_.substr(pos_, 2) == "\\u") {
            const size_t saved = pos_;
            pos_ += 2;
            auto low = parse_hex(4);
            if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
              v = 0x10000 + ((v - 0xD800) << 10) + (*low - 0xDC00);
            } else {
              pos_ = saved;
            }
          }
        }
        if (v > kMaxCodePoint) return error("code point out of range");
        return range_set(v, v);
      }
      default:
        if (c >= '1' && c <= '9') return unsupported("the backreference \\" + std::string(1, c));
        --pos_;
        STRATA_ASSIGN_OR_RETURN(uint32_t literal, next_code_point());
        return range_set(literal, literal);
    }
  }

  // After '[': a class up to and including ']'.
  Result<CharSet> parse_class() {
    bool negated = false;
    if (!at_end() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    CharSet set;
    while (true) {
      if (at_end()) return error("unterminated character class");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      // One class atom: a single code point (for ranges) or an escape's set.
      auto atom = [&](bool* single, uint32_t* code) -> Result<CharSet> {
        if (peek() == '\\') {
          ++pos_;
          STRATA_ASSIGN_OR_RETURN(CharSet s, parse_escape(/*in_class=*/true));
          *single = s.ranges().size() == 1 && s.ranges()[0].first == s.ranges()[0].second;
          *code = *single ? s.ranges()[0].first : 0;
          return s;
        }
        STRATA_ASSIGN_OR_RETURN(uint32_t c, next_code_point());
        *single = true;
        *code = c;
        return range_set(c, c);
      };
      bool single_lo = false;
      uint32_t lo = 0;
      STRATA_ASSIGN_OR_RETURN(CharSet lo_set, atom(&single_lo, &lo));
      if (pos_ + 1 < pattern_.size() && peek() == '-' && pattern_[pos_ + 1] != ']') {
        ++pos_;
        bool single_hi = false;
        uint32_t hi = 0;
        STRATA_ASSIGN_OR_RETURN(CharSet hi_set, atom(&single_hi, &hi));
        if (!single_lo || !single_hi) {
          // Annex B: a class escape next to '-' makes the '-' literal.
          set.add(lo_set);
          set.add(hi_set);
          set.add('-', '-');
          continue;
        }
        if (hi < lo) return error("character class range out of order");
        set.add(lo, hi);
      } else {
        set.add(lo_set);
      }
    }
    if (negated) set = set.complement();
    if (set.empty()) return unsupported("a character class that matches nothing");
    return set;
  }

  // Parses {n}, {n,} or {n,m} at pos_ (which is at '{'); false (pos_ unchanged) when the brace
  // is a literal.
  bool parse_braces(int* min, int* max) {
    size_t p = pos_ + 1;
    auto number = [&](int* out) {
      const size_t start = p;
      long value = 0;
      while (p < pattern_.size() && std::isdigit(static_cast<unsigned char>(pattern_[p]))) {
        value = std::min(value * 10 + (pattern_[p] - '0'), 1000000L);
        ++p;
      }
      *out = static_cast<int>(value);
      return p > start;
    };
    if (!number(min)) return false;
    *max = *min;
    if (p < pattern_.size() && pattern_[p] == ',') {
      ++p;
      if (!number(max)) *max = -1;
    }
    if (p >= pattern_.size() || pattern_[p] != '}') return false;
    pos_ = p + 1;
    return true;
  }

  // A sequence of quantified atoms, up to '|', ')' or the end.
  Result<std::vector<Item>> parse_sequence(bool top_level, bool* anchored_start,
                                           bool* anchored_end) {
    std::vector<Item> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const char c = peek();
      if (c == '^') {
        if (!top_level || !items.empty() || *anchored_start) {
          return unsupported("'^' anywhere but at the start of a top-level alternative");
        }
        ++pos_;
        *anchored_start = true;
        continue;
      }
      if (c == '$') {
        ++pos_;
        if (!top_level || !(at_end() || peek() == '|')) {
          return unsupported("'$' anywhere but at the end of a top-level alternative");
        }
        *anchored_end = true;
        continue;
      }
      Item item;
      bool single_char = true;
      if (c == '(') {
        single_char = false;
        ++pos_;
        if (pattern_.substr(pos_, 2) == "?:") {
          pos_ += 2;
        } else if (pattern_.substr(pos_, 2) == "?=" || pattern_.substr(pos_, 2) == "?!") {
          return unsupported("lookahead (" + std::string(pattern_.substr(pos_, 2)) + "...)");
        } else if (pattern_.substr(pos_, 3) == "?<=" || pattern_.substr(pos_, 3) == "?<!") {
          return unsupported("lookbehind (" + std::string(pattern_.substr(pos_, 3)) + "...)");
        } else if (pattern_.substr(pos_, 2) == "?<" || pattern_.substr(pos_, 2) == "?P") {
          const size_t close = pattern_.find('>', pos_);
          if (close == std::string_view::npos) return error("unterminated group name");
          pos_ = close + 1;
        } else if (!at_end() && peek() == '?') {
          return unsupported("the group modifier (?" + std::string(pattern_.substr(pos_ + 1, 1)));
        }
        std::string text = "(";
        bool first = true;
        while (true) {
          bool inner_start = false, inner_end = false;
          STRATA_ASSIGN_OR_RETURN(std::vector<Item> seq,
                                  parse_sequence(/*top_level=*/false, &inner_start, &inner_end));
          long lo = 0, hi = 0;
          sequence_lengths(seq, &lo, &hi);
          if (first) {
            item.min_len = lo;
            item.max_len = hi;
          } else {
            item.min_len = std::min(item.min_len, lo);
            item.max_len = (item.max_len < 0 || hi < 0) ? -1 : std::max(item.max_len, hi);
          }
          text += (first ? "" : " | ") + sequence_text(seq);
          first = false;
          if (at_end()) return error("unterminated group");
          if (peek() == ')') {
            ++pos_;
            break;
          }
          ++pos_;  // '|'
        }
        item.text = text + ")";
      } else if (c == '[') {
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(CharSet set, parse_class());
        item.text = charset_gbnf(set);
      } else if (c == '.') {
        ++pos_;
        item.text = charset_gbnf(dot_set());
      } else if (c == '\\') {
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(CharSet set, parse_escape(/*in_class=*/false));
        item.text = charset_gbnf(set);
      } else if (c == '*' || c == '+' || c == '?') {
        return error(std::string("nothing to repeat before '") + c + "'");
      } else {
        int unused_min = 0, unused_max = 0;
        if (c == '{' && parse_braces(&unused_min, &unused_max)) {
          return error("nothing to repeat before '{'");
        }
        STRATA_ASSIGN_OR_RETURN(uint32_t code, next_code_point());
        item.text = charset_gbnf(range_set(code, code));
      }
      if (single_char) item.min_len = item.max_len = 1;
      // Quantifier.
      if (!at_end()) {
        const char q = peek();
        int min = 0, max = 0;
        bool quantified = true;
        if (q == '*' || q == '+' || q == '?') {
          ++pos_;
          min = q == '+' ? 1 : 0;
          max = q == '?' ? 1 : -1;
        } else if (!(q == '{' && parse_braces(&min, &max))) {
          quantified = false;
        }
        if (quantified) {
          if (max >= 0 && max < min) return error("quantifier {n,m} with m < n");
          if (!at_end() && peek() == '?') ++pos_;  // lazy: same language
          int unused_min = 0, unused_max = 0;
          if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' ||
                            (peek() == '{' && parse_braces(&unused_min, &unused_max)))) {
            return error("nothing to repeat (a quantifier follows a quantifier)");
          }
          item.char_repeat = true;
          item.base = item.text;
          item.qmin = min;
          item.qmax = max;
          item.text.clear();
          item.max_len =
              (max < 0 || item.max_len < 0) ? (item.max_len == 0 ? 0 : -1) : item.max_len * max;
          item.min_len *= min;
          if (!single_char) {
            // Only single characters may have their count retuned by a length bound.
            item.text = item_text(item);
            item.char_repeat = false;
          }
        }
      }
      items.push_back(std::move(item));
    }
    return items;
  }

  std::string_view pattern_;
  size_t pos_ = 0;
};

}  // namespace

namespace regex_detail {

Result<CharSet> parse_char_atom(std::string_view pattern, size_t pos, size_t* end) {
  return RegexParser(pattern).char_atom(pos, end);
}

bool parse_repeat_braces(std::string_view pattern, size_t pos, int* min, int* max, size_t* end) {
  return RegexParser(pattern).braces_at(pos, min, max, end);
}

Status check_group_nesting(std::string_view pattern) {
  int depth = 0, deepest = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;  // the escaped character is a literal
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')' && depth > 0) {
      --depth;
    }
  }
  if (deepest <= kMaxGroupNesting) return ok_status();
  return make_error(ErrorCode::kUnsupported, "the pattern nests groups " + std::to_string(deepest) +
                                                 " levels deep; at most " +
                                                 std::to_string(kMaxGroupNesting) +
                                                 " are supported");
}

}  // namespace regex_detail

Result<std::string> regex_to_gbnf(std::string_view pattern, long min_length, long max_length) {
  STRATA_RETURN_IF_ERROR(regex_detail::check_group_nesting(pattern));
  return RegexParser(pattern).parse_top(min_length, max_length);
}

}  // namespace strata::grammar
