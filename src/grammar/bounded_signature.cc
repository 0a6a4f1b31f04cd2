#include "grammar/bounded_signature.h"

#include <algorithm>

namespace strata::grammar {
namespace {

constexpr uint32_t kNone = 0;
constexpr uint32_t kEndId = 1;
enum Tag : uint32_t { kBytesTag, kRuleTag, kRuleSetTag, kUniqueTag };

uint64_t memo_key(uint32_t index, int depth) {
  return uint64_t{index} << 32 | static_cast<uint32_t>(depth);
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

BoundedSignatures::BoundedSignatures(const Grammar& grammar) : grammar_(grammar) {
  rule_min_length_.resize(grammar.rules().size(), Grammar::kUnbounded);
  for (uint32_t r = 0; r < grammar.rules().size(); ++r) {
    for (uint32_t alt : grammar.rules()[r].alternatives) {
      rule_min_length_[r] = std::min(rule_min_length_[r], grammar.min_rest(alt));
    }
  }
}

uint32_t BoundedSignatures::intern(std::vector<uint32_t> structure) {
  const auto [it, inserted] = ids_.emplace(std::move(structure), next_id_);
  if (inserted) ++next_id_;
  return it->second;
}

uint32_t BoundedSignatures::position(uint32_t pos, int depth) {
  if (depth < 0) return kNone;
  const Element& e = grammar_.element(pos);
  if (e.kind == ElementKind::kEnd) return kEndId;
  const uint64_t key = memo_key(pos, depth);
  if (auto it = position_memo_.find(key); it != position_memo_.end()) return it->second;
  uint32_t id;
  if (recursion_ >= kMaxRecursion) {
    id = intern({kUniqueTag, next_id_});
  } else {
    ++recursion_;
    if (e.kind == ElementKind::kBytes) {
      id = intern({kBytesTag, e.value, position(pos + 1, depth - 1)});
    } else {
      const uint32_t min_length = rule_min_length_[e.value];
      const int rest_depth =
          min_length > static_cast<uint32_t>(depth) ? -1 : depth - static_cast<int>(min_length);
      const uint32_t callee = rule(e.value, depth);
      id = intern({kRuleTag, callee, position(pos + 1, rest_depth)});
    }
    --recursion_;
  }
  position_memo_.emplace(key, id);
  return id;
}

uint32_t BoundedSignatures::rule(uint32_t r, int depth) {
  const uint64_t key = memo_key(r, depth);
  if (auto it = rule_memo_.find(key); it != rule_memo_.end()) return it->second;
  std::vector<uint32_t> structure{kRuleSetTag};
  for (uint32_t alt : grammar_.rules()[r].alternatives) structure.push_back(position(alt, depth));
  std::sort(structure.begin() + 1, structure.end());
  structure.erase(std::unique(structure.begin() + 1, structure.end()), structure.end());
  const uint32_t id = intern(std::move(structure));
  rule_memo_.emplace(key, id);
  return id;
}

}  // namespace strata::grammar
