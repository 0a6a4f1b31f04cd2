#include "grammar/bounded_signature.h"

#include <algorithm>
#include <array>
#include <map>
#include <span>

namespace strata::grammar {
namespace {

constexpr uint32_t kNone = 0;
constexpr uint32_t kEndId = 1;
constexpr uint32_t kUnset = UINT32_MAX;
// kPairTag: a rule of two alternatives, the set as its (smaller, larger) ids.
// Larger sets are interned whole (intern()).
enum Tag : uint32_t { kBytesTag, kRuleTag, kPairTag };

// The memo slot of (index, depth), allocating the index's row on first use.
uint32_t& memo_slot(std::vector<std::vector<uint32_t>>& memo, uint32_t index, int depth,
                    int max_depth) {
  std::vector<uint32_t>& row = memo[index];
  if (row.empty()) row.assign(static_cast<size_t>(max_depth) + 1, kUnset);
  return row[static_cast<size_t>(depth)];
}

}  // namespace

ByteSet BoundedSignatures::all_bytes() {
  ByteSet all;
  all.bits.fill(~uint64_t{0});
  return all;
}

// Per byte-set id: the id of its intersection with the alphabet (kEmptySet when empty). Sets with
// the same intersection share an id; over every byte that is the set's own id.
std::vector<uint32_t> BoundedSignatures::restricted_sets(const Grammar& grammar,
                                                         const ByteSet& alphabet) {
  std::vector<uint32_t> restricted(grammar.n_byte_sets());
  const bool every_byte = alphabet.bits == all_bytes().bits;
  std::map<std::array<uint64_t, 4>, uint32_t> ids;
  for (uint32_t set = 0; set < restricted.size(); ++set) {
    std::array<uint64_t, 4> bits = grammar.byte_set(set).bits;
    for (int w = 0; w < 4; ++w) bits[w] &= alphabet.bits[w];
    if (bits == std::array<uint64_t, 4>{}) {
      restricted[set] = kEmptySet;
    } else {
      restricted[set] =
          every_byte ? set : ids.emplace(bits, static_cast<uint32_t>(ids.size())).first->second;
    }
  }
  return restricted;
}

BoundedSignatures::BoundedSignatures(const Grammar& grammar, int max_depth, const ByteSet& alphabet)
    : grammar_(grammar),
      max_depth_(max_depth),
      restricted_set_(restricted_sets(grammar, alphabet)),
      position_memo_(grammar.elements().size()),
      rule_memo_(grammar.rules().size()),
      shape_(grammar.rules().size(), kUnset),
      chains_(grammar, restricted_set_) {}

uint32_t BoundedSignatures::intern(std::span<const uint32_t> ids) {
  if (const uint32_t id = ids_.find(ids); id != kNoId) return id;
  ids_.add(ids, next_id_);
  return next_id_++;
}

uint32_t BoundedSignatures::intern3(uint32_t tag, uint32_t a, uint32_t b) {
  return ids3_[tag].find_or_add(uint64_t{a} << 32 | b, &next_id_);
}

uint32_t BoundedSignatures::position(uint32_t pos, int depth) {
  if (depth < 0) return kNone;
  const Element& e = grammar_.element(pos);
  if (e.kind == ElementKind::kEnd) return kEndId;
  // Rows are allocated once and never move, so the slot outlives the recursion below.
  uint32_t& memo = memo_slot(position_memo_, pos, depth, max_depth_);
  if (memo != kUnset) return memo;
  uint32_t id;
  if (recursion_ >= kMaxRecursion) {
    id = next_id_++;
  } else {
    ++recursion_;
    if (e.kind == ElementKind::kBytes) {
      const uint32_t set = restricted_set(e.value);
      id = intern3(kBytesTag, set, set == kEmptySet ? kNone : position(pos + 1, depth - 1));
    } else {
      const uint32_t min_length = grammar_.rule_min_length(e.value);
      const int rest_depth =
          min_length > static_cast<uint32_t>(depth) ? -1 : depth - static_cast<int>(min_length);
      const uint32_t callee = rule(e.value, depth);
      id = intern3(kRuleTag, callee, position(pos + 1, rest_depth));
    }
    --recursion_;
  }
  memo = id;
  return id;
}

uint32_t BoundedSignatures::shape(uint32_t r) {
  if (shape_[r] != kUnset) return shape_[r];
  // Each element as its kind, and a byte set's restricted id after it: no id can pass for a
  // kind (kEmptySet is kUnset's value), so two shapes are equal only element for element.
  shape_words_.clear();
  const auto append = [this](uint32_t word) { shape_words_.push_back(word); };
  for (uint32_t alt : grammar_.rules()[r].alternatives) {
    for (uint32_t pos = alt;; ++pos) {
      const Element& e = grammar_.element(pos);
      append(static_cast<uint32_t>(e.kind));
      if (e.kind == ElementKind::kBytes) append(restricted_set(e.value));
      if (e.kind == ElementKind::kEnd) break;
    }
  }
  uint32_t id = shapes_.find(shape_words_);
  if (id == kNoId) {
    id = static_cast<uint32_t>(shapes_.size());
    shapes_.add(shape_words_, id);
  }
  return shape_[r] = id;
}

// The key of rule r at `depth` as a template: its shape, the depth, and for each call in its
// alternatives that the depth reaches, the callee's signature there and its min length. Equal
// keys give equal signatures: the element-wise signature is a function of exactly these.
// Pushed on template_words_ (the caller pops); false past the recursion bound.
bool BoundedSignatures::push_template_key(uint32_t r, int depth) {
  template_words_.push_back(shape(r));
  template_words_.push_back(static_cast<uint32_t>(depth));
  for (uint32_t alt : grammar_.rules()[r].alternatives) {
    int left = depth;
    for (uint32_t pos = alt; left >= 0; ++pos) {
      const Element& e = grammar_.element(pos);
      if (e.kind == ElementKind::kEnd) break;
      if (e.kind == ElementKind::kBytes) {
        if (restricted_set(e.value) == kEmptySet) break;
        --left;
        continue;
      }
      if (recursion_ >= kMaxRecursion) return false;
      ++recursion_;
      const uint32_t callee = rule(e.value, left);
      --recursion_;
      const uint32_t min_length = grammar_.rule_min_length(e.value);
      template_words_.push_back(callee);
      template_words_.push_back(min_length);
      left = min_length > static_cast<uint32_t>(left) ? -1 : left - static_cast<int>(min_length);
    }
  }
  return true;
}

uint32_t BoundedSignatures::rule(uint32_t r, int depth) {
  uint32_t& memo = memo_slot(rule_memo_, r, depth, max_depth_);
  if (memo != kUnset) return memo;
  // A level of a repetition chain deep enough has the id of every such level of its shape: the
  // thousand levels of a block cost one signature per depth, not one each.
  const uint32_t chain = chains_.shape(r);
  const bool chained =
      chain != RepetitionChains::kNone && chains_.levels_below(r) > static_cast<uint32_t>(depth);
  const uint64_t chain_key = uint64_t{chain} << 32 | static_cast<uint32_t>(depth);
  if (chained) {
    if (const uint32_t id = chain_ids_.find(chain_key); id != kNoId) return memo = id;
  }
  // Rules of many alternatives (a string's character, each level of a length chain) are looked
  // up by template first: the thousand levels of a maxLength chain share their shape, so a level
  // costs its calls' lookups instead of a signature per element of every alternative.
  const size_t words_begin = template_words_.size();
  // template_words_ may reallocate while the alternatives are walked: a span made each time.
  const auto template_key = [&] {
    return std::span<const uint32_t>(template_words_.data() + words_begin,
                                     template_words_.size() - words_begin);
  };
  const bool templated = grammar_.rules()[r].alternatives.size() > 2;
  if (templated) {
    if (!push_template_key(r, depth)) {
      template_words_.resize(words_begin);
      return memo = next_id_++;
    }
    if (const uint32_t id = templates_.find(template_key()); id != kNoId) {
      template_words_.resize(words_begin);
      return memo = id;
    }
  }
  // A set of one id is that id (a rule of one alternative means what the alternative means),
  // of two a pair id, larger sets interned whole; one- and two-alternative rules (most) allocate
  // nothing.
  const std::vector<uint32_t>& alternatives = grammar_.rules()[r].alternatives;
  uint32_t id;
  if (alternatives.size() == 1 || alternatives.size() == 2) {
    const uint32_t a = position(alternatives[0], depth);
    const uint32_t b = alternatives.size() == 2 ? position(alternatives[1], depth) : a;
    id = a == b ? a : intern3(kPairTag, std::min(a, b), std::max(a, b));
  } else {
    // The alternatives' ids go on a stack shared with the recursion (each call pops what it
    // pushed), so a rule of many alternatives, a string's character, allocates nothing.
    const size_t begin = alternative_ids_.size();
    for (uint32_t alt : alternatives) {
      const uint32_t alt_id = position(alt, depth);
      alternative_ids_.push_back(alt_id);
    }
    const auto first = alternative_ids_.begin() + static_cast<std::ptrdiff_t>(begin);
    std::sort(first, alternative_ids_.end());
    alternative_ids_.erase(std::unique(first, alternative_ids_.end()), alternative_ids_.end());
    const std::span<const uint32_t> set(alternative_ids_.data() + begin,
                                        alternative_ids_.size() - begin);
    if (set.size() == 1) {
      id = set[0];
    } else if (set.size() == 2) {
      id = intern3(kPairTag, set[0], set[1]);
    } else {
      id = intern(set);
    }
    alternative_ids_.resize(begin);
  }
  if (templated) {
    templates_.add(template_key(), id);
    template_words_.resize(words_begin);
  }
  if (chained && chain_ids_.find(chain_key) == kNoId) chain_ids_.add(chain_key, id);
  memo = id;
  return id;
}

TokenSignatures::TokenSignatures(const Grammar& grammar, int short_depth, int max_depth,
                                 const ByteSet& long_alphabet)
    : short_depth_(short_depth),
      short_(grammar, std::min(short_depth, max_depth)),
      long_(grammar, max_depth, long_alphabet) {}

uint32_t TokenSignatures::position(uint32_t pos, int depth) {
  const uint32_t short_id = short_.position(pos, std::min(depth, short_depth_));
  const uint32_t long_id = depth > short_depth_ ? long_.position(pos, depth) : kNone;
  // Ids from 1: 0 stays free for callers that mean "none".
  return pairs_.find_or_add(uint64_t{short_id} << 32 | long_id, &next_pair_id_);
}

}  // namespace strata::grammar
