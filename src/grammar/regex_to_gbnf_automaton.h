// Regular languages over Unicode code points as deterministic automata, for the string
// constraints a single GBNF expression cannot write: a pattern's complement (`not`, keys that
// no patternProperties pattern matches), the intersection of several patterns (`format` and
// `pattern` together), lengths a pattern does not imply, and anchors inside groups.
//
// Built from ECMA-262 patterns by Thompson's construction (`^` and `$` as assertions: `^` holds
// before the first character, `$` after the last), with JSON Schema's search semantics (a
// pattern matches anywhere unless anchored), determinized by the subset construction and
// minimized by Moore's partition refinement. Emitted as right-linear GBNF rules, one per state,
// whose character classes are the JSON-encoded forms of the code points (regex_to_gbnf's
// charset_gbnf), so the matcher's stack stays flat.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/regex_to_gbnf_charset.h"
#include "strata/result.h"

namespace strata::grammar {

class CharDfa {
 public:
  // The strings `pattern` matches somewhere (JSON Schema `pattern` semantics).
  static Result<CharDfa> from_pattern(std::string_view pattern);
  // Exactly the given strings (UTF-8).
  static CharDfa literals(const std::vector<std::string>& texts);
  // Every string.
  static CharDfa any();

  CharDfa complement() const;
  CharDfa intersect(const CharDfa& other) const;
  // The strings of this language whose length in code points lies in [min, max] (max -1:
  // unbounded).
  CharDfa with_length(long min, long max) const;

  bool empty() const;
  bool accepts(std::string_view text) const;
  // States; SIZE_MAX when a construction stopped at the limit (the language is then unknown).
  size_t size() const { return overflowed_ ? SIZE_MAX : states_.size(); }

  // Writes one rule per state through `new_rule` (a fresh rule name) and `set_rule` (its body)
  // and returns the start rule's name; the language must not be empty.
  std::string to_gbnf(const std::function<std::string()>& new_rule,
                      const std::function<void(const std::string&, std::string)>& set_rule) const;

 private:
  struct State {
    std::vector<std::pair<regex_detail::CharSet, uint32_t>> next;  // disjoint sets
    bool accepting = false;
  };
  // Keeps the states reachable from the start that can reach an accepting state, then merges
  // equivalent ones. The start is state 0; an empty language is one non-accepting state.
  void minimize();

  std::vector<State> states_;
  bool overflowed_ = false;
};

// Upper bound on automaton states (after each operation) before the converter gives up with
// kUnsupported.
inline constexpr size_t kMaxDfaStates = 4000;

namespace regex_detail {
// The lookaheads whose language CharDfa builds (regex_to_gbnf_lookahead.cc: leading ones after
// `^`, and the tempered character `^((?!X).)*$`); nullopt when `pattern` has neither shape.
std::optional<Result<CharDfa>> lookahead_dfa(std::string_view pattern);
}  // namespace regex_detail

}  // namespace strata::grammar
