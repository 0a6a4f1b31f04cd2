// A fixed pool of KV pages allocated once; pages are handed to sequences on demand and returned
// when a sequence ends. Allocation never touches the operating system after construction.
#pragma once

#include <cstddef>
#include <vector>

#include "base/aligned.h"
#include "base/result.h"
#include "kv/kv_page.h"

namespace strata::kv {

class KvPool {
 public:
  KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision);

  const KvShape& shape() const { return shape_; }
  size_t n_pages() const { return pages_.size(); }
  size_t free_pages() const { return free_list_.size(); }
  size_t used_pages() const { return n_pages() - free_pages(); }
  size_t bytes() const { return arena_.size(); }

  // A free page with ref_count 1, or kOutOfRange when the pool is exhausted.
  Result<PageId> allocate();
  // Adds a holder to a page (prefix sharing).
  void retain(PageId id);
  // Drops a holder; the page returns to the free list when none is left.
  void release(PageId id);

  const KvPage& page(PageId id) const { return pages_[id]; }
  KvPage& page(PageId id) { return pages_[id]; }
  KvHeadView head(PageId id, size_t layer, size_t kv_head);

 private:
  KvShape shape_;
  KvPrecision precision_;
  size_t page_bytes_;
  AlignedBuffer<unsigned char> arena_;
  std::vector<KvPage> pages_;
  std::vector<PageId> free_list_;  // LIFO: a just-freed page is likely still in cache
};

}  // namespace strata::kv
