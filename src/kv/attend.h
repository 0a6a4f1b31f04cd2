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
  bool generated = false;  // model::BatchEntry::generated: selects its pages as a decode step
};

// What a layer does to its attention scores beyond scale * q·k over every earlier position.
struct ScoreOptions {
  // s = softcap * tanh(s / softcap) before the softmax (Gemma 2); 0: none.
  float softcap = 0;
  // The query at position p reads positions (p - window, p] only (sliding-window layers: Gemma
  // 2 and 3, as the reference engine's standard window masks them); 0: every position.
  size_t window = 0;

  bool plain() const { return softcap == 0 && window == 0; }
};

// q and out are [queries][n_heads][head_dim]; query head h reads KV head h / (n_heads /
// n_kv_heads); scores are scale * q·k (the layer's attention scale, usually 1/sqrt(head_dim)).
// Every position a query reads must already be written. Any thread count gives the same bits.
// The cache's attention_mode() chooses the exact or the fast path (kv/kv_cache.h). With sparse
// attention a layer past the policy's dense ones reads, for each decode query (and each prompt
// query with SparsePolicy::prefill), only the pages its KV head's group of query heads selects.
// Layers with non-plain `scores` take kv/window_attention.h's path instead, whatever the mode;
// a window already bounds what they read, so they do not select pages.
void attend(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
            float scale, const float* q, float* out, ThreadPool& pool,
            const ScoreOptions& scores = {});

}  // namespace strata::kv
