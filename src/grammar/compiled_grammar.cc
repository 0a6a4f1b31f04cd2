#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <map>
#include <unordered_map>

#include "grammar/bounded_signature.h"
#include "grammar/compile_meter.h"
#include "grammar/stack_pool.h"
#include "grammar/token_walk.h"

namespace strata::grammar {
namespace {

// Tokens longer than this are few (runs of '-', '=', ' ', some CJK phrases) and are keyed apart
// (TokenSignatures).
constexpr size_t kShortTokenBytes = 32;
// Compiling keeps one stack pool across positions (so remembered steps serve them all) and
// starts it over, with the advancer's remembered steps, past 4M nodes: a bound on its memory
// (12 bytes a node, 16 per step).
void bound_pool(StackPool* pool, Advancer* advancer) {
  constexpr size_t kMaxPoolNodes = size_t{1} << 22;
  if (pool->size() <= kMaxPoolNodes) return;
  pool->clear();
  advancer->forget_steps();
}

bool merge_into(ByteSet* to, const ByteSet& from) {
  bool changed = false;
  for (int w = 0; w < 4; ++w) {
    const uint64_t merged = to->bits[w] | from.bits[w];
    changed = changed || merged != to->bits[w];
    to->bits[w] = merged;
  }
  return changed;
}

// The largest longest(b) over the bytes b of `set` (0 for none).
template <class Longest>
uint32_t longest_over(const ByteSet& set, Longest longest) {
  uint32_t out = 0;
  for (unsigned w = 0; w < 4; ++w) {
    for (uint64_t bits = set.bits[w]; bits != 0; bits &= bits - 1) {
      out = std::max(out, longest(64 * w + static_cast<unsigned>(std::countr_zero(bits))));
    }
  }
  return out;
}

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
    CompileMeter* meter) {
  if (!grammar || !vocabulary) {
    return make_error(ErrorCode::kInvalidArgument, "compile needs a grammar and a vocabulary");
  }
  std::shared_ptr<CompiledGrammar> compiled(
      new CompiledGrammar(std::move(grammar), std::move(vocabulary)));
  STRATA_RETURN_IF_ERROR(compiled->precompute(meter));
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

ByteSet CompiledGrammar::RuleSets::sequence_first(const Grammar& g, uint32_t pos,
                                                  bool* seq_nullable) const {
  ByteSet out;
  for (;; ++pos) {
    const Element& e = g.element(pos);
    if (e.kind == ElementKind::kEnd) {
      *seq_nullable = true;
      return out;
    }
    if (e.kind == ElementKind::kBytes) {
      merge_into(&out, g.byte_set(e.value));
      *seq_nullable = false;
      return out;
    }
    merge_into(&out, first[e.value]);
    if (!nullable[e.value]) {
      *seq_nullable = false;
      return out;
    }
  }
}

// FIRST / nullable / FOLLOW over the byte-level rules, by worklists: a rule is recomputed only
// when a rule it reads changed, and a set only grows (by at most 256 bytes), so the work is
// linear in the grammar. Passes over every rule until nothing changes took one pass per rule
// of a long chain, quadratic in the grammar.
Result<CompiledGrammar::RuleSets> CompiledGrammar::rule_sets(CompileMeter* meter) const {
  const Grammar& g = *grammar_;
  const size_t n = g.rules().size();
  RuleSets sets;
  sets.nullable.assign(n, false);
  sets.first.resize(n);
  sets.follow.resize(n);
  std::vector<ByteSet>& first = sets.first;
  std::vector<ByteSet>& follow = sets.follow;
  std::vector<bool>& nullable = sets.nullable;
  std::vector<std::vector<uint32_t>> callers(n);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t alt : g.rules()[r].alternatives) {
      for (uint32_t pos = alt; g.element(pos).kind != ElementKind::kEnd; ++pos) {
        if (g.element(pos).kind == ElementKind::kRule) callers[g.element(pos).value].push_back(r);
      }
    }
  }
  std::deque<uint32_t> queue;
  std::vector<bool> queued(n, true);
  for (uint32_t r = 0; r < n; ++r) queue.push_back(r);
  while (!queue.empty()) {
    const uint32_t r = queue.front();
    queue.pop_front();
    queued[r] = false;
    bool changed = false;
    for (uint32_t alt : g.rules()[r].alternatives) {
      bool alt_nullable = false;
      const ByteSet f = sets.sequence_first(g, alt, &alt_nullable);
      changed = merge_into(&first[r], f) || changed;
      if (alt_nullable && !nullable[r]) nullable[r] = changed = true;
    }
    if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + g.rules()[r].alternatives.size()));
    if (!changed) continue;
    for (uint32_t caller : callers[r]) {
      if (!queued[caller]) {
        queued[caller] = true;
        queue.push_back(caller);
      }
    }
  }
  // A reference gets FIRST of what follows it in its alternative, and, when that can be empty,
  // FOLLOW of the rule holding it: the first part is fixed now, the second propagates along
  // host -> reference edges.
  std::vector<std::vector<uint32_t>> inherits(n);  // host -> rules whose FOLLOW includes its own
  for (uint32_t h = 0; h < n; ++h) {
    for (uint32_t alt : g.rules()[h].alternatives) {
      for (uint32_t pos = alt; g.element(pos).kind != ElementKind::kEnd; ++pos) {
        const Element& e = g.element(pos);
        if (e.kind != ElementKind::kRule) continue;
        bool rest_nullable = false;
        const ByteSet f = sets.sequence_first(g, pos + 1, &rest_nullable);
        merge_into(&follow[e.value], f);
        if (rest_nullable && e.value != h) inherits[h].push_back(e.value);
      }
    }
    if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + g.rules()[h].alternatives.size()));
  }
  for (uint32_t r = 0; r < n; ++r) {
    queue.push_back(r);
    queued[r] = true;
  }
  while (!queue.empty()) {
    const uint32_t h = queue.front();
    queue.pop_front();
    queued[h] = false;
    for (uint32_t to : inherits[h]) {
      if (merge_into(&follow[to], follow[h]) && !queued[to]) {
        queued[to] = true;
        queue.push_back(to);
      }
    }
    if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + inherits[h].size() / 16));
  }
  return sets;
}

namespace {

// What the tokens that start with one byte do once that byte is taken: the token ids accepted
// whole, and the (leftover, id) pairs that may leave the start rule.
struct FirstByteGroup {
  std::vector<int32_t> accepted;
  std::vector<std::pair<std::string_view, int32_t>> uncertain;
};

// Tokens with first byte b depend on the position only through the stacks after b (and the
// FOLLOW set that decides where a token may leave the rule). Distinct positions often reach the
// same stacks: every state of the automaton for "a key other than the declared ones" falls into
// the same any-string state on most bytes, and every alternative ending in the same tail call
// continues alike. The key reads the stacks through bounded signatures (bounded_signature.h), so
// stacks that differ only beyond the group's longest token share one walk.
class FirstByteGroupCache {
 public:
  // The key of (stacks after byte b, follow-set id) for one part of b's tokens (`part`: b and
  // the part's index): each stack as the signatures of its nodes' positions for the `depth`
  // bytes a token of the part has left, top to bottom, the stacks sorted. Built in buffers the
  // cache keeps (it is asked for at every byte of every position), valid until the next call.
  std::span<const uint32_t> key(const StackSet& after, uint32_t part, uint32_t follow_id, int depth,
                                const StackPool& pool, TokenSignatures& signatures) {
    if (stacks_.size() < after.tops.size()) stacks_.resize(after.tops.size());
    const auto stacks_end = stacks_.begin() + static_cast<std::ptrdiff_t>(after.tops.size());
    for (size_t i = 0; i < after.tops.size(); ++i) {
      std::vector<uint32_t>& chain = stacks_[i];
      chain.clear();
      for (uint32_t id = after.tops[i]; id != kBottom; id = pool[id].parent) {
        chain.push_back(signatures.of_tails(pool[id].pos, depth));
      }
    }
    std::sort(stacks_.begin(), stacks_end);
    key_.assign({follow_id, part, after.can_end ? 1u : 0u});
    for (auto it = stacks_.begin(); it != stacks_end; ++it) {
      if (it != stacks_.begin() && *it == *(it - 1)) continue;
      key_.insert(key_.end(), it->begin(), it->end());
      key_.push_back(kBottom);
    }
    return key_;
  }
  const FirstByteGroup* find(std::span<const uint32_t> key) const {
    const uint32_t index = ids_.find(key);
    return index == kNoId ? nullptr : &groups_[index];
  }
  const FirstByteGroup& insert(std::span<const uint32_t> key, FirstByteGroup group) {
    stored_ += group.accepted.size() + group.uncertain.size();
    ids_.add(key, static_cast<uint32_t>(groups_.size()));
    return groups_.emplace_back(std::move(group));
  }
  // Entries (ids) held: the cache is dropped past a bound so huge grammars stay within memory.
  size_t stored() const { return stored_; }
  void clear() {
    ids_.clear();
    groups_.clear();
    stored_ = 0;
  }

 private:
  WordIds ids_;                        // key -> index into groups_
  std::deque<FirstByteGroup> groups_;  // a deque: references stay valid as it grows
  size_t stored_ = 0;
  std::vector<std::vector<uint32_t>> stacks_;  // key()'s buffers
  std::vector<uint32_t> key_;
};

// Appends each group's `field` (sorted when the group was walked: groups are shared by many
// positions) and merges the runs pairwise, n log(groups), where sorting all n again was a
// tenth of a compile.
template <class T, class Less>
void merge_sorted_fields(std::span<const FirstByteGroup* const> groups,
                         std::vector<T> FirstByteGroup::*field, Less less, std::vector<T>* out) {
  std::vector<size_t> runs{out->size()};  // run boundaries
  for (const FirstByteGroup* group : groups) {
    const std::vector<T>& run = group->*field;
    if (run.empty()) continue;
    out->insert(out->end(), run.begin(), run.end());
    runs.push_back(out->size());
  }
  while (runs.size() > 2) {
    std::vector<size_t> merged{runs[0]};
    for (size_t r = 0; r + 1 < runs.size(); r += 2) {
      const size_t end = r + 2 < runs.size() ? runs[r + 2] : runs[r + 1];
      std::inplace_merge(out->begin() + static_cast<std::ptrdiff_t>(runs[r]),
                         out->begin() + static_cast<std::ptrdiff_t>(runs[r + 1]),
                         out->begin() + static_cast<std::ptrdiff_t>(end), less);
      merged.push_back(end);
    }
    runs = std::move(merged);
  }
}

// The union of cached groups as one position's token sets.
PositionTokens merge_groups(std::span<const FirstByteGroup* const> groups, size_t words) {
  PositionTokens out;
  size_t n_accepted = 0;
  for (const FirstByteGroup* group : groups) n_accepted += group->accepted.size();
  if (n_accepted > words) {
    out.accepted_bits.assign(words, 0);
    for (const FirstByteGroup* group : groups) {
      for (int32_t id : group->accepted) out.accepted_bits[id >> 5] |= uint32_t{1} << (id & 31);
    }
  } else {
    // Few ids (under one per mask word): sorted here, not in every group, since the large groups
    // (a string's letters) only ever reach the bitmask above.
    for (const FirstByteGroup* group : groups) {
      out.accepted_ids.insert(out.accepted_ids.end(), group->accepted.begin(),
                              group->accepted.end());
    }
    std::sort(out.accepted_ids.begin(), out.accepted_ids.end());
  }
  std::vector<std::pair<std::string_view, int32_t>> uncertain;
  merge_sorted_fields(groups, &FirstByteGroup::uncertain, LeftoverLess(), &uncertain);
  for (const auto& [leftover, id] : uncertain) {
    if (out.leftovers.empty() || out.leftovers.back() != leftover) {
      out.leftovers.push_back(leftover);
      out.max_leftover_length = std::max(out.max_leftover_length, leftover.size());
    }
    out.uncertain.push_back({static_cast<uint32_t>(out.leftovers.size() - 1), id});
  }
  return out;
}

}  // namespace

Status CompiledGrammar::precompute(CompileMeter* meter) {
  const Grammar& g = *grammar_;
  const TokenVocabulary& vocab = *vocabulary_;
  std::vector<uint32_t> rule_of(g.elements().size(), 0);
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    for (uint32_t alt : g.rules()[r].alternatives) {
      for (uint32_t pos = alt;; ++pos) {
        rule_of[pos] = r;
        if (g.element(pos).kind == ElementKind::kEnd) break;
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(const RuleSets sets, rule_sets(meter));
  const std::vector<ByteSet>& follow = sets.follow;
  // Equal FOLLOW sets share an id, so positions of different rules can share cached groups.
  std::vector<uint32_t> follow_id(follow.size());
  {
    std::map<std::array<uint64_t, 4>, uint32_t> ids;
    for (size_t r = 0; r < follow.size(); ++r) {
      follow_id[r] = ids.emplace(follow[r].bits, static_cast<uint32_t>(ids.size())).first->second;
    }
  }
  // The tokens that start with byte b, split by length: each part is walked and cached at its
  // own depth, so the few long tokens of a group (runs of 128 spaces) do not make every position
  // near the end of a long string walk the group's thousands of short ones again.
  struct TokenPart {
    std::vector<uint32_t> indices;  // sorted-vocabulary indices, ascending
    int depth = 0;                  // the most bytes a token of the part has after its first
  };
  std::array<std::vector<TokenPart>, 256> parts;
  constexpr std::array<size_t, 5> kPartLengths = {4, 8, 16, kShortTokenBytes, SIZE_MAX};
  for (unsigned b = 0; b < 256; ++b) {
    std::array<TokenPart, kPartLengths.size()> by_length;
    for (uint32_t k = vocab.first_byte_begin(b); k < vocab.first_byte_begin(b + 1); ++k) {
      const size_t length = vocab.sorted_piece(k).size();
      size_t i = 0;
      while (length > kPartLengths[i]) ++i;
      by_length[i].indices.push_back(k);
      by_length[i].depth = std::max(by_length[i].depth, static_cast<int>(length) - 1);
    }
    for (TokenPart& part : by_length) {
      if (!part.indices.empty()) parts[b].push_back(std::move(part));
    }
  }
  // A token's bytes after its first, plus the first: the depth at which two positions that look
  // alike get the same token sets.
  int token_depth = 1;
  for (const auto& parts_of_byte : parts) {
    for (const TokenPart& part : parts_of_byte) token_depth = std::max(token_depth, part.depth + 1);
  }
  // Tokens of up to kShortTokenBytes are seen through signatures over every byte; the few longer
  // ones (the last part of a byte) through signatures over their own bytes, which stay cheap
  // 128 bytes deep where the full alphabet unrolls every alternative of a string's character.
  ByteSet long_alphabet;
  for (uint32_t k = 0; k < vocab.n_sorted(); ++k) {
    const std::string_view piece = vocab.sorted_piece(k);
    if (piece.size() <= kShortTokenBytes) continue;
    for (char c : piece) long_alphabet.set(static_cast<uint8_t>(c));
  }
  TokenSignatures signatures(g, static_cast<int>(kShortTokenBytes), token_depth, long_alphabet);
  // The longest token that starts with each byte: a position's tokens are seen through at most
  // the longest that starts with a byte of its set, so its key reads that many bytes, not the
  // vocabulary's longest (128 bytes of spaces in some), which costs a signature per depth of
  // every position it reaches. Equal keys still mean equal token sets: equal signatures start
  // with the same byte set, hence read the same depth.
  std::vector<int> key_depth(g.n_byte_sets());  // per byte-set id
  for (uint32_t set = 0; set < key_depth.size(); ++set) {
    key_depth[set] = std::max(1, static_cast<int>(longest_over(g.byte_set(set), [&](unsigned b) {
                                return vocab.longest_from(b);
                              })));
  }
  // Bounds the cache's memory on huge grammars (ids held); past it the cache starts over.
  constexpr size_t kMaxCachedEntries = size_t{1} << 24;
  StackPool pool;
  Advancer advancer(g, &pool);
  advancer.remember_steps();
  TokenWalkScratch scratch;
  FirstByteGroupCache cache;
  // Positions made of the same groups share one PositionTokens.
  std::map<std::vector<const FirstByteGroup*>, uint32_t> tokens_of_groups;
  // Positions that every token sees alike (same bounded signature, same FOLLOW set) share their
  // token sets without the per-byte work: the thousand positions of `char{0,1000}` cost about as
  // many as the longest token has bytes.
  std::unordered_map<uint64_t, uint32_t> tokens_of_signature;
  tokens_index_.assign(g.elements().size(), 0);
  tokens_.emplace_back();  // index 0: no tokens (positions that are not kBytes)
  StackSet start, after;
  std::vector<const FirstByteGroup*> groups;
  for (uint32_t pos = 0; pos < g.elements().size(); ++pos) {
    const Element& e = g.element(pos);
    if (e.kind != ElementKind::kBytes) continue;
    if (cache.stored() > kMaxCachedEntries) {
      cache.clear();
      tokens_of_groups.clear();
    }
    const uint32_t rule = rule_of[pos];
    const ByteSet& first = g.byte_set(e.value);
    if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1));
    const uint64_t position_key =
        uint64_t{signatures.position(pos, key_depth[e.value])} << 32 | follow_id[rule];
    if (auto it = tokens_of_signature.find(position_key); it != tokens_of_signature.end()) {
      tokens_index_[pos] = it->second;
      ++stats_.positions;
      continue;
    }
    bound_pool(&pool, &advancer);
    advancer.start_at(pos, &start);
    groups.clear();
    for (unsigned b = 0; b < 256; ++b) {
      if (parts[b].empty() || !first.test(static_cast<uint8_t>(b))) continue;
      advancer.advance(start, static_cast<uint8_t>(b), &after);
      for (uint32_t i = 0; i < parts[b].size(); ++i) {
        const TokenPart& part = parts[b][i];
        const std::span<const uint32_t> key =
            cache.key(after, b | i << 8, follow_id[rule], part.depth, pool, signatures);
        if (const FirstByteGroup* hit = cache.find(key)) {
          groups.push_back(hit);
          continue;
        }
        // Walk the part's tokens past their first byte from the stacks after it; a token is
        // uncertain where it could leave the rule (escape_at[d] is about the byte at d + 1).
        // A walk of the part's tokens: the costly step, charged by the tokens it walks.
        if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + part.indices.size() / 16));
        FirstByteGroup group;
        walk_strings(
            part.indices, [&](uint32_t k) { return vocab.sorted_piece(k).substr(1); },
            vocab.max_piece_length(), advancer, after, &follow[rule], scratch,
            [&](uint32_t k, bool ok, size_t dead) {
              if (ok) {
                group.accepted.push_back(vocab.sorted_id(k));
                return;
              }
              const std::string_view piece = vocab.sorted_piece(k);
              for (size_t d = 0; d < dead; ++d) {
                if (scratch.escape_at[d]) {
                  group.uncertain.push_back({piece.substr(d + 1), vocab.sorted_id(k)});
                }
              }
            },
            WalkReport::kAcceptedOrEscaping);
        std::sort(group.uncertain.begin(), group.uncertain.end(), LeftoverLess());
        groups.push_back(&cache.insert(key, std::move(group)));
      }
    }
    if (advancer.overflowed()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "GBNF: the grammar is too ambiguous to match (more than " +
                            std::to_string(Advancer::kMaxStepWork) +
                            " parse stacks after one byte); repetitions of repetitions nested "
                            "many levels deep, like ((x+)+)+, are the usual cause");
    }
    ++stats_.positions;
    const auto [it, inserted] =
        tokens_of_groups.emplace(groups, static_cast<uint32_t>(tokens_.size()));
    tokens_index_[pos] = it->second;
    tokens_of_signature.emplace(position_key, it->second);
    if (!inserted) continue;
    const PositionTokens& out = tokens_.emplace_back(merge_groups(groups, mask_words()));
    stats_.uncertain_tokens += out.uncertain.size();
    stats_.max_uncertain = std::max(stats_.max_uncertain, out.uncertain.size());
    stats_.leftovers += out.leftovers.size();
    stats_.max_leftovers = std::max(stats_.max_leftovers, out.leftovers.size());
    stats_.cache_bytes +=
        out.accepted_bits.size() * 4 + out.accepted_ids.size() * 4 + out.uncertain.size() * 8;
    stats_.cache_bytes += out.leftovers.size() * sizeof(std::string_view);
  }
  // Leftovers are what follows a token's first byte, so they fit the signatures' depth.
  for (const PositionTokens& t : tokens_) {
    leftover_depth_ = std::max(leftover_depth_, static_cast<uint32_t>(t.max_leftover_length));
  }
  // A frame's return signature reads the bytes a leftover can bring it: at most the longest
  // leftover that starts with a byte of FIRST of the frame's rest (bytes past the rest's end
  // belong to the frames below). As with the position keys, equal signatures have equal FIRST
  // sets, hence were read to the same depth.
  return_signature_.assign(g.elements().size(), 0);
  for (uint32_t pos = 1; pos < g.elements().size(); ++pos) {
    if (g.element(pos - 1).kind != ElementKind::kRule) continue;
    if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1));
    bool rest_nullable = false;
    const uint32_t depth = longest_over(sets.sequence_first(g, pos, &rest_nullable),
                                        [&](unsigned b) { return vocab.longest_tail_from(b); });
    return_signature_[pos] =
        signatures.position(pos, static_cast<int>(std::min(depth, leftover_depth_)));
  }
  return precompute_closed_leftovers(meter);
}

Status CompiledGrammar::precompute_closed_leftovers(CompileMeter* meter) {
  const Grammar& g = *grammar_;
  // The kBytes positions of each rule's own alternatives: where a top stands inside a call.
  std::vector<std::vector<uint32_t>> positions_of(g.rules().size());
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    for (uint32_t alt : g.rules()[r].alternatives) {
      for (uint32_t pos = alt; g.element(pos).kind != ElementKind::kEnd; ++pos) {
        if (g.element(pos).kind == ElementKind::kBytes &&
            !tokens_[tokens_index_[pos]].uncertain.empty()) {
          positions_of[r].push_back(pos);
        }
      }
    }
  }
  StackPool pool;
  Advancer advancer(g, &pool);
  advancer.remember_steps();
  TokenWalkScratch scratch;
  StackSet below;
  std::string key;
  for (uint32_t call = 0; call + 1 < g.elements().size(); ++call) {
    const uint32_t ret = call + 1;
    if (g.element(call).kind != ElementKind::kRule || g.element(ret).kind == ElementKind::kEnd ||
        !closes_leftovers(ret)) {
      continue;
    }
    for (uint32_t top : positions_of[g.element(call).value]) {
      key.clear();
      append_key_word(&key, top);
      append_key_word(&key, return_signature_[ret]);
      if (leftover_cache_.count(key)) continue;
      const PositionTokens& t = tokens_[tokens_index_[top]];
      if (meter) STRATA_RETURN_IF_ERROR(meter->charge(1 + t.leftovers.size() / 16));
      bound_pool(&pool, &advancer);
      advancer.pop_frame(pool.intern(top, pool.intern(ret, kBottom)), &below);
      auto flags = std::make_shared<std::vector<uint8_t>>();
      accept_leftovers(t.leftovers, t.max_leftover_length, advancer, below, scratch, flags.get());
      share_leftovers(key, std::move(flags));
    }
  }
  return ok_status();
}

CompiledGrammar::LeftoverFlags CompiledGrammar::shared_leftovers(const std::string& key) const {
  std::lock_guard<std::mutex> lock(leftover_mutex_);
  auto it = leftover_cache_.find(key);
  return it == leftover_cache_.end() ? nullptr : it->second;
}

void CompiledGrammar::share_leftovers(const std::string& key, LeftoverFlags flags) const {
  std::lock_guard<std::mutex> lock(leftover_mutex_);
  const size_t bytes = key.size() + flags->size();
  if (leftover_bytes_ + bytes > kMaxSharedLeftoverBytes) {
    leftover_cache_.clear();
    leftover_bytes_ = 0;
  }
  if (leftover_cache_.emplace(key, std::move(flags)).second) leftover_bytes_ += bytes;
}

}  // namespace strata::grammar
