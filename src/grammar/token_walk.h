// Feeding many byte strings (tokens, or what is left of them) to one parse state, sharing work
// between strings with a common prefix: strings come in byte order (a depth-first walk of their
// trie), the state after each prefix length of the previous string is kept, and the next string
// resumes from the prefix it shares. When a prefix dies, every following string with that
// prefix is decided without work.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/stack_pool.h"
#include "grammar/token_vocabulary.h"

namespace strata::grammar {

// (leftover, id) pairs in byte order of the leftover (as std::string_view compares), then by id,
// with the first 8 bytes compared as one integer: leftovers are short tails of pieces, and a
// memcmp call per comparison was a tenth of a compile. The leftovers must be views into a
// TokenVocabulary's sorted pieces, which have kPieceSlack readable bytes past their end.
struct LeftoverLess {
  static uint64_t head(std::string_view s) {
    static_assert(TokenVocabulary::kPieceSlack >= sizeof(uint64_t));
    uint64_t word;
    std::memcpy(&word, s.data(), sizeof(word));
    // The first byte most significant.
    if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
    return s.size() >= 8 ? word : word & ~(~uint64_t{0} >> (8 * s.size()));
  }
  bool operator()(const std::pair<std::string_view, int32_t>& a,
                  const std::pair<std::string_view, int32_t>& b) const {
    const uint64_t head_a = head(a.first), head_b = head(b.first);
    if (head_a != head_b) return head_a < head_b;
    if (a.first.size() > 8 && b.first.size() > 8) {
      if (const int c = a.first.substr(8).compare(b.first.substr(8)); c != 0) return c < 0;
    } else if (a.first.size() != b.first.size()) {
      return a.first.size() < b.first.size();  // equal heads: the shorter is a prefix
    }
    return a.second < b.second;
  }
};

struct TokenWalkScratch {
  std::vector<StackSet> states;  // states[d]: after the first d bytes of the current string
  // escape_at[d]: the state after d bytes could pop the start state's bottom and the byte at d
  // may follow there (per the `follow` set given to the walk).
  std::vector<bool> escape_at;
};

// What walk_strings reports.
enum class WalkReport {
  kAll,
  // Strings that die without an escape (nothing set in escape_at below their death) are not
  // visited, and the run of strings that share such a dead prefix is skipped by a search
  // instead of one comparison per string: most of a vocabulary dies in its first bytes.
  kAcceptedOrEscaping,
};

// visit(k, accepted, dead_depth) for each k in `indices`, whose strings piece_of(k) ascend:
// accepted when the state survives all bytes; otherwise the state died after dead_depth bytes,
// and scratch.escape_at[0 .. dead_depth-1] says where the string could have left the start
// state's rule instead (with `follow` null nothing is recorded).
template <class PieceOf, class Visit>
void walk_strings(std::span<const uint32_t> indices, PieceOf&& piece_of, size_t max_length,
                  Advancer& advancer, const StackSet& start, const ByteSet* follow,
                  TokenWalkScratch& scratch, Visit&& visit, WalkReport report = WalkReport::kAll) {
  const size_t depth_max = max_length + 1;
  if (scratch.states.size() < depth_max) scratch.states.resize(depth_max);
  if (scratch.escape_at.size() < depth_max) scratch.escape_at.resize(depth_max);
  scratch.states[0] = start;
  std::string_view prev;
  size_t dead = 0;  // prev's prefix of this length emptied the state (0: prev survived)
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint32_t k = indices[i];
    const std::string_view piece = piece_of(k);
    const size_t limit = std::min(prev.size(), piece.size());
    size_t shared = 0;
    while (shared < limit && prev[shared] == piece[shared]) ++shared;
    prev = piece;
    if (dead != 0 && shared >= dead) {
      visit(k, false, dead);
      continue;
    }
    dead = 0;
    for (size_t d = shared; d < piece.size(); ++d) {
      const auto byte = static_cast<uint8_t>(piece[d]);
      scratch.escape_at[d] = follow != nullptr && scratch.states[d].can_end && follow->test(byte);
      StackSet& next = scratch.states[d + 1];
      advancer.advance(scratch.states[d], byte, &next);
      if (!next.alive()) {
        dead = d + 1;
        break;
      }
    }
    if (dead == 0 || report == WalkReport::kAll ||
        std::find(scratch.escape_at.begin(), scratch.escape_at.begin() + dead, true) !=
            scratch.escape_at.begin() + dead) {
      visit(k, dead == 0, dead);
      continue;
    }
    // Skip the strings after i that start with piece[0, dead): a contiguous run, found by
    // galloping then bisecting.
    const std::string_view prefix = piece.substr(0, dead);
    auto has_prefix = [&](size_t j) { return piece_of(indices[j]).starts_with(prefix); };
    size_t lo = i, step = 1;  // has_prefix(lo) holds
    while (lo + step < indices.size() && has_prefix(lo + step)) {
      lo += step;
      step *= 2;
    }
    size_t hi = std::min(lo + step, indices.size());  // has_prefix(hi) fails or hi is the end
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (has_prefix(mid) ? lo : hi) = mid;
    }
    i = lo;
    prev = piece_of(indices[lo]);
  }
}

// accepted[k]: whether `start` accepts leftovers[k] whole (leftovers ascending, at most
// max_length bytes): the mask-time check of uncertain tokens, and its precomputed form.
inline void accept_leftovers(std::span<const std::string_view> leftovers, size_t max_length,
                             Advancer& advancer, const StackSet& start, TokenWalkScratch& scratch,
                             std::vector<uint8_t>* accepted) {
  accepted->assign(leftovers.size(), 0);
  if (start.tops.empty()) return;
  std::vector<uint32_t> indices(leftovers.size());
  std::iota(indices.begin(), indices.end(), 0u);
  walk_strings(
      indices, [&](uint32_t k) { return leftovers[k]; }, max_length, advancer, start, nullptr,
      scratch, [&](uint32_t k, bool ok, size_t) { (*accepted)[k] = ok; });
}

}  // namespace strata::grammar
