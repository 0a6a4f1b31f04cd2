// A fixed pool of KV pages allocated once, one arena per precision; pages are handed to sequences
// on demand and returned when a sequence ends. Allocation never touches the operating system
// after construction.
//
// Free pages wait in one list per arena, in the order they are handed out again: pages nobody
// indexed first (their contents are worth nothing), then pages of the prefix cache least recently
// freed first (a sequence gives its pages back deepest first, so a prefix's tail goes before its
// head). A free indexed page can be taken back from the middle of the list (reclaim) when a
// prompt finds it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/aligned.h"
#include "base/result.h"
#include "kv/key_summary.h"
#include "kv/kv_page.h"

namespace strata::kv {

// The pages of one precision.
struct ArenaSpec {
  KvPrecision precision = KvPrecision::kF16;
  size_t n_pages = 0;
};

class KvPool {
 public:
  // One arena of n_pages pages at `precision`.
  KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision);
  // One arena per spec (distinct precisions); the first is the default (hot) precision.
  KvPool(const KvShape& shape, std::span<const ArenaSpec> arenas);

  const KvShape& shape() const { return shape_; }
  size_t n_pages() const { return pages_.size(); }
  size_t free_pages() const;
  size_t free_pages(KvPrecision precision) const;
  size_t n_pages(KvPrecision precision) const;
  size_t used_pages(KvPrecision precision) const {
    return n_pages(precision) - free_pages(precision);
  }
  // The arenas' precisions, the default first.
  std::vector<KvPrecision> precisions() const;
  size_t used_pages() const { return n_pages() - free_pages(); }
  size_t bytes() const;
  // The precision new pages get unless asked otherwise: the first arena's.
  KvPrecision default_precision() const { return arenas_.front().precision; }
  bool has_precision(KvPrecision precision) const { return find(precision) != nullptr; }

  // The first free page with ref_count 1, or kOutOfRange when the arena is exhausted. The page
  // may still be `indexed`: its owner (KvCache) drops it from the prefix index.
  Result<PageId> allocate();
  Result<PageId> allocate(KvPrecision precision);
  // Adds a holder to a page (prefix sharing); a free page leaves the free list.
  void retain(PageId id);
  // Drops a holder; the page returns to its arena's free list when none is left.
  void release(PageId id);
  // Copies a page's data, fill count and key summary into another page of the same precision.
  void copy(PageId from, PageId to);

  // Per-page key summaries (kv/key_summary.h), kept from the call on for every page written;
  // only sparse attention and its inspection read them, so a pool without either has none.
  void enable_key_summaries();
  KeySummaries& key_summaries() { return summaries_; }
  const KeySummaries& key_summaries() const { return summaries_; }

  const KvPage& page(PageId id) const { return pages_[id]; }
  KvPage& page(PageId id) { return pages_[id]; }
  KvHeadView head(PageId id, size_t layer, size_t kv_head);
  // A page's bytes, every layer (kv_page.h's layout in its precision).
  std::span<unsigned char> data(PageId id);
  // The keys of (layer, kv_head) in a page, read-only: [page_size][head_dim] in its precision.
  const void* key_block(PageId id, size_t layer, size_t kv_head) const;

 private:
  struct Arena {
    KvPrecision precision;
    size_t page_bytes;
    PageId first;                    // its pages are [first, first + n_pages)
    AlignedPtr<unsigned char> data;  // n_pages * page_bytes (platform/huge_pages.h)
    size_t n_pages;
    // The free list, linked through links_: handed out from the head.
    PageId head = kNoPage, tail = kNoPage;
    size_t n_free = 0;
  };
  struct Link {
    PageId prev = kNoPage, next = kNoPage;
  };
  const Arena* find(KvPrecision precision) const;
  Arena* find(KvPrecision precision);
  unsigned char* page_data(PageId id);
  void push_front(Arena& a, PageId id);
  void push_back(Arena& a, PageId id);
  void unlink(Arena& a, PageId id);

  KvShape shape_;
  std::vector<Arena> arenas_;
  std::vector<KvPage> pages_;
  std::vector<Link> links_;  // per page, while it is free
  KeySummaries summaries_;
};

}  // namespace strata::kv
