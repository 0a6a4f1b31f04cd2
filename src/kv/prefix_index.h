// The prefix cache's index: which page holds the keys and values of which prefix (kv/page_key.h).
//
// Only full pages are indexed. An indexed page is immutable: a sequence that would write into it
// copies it first when others hold it, or drops it from the index when it alone does
// (KvCache::write). A page stays indexed after its last holder lets it go, on the pool's free
// list, until the pool hands it out again (KvPool: pages nobody indexed go first, then the least
// recently freed), so a prefix asked for again soon after finds its pages where they were.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_page.h"
#include "kv/page_key.h"

namespace strata::kv {

struct PrefixEntry {
  PageKey key;
  PageKey parent;
  std::vector<int32_t> tokens;  // the page's page_size tokens
};

class PrefixIndex {
 public:
  // The page indexed under chain_key(parent, tokens), if its parent and tokens are those too.
  std::optional<PageId> find(const PageKey& key, const PageKey& parent,
                             std::span<const int32_t> tokens) const;
  // Indexes a page; false (nothing changed) when another page already holds the key.
  bool insert(PageId page, PrefixEntry entry);
  void erase(PageId page);
  // The entry of an indexed page moves to another page (re-encoded to another precision).
  void move(PageId from, PageId to);
  const PrefixEntry* entry(PageId page) const;
  bool contains(PageId page) const { return by_page_.count(page) != 0; }
  size_t size() const { return by_page_.size(); }

 private:
  std::unordered_map<PageKey, PageId, PageKeyHash> by_key_;
  std::unordered_map<PageId, PrefixEntry> by_page_;
};

}  // namespace strata::kv
