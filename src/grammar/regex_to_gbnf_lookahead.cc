// Lookaheads whose language is regular and cheap to build: the two shapes schemas write.
//
//   ^(?=X)(?!Y)R      leading lookaheads: every one tests the whole text from its start, so the
//                     language is ^R ∩ ^X ∩ ¬^Y (`^X` under search semantics: a prefix matches X;
//                     a `$` inside X reaches the end of the text).
//   ^((?!X)c)*$       the "tempered" character: no position of the text starts a match of X, so
//                     the language is ^c*$ ∩ ¬(.*X.*), X unanchored (X may not match the empty
//                     string: it would then fail at every position but the end).
//
// Anything else with a lookaround stays refused by the pattern parser, naming it.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grammar/regex_to_gbnf_automaton.h"

namespace strata::grammar::regex_detail {
namespace {

// The offset just past the group opening at `open` (a '('), skipping escapes and classes;
// npos when the group does not close.
size_t group_end(std::string_view p, size_t open) {
  int depth = 0;
  for (size_t i = open; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      for (++i; i < p.size() && p[i] != ']'; ++i) {
        if (p[i] == '\\') ++i;
      }
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// True when a '|' stands outside every group (it splits the whole pattern).
bool has_top_level_bar(std::string_view p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '[' || p[i] == '(') {
      const size_t end = p[i] == '(' ? group_end(p, i) : p.find(']', i + 1);
      if (end == std::string_view::npos) return false;  // the parser reports it
      i = p[i] == '(' ? end - 1 : end;
    } else if (p[i] == '|') {
      return true;
    }
  }
  return false;
}

constexpr size_t kMaxLeadingLookaheads = 8;

bool is_lookahead_at(std::string_view p, size_t pos) {
  return p.substr(pos, 3) == "(?=" || p.substr(pos, 3) == "(?!";
}

// ^(?=X)(?!Y)...R
std::optional<Result<CharDfa>> leading_lookaheads(std::string_view p) {
  if (p.empty() || p[0] != '^' || !is_lookahead_at(p, 1) || has_top_level_bar(p)) {
    return std::nullopt;
  }
  size_t pos = 1;
  std::vector<std::pair<std::string, bool>> tests;  // (X, negative)
  while (is_lookahead_at(p, pos)) {
    const size_t end = group_end(p, pos);
    // Each lookahead is an automaton and an intersection: a hostile pattern of thousands is
    // left to the parser, which refuses it.
    if (end == std::string_view::npos || tests.size() == kMaxLeadingLookaheads) {
      return std::nullopt;
    }
    tests.emplace_back(std::string(p.substr(pos + 3, end - 1 - (pos + 3))), p[pos + 2] == '!');
    pos = end;
  }
  auto dfa = CharDfa::from_pattern("^" + std::string(p.substr(pos)));
  if (!dfa.ok()) return dfa;
  for (const auto& [body, negative] : tests) {
    auto test = CharDfa::from_pattern("^(?:" + body + ")");
    if (!test.ok()) return test;
    *dfa = dfa->intersect(negative ? test->complement() : *test);
    if (dfa->size() > kMaxDfaStates) break;  // the caller reports the size
  }
  return dfa;
}

// ^((?!X)c)*$ or ^(?:(?!X)c)+$
std::optional<Result<CharDfa>> tempered_character(std::string_view p) {
  if (p.size() < 2 || p.front() != '^' || p.back() != '$' || p[1] != '(') return std::nullopt;
  const size_t group = group_end(p, 1);
  if (group == std::string_view::npos || group + 2 != p.size()) return std::nullopt;
  const char repeat = p[group];
  if (repeat != '*' && repeat != '+') return std::nullopt;
  const size_t look = p.substr(1, 3) == "(?:" ? 4 : 2;
  if (p.substr(look, 3) != "(?!") return std::nullopt;
  const size_t look_end = group_end(p, look);
  if (look_end == std::string_view::npos) return std::nullopt;
  const std::string avoided(p.substr(look + 3, look_end - 1 - (look + 3)));
  const std::string character(p.substr(look_end, group - 1 - look_end));
  // One character atom, and nothing else, follows the lookahead.
  size_t atom_end = 0;
  if (character.empty() || !parse_char_atom(character, 0, &atom_end).ok() ||
      atom_end != character.size()) {
    return std::nullopt;
  }
  auto whole = CharDfa::from_pattern("^(?:" + avoided + ")$");
  if (!whole.ok()) return whole;
  if (whole->accepts("")) return std::nullopt;
  auto dfa = CharDfa::from_pattern("^(?:" + character + ")" + std::string(1, repeat) + "$");
  if (!dfa.ok()) return dfa;
  auto avoid = CharDfa::from_pattern("(?:" + avoided + ")");
  if (!avoid.ok()) return avoid;
  return dfa->intersect(avoid->complement());
}

}  // namespace

std::optional<Result<CharDfa>> lookahead_dfa(std::string_view pattern) {
  if (pattern.find("(?=") == std::string_view::npos &&
      pattern.find("(?!") == std::string_view::npos) {
    return std::nullopt;
  }
  if (auto dfa = leading_lookaheads(pattern)) return dfa;
  return tempered_character(pattern);
}

}  // namespace strata::grammar::regex_detail
