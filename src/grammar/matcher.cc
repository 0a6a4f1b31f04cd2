#include "grammar/matcher.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "grammar/token_walk.h"

namespace strata::grammar {
namespace {

// Bit `id` of a mask in the XGrammar layout (ids past the words read as not allowed).
bool is_allowed(std::span<const uint32_t> words, int32_t id) {
  const auto w = static_cast<size_t>(id >> 5);
  return w < words.size() && ((words[w] >> (id & 31)) & 1) != 0;
}
void allow(std::span<uint32_t> words, int32_t id) {
  if (static_cast<size_t>(id >> 5) < words.size()) words[id >> 5] |= uint32_t{1} << (id & 31);
}
void disallow(std::span<uint32_t> words, int32_t id) {
  words[static_cast<size_t>(id >> 5)] &= ~(uint32_t{1} << (id & 31));
}

}  // namespace

// Bytes run through the grammar and the unique-items lexer only to see where they lead: both
// are put back as they were when the trial ends.
class GrammarMatcher::Trial {
 public:
  explicit Trial(GrammarMatcher& m) : m_(m), unique_(m.unique_.mark()), pool_(m.pool_.size()) {}
  ~Trial() {
    m_.unique_.restore(unique_);
    m_.pool_.truncate(pool_);
  }
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;

 private:
  GrammarMatcher& m_;
  UniqueItems::Mark unique_;
  size_t pool_;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : compiled_(std::move(grammar)), advancer_(compiled_->grammar(), &pool_) {
  tracks_unique_ = compiled_->grammar().unique_array_open() != Grammar::kNone;
  StackSet start;
  advancer_.start_rule(compiled_->grammar().root(), &start);
  push_state(start);
}

void GrammarMatcher::push_state(const StackSet& state) {
  history_.push_back(state);
  history_pool_size_.push_back(pool_.size());
  if (tracks_unique_) unique_marks_.push_back(unique_.mark());
}

UniqueItems::Opens GrammarMatcher::array_opened_at(const StackSet& state) const {
  const Grammar& g = compiled_->grammar();
  bool unique = false, plain = false;
  for (uint32_t top : state.tops) {
    const Element& e = g.element(pool_[top].pos);
    if (e.kind != ElementKind::kBytes || !g.byte_set(e.value).test('[')) continue;
    (e.value == g.unique_array_open() ? unique : plain) = true;
  }
  return unique && !plain ? UniqueItems::Opens::kUnique : UniqueItems::Opens::kPlain;
}

// The stacks after `bytes`; the unique-items lexer follows along (the caller restores it when
// the bytes are refused or only tried).
bool GrammarMatcher::advance_bytes(std::string_view bytes, StackSet* out) {
  *out = history_.back();
  for (char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    const UniqueItems::Opens opens =
        tracks_unique_ && byte == '[' ? array_opened_at(*out) : UniqueItems::Opens::kPlain;
    advancer_.advance(*out, byte, &step_a_);
    std::swap(*out, step_a_);
    if (!out->alive()) return false;
    if (tracks_unique_ && !unique_.accept(byte, opens)) return false;
  }
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  if (id < 0 || static_cast<size_t>(id) >= vocab.size()) return false;
  if (vocab.is_eog(id)) {
    if (!can_end()) return false;
    push_state(StackSet{{}, false, true});
    return true;
  }
  const std::string& piece = vocab.piece(id);
  if (piece.empty()) return false;
  return accept_string(piece);
}

bool GrammarMatcher::accept_string(std::string_view bytes) {
  if (history_.back().finished) return false;
  const size_t mark = pool_.size();
  if (!advance_bytes(bytes, &step_b_) || advancer_.overflowed()) {
    pool_.truncate(mark);
    if (tracks_unique_) unique_.restore(unique_marks_.back());
    return false;
  }
  push_state(step_b_);
  return true;
}

void GrammarMatcher::rollback(size_t n_tokens) {
  n_tokens = std::min(n_tokens, history_.size() - 1);
  if (n_tokens == 0) return;
  history_.resize(history_.size() - n_tokens);
  history_pool_size_.resize(history_.size());
  pool_.truncate(history_pool_size_.back());
  if (tracks_unique_) {
    unique_marks_.resize(history_.size());
    unique_.restore(unique_marks_.back());
  }
  memo_valid_ = false;  // its state may hold dropped nodes
  budget_memo_valid_ = false;
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
  fill_grammar_mask(words);
  restrict_to_unique_items(words, /*avoid_forced=*/false);
}

void GrammarMatcher::fill_grammar_mask(std::span<uint32_t> words) {
  const StackSet& state = history_.back();
  const size_t n_words = std::min(words.size(), compiled_->mask_words());
  if (reuse_masks_ && memo_valid_ && memo_state_ == state) {
    std::memcpy(words.data(), memo_words_.data(), n_words * sizeof(uint32_t));
  } else {
    compute_mask(state, words.first(n_words));
    budget_memo_valid_ = false;
    memo_state_ = state;
    memo_words_.assign(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n_words));
    memo_valid_ = true;
  }
  std::fill(words.begin() + static_cast<std::ptrdiff_t>(n_words), words.end(), 0u);
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words, size_t budget) {
  fill_grammar_mask(words);
  const size_t room = budget > 0 ? budget - 1 : 0;  // tokens that may follow this one
  const StackSet& state = history_.back();
  // Far from the end nothing can be out of reach yet; the margin covers the bytes one token
  // takes plus the longest jump one choice of the grammar makes.
  const size_t margin =
      kBudgetLookahead + std::min<size_t>(compiled_->grammar().max_choice_jump(), kMaxJumpMargin);
  if (distance(state) + margin > room) restrict_to_budget(state, words, room);
  restrict_to_unique_items(words, /*avoid_forced=*/true);
}

// A duplicate is refused where it ends; an item the grammar then forces to end that way (a
// string of fixed length, an enum-like pattern) would leave no token at all. So the tokens that
// leave a string item a proper prefix of an earlier item are followed along the bytes the
// grammar forces next, and cleared when those end it as the duplicate.
void GrammarMatcher::avoid_forced_duplicates(std::span<uint32_t> words) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  near_ids_.clear();
  if (unique_.inside_string()) {
    near_pieces_.clear();
    unique_.near_duplicate_pieces(&near_pieces_);
    for (std::string_view piece : near_pieces_) vocab.find(piece, &near_ids_);
  } else {
    for (int32_t id : vocab.ids_with_quote()) {
      if (is_allowed(words, id) &&
          unique_.check(vocab.piece(id), true) == UniqueItems::Verdict::kNearDuplicate) {
        near_ids_.push_back(id);
      }
    }
  }
  for (int32_t id : near_ids_) {
    if (is_allowed(words, id) && forced_into_duplicate(vocab.piece(id))) disallow(words, id);
  }
}

bool GrammarMatcher::forced_into_duplicate(std::string_view piece) {
  const Trial trial(*this);
  if (!advance_bytes(piece, &step_b_)) return true;
  for (size_t i = 0; i < kMaxForcedBytes && !step_b_.can_end; ++i) {
    const ByteSet next = advancer_.next_bytes(step_b_);
    int n = 0, byte = 0;
    for (int b = 0; b < 256 && n < 2; ++b) {
      if (next.test(static_cast<uint8_t>(b))) byte = b, ++n;
    }
    if (n != 1) return false;  // a choice: the item can still become something else
    const auto b = static_cast<uint8_t>(byte);
    const UniqueItems::Opens opens =
        b == '[' ? array_opened_at(step_b_) : UniqueItems::Opens::kPlain;
    advancer_.advance(step_b_, b, &step_a_);
    std::swap(step_b_, step_a_);
    if (!step_b_.alive() || !unique_.accept(b, opens)) return true;
  }
  return false;
}

void GrammarMatcher::restrict_to_unique_items(std::span<uint32_t> words, bool avoid_forced) {
  if (!tracks_unique_ || !unique_.active()) return;
  const TokenVocabulary& vocab = compiled_->vocabulary();
  unique_.prepare_checks();
  const auto check = [&](int32_t id) {
    if (!is_allowed(words, id) || vocab.is_eog(id)) return;
    UniqueItems::Verdict v = unique_.check(vocab.piece(id));
    if (v == UniqueItems::Verdict::kUnsure) {
      // The piece opens an array itself or ends two items: ask the grammar byte by byte.
      const Trial trial(*this);
      v = advance_bytes(vocab.piece(id), &step_b_) ? UniqueItems::Verdict::kAllowed
                                                   : UniqueItems::Verdict::kDuplicate;
    }
    if (v == UniqueItems::Verdict::kDuplicate) disallow(words, id);
  };
  if (unique_.inside_string()) {
    // Inside a string only a quote can end anything.
    for (int32_t id : vocab.ids_with_quote()) check(id);
  } else {
    for (size_t w = 0; w < words.size(); ++w) {
      for (uint32_t bits = words[w]; bits != 0; bits &= bits - 1) {
        check(static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits))));
      }
    }
  }
  if (avoid_forced) avoid_forced_duplicates(words);
}

// Shortest completion of a state: for each stack, the rest of every frame's alternative (the
// top's from the byte it expects, each lower frame's from its return position); the best stack.
size_t GrammarMatcher::distance(const StackSet& state) const {
  if (state.can_end) return 0;
  const Grammar& g = compiled_->grammar();
  uint64_t best = Grammar::kUnbounded;
  for (uint32_t top : state.tops) {
    uint64_t d = 0;
    for (uint32_t id = top; id != kBottom && d < best; id = pool_[id].parent) {
      d += g.min_rest(pool_[id].pos);
    }
    best = std::min(best, d);
  }
  return static_cast<size_t>(best);
}

// The most a token that stays in the frame of `pos` can leave to write before that frame ends:
// the largest distance to the frame's end over the (position, frames pushed above it) a parse
// can reach from `pos` without popping the frame, each pushed frame counted by the min_rest of
// its return position. Unbounded past kMaxFlatReach such states (calls that recurse with a
// return, like nested JSON values, grow without end). Strings, their escapes and pattern
// automata are a few dozen states.
uint32_t GrammarMatcher::flat_reach(uint32_t pos) {
  if (auto it = flat_reach_.find(pos); it != flat_reach_.end()) return it->second;
  const Grammar& g = compiled_->grammar();
  uint64_t most = 0;
  bool bounded = true;
  flat_seen_.clear();
  flat_work_.clear();
  const auto visit = [&](uint32_t q, uint64_t extra) {
    if (extra >= Grammar::kUnbounded || flat_seen_.size() >= kMaxFlatReach) {
      bounded = false;
    } else if (flat_seen_.insert(extra << 32 | q).second) {
      flat_work_.emplace_back(q, static_cast<uint32_t>(extra));
    }
  };
  visit(pos, 0);
  while (!flat_work_.empty() && bounded) {
    const auto [q, extra] = flat_work_.back();
    flat_work_.pop_back();
    const Element& e = g.element(q);
    if (e.kind == ElementKind::kBytes) {
      most = std::max<uint64_t>(most, uint64_t{g.min_rest(q)} + extra);
      visit(q + 1, extra);
    } else if (e.kind == ElementKind::kRule) {
      // A tail call replaces the frame; another call pushes one that returns to q + 1.
      const bool tail = g.element(q + 1).kind == ElementKind::kEnd;
      const uint64_t inner = tail ? extra : uint64_t{extra} + g.min_rest(q + 1);
      for (uint32_t alt : g.rules()[e.value].alternatives) visit(alt, inner);
      if (!tail && g.rule_min_length(e.value) != Grammar::kUnbounded) visit(q + 1, extra);
    }
  }
  const uint32_t reach =
      bounded && most < Grammar::kUnbounded ? static_cast<uint32_t>(most) : Grammar::kUnbounded;
  flat_reach_.emplace(pos, reach);
  return reach;
}

void GrammarMatcher::restrict_to_budget(const StackSet& state, std::span<uint32_t> words,
                                        size_t room) {
  // A top whose frame is flat (strings with their escapes, pattern automata) bounds the tokens
  // that stay in it: they end between `below` (what the frames under the top still need) and
  // below + flat_reach from the end, so they fit when that reach fits the room and are too far
  // when `below` alone is not (restrict_by_frames). A frame that can push frames without end
  // (the quote that ends a free string goes on into nested values) is open.
  top_frames_.clear();
  for (uint32_t top : state.tops) {
    uint64_t below = 0;
    for (uint32_t id = pool_[top].parent; id != kBottom; id = pool_[id].parent) {
      below += compiled_->grammar().min_rest(pool_[id].pos);
    }
    const uint32_t reach = flat_reach(pool_[top].pos);
    Frame frame = Frame::kOpen;
    if (reach != Grammar::kUnbounded && below + reach <= room) frame = Frame::kFit;
    if (reach != Grammar::kUnbounded && below > room) frame = Frame::kFar;
    top_frames_.push_back(frame);
  }
  if (std::any_of(top_frames_.begin(), top_frames_.end(),
                  [](Frame frame) { return frame != Frame::kOpen; })) {
    restrict_by_frames(state, words, room);
    return;
  }
  const size_t min_length = shortest_past_room(state, room);
  // The words are the mask of memo_state_, which fill_next_token_bitmask just set to `state`
  // and which clears budget_memo_valid_ whenever it computes a mask anew: a valid memo is this
  // state's allowed tokens (those at least budget_memo_min_length_ long) and their distances.
  if (!budget_memo_valid_ || min_length < budget_memo_min_length_) {
    budget_indices_.clear();
    push_long_indices(0, compiled_->vocabulary().n_sorted(), min_length, words);
    budget_memo_min_length_ = min_length;
    walk_budget_indices(state);
    budget_memo_valid_ = true;
  }
  too_far_.clear();
  for (const auto& [id, after] : budget_distances_) {
    if (after > room) too_far_.push_back(id);
  }
  // When nothing fits the output cannot end in time whatever comes next: leave the mask whole
  // rather than allow nothing (tokens not walked are taken to fit).
  size_t n_allowed = 0;
  for (uint32_t w : words) n_allowed += static_cast<size_t>(__builtin_popcount(w));
  if (too_far_.size() == n_allowed && !state.can_end) return;
  for (int32_t id : too_far_) disallow(words, id);
}

// Some frames are bounded. A token's first byte picks the tops it goes through, so a byte that
// only fitting (only far) frames take gives tokens that fit (are too far) unless they leave
// their frame. The tokens that start with any other byte (when long enough to matter, as in
// the general case), and the ones that may leave a bounded frame (each top's uncertain ones),
// are walked: inside a string, the pieces with a quote, not the vocabulary.
void GrammarMatcher::restrict_by_frames(const StackSet& state, std::span<uint32_t> words,
                                        size_t room) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  const Grammar& g = compiled_->grammar();
  enum : uint8_t { kFitBit = 1, kFarBit = 2, kOpenBit = 4 };
  std::array<uint8_t, 256> byte_frames{};  // the frames of the tops that take each byte
  for (size_t i = 0; i < state.tops.size(); ++i) {
    const ByteSet& set = g.byte_set(g.element(pool_[state.tops[i]].pos).value);
    const uint8_t bit = top_frames_[i] == Frame::kFit   ? kFitBit
                        : top_frames_[i] == Frame::kFar ? kFarBit
                                                        : kOpenBit;
    for (unsigned b = 0; b < 256; ++b) {
      if (set.test(static_cast<uint8_t>(b))) byte_frames[b] |= bit;
    }
  }
  const size_t min_length = shortest_past_room(state, room);
  budget_indices_.clear();
  for (unsigned b = 0; b < 256; ++b) {
    if (byte_frames[b] == 0 || byte_frames[b] == kFitBit || byte_frames[b] == kFarBit) continue;
    push_long_indices(vocab.first_byte_begin(b), vocab.first_byte_begin(b + 1), min_length, words);
  }
  for (size_t i = 0; i < state.tops.size(); ++i) {
    if (top_frames_[i] != Frame::kOpen) push_leaving_indices(state.tops[i], words);
  }
  walk_budget_subset(state);
  keep_words_.assign(words.begin(), words.end());
  if (std::all_of(byte_frames.begin(), byte_frames.end(),
                  [](uint8_t frames) { return (frames & (kFitBit | kOpenBit)) == 0; })) {
    // Every frame is far: nothing but the walked tokens that fit (and end of generation).
    std::fill(words.begin(), words.end(), 0u);
    for (int32_t id : vocab.eog_ids()) {
      if (is_allowed(keep_words_, id)) allow(words, id);
    }
  } else {
    for (unsigned b = 0; b < 256; ++b) {
      if (byte_frames[b] != kFarBit) continue;
      for (uint32_t k = vocab.first_byte_begin(b); k < vocab.first_byte_begin(b + 1); ++k) {
        disallow(words, vocab.sorted_id(k));
      }
    }
  }
  for (const auto& [id, after] : budget_distances_) {
    if (after <= room) {
      allow(words, id);
    } else {
      disallow(words, id);
    }
  }
  // When nothing fits the output cannot end in time whatever comes next: the mask stays whole.
  bool any = state.can_end;
  for (uint32_t w : words) any = any || w != 0;
  if (!any) std::copy(keep_words_.begin(), keep_words_.end(), words.begin());
}

// A token of L bytes is taken to move the end at most L bytes plus one choice's jump further
// (the assumption of the margin in fill_next_token_bitmask): only tokens at least this long can
// reach past the room, and only they are walked.
size_t GrammarMatcher::shortest_past_room(const StackSet& state, size_t room) const {
  const size_t jump = std::min<size_t>(compiled_->grammar().max_choice_jump(), kMaxJumpMargin);
  const size_t reach = distance(state) + jump;
  return room > reach ? room - reach + 1 : 0;
}

void GrammarMatcher::push_long_indices(uint32_t begin, uint32_t end, size_t min_length,
                                       std::span<const uint32_t> words) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  for (uint32_t k = begin; k < end; ++k) {
    if (vocab.sorted_piece(k).size() >= min_length && is_allowed(words, vocab.sorted_id(k))) {
      budget_indices_.push_back(k);
    }
  }
}

void GrammarMatcher::push_leaving_indices(uint32_t top, std::span<const uint32_t> words) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  for (const auto& [leftover, id] : compiled_->tokens_at(pool_[top].pos).uncertain) {
    if (is_allowed(words, id) && vocab.sorted_index(id) != TokenVocabulary::kNotSorted) {
      budget_indices_.push_back(vocab.sorted_index(id));
    }
  }
}

void GrammarMatcher::walk_budget_subset(const StackSet& state) {
  std::sort(budget_indices_.begin(), budget_indices_.end());
  budget_indices_.erase(std::unique(budget_indices_.begin(), budget_indices_.end()),
                        budget_indices_.end());
  walk_budget_indices(state);
  budget_memo_valid_ = false;  // a subset, not the memo's
}

// Each token of budget_indices_ (sorted-vocabulary indices) and the distance to the end after
// it (SIZE_MAX when the state does not take it), into budget_distances_.
void GrammarMatcher::walk_budget_indices(const StackSet& state) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  budget_distances_.clear();
  const size_t mark = pool_.size();
  // A walk of most of the vocabulary (where every frame straddles the room) takes the same few
  // steps again and again, as in a compile: remembered for this walk only (node ids lose their
  // meaning when the pool is truncated below).
  const bool remember = budget_indices_.size() > kRememberedBudgetWalk;
  if (remember) advancer_.remember_steps();
  walk_strings(
      budget_indices_, [&](uint32_t k) { return vocab.sorted_piece(k); }, vocab.max_piece_length(),
      advancer_, state, nullptr, walk_scratch_,
      [&](uint32_t k, bool accepted, size_t) {
        budget_distances_.emplace_back(
            vocab.sorted_id(k),
            accepted ? distance(walk_scratch_.states[vocab.sorted_piece(k).size()]) : SIZE_MAX);
      });
  if (remember) advancer_.stop_remembering();
  pool_.truncate(mark);
}

void GrammarMatcher::compute_mask(const StackSet& state, std::span<uint32_t> words) {
  const TokenVocabulary& vocab = compiled_->vocabulary();
  std::fill(words.begin(), words.end(), 0u);
  const auto set_bit = [&](int32_t id) { allow(words, id); };
  positions_.clear();
  for (uint32_t top : state.tops) positions_.push_back(pool_[top].pos);
  std::sort(positions_.begin(), positions_.end());
  positions_.erase(std::unique(positions_.begin(), positions_.end()), positions_.end());
  for (uint32_t pos : positions_) {
    const PositionTokens& t = compiled_->tokens_at(pos);
    if (!t.accepted_bits.empty()) {
      const size_t n = std::min(words.size(), t.accepted_bits.size());
      for (size_t w = 0; w < n; ++w) words[w] |= t.accepted_bits[w];
    } else {
      for (int32_t id : t.accepted_ids) set_bit(id);
    }
  }
  // Uncertain tokens: what is left of them where they leave their rule, fed to the stacks
  // below that rule (one walk over the distinct leftovers per stack top).
  for (uint32_t top : state.tops) {
    const PositionTokens& t = compiled_->tokens_at(pool_[top].pos);
    if (t.uncertain.empty()) continue;
    const std::vector<uint8_t>& ok = leftovers_accepted(top, t);
    for (const auto& [leftover, id] : t.uncertain) {
      if (ok[leftover]) set_bit(id);
    }
  }
  if (state.can_end) {
    for (int32_t id : vocab.eog_ids()) set_bit(id);
  }
}

// Which leftovers of the top's position the stacks below the top accept. Cached per (position,
// return signatures of the frames below): sibling values in an array or object sit on the same
// frames, and the calls of a rule in a row (`char{1000}`, a counted group) on frames that look
// alike to every leftover.
const std::vector<uint8_t>& GrammarMatcher::leftovers_accepted(uint32_t top,
                                                               const PositionTokens& t) {
  const StackNode node = pool_[top];
  leftover_key_.clear();
  CompiledGrammar::append_key_word(&leftover_key_, node.pos);
  for (uint32_t id = node.parent; id != kBottom; id = pool_[id].parent) {
    CompiledGrammar::append_key_word(&leftover_key_, compiled_->return_signature(pool_[id].pos));
    if (compiled_->closes_leftovers(pool_[id].pos)) break;
  }
  auto it = leftover_cache_.find(leftover_key_);
  if (it != leftover_cache_.end()) return *it->second;
  if (leftover_cache_.size() >= kMaxLeftoverCache || !reuse_masks_) leftover_cache_.clear();
  if (reuse_masks_) {
    if (CompiledGrammar::LeftoverFlags shared = compiled_->shared_leftovers(leftover_key_)) {
      return *leftover_cache_.emplace(leftover_key_, std::move(shared)).first->second;
    }
  }
  auto flags = std::make_shared<std::vector<uint8_t>>();
  const size_t mark = pool_.size();
  advancer_.pop_frame(top, &below_);
  accept_leftovers(t.leftovers, t.max_leftover_length, advancer_, below_, walk_scratch_,
                   flags.get());
  pool_.truncate(mark);
  if (reuse_masks_) compiled_->share_leftovers(leftover_key_, flags);
  return *leftover_cache_.emplace(leftover_key_, std::move(flags)).first->second;
}

std::string GrammarMatcher::expected_bytes() const {
  const ByteSet next = advancer_.next_bytes(history_.back());
  std::string out = "[";
  for (unsigned b = 0; b < 256; ++b) {
    if (!next.test(static_cast<uint8_t>(b))) continue;
    if (b >= 0x20 && b < 0x7F && b != '\\' && b != ']' && b != '"') {
      out += static_cast<char>(b);
    } else {
      static const char* kHex = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  if (can_end())
    out += "] or the end";
  else
    out += "]";
  return out;
}

}  // namespace strata::grammar
