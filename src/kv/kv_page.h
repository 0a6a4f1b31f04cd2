// The KV cache is a pool of pages. A page holds the keys and values of `page_size` consecutive
// positions of one sequence, for every layer: a sequence's cache is then one page table for the
// whole model, which keeps allocation, prefix sharing and precision tiers per page rather than per
// (page, layer) pair.
//
// Layout of one page, in its precision's blocks (kernels/kv_format.h), except that the precise
// layers of an r4 or r3 page take the next format up (KvShape::layer_precision):
//   for layer in [0, n_layers):
//     K: [n_kv_heads] blocks of [page_size][head_dim]
//     V: [n_kv_heads] blocks of [page_size][head_dim]
// Positions of one head are contiguous, so attention over a page reads one dense block per head,
// and a block is the unit a format's scales cover (the rotated formats' per-channel key steps
// span the page's positions).
//
// Sliding-window layers (Gemma 2 and 3: a query at p reads positions (p - window, p] only) keep
// their layers of a page in a separate window part, a slot of its own in the pool: once every
// query still to come is past the page, the window part goes back to the pool and the page keeps
// the global layers only. A long context then costs the global layers' KV plus one window per
// sequence. The two parts have the layout above over their own layers, in layer order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kv_format.h"

namespace strata::kv {

using PageId = uint32_t;
inline constexpr PageId kNoPage = UINT32_MAX;

// Storage precision of a page: one of the block formats of kernels/kv_format.h (f32, f16, bf16,
// q8_0, q4_0, and the rotated r8, r4, r3). Each precision has its own arena in the pool, its own
// byte size and its own read path in attention, so a sequence may mix precisions (tiers).
using KvPrecision = kernels::KvFormat;

inline const char* precision_name(KvPrecision p) { return kernels::kv_format_name(p); }

struct KvShape {
  size_t n_layers = 0;
  size_t n_kv_heads = 0;
  size_t head_dim = 0;
  size_t page_size = 32;  // positions per page
  // Per layer, whether it attends through a sliding window of `window` positions (its data then
  // lives in a page's window part); empty when no layer does.
  std::vector<bool> window_layers = {};
  size_t window = 0;

  // Per layer, whether it keeps one format finer than a low-bit page's (layer_precision); empty
  // when none does. A few layers carry most of a model's sensitivity to key error (those whose
  // scores are largest: induction and retrieval heads), so a 4-bit page that holds them in 8
  // bits loses several times less for a fraction of a bit per element
  // (engine/kv_calibration.h chooses them).
  std::vector<bool> precise_layers = {};

  size_t head_block_elements() const { return page_size * head_dim; }
  bool window_layer(size_t layer) const {
    return layer < window_layers.size() && window_layers[layer];
  }
  size_t n_window_layers() const {
    size_t n = 0;
    for (bool w : window_layers) n += w ? 1 : 0;
    return n;
  }
  bool precise_layer(size_t layer) const {
    return layer < precise_layers.size() && precise_layers[layer];
  }

  // The format a layer of a page of precision p is stored in: p, or for a precise layer of an
  // r4 or r3 page the next format up (r8, r4).
  KvPrecision layer_precision(KvPrecision p, size_t layer) const {
    if (!precise_layer(layer)) return p;
    if (p == KvPrecision::kR4) return KvPrecision::kR8;
    if (p == KvPrecision::kR3) return KvPrecision::kR4;
    return p;
  }
  // Bytes of one KV head's keys or values in a block of format p (kernels::kv_block_bytes).
  size_t block_bytes(KvPrecision p, kernels::KvRole role) const {
    return kernels::kv_block_bytes(p, role, page_size, head_dim);
  }
  // Bytes of one layer of a page of precision p.
  size_t layer_bytes(KvPrecision p, size_t layer) const {
    const KvPrecision f = layer_precision(p, layer);
    return n_kv_heads *
           (block_bytes(f, kernels::KvRole::kKeys) + block_bytes(f, kernels::KvRole::kValues));
  }
};

// Bytes of one page of a precision, both parts.
inline size_t page_bytes(const KvShape& shape, KvPrecision p) {
  size_t bytes = 0;
  for (size_t l = 0; l < shape.n_layers; ++l) bytes += shape.layer_bytes(p, l);
  return bytes;
}
// Bytes of a page's window part (its sliding-window layers), and of the rest.
inline size_t window_part_bytes(const KvShape& shape, KvPrecision p) {
  size_t bytes = 0;
  for (size_t l = 0; l < shape.n_layers; ++l) {
    if (shape.window_layer(l)) bytes += shape.layer_bytes(p, l);
  }
  return bytes;
}
inline size_t global_part_bytes(const KvShape& shape, KvPrecision p) {
  return page_bytes(shape, p) - window_part_bytes(shape, p);
}

inline constexpr uint32_t kNoWindowSlot = UINT32_MAX;

// Bookkeeping of one page; its data lives in the arena of its precision.
struct KvPage {
  KvPrecision precision = KvPrecision::kF32;
  uint8_t arena = 0;       // index of the pool's arena that holds the data
  uint32_t ref_count = 0;  // sequences holding the page; shared prefix pages have more than one
  uint32_t n_filled = 0;   // positions written, from the page's start
  // The slot of its window part in the arena, or kNoWindowSlot: released, or no window layers.
  uint32_t window_slot = kNoWindowSlot;
  // In the prefix index (kv/prefix_index.h): full, immutable, findable by content even with no
  // holder left; saved to the prefix store once (`saved`) when there is one.
  bool indexed = false;
  bool saved = false;
};

// Read/write access to one page's data for one layer and KV head.
struct KvHeadView {
  void* keys;    // a block of [page_size][head_dim] in the page's precision
  void* values;  // likewise
  KvPrecision precision;
};

}  // namespace strata::kv
