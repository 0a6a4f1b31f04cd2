#include "kv/page_selection.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "kernels/key_bounds.h"

namespace strata::kv {

PageRegions page_regions(const SparsePolicy& policy, size_t page_size, size_t n_ctx) {
  PageRegions r;
  r.n_pages = (n_ctx + page_size - 1) / page_size;
  r.sink_pages = std::min(r.n_pages, (policy.sinks + page_size - 1) / page_size);
  // The window is every page holding one of the last `window` positions (the partial page being
  // written among them).
  const size_t window_first_pos = n_ctx > policy.window ? n_ctx - policy.window : 0;
  r.window_begin = std::max(r.sink_pages, window_first_pos / page_size);
  const size_t fixed = r.sink_pages + (r.n_pages - r.window_begin);
  const size_t budget_pages = policy.budget / page_size;
  r.select = budget_pages > fixed ? budget_pages - fixed : 0;
  return r;
}

void select_pages(const KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                  const float* q, size_t group, const PageRegions& regions,
                  SelectionScratch& scratch) {
  assert(!pool.key_summaries().empty());
  std::vector<uint32_t>& chosen = scratch.chosen;
  chosen.clear();
  for (size_t i = 0; i < regions.sink_pages; ++i) chosen.push_back(static_cast<uint32_t>(i));
  const size_t n = regions.candidates();
  if (regions.select > 0 && n > 0) {
    scratch.candidates.assign(pages.begin() + static_cast<ptrdiff_t>(regions.sink_pages),
                              pages.begin() + static_cast<ptrdiff_t>(regions.window_begin));
    scratch.bounds.resize(n);
    const KeySummaries& s = pool.key_summaries();
    kernels::key_score_bounds(q, group, pool.shape().head_dim, s.base(layer, kv_head),
                              s.page_stride(), scratch.candidates.data(), n, scratch.bounds.data());
    scratch.order.resize(n);
    std::iota(scratch.order.begin(), scratch.order.end(), 0u);
    const size_t k = std::min(regions.select, n);
    const float* bounds = scratch.bounds.data();
    auto higher = [bounds](uint32_t a, uint32_t b) {
      return bounds[a] > bounds[b] || (bounds[a] == bounds[b] && a < b);
    };
    std::nth_element(scratch.order.begin(), scratch.order.begin() + static_cast<ptrdiff_t>(k - 1),
                     scratch.order.end(), higher);
    std::sort(scratch.order.begin(), scratch.order.begin() + static_cast<ptrdiff_t>(k));
    for (size_t j = 0; j < k; ++j) {
      chosen.push_back(static_cast<uint32_t>(regions.sink_pages + scratch.order[j]));
    }
  }
  for (size_t i = regions.window_begin; i < regions.n_pages; ++i) {
    chosen.push_back(static_cast<uint32_t>(i));
  }
}

}  // namespace strata::kv
