#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <utility>

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

uint32_t saturating_add(uint32_t a, uint32_t b) {
  return a > Grammar::kUnbounded - b ? Grammar::kUnbounded : a + b;
}

}  // namespace

// Shortest sentence length per rule by Knuth's generalization of Dijkstra's algorithm (a
// rule's length is the minimum over its alternatives of the sum of their elements' lengths):
// rules settle in increasing length, and an alternative is queued once every rule it refers to
// has settled. O(size log rules) whatever order the rules come in; the round-robin fixpoint it
// replaces settled one rule per pass over the grammar on a chain laid out callers first.
void Grammar::compute_min_rest() {
  std::vector<uint32_t>& rule_min = rule_min_length_;
  rule_min.assign(rules_.size(), kUnbounded);
  auto element_min = [&](const Element& e) {
    return e.kind == ElementKind::kBytes ? 1u : rule_min[e.value];
  };
  struct Alternative {
    uint32_t rule;
    uint32_t waiting;  // references to rules not settled yet
    uint32_t length;   // bytes plus the settled references' lengths
  };
  std::vector<Alternative> alternatives;
  std::vector<std::vector<uint32_t>> users(rules_.size());  // rule -> alternatives, per reference
  using Entry = std::pair<uint32_t, uint32_t>;              // (length, rule)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    for (uint32_t start : rules_[r].alternatives) {
      const auto a = static_cast<uint32_t>(alternatives.size());
      Alternative alt{r, 0, 0};
      for (uint32_t pos = start; elements_[pos].kind != ElementKind::kEnd; ++pos) {
        if (elements_[pos].kind == ElementKind::kBytes) {
          alt.length = saturating_add(alt.length, 1);
        } else {
          ++alt.waiting;
          users[elements_[pos].value].push_back(a);
        }
      }
      if (alt.waiting == 0) queue.push({alt.length, r});
      alternatives.push_back(alt);
    }
  }
  std::vector<bool> settled(rules_.size(), false);
  while (!queue.empty()) {
    const auto [length, r] = queue.top();
    queue.pop();
    if (settled[r]) continue;
    settled[r] = true;
    rule_min[r] = length;
    for (uint32_t a : users[r]) {
      Alternative& alt = alternatives[a];
      alt.length = saturating_add(alt.length, length);
      if (--alt.waiting == 0 && !settled[alt.rule]) queue.push({alt.length, alt.rule});
    }
  }
  min_rest_.assign(elements_.size(), 0);
  for (size_t pos = elements_.size(); pos-- > 0;) {
    const Element& e = elements_[pos];
    if (e.kind == ElementKind::kEnd) continue;
    // Alternatives are contiguous runs closed by kEnd, so pos + 1 is in the same run.
    min_rest_[pos] = saturating_add(element_min(e), min_rest_[pos + 1]);
  }
  max_choice_jump_ = 0;
  for (const GrammarRule& rule : rules_) {
    uint32_t shortest = kUnbounded, longest = 0;
    for (uint32_t start : rule.alternatives) {
      if (min_rest_[start] == kUnbounded) continue;
      shortest = std::min(shortest, min_rest_[start]);
      longest = std::max(longest, min_rest_[start]);
    }
    if (shortest != kUnbounded) max_choice_jump_ = std::max(max_choice_jump_, longest - shortest);
  }
}

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
