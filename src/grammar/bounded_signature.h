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
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {

class BoundedSignatures {
 public:
  // Depths asked for are at most max_depth.
  BoundedSignatures(const Grammar& grammar, int max_depth);
  uint32_t position(uint32_t pos, int depth);

 private:
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };
  // Ids of (a, b) pairs: open addressing with linear probing, a table of 64-bit keys at most half
  // full. The pairs are most of a compile's signature work (millions on a large schema), where
  // std::unordered_map's node per entry cost a third of the compile.
  class PairIds {
   public:
    // The id of `key`, or `next` (and next + 1 left in *next_id) when it is new.
    uint32_t find_or_add(uint64_t key, uint32_t* next_id);

   private:
    void grow();
    static constexpr uint64_t kEmpty = UINT64_MAX;  // no pair of ids (both < 2^32 - 1) is this
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> values_;
    size_t size_ = 0;
    int shift_ = 64;  // slot = hash >> shift_ (64 - log2 of the capacity)
  };
  uint32_t rule(uint32_t rule, int depth);
  uint32_t intern(std::vector<uint32_t> structure);
  // (tag, a, b) structures, the most common, without allocating.
  uint32_t intern3(uint32_t tag, uint32_t a, uint32_t b);
  // Past this recursion depth a position gets an id of its own (never shared, so never wrong):
  // a pathological grammar must not exhaust the stack.
  static constexpr int kMaxRecursion = 4000;

  const Grammar& grammar_;
  int max_depth_;
  // Memo tables indexed [index][depth], allocated for an index when it is first asked for;
  // kUnset where not computed yet.
  std::vector<std::vector<uint32_t>> position_memo_, rule_memo_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> ids_;
  PairIds ids3_[3];       // per tag, keyed by a << 32 | b
  uint32_t next_id_ = 2;  // 0: kNone, 1: kEnd
  int recursion_ = 0;
};

}  // namespace strata::grammar
