// A fixed pool of KV pages allocated once, one arena per precision; pages are handed to sequences
// on demand and returned when a sequence ends. Allocation never touches the operating system
// after construction.
//
// Free pages wait in one list per arena, in the order they are handed out again: pages nobody
// indexed first (their contents are worth nothing), then pages of the prefix cache least recently
// freed first (a sequence gives its pages back deepest first, so a prefix's tail goes before its
// head). A free indexed page can be taken back from the middle of the list (reclaim) when a
// prompt finds it.
//
// With sliding-window layers (kv_page.h), each arena also holds window slots, usually far fewer
// than its pages: a page is handed out with one and gives it back when its sequence has moved
// past it (release_window). A free page keeps its slot only while it is in the prefix cache; a
// page that needs a slot when none is free takes one from the free page handed out next.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "base/aligned.h"
#include "base/result.h"
#include "kv/key_summary.h"
#include "kv/kv_page.h"
#include "platform/scratch_file.h"

namespace strata::kv {

// The pages of one precision.
struct ArenaSpec {
  static constexpr size_t kOnePerPage = std::numeric_limits<size_t>::max();
  KvPrecision precision = KvPrecision::kF16;
  size_t n_pages = 0;
  // Window parts (kv_page.h) for at most this many of the pages at once; ignored without
  // sliding-window layers.
  size_t window_slots = kOnePerPage;
  // Non-empty: the pages live in an unlinked file in this folder (--kv-offload,
  // platform/scratch_file.h), which the kernel pages out under memory pressure; their window
  // parts, read every step while they last, stay in memory.
  std::string offload_dir = {};
};

// The window slots an arena of `spec` holds: none without sliding-window layers, and never more
// than its pages.
inline size_t window_slot_count(const KvShape& shape, const ArenaSpec& spec) {
  return shape.n_window_layers() == 0 ? 0 : std::min(spec.n_pages, spec.window_slots);
}

class KvPool {
 public:
  // One arena of n_pages pages at `precision`.
  KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision);
  // One arena per spec (distinct precisions); the first is the default (hot) precision. Throws
  // std::bad_alloc without memory, std::runtime_error when an offload file cannot be made.
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
  // may still be `indexed`: its owner (KvCache) drops it from the prefix index. With window
  // layers it comes with a window part unless `window` is false (a copy of a page that has none).
  Result<PageId> allocate();
  Result<PageId> allocate(KvPrecision precision, bool window = true);
  // Whether n pages of `precision` with window parts can be allocated now.
  bool can_allocate(KvPrecision precision, size_t n) const;
  // Gives a page's window part back; its window layers must not be read or written again.
  void release_window(PageId id);
  bool has_window(PageId id) const { return pages_[id].window_slot != kNoWindowSlot; }
  bool has_window_layers() const { return windows_; }
  size_t window_slots(KvPrecision precision) const;
  size_t used_window_slots(KvPrecision precision) const;
  // Bytes of the pages of `precision` in use: their global parts and the window slots held.
  size_t used_bytes(KvPrecision precision) const;
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
  // A page's bytes in kv_page.h's layout and its precision: the global part, and the window
  // part (empty when the page has none).
  std::span<unsigned char> data(PageId id);
  std::span<unsigned char> window_data(PageId id);
  // The keys of (layer, kv_head) in a page, read-only: [page_size][head_dim] in the layer's
  // format (KvShape::layer_precision), as head() reports it.
  const void* key_block(PageId id, size_t layer, size_t kv_head) const;

 private:
  struct Arena {
    KvPrecision precision;
    size_t page_bytes;  // a page's global part; its window part is slot_bytes
    size_t slot_bytes;
    // Per layer, where it starts in its part (precise layers are larger: KvShape).
    std::vector<size_t> layer_offset;
    PageId first;  // its pages are [first, first + n_pages)
    size_t n_pages;
    AlignedPtr<unsigned char> data = {};  // n_pages * page_bytes (platform/huge_pages.h), or
    ScratchMapping file = {};             // the same in a file (ArenaSpec::offload_dir)
    unsigned char* base = nullptr;        // whichever holds them
    // The free list, linked through links_: handed out from the head.
    PageId head = kNoPage, tail = kNoPage;
    size_t n_free = 0;
    // Window parts: n_slots of slot_bytes each; the free ones a stack, so that the slots in
    // use stay few and low (untouched slots are never made resident).
    AlignedPtr<unsigned char> window_data = {};
    size_t n_slots = 0;
    std::vector<uint32_t> free_slots = {};
    size_t slots_on_free_pages = 0;  // held by free (prefix-cached) pages, taken back on demand
  };
  struct Link {
    PageId prev = kNoPage, next = kNoPage;
  };
  const Arena* find(KvPrecision precision) const;
  Arena* find(KvPrecision precision);
  unsigned char* page_data(PageId id);
  // The start of a layer's data in a page: in its global part or its window part.
  const unsigned char* layer_data(PageId id, size_t layer) const;
  // A window slot for the page the arena is about to hand out: a free one, else the slot of the
  // free page handed out soonest that has one; false when neither exists.
  bool take_window_slot(Arena& a, PageId id);
  void give_back_slot(Arena& a, KvPage& page);
  void push_front(Arena& a, PageId id);
  void push_back(Arena& a, PageId id);
  void unlink(Arena& a, PageId id);

  KvShape shape_;
  bool windows_ = false;  // some layer is a window layer
  std::vector<Arena> arenas_;
  std::vector<KvPage> pages_;
  std::vector<Link> links_;  // per page, while it is free
  KeySummaries summaries_;
};

}  // namespace strata::kv
