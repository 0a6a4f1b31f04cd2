// Attention of the query heads that share one KV head over a sequence's pages (causal: positions
// [0, n_ctx)).
#pragma once

#include <cstddef>
#include <span>

#include "kv/kv_pool.h"

namespace strata::kv {

// For each query head g < group: out[g][d] = sum_t p_t * V[t][d],
// p = softmax_t(scale * q[g] · K[t]), t in [0, n_ctx).
// q and out are [group][head_dim] (grouped-query attention's heads of one KV head, adjacent);
// K and V are the kv_head's blocks in each page, read through the page's precision, once per
// position for the whole group. scratch holds at least group * head_dim floats.
void attend_kv_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                    size_t n_ctx, const float* q, size_t group, float scale, float* out,
                    float* scratch);

}  // namespace strata::kv
