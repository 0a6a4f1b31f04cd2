// Attention of the query heads that share one KV head over a sequence's pages (causal: positions
// [0, n_ctx)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/kv_pool.h"

namespace strata::kv {

// For each query head g < group: out[g][d] = sum_t p_t * V[t][d],
// p = softmax_t(scale * q[g] · K[t]), t in [0, n_ctx).
// q and out are [group][head_dim] (grouped-query attention's heads of one KV head, adjacent);
// K and V are the kv_head's blocks in each page, read through the page's precision, once per
// position for the whole group. With reference_reads (KvCache::reference_reads), f16 and f32
// pages are read position by position as the reference engine reads them
// (kernels/attention.h); otherwise every page a block at a time (kernels/attention_block.h).
// With `read` (indices into `pages`, ascending: sparse attention's choice, kv/page_selection.h)
// only those pages are read, t then running over their positions below n_ctx.
// scratch holds attend_kv_head_scratch_floats(...) floats.
size_t attend_kv_head_scratch_floats(const KvShape& shape, size_t group);
void attend_kv_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                    size_t n_ctx, const float* q, size_t group, float scale, float* out,
                    float* scratch, bool reference_reads, std::span<const uint32_t> read = {});

// The fast path (AttentionMode::kFast): `queries` query rows of one sequence, each with the
// group of query heads of kv_head, as one tile (kernels/attention_tile.h) over the pages
// holding positions [0, last_pos[queries - 1]]; query i sees positions [0, last_pos[i]]
// (ascending). Query i's head g is at q + i * query_stride + g * head_dim, and so is its output.
// Pages of other precisions than f16 and f32 are decoded a (page, head) block at a time, once
// per tile. scratch holds attend_kv_head_tile_scratch_floats(...) floats.
size_t attend_kv_head_tile_scratch_floats(const KvShape& shape, size_t rows);
void attend_kv_head_tile(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                         const float* q, size_t queries, size_t group, size_t query_stride,
                         const uint32_t* last_pos, float scale, float* out, float* scratch);

}  // namespace strata::kv
