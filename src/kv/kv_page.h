// The KV cache is a pool of pages. A page holds the keys and values of `page_size` consecutive
// positions of one sequence, for every layer: a sequence's cache is then one page table for the
// whole model, which keeps allocation, prefix sharing and precision tiers per page rather than per
// (page, layer) pair.
//
// Layout of one page (elements of the page's precision):
//   for layer in [0, n_layers):
//     K: [n_kv_heads][page_size][head_dim]
//     V: [n_kv_heads][page_size][head_dim]
// Positions of one head are contiguous, so attention over a page reads one dense block per head.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::kv {

using PageId = uint32_t;
inline constexpr PageId kNoPage = UINT32_MAX;

// Storage precision of a page. Each precision has its own arena in the pool, its own byte size
// and its own read path in attention, so a sequence may mix precisions. A later tier (int8, fp8,
// int4 with per-group scales) adds an enum value here, its size in page_bytes(), an arena in the
// engine's KV policy, and a branch in the attention read path (kv/paged_attention.cc).
enum class KvPrecision : uint8_t { kF32, kF16 };

// Bytes of one stored element of a precision's data.
constexpr size_t precision_bytes(KvPrecision p) {
  switch (p) {
    case KvPrecision::kF32:
      return 4;
    case KvPrecision::kF16:
      return 2;
  }
  return 4;
}

const char* precision_name(KvPrecision p);

struct KvShape {
  size_t n_layers = 0;
  size_t n_kv_heads = 0;
  size_t head_dim = 0;
  size_t page_size = 32;  // positions per page

  size_t head_block_elements() const { return page_size * head_dim; }
  size_t layer_elements() const { return 2 * n_kv_heads * head_block_elements(); }
  size_t page_elements() const { return n_layers * layer_elements(); }
};

// Bytes of one page of a precision (quantized tiers will add their scales here).
inline size_t page_bytes(const KvShape& shape, KvPrecision p) {
  return shape.page_elements() * precision_bytes(p);
}

// Bookkeeping of one page; its data lives in the arena of its precision.
struct KvPage {
  KvPrecision precision = KvPrecision::kF32;
  uint8_t arena = 0;       // index of the pool's arena that holds the data
  uint32_t ref_count = 0;  // sequences holding the page; shared prefix pages have more than one
  uint32_t n_filled = 0;   // positions written, from the page's start
};

// Read/write access to one page's data for one layer and KV head.
struct KvHeadView {
  void* keys;    // [page_size][head_dim]
  void* values;  // [page_size][head_dim]
  KvPrecision precision;
};

}  // namespace strata::kv
