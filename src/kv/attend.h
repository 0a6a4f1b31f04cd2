// Attention over the KV cache for a batch of queries: kv::attend owns both the walk over each
// sequence's pages and the plan that spreads the work over threads, and so also page selection
// (query-aware sparse attention, kv/page_selection.h: the sink pages, a recent window and the
// top-k older pages by their key summaries' bound on q·k) where the cache's SparsePolicy asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace strata::kv {

// One query row: a sequence and the position it attends from (over positions [0, pos]).
struct QueryPos {
  SeqId seq = 0;
  uint32_t pos = 0;
};

// q and out are [queries][n_heads][head_dim]; query head h reads KV head h / (n_heads /
// n_kv_heads); scores are scale * q·k (the layer's attention scale, usually 1/sqrt(head_dim)).
// Every position a query reads must already be written. Any thread count gives the same bits.
// The cache's attention_mode() chooses the exact or the fast path (kv/kv_cache.h). With sparse
// attention a layer past the policy's dense ones reads, for each decode query (and each prompt
// query with SparsePolicy::prefill), only the pages its KV head's group of query heads selects.
void attend(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
            float scale, const float* q, float* out, ThreadPool& pool);

}  // namespace strata::kv
