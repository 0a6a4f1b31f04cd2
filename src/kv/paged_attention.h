// Attention of one query head over a sequence's pages (causal: positions [0, n_ctx)).
#pragma once

#include <cstddef>
#include <span>

#include "kv/kv_pool.h"

namespace strata::kv {

// out[d] = sum_t p_t * V[t][d],  p = softmax_t(scale * q · K[t]),  t in [0, n_ctx)
// q and out are [head_dim]; K and V are the kv_head's blocks in each page, read through the
// page's precision. scratch holds at least head_dim floats.
void attend_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                 size_t n_ctx, const float* q, float scale, float* out, float* scratch);

}  // namespace strata::kv
