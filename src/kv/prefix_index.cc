#include "kv/prefix_index.h"

#include <algorithm>
#include <cassert>

namespace strata::kv {

std::optional<PageId> PrefixIndex::find(const PageKey& key, const PageKey& parent,
                                        std::span<const int32_t> tokens) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  const PrefixEntry& e = by_page_.at(it->second);
  if (e.parent != parent || !std::ranges::equal(e.tokens, tokens)) return std::nullopt;
  return it->second;
}

bool PrefixIndex::insert(PageId page, PrefixEntry entry) {
  assert(!contains(page));
  if (!by_key_.emplace(entry.key, page).second) return false;
  by_page_.emplace(page, std::move(entry));
  return true;
}

void PrefixIndex::erase(PageId page) {
  auto it = by_page_.find(page);
  if (it == by_page_.end()) return;
  by_key_.erase(it->second.key);
  by_page_.erase(it);
}

void PrefixIndex::move(PageId from, PageId to) {
  auto it = by_page_.find(from);
  assert(it != by_page_.end() && !contains(to));
  PrefixEntry entry = std::move(it->second);
  by_page_.erase(it);
  by_key_[entry.key] = to;
  by_page_.emplace(to, std::move(entry));
}

const PrefixEntry* PrefixIndex::entry(PageId page) const {
  auto it = by_page_.find(page);
  return it == by_page_.end() ? nullptr : &it->second;
}

}  // namespace strata::kv
