#include "grammar/grammar.h"

#include <cstdio>

namespace strata::grammar {
namespace {

void append_byte(std::string* out, unsigned b) {
  if (b >= 0x21 && b < 0x7F && b != '"' && b != '\\' && b != ']' && b != '-' && b != '^') {
    *out += static_cast<char>(b);
  } else {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    *out += buf;
  }
}

void append_set(std::string* out, const ByteSet& set) {
  *out += '[';
  for (unsigned b = 0; b < 256;) {
    if (!set.test(static_cast<uint8_t>(b))) {
      ++b;
      continue;
    }
    unsigned e = b;
    while (e + 1 < 256 && set.test(static_cast<uint8_t>(e + 1))) ++e;
    append_byte(out, b);
    if (e > b) {
      *out += '-';
      append_byte(out, e);
    }
    b = e + 1;
  }
  *out += ']';
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (const GrammarRule& rule : rules_) {
    out += rule.name + " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      for (uint32_t pos = rule.alternatives[a]; elements_[pos].kind != ElementKind::kEnd; ++pos) {
        out += ' ';
        const Element& e = elements_[pos];
        if (e.kind == ElementKind::kRule) {
          out += rules_[e.value].name;
        } else {
          append_set(&out, byte_sets_[e.value]);
        }
      }
      if (elements_[rule.alternatives[a]].kind == ElementKind::kEnd) out += " \"\"";
    }
    out += '\n';
  }
  return out;
}

}  // namespace strata::grammar
