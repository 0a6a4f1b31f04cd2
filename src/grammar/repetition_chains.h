// Rules that are levels of a repetition chain. The GBNF parser writes x{0,255} as 255 rules
// "at most i more x" (each `x next | ""`, x's alternatives inlined before the tail call) and
// x{1000} as 1000 rules `x next`; a JSON string with maxLength 65535 has blocks of a thousand
// such levels. Bounded signatures (bounded_signature.h) of level i at depth d otherwise ask for
// level i + 1 at depth d - 1, and so on down: every level at every depth up to the longest token
// (128 bytes), a thousand levels times 128 depths.
//
// Levels of one chain shape are interchangeable while the chain is deep enough: if rules r and
// s have the same chain shape (their alternatives equal element for element, byte sets as the
// caller compares them, calls by rule id, except the tail call: the last element of an
// alternative, calling the rule below) and both have more than d levels below them of that
// shape, they accept, reject and may end on the same strings of at most d bytes. By induction on
// d: what comes before the tail call is the same and takes at least one byte, so the rules below
// are asked at depth d - 1 or less, where they are interchangeable; after the tail call the
// alternative ends, and whether it may end within d bytes is the same for both, because either
// every level has an empty alternative (the rules below have min length 0: "at most" chains) or
// every alternative has the tail call (min length at least the levels below, more than d:
// "exactly" chains). Rules with both kinds of alternatives, or tail calls to different rules,
// are no level of a chain.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {

class RepetitionChains {
 public:
  // set_ids[s]: the id byte set s is compared by (equal ids, equal sets).
  RepetitionChains(const Grammar& grammar, std::span<const uint32_t> set_ids);
  static constexpr uint32_t kNone = UINT32_MAX;
  // r's chain shape (kNone when r is no level of a chain).
  uint32_t shape(uint32_t r) const { return shape_[r]; }
  // How many levels of r's shape follow r (kEndless in a cycle: `x ::= [a] x | ""`).
  uint32_t levels_below(uint32_t r) const { return levels_below_[r]; }
  static constexpr uint32_t kEndless = UINT32_MAX;

 private:
  std::vector<uint32_t> shape_;
  std::vector<uint32_t> below_;  // the rule the tail calls call, for levels
  std::vector<uint32_t> levels_below_;
};

}  // namespace strata::grammar
