// Attention for many queries at once (FlashAttention-2, Dao 2023): a tile of query rows folded
// into one online softmax per row over blocks of keys and values, all in f32. Per block of keys,
//   S = scale * Q·Kᵀ (causal: row r sees key positions <= last[r]),
//   m' = max(m, rowmax S),  alpha = exp(m - m'),  P = exp(S - m'),
//   l' = l * alpha + rowsum P,  O' = O * alpha + P·V,
// and out = O / l at the end: one rescale of a row's accumulator per block instead of one per
// key, and a vector exp (the polynomial of exp_poly-inl.h) instead of std::exp.
//
// This is the fast path (kv::AttentionMode::kFast). It does not reproduce the reference
// engine's rounding as kernels/attention.h does (f16 accumulator, f16 query, std::exp); it is
// the more accurate in f32, and differs from the exact path by ~1e-6 relative (f32 pages).
//
// The queries are held transposed (rows in vector lanes), so that the scores of one key for
// many rows are one broadcast of k[d] times a vector of q[.][d], with no horizontal sums; the
// row maximum and sum then run down columns. Each score is one fused multiply-add chain over d
// in order, each accumulator element one chain over the keys in order: on targets with FMA the
// SIMD kernel equals its scalar twin (kernels/reference/attention_tile_ref.h) bit for bit, and
// no result depends on the vector width or on how the caller splits work between threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::kernels {

// Keys folded in per rescale: a KV page is walked in blocks of this many.
inline constexpr size_t kTileKeyBlock = 16;
// Row and dimension strides are multiples of this (the most f32 lanes of any enabled target),
// so that the layout, and with it every rounding, is the same on every target.
inline constexpr size_t kTileAlign = 16;

// A tile's working memory, carved from one float buffer the caller owns (attention_tile_floats).
// Row r is query r / group, head r % group.
struct AttentionTile {
  size_t rows = 0, group = 1, head_dim = 0;
  size_t row_stride = 0;   // rows rounded up to kTileAlign
  size_t dim_stride = 0;   // head_dim rounded up to kTileAlign
  float* qt = nullptr;     // [head_dim][row_stride]: the queries transposed, padding rows zero
  float* last = nullptr;   // [row_stride]: the last key position each row sees; padding -1
  float* m = nullptr;      // [row_stride]: running maximum, -inf before any key
  float* l = nullptr;      // [row_stride]: running sum of exp(s - m)
  float* alpha = nullptr;  // [row_stride]: this block's rescale exp(m_old - m_new)
  float* acc = nullptr;    // [rows][dim_stride]: running sum of exp(s - m) * V[t]
  float* s = nullptr;      // [kTileKeyBlock][row_stride]: scores, then weights, of one block
  float* k = nullptr;      // [kTileKeyBlock][head_dim]: the block's keys in f32
  float* v = nullptr;      // [kTileKeyBlock][dim_stride]: its values in f32, padding zero
};

// Floats of the buffer a tile of `rows` rows needs.
size_t attention_tile_floats(size_t rows, size_t head_dim);

// Lays out a tile in `buffer` and loads the queries: `queries` consecutive query rows of
// `group` heads each, query i's head g at q + i * query_stride + g * head_dim, query i seeing
// key positions [0, last_pos[i]].
AttentionTile begin_attention_tile(float* buffer, const float* q, size_t queries, size_t group,
                                   size_t query_stride, size_t head_dim, const uint32_t* last_pos);

// Folds keys/values ([n][head_dim] each, at positions first_pos + [0, n)) into the tile; pages
// go in position order. Every row must see at least one key over the whole walk.
void attend_tile_f16(AttentionTile& tile, const uint16_t* keys, const uint16_t* values, size_t n,
                     size_t first_pos, float scale);
void attend_tile_f32(AttentionTile& tile, const float* keys, const float* values, size_t n,
                     size_t first_pos, float scale);

// out = acc / l, query i's head g at out + i * query_stride + g * head_dim.
void finish_attention_tile(const AttentionTile& tile, float* out, size_t query_stride);

}  // namespace strata::kernels
