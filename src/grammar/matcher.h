// One request's parse state over a CompiledGrammar: accepts tokens (or raw bytes), computes the
// allowed-token bitmask for the next step, and rolls back accepted tokens (the state after each
// token is kept). Not thread-safe; one matcher per sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_pool.h"
#include "grammar/token_walk.h"
#include "grammar/unique_items.h"

namespace strata::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // words: ceil(vocab/32) uint32 (more are zeroed), bit (id%32) of word (id/32) = allowed (the
  // XGrammar layout). End-of-generation tokens are allowed exactly when can_end(). Inside a
  // unique array, tokens that would end an item equal to an earlier one are not (unique_items.h).
  void fill_next_token_bitmask(std::span<uint32_t> words);
  // The same, for a generation that may take at most `budget` more tokens, this one included:
  // near the end of the budget only tokens after which the grammar can still be completed in
  // the tokens left are allowed (counting one byte per token, which byte-level vocabularies
  // always offer), so an output that runs to its limit still ends as a sentence. The check (a
  // walk of the allowed tokens whose fate restrict_to_budget's bounds leave open: in a string,
  // those that may end it) runs once the end is within kBudgetLookahead bytes plus the
  // grammar's largest choice jump (at most kMaxJumpMargin) of the budget; a token that jumps
  // further in one step (through several choices at once) can still defeat it: it is a guard
  // for the last steps, not a planner.
  void fill_next_token_bitmask(std::span<uint32_t> words, size_t budget);
  static constexpr size_t kBudgetLookahead = 48;
  static constexpr size_t kMaxJumpMargin = 1024;
  // The fewest bytes that complete the input so far into a sentence (0 when it may end now).
  size_t distance_to_end() const { return distance(history_.back()); }
  // False, state unchanged, when the token is not allowed. An end-of-generation token is
  // accepted when can_end() and terminates the matcher.
  bool accept_token(int32_t id);
  // Raw bytes (tests, grammar-check); counts as one step for rollback. Past the parse-stack
  // budget (Advancer::kMaxStepWork, only pathologically ambiguous grammars reach it) nothing
  // more is accepted.
  bool accept_string(std::string_view bytes);
  bool can_end() const { return history_.back().can_end && !history_.back().finished; }
  bool is_terminated() const {
    return history_.back().finished || (history_.back().can_end && history_.back().tops.empty());
  }
  void rollback(size_t n_tokens);
  size_t n_accepted_tokens() const { return history_.size() - 1; }
  // Live parse stacks (more than one where the grammar is ambiguous so far).
  size_t n_stacks() const { return history_.back().tops.size(); }
  // Masks are reused while the state repeats, and stack-dependent token checks while their
  // stack repeats (on by default); off, every mask is computed from the cached sets alone.
  void set_reuse_masks(bool reuse) { reuse_masks_ = reuse; }
  // The bytes that may come next, as a GBNF-style class ("[a-z\x22]"), for error messages.
  std::string expected_bytes() const;

 private:
  class Trial;
  bool advance_bytes(std::string_view bytes, StackSet* out);
  void push_state(const StackSet& state);
  // What the stacks of `state` read the next "[" as (unique_items.h).
  UniqueItems::Opens array_opened_at(const StackSet& state) const;
  // The grammar's mask for the state now (memoized).
  void fill_grammar_mask(std::span<uint32_t> words);
  // Clears the allowed tokens that would end an item equal to an earlier one of its array; with
  // `avoid_forced` (the engine's masks, those with a budget) also those after which the
  // grammar forces an item into a duplicate, which the plain mask refuses only where it ends.
  void restrict_to_unique_items(std::span<uint32_t> words, bool avoid_forced);
  void avoid_forced_duplicates(std::span<uint32_t> words);
  bool forced_into_duplicate(std::string_view piece);
  static constexpr size_t kMaxForcedBytes = 64;
  void compute_mask(const StackSet& state, std::span<uint32_t> words);
  const std::vector<uint8_t>& leftovers_accepted(uint32_t top, const PositionTokens& t);
  size_t distance(const StackSet& state) const;
  // Clears the allowed tokens after which the grammar needs more than `room` bytes to end.
  void restrict_to_budget(const StackSet& state, std::span<uint32_t> words, size_t room);
  // What the frame of a stack top tells about the tokens that stay in it (restrict_to_budget).
  enum class Frame : uint8_t { kFit, kFar, kOpen };
  void restrict_by_frames(const StackSet& state, std::span<uint32_t> words, size_t room);
  void walk_budget_indices(const StackSet& state);
  // The shortest token that can move the end past `room` bytes.
  size_t shortest_past_room(const StackSet& state, size_t room) const;
  // Appends to budget_indices_ the allowed tokens of sorted indices [begin, end) that are at
  // least min_length bytes long.
  void push_long_indices(uint32_t begin, uint32_t end, size_t min_length,
                         std::span<const uint32_t> words);
  // Appends to budget_indices_ the allowed tokens that may leave the frame of `top` (its
  // uncertain ones).
  void push_leaving_indices(uint32_t top, std::span<const uint32_t> words);
  // Walks budget_indices_ sorted and unique, not as the memo's.
  void walk_budget_subset(const StackSet& state);
  static constexpr size_t kRememberedBudgetWalk = 16;  // tokens
  // The most a token that stays in the frame of `pos` can leave to write before that frame
  // ends (Grammar::kUnbounded when the frame can push frames without end).
  uint32_t flat_reach(uint32_t pos);
  static constexpr size_t kMaxFlatReach = 4096;

  std::shared_ptr<const CompiledGrammar> compiled_;
  // Only when the grammar has unique-array rules: the items written so far, and its mark after
  // each history state (for rollback).
  bool tracks_unique_ = false;
  UniqueItems unique_;
  std::vector<UniqueItems::Mark> unique_marks_;
  std::vector<std::string_view> near_pieces_;
  std::vector<int32_t> near_ids_;
  StackPool pool_;
  Advancer advancer_;
  std::vector<StackSet> history_;  // [0]: start; back(): now
  // Pool size when each history state was reached: rollback drops the nodes made after it.
  std::vector<size_t> history_pool_size_;
  StackSet step_a_, step_b_;
  TokenWalkScratch walk_scratch_;
  std::vector<uint32_t> positions_;
  StackSet below_;
  std::vector<uint32_t> budget_indices_;  // sorted-vocabulary indices of the tokens to walk
  std::vector<int32_t> too_far_;
  // Each walked token and the distance to the end after it (SIZE_MAX when the walk rejects it).
  // A walk of every allowed token costs tens of ms inside a string of a 100K vocabulary:
  // restrict_to_budget walks only the tokens its bounds leave open, and keeps the result for
  // memo_state_ (budget_memo_valid_), whose state repeats inside a string while the budget
  // shrinks.
  std::vector<std::pair<int32_t, size_t>> budget_distances_;
  bool budget_memo_valid_ = false;
  size_t budget_memo_min_length_ = 0;  // the memo holds the allowed tokens at least this long
  // flat_reach per position, and its search's scratch.
  std::unordered_map<uint32_t, uint32_t> flat_reach_;
  std::unordered_set<uint64_t> flat_seen_;
  std::vector<std::pair<uint32_t, uint32_t>> flat_work_;
  std::vector<uint32_t> keep_words_;
  std::vector<Frame> top_frames_;  // per top of the state restrict_to_budget was given
  static constexpr size_t kMaxLeftoverCache = 1024;
  // Keyed by the top's position and the return signatures of the frames below it.
  // Held here too (cheap to look up, and alive while a mask uses them); the grammar's shared
  // cache fills it.
  std::unordered_map<std::string, CompiledGrammar::LeftoverFlags> leftover_cache_;
  std::string leftover_key_;
  // The last mask, for the state it was computed for (masks depend only on the state, which
  // repeats while generating inside a string or a long repetition).
  StackSet memo_state_;
  std::vector<uint32_t> memo_words_;
  bool memo_valid_ = false;
  bool reuse_masks_ = true;
};

}  // namespace strata::grammar
