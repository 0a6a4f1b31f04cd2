// Per-page key summaries: for every page, layer and KV head, the per-channel minimum and maximum
// of the keys written to it, the input of query-aware page selection (kv/page_selection.h,
// kernels/key_bounds.h). They live beside the pages, indexed by page id, not inside a page's
// data, so they do not change when a page is re-encoded to another precision (the tiers copy
// them along) and could be scored while the page's data is elsewhere.
//
// Layout: [page][layer][kv_head][2][head_dim] bfloat16, the lows then the highs. bfloat16 keeps
// f32's range (no overflow to infinity, whose product with a zero query channel would be NaN)
// at a quarter of a page's f16 bytes per layer (2 * head_dim values for page_size * head_dim
// keys). Lows round down and highs up, so a bound computed from them is never below the keys'
// true scores. Keys are those the page stores, read back from it: rounded to its precision, and
// rotated where the cache rotates (q·k is unchanged when both are rotated). So the bounds of a
// page a rollback cut short can be set again from the positions it keeps (KvCache::truncate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_page.h"

namespace strata::kv {

class KeySummaries {
 public:
  KeySummaries() = default;
  KeySummaries(const KvShape& shape, size_t n_pages);

  bool empty() const { return data_.empty(); }
  size_t bytes() const { return data_.size() * sizeof(uint16_t); }
  // uint16s between one page's summary of a (layer, head) and the next page's.
  size_t page_stride() const { return page_stride_; }
  // The (layer, head) summary of page 0; page p's is page_stride() * p further on.
  const uint16_t* base(size_t layer, size_t kv_head) const {
    return data_.data() + (layer * n_kv_heads_ + kv_head) * 2 * head_dim_;
  }
  const uint16_t* of(PageId page, size_t layer, size_t kv_head) const {
    return base(layer, kv_head) + size_t{page} * page_stride_;
  }

  // Widens page's (layer, head) bounds to take key k ([head_dim]); `first` (the page's first
  // slot) starts them afresh.
  void add(PageId page, size_t layer, size_t kv_head, const float* k, bool first);
  void copy(PageId from, PageId to);
  // One page's summaries, every layer and head: page_stride() uint16s (saved prefix pages).
  std::span<uint16_t> page(PageId page) {
    return {data_.data() + size_t{page} * page_stride_, page_stride_};
  }

 private:
  uint16_t* mutable_of(PageId page, size_t layer, size_t kv_head) {
    return data_.data() + size_t{page} * page_stride_ +
           (layer * n_kv_heads_ + kv_head) * 2 * head_dim_;
  }

  size_t n_kv_heads_ = 0, head_dim_ = 0, page_stride_ = 0;
  std::vector<uint16_t> data_;
};

// bfloat16 rounded towards -inf and +inf (x finite).
uint16_t bf16_round_down(float x);
uint16_t bf16_round_up(float x);
float bf16_to_float(uint16_t b);

}  // namespace strata::kv
