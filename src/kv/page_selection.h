// Query-aware page selection (Quest, Tang et al. 2024; StreamingLLM's sinks, Xiao et al. 2024):
// a query reads the sink pages (the sequence's first positions, which draw attention whatever
// they hold), the recent window, and, from the pages in between, those with the highest upper
// bound on q·k (kernels/key_bounds.h over the pages' key summaries), as many as the budget
// leaves room for. Attention is then exact softmax over the chosen pages only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_pool.h"

namespace strata::kv {

struct SparsePolicy {
  bool enabled = false;
  size_t budget = 512;  // positions a query reads at most, sinks and window included
  size_t window = 128;  // the last positions, always read
  size_t sinks = 32;    // the first positions, always read
  // Layers [0, dense_layers) read every page: Quest keeps the first two dense, where attention
  // is broad and bounds separate pages poorly.
  size_t dense_layers = 2;
  // Whether the queries of prompt chunks select too (each its own pages). Decoding selects
  // whatever this says; prefill is dense by default, and a teacher-forced evaluation turns
  // this on so that every scored position reads as a decode step would.
  bool prefill = false;

  bool sparse_layer(size_t layer) const { return enabled && layer >= dense_layers; }
};

// Where a query's pages fall. Pages [0, sink_pages) are sinks, [window_begin, n_pages) the
// window; `select` pages are chosen from the candidates [sink_pages, window_begin).
struct PageRegions {
  size_t n_pages = 0;
  size_t sink_pages = 0;
  size_t window_begin = 0;
  size_t select = 0;

  size_t candidates() const { return window_begin - sink_pages; }
  // Whether the budget covers every page: the query reads densely.
  bool dense() const { return select >= candidates(); }
};
PageRegions page_regions(const SparsePolicy& policy, size_t page_size, size_t n_ctx);

// Per-thread working memory of select_pages.
struct SelectionScratch {
  std::vector<uint32_t> candidates;  // page ids
  std::vector<float> bounds;
  std::vector<uint32_t> order;
  std::vector<uint32_t> chosen;  // the result: indices into the page table, ascending
};

// The pages (indices into `pages`, ascending, in scratch.chosen) that the group of query heads
// q ([group][head_dim], in the cache's space: rotated where it rotates) of kv_head reads in
// `layer`, the regions being those of its context (page_regions). The pool must keep key summaries.
// Ties in the bound go to the older page, so the choice depends on the inputs alone.
void select_pages(const KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                  const float* q, size_t group, const PageRegions& regions,
                  SelectionScratch& scratch);

}  // namespace strata::kv
