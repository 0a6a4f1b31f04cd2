#include "grammar/bounded_signature.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>

namespace strata::grammar {
namespace {

constexpr uint32_t kNone = 0;
constexpr uint32_t kEndId = 1;
constexpr uint32_t kUnset = UINT32_MAX;
// kPairTag: a rule of two alternatives, the set as its (smaller, larger) ids.
enum Tag : uint32_t { kBytesTag, kRuleTag, kPairTag, kRuleSetTag };

// The memo slot of (index, depth), allocating the index's row on first use.
uint32_t& memo_slot(std::vector<std::vector<uint32_t>>& memo, uint32_t index, int depth,
                    int max_depth) {
  std::vector<uint32_t>& row = memo[index];
  if (row.empty()) row.assign(static_cast<size_t>(max_depth) + 1, kUnset);
  return row[static_cast<size_t>(depth)];
}

}  // namespace

size_t BoundedSignatures::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ v.size();
  for (uint32_t x : v) {
    h ^= x;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return static_cast<size_t>(h);
}

ByteSet BoundedSignatures::all_bytes() {
  ByteSet all;
  all.bits.fill(~uint64_t{0});
  return all;
}

BoundedSignatures::BoundedSignatures(const Grammar& grammar, int max_depth, const ByteSet& alphabet)
    : grammar_(grammar),
      max_depth_(max_depth),
      restricted_set_(grammar.n_byte_sets()),
      position_memo_(grammar.elements().size()),
      rule_memo_(grammar.rules().size()) {
  // Sets with the same intersection share an id; over every byte that is the set's own id.
  const bool every_byte = alphabet.bits == all_bytes().bits;
  std::map<std::array<uint64_t, 4>, uint32_t> ids;
  for (uint32_t set = 0; set < restricted_set_.size(); ++set) {
    std::array<uint64_t, 4> bits = grammar.byte_set(set).bits;
    for (int w = 0; w < 4; ++w) bits[w] &= alphabet.bits[w];
    if (bits == std::array<uint64_t, 4>{}) {
      restricted_set_[set] = kEmptySet;
    } else {
      restricted_set_[set] =
          every_byte ? set : ids.emplace(bits, static_cast<uint32_t>(ids.size())).first->second;
    }
  }
}

uint32_t BoundedSignatures::intern(std::vector<uint32_t> structure) {
  const auto [it, inserted] = ids_.emplace(std::move(structure), next_id_);
  if (inserted) ++next_id_;
  return it->second;
}

uint32_t BoundedSignatures::PairIds::find_or_add(uint64_t key, uint32_t* next_id) {
  if (2 * (size_ + 1) > keys_.size()) grow();
  const size_t mask = keys_.size() - 1;
  for (size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> shift_;; slot = (slot + 1) & mask) {
    if (keys_[slot] == key) return values_[slot];
    if (keys_[slot] == kEmpty) {
      keys_[slot] = key;
      values_[slot] = (*next_id)++;
      ++size_;
      return values_[slot];
    }
  }
}

void BoundedSignatures::PairIds::grow() {
  std::vector<uint64_t> keys = std::move(keys_);
  std::vector<uint32_t> values = std::move(values_);
  const size_t capacity = std::max<size_t>(1024, 2 * keys.size());
  keys_.assign(capacity, kEmpty);
  values_.assign(capacity, 0);
  shift_ = 64 - std::countr_zero(capacity);
  const size_t mask = capacity - 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == kEmpty) continue;
    size_t slot = (keys[i] * 0x9E3779B97F4A7C15ULL) >> shift_;
    while (keys_[slot] != kEmpty) slot = (slot + 1) & mask;
    keys_[slot] = keys[i];
    values_[slot] = values[i];
  }
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

uint32_t BoundedSignatures::rule(uint32_t r, int depth) {
  uint32_t& memo = memo_slot(rule_memo_, r, depth, max_depth_);
  if (memo != kUnset) return memo;
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
    std::vector<uint32_t> structure{kRuleSetTag};
    for (uint32_t alt : alternatives) structure.push_back(position(alt, depth));
    std::sort(structure.begin() + 1, structure.end());
    structure.erase(std::unique(structure.begin() + 1, structure.end()), structure.end());
    if (structure.size() == 2) {
      id = structure[1];
    } else if (structure.size() == 3) {
      id = intern3(kPairTag, structure[1], structure[2]);
    } else {
      id = intern(std::move(structure));
    }
  }
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
  return pairs_
      .emplace(uint64_t{short_id} << 32 | long_id, static_cast<uint32_t>(pairs_.size() + 1))
      .first->second;
}

}  // namespace strata::grammar
