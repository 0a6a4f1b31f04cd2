// Ids for "what a parse position does to the next d bytes": two positions with the same id at
// depth d accept, reject and may end on exactly the same byte strings of length at most d. The
// compiled grammar keys its per-token work on these ids, so positions that differ only beyond
// the longest token share one walk of the vocabulary: the 2048 positions of a string with
// maxLength 2048 all look alike to tokens of 16 bytes until the last 16.
//
// sig(p, d) is interned structure, exact (no hash can collide):
//   d < 0          -> kNone (nothing of the position can be seen)
//   kEnd           -> kEnd
//   kBytes set     -> (set, sig(p + 1, d - 1))
//   kRule r        -> (rule_sig(r, d), sig(p + 1, d - min_length(r)))
//   rule_sig(r, d) =  the set of sig(alternative start, d); a set of one is its element
// Using d - min_length(r) for what follows a rule overstates the bytes left there, which only
// makes ids finer, never wrongly equal.
//
// Signatures may be taken over an alphabet A: they then say what a position does to the strings
// over A only, and a byte set reads as its intersection with A (an empty one sees nothing
// further). The few tokens longer than 32 bytes (runs of '-', '=', ' ' and some CJK phrases)
// need signatures 128 bytes deep; over their own few bytes, a string's other alternatives
// (escapes, most UTF-8 lead bytes) drop out of the signature at once instead of being unrolled
// to that depth.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/interned_ids.h"
#include "grammar/repetition_chains.h"

namespace strata::grammar {

class BoundedSignatures {
 public:
  // Depths asked for are at most max_depth; signatures over `alphabet` (every byte by default).
  BoundedSignatures(const Grammar& grammar, int max_depth, const ByteSet& alphabet = all_bytes());
  static ByteSet all_bytes();
  uint32_t position(uint32_t pos, int depth);

 private:
  uint32_t rule(uint32_t rule, int depth);
  // Rule templates (rule()): a rule's alternatives with their calls left open.
  uint32_t shape(uint32_t rule);
  bool push_template_key(uint32_t rule, int depth);
  static std::vector<uint32_t> restricted_sets(const Grammar& grammar, const ByteSet& alphabet);
  uint32_t restricted_set(uint32_t set) const { return restricted_set_[set]; }
  static constexpr uint32_t kEmptySet = UINT32_MAX;
  // The id of a rule's set of alternative ids (ascending, three or more).
  uint32_t intern(std::span<const uint32_t> ids);
  // (tag, a, b) structures, the most common, without allocating.
  uint32_t intern3(uint32_t tag, uint32_t a, uint32_t b);
  // Past this recursion depth a position gets an id of its own (never shared, so never wrong):
  // a pathological grammar must not exhaust the stack.
  static constexpr int kMaxRecursion = 4000;

  const Grammar& grammar_;
  int max_depth_;
  std::vector<uint32_t> restricted_set_;
  // Memo tables indexed [index][depth], allocated for an index when it is first asked for;
  // kUnset where not computed yet.
  std::vector<std::vector<uint32_t>> position_memo_, rule_memo_;
  WordIds ids_;
  std::vector<uint32_t> alternative_ids_;  // rule()'s stack of alternative ids
  std::vector<uint32_t> shape_;            // per rule, kUnset until shape() is asked
  WordIds shapes_;
  std::vector<uint32_t> shape_words_;     // shape()'s buffer
  std::vector<uint32_t> template_words_;  // rule()'s stack of template keys
  WordIds templates_;
  // Levels of repetition chains: (chain shape << 32 | depth) -> the id of every level with more
  // than `depth` levels below it (repetition_chains.h).
  RepetitionChains chains_;
  KeyIds chain_ids_;
  KeyIds ids3_[3];        // per tag, keyed by a << 32 | b
  uint32_t next_id_ = 2;  // 0: kNone, 1: kEnd
  int recursion_ = 0;
};

// Signatures as a vocabulary needs them: up to `short_depth` bytes over every byte, deeper only
// over `long_alphabet`, the bytes of the tokens longer than short_depth (see above).
class TokenSignatures {
 public:
  TokenSignatures(const Grammar& grammar, int short_depth, int max_depth,
                  const ByteSet& long_alphabet);
  // What `pos` does to the strings of up to `depth` bytes a token can hold: equal ids, equal
  // behaviour on every such string. One id space.
  uint32_t position(uint32_t pos, int depth);
  // The same for the tails (bytes after the first) of one part of the tokens: those of at most
  // short_depth bytes when depth < short_depth, else the long ones. The two parts have id
  // spaces of their own: a caller keys its results by the part as well.
  uint32_t of_tails(uint32_t pos, int depth) {
    return depth < short_depth_ ? short_.position(pos, depth) : long_.position(pos, depth);
  }

 private:
  int short_depth_;
  BoundedSignatures short_, long_;
  KeyIds pairs_;  // (short id, long id or 0) -> position id
  uint32_t next_pair_id_ = 1;
};

}  // namespace strata::grammar
