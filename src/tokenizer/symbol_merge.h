// The merge loop SentencePiece and byte-level BPE share. A word starts as a doubly linked list
// of symbols (characters or bytes); candidate merges of adjacent symbols wait in a heap, and the
// best one (highest priority, then left-most) merges first, after which its new neighbours are
// queued. Each model supplies only how a pair is looked up: by text and score (SentencePiece) or
// by token ids and merge rank (BPE).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {

struct MergeSymbol {
  size_t start = 0;  // byte range in the word
  size_t len = 0;    // 0 once merged into its left neighbour
  int64_t prev = -1;
  int64_t next = -1;
  TokenId id = -1;  // the symbol's token, where known
};

// A merge a model allows: its priority (score, or minus the merge rank) and resulting token.
struct MergeChoice {
  double priority;
  TokenId result;
};

struct MergeCandidate {
  double priority = 0;
  int64_t left = 0;
  int64_t right = 0;
  size_t len = 0;  // combined length when queued; a mismatch later means the entry is stale
  TokenId result = -1;
};

// Appends one symbol per unit of `text`, `unit_length(pos)` bytes each, linked in order.
template <typename UnitLength>
void split_symbols(size_t size, UnitLength unit_length, std::vector<MergeSymbol>& symbols) {
  symbols.clear();
  for (size_t pos = 0; pos < size;) {
    MergeSymbol s;
    s.start = pos;
    s.len = unit_length(pos);
    s.prev = static_cast<int64_t>(symbols.size()) - 1;
    pos += s.len;
    s.next = pos < size ? static_cast<int64_t>(symbols.size()) + 1 : -1;
    symbols.push_back(s);
  }
}

// Merges until no allowed pair is left. find(left, right) returns the MergeChoice for two adjacent
// symbols, or nullopt. `heap` is scratch reused across calls.
template <typename FindRule>
void merge_symbols(std::vector<MergeSymbol>& symbols, std::vector<MergeCandidate>& heap,
                   FindRule find) {
  // Max-heap order: higher priority first, then the left-most pair.
  auto less = [](const MergeCandidate& a, const MergeCandidate& b) {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  };
  auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    std::optional<MergeChoice> rule = find(symbols[left], symbols[right]);
    if (!rule) return;
    heap.push_back(MergeCandidate{rule->priority, left, right,
                                  symbols[left].len + symbols[right].len, rule->result});
    std::push_heap(heap.begin(), heap.end(), less);
  };
  heap.clear();
  for (size_t i = 1; i < symbols.size(); ++i)
    try_add(static_cast<int64_t>(i) - 1, static_cast<int64_t>(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), less);
    const MergeCandidate c = heap.back();
    heap.pop_back();
    MergeSymbol& left = symbols[c.left];
    MergeSymbol& right = symbols[c.right];
    // Symbols only grow or vanish, so unchanged lengths mean the pair is still as queued.
    if (left.len == 0 || right.len == 0 || left.len + right.len != c.len) continue;
    left.len += right.len;
    left.id = c.result;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }
}

}  // namespace strata::tokenizer
