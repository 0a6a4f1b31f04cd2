// Attention for layers whose scores are shaped beyond scale * q·k: a sliding window (the query
// at position p reads (p - window, p] only) and soft-capped scores (s = cap * tanh(s / cap)).
// One path for every KV precision: each (page, KV head) block a query reads is decoded to f32
// once for the group of query heads that share it (kernels::kv_decode_block), then the scores,
// their cap and an online softmax run position by position. A window bounds the work to
// `window` positions per query, so a decode step costs the same at any depth.
#pragma once

#include <span>

#include "kv/attend.h"
#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace strata::kv {

// As kv::attend, with `scores` applied; any thread count gives the same bits.
void attend_window(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
                   float scale, const ScoreOptions& scores, const float* q, float* out,
                   ThreadPool& pool);

}  // namespace strata::kv
