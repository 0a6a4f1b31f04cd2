// Code point sets (the classes and escapes of a pattern) and their GBNF over JSON-encoded text;
// the JSON string encoders regex_to_gbnf.h declares. See regex_to_gbnf_charset.h.
#include "grammar/regex_to_gbnf_charset.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/regex_to_gbnf.h"

namespace strata::grammar {
namespace regex_detail {
CharSet range_set(uint32_t lo, uint32_t hi) {
  CharSet s;
  s.add(lo, hi);
  return s;
}

CharSet digit_set() { return range_set('0', '9'); }

CharSet word_set() {
  CharSet s = range_set('0', '9');
  s.add('A', 'Z');
  s.add('a', 'z');
  s.add('_', '_');
  return s;
}

// ECMA-262 WhiteSpace and LineTerminator code points (what \s matches).
CharSet space_set() {
  CharSet s = range_set('\t', '\r');
  for (uint32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
    s.add(c, c);
  }
  s.add(0x2000, 0x200A);
  return s;
}

// What `.` matches: everything but the line terminators.
CharSet dot_set() {
  CharSet s;
  s.add('\n', '\n');
  s.add('\r', '\r');
  s.add(0x2028, 0x2029);
  return s.complement();
}

std::string hex(uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%0*X", digits, value);
  return buf;
}

// One code point as written inside a GBNF character class.
std::string class_char(uint32_t c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    return std::string(1, static_cast<char>(c));
  }
  if (c < 0x80) return "\\x" + hex(c, 2);
  if (c < 0x10000) return "\\u" + hex(c, 4);
  return "\\U" + hex(c, 8);
}

std::string class_text(const CharSet& set, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const auto& [lo, hi] : set.ranges()) {
    out += class_char(lo);
    if (hi != lo) out += "-" + class_char(hi);
  }
  return out + "]";
}

// The short JSON escape of a control character, or 0.
char short_escape(uint32_t c) {
  switch (c) {
    case '\b':
      return 'b';
    case '\f':
      return 'f';
    case '\n':
      return 'n';
    case '\r':
      return 'r';
    case '\t':
      return 't';
    default:
      return 0;
  }
}

std::string hex_digit_either_case(uint32_t nibble) {
  const std::string upper = hex(nibble, 1);
  if (nibble < 10) return gbnf_literal(upper);
  return "[" + upper + std::string(1, static_cast<char>(upper[0] - 'A' + 'a')) + "]";
}

// GBNF for the JSON-encoded characters whose decoded code point is in `set`: plain characters
// as a class, `"` and `\` and control characters as their JSON escapes.
std::string charset_gbnf(const CharSet& set) {
  CharSet must_escape = range_set(0, 0x1F);
  must_escape.add('"', '"');
  must_escape.add('\\', '\\');
  const CharSet plain = set.intersect(must_escape.complement());
  std::vector<std::string> alternatives;
  if (!plain.empty()) {
    // Write the class or its negation, whichever has fewer ranges.
    CharSet excluded = plain.complement();
    if (excluded.ranges().size() < plain.ranges().size()) {
      alternatives.push_back(class_text(excluded, /*negated=*/true));
    } else {
      alternatives.push_back(class_text(plain, /*negated=*/false));
    }
  }
  if (set.contains('"')) alternatives.push_back(gbnf_literal("\\\""));
  if (set.contains('\\')) alternatives.push_back(gbnf_literal("\\\\"));
  const CharSet controls = set.intersect(range_set(0, 0x1F));
  if (!controls.empty()) {
    if (controls.ranges().size() == 1 && controls.ranges()[0] == std::make_pair(0u, 0x1Fu)) {
      // Escapes without a short form: 00-07, 0B, 0E-1F.
      alternatives.push_back(gbnf_literal("\\") + " [bfnrt]");
      alternatives.push_back(gbnf_literal("\\u00") + " (\"0\" [0-7bBeEfF] | \"1\" [0-9a-fA-F])");
    } else {
      for (const auto& [lo, hi] : controls.ranges()) {
        for (uint32_t c = lo; c <= hi; ++c) {
          if (char e = short_escape(c)) {
            alternatives.push_back(gbnf_literal(std::string("\\") + e));
          } else {
            alternatives.push_back(gbnf_literal("\\u00" + hex(c >> 4, 1)) + " " +
                                   hex_digit_either_case(c & 0xF));
          }
        }
      }
    }
  }
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

}  // namespace regex_detail

std::string json_char_gbnf() {
  // A plain character, a short escape, or \uXXXX naming a non-surrogate code point (a
  // surrogate pair would be two units for one character and break length counting).
  return "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} "
         "| "
         "[dD] [0-7] [0-9a-fA-F]{2}))";
}

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x" + regex_detail::hex(c, 2);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      if (char e = regex_detail::short_escape(c)) {
        out += '\\';
        out += e;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      }
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace strata::grammar
