#include "grammar/bounded_signature.h"

#include <algorithm>

namespace strata::grammar {
namespace {

constexpr uint32_t kNone = 0;
constexpr uint32_t kEndId = 1;
constexpr uint32_t kUnset = UINT32_MAX;
enum Tag : uint32_t { kBytesTag, kRuleTag, kRuleSetTag };

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

BoundedSignatures::BoundedSignatures(const Grammar& grammar, int max_depth)
    : grammar_(grammar),
      max_depth_(max_depth),
      position_memo_(grammar.elements().size()),
      rule_memo_(grammar.rules().size()) {}

uint32_t BoundedSignatures::intern(std::vector<uint32_t> structure) {
  const auto [it, inserted] = ids_.emplace(std::move(structure), next_id_);
  if (inserted) ++next_id_;
  return it->second;
}

uint32_t BoundedSignatures::intern3(uint32_t tag, uint32_t a, uint32_t b) {
  const auto [it, inserted] = ids3_[tag].emplace(uint64_t{a} << 32 | b, next_id_);
  if (inserted) ++next_id_;
  return it->second;
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
      id = intern3(kBytesTag, e.value, position(pos + 1, depth - 1));
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
  std::vector<uint32_t> structure{kRuleSetTag};
  for (uint32_t alt : grammar_.rules()[r].alternatives) structure.push_back(position(alt, depth));
  std::sort(structure.begin() + 1, structure.end());
  structure.erase(std::unique(structure.begin() + 1, structure.end()), structure.end());
  const uint32_t id = intern(std::move(structure));
  memo = id;
  return id;
}

}  // namespace strata::grammar
