#include "kv/attention_profile.h"

#include <algorithm>
#include <cmath>

#include "kernels/kv_format.h"
#include "kv/attend.h"
#include "kv/kv_cache.h"

namespace strata::kv {

AttentionProfiler::AttentionProfiler(const KvShape& shape, size_t n_heads, size_t first_pos,
                                     const SparsePolicy& policy)
    : shape_(shape),
      n_heads_(n_heads),
      first_pos_(first_pos),
      policy_(policy),
      stats_(shape.n_layers * n_heads) {
  policy_.enabled = true;
}

void AttentionProfiler::observe(const KvCache& cache, size_t layer,
                                std::span<const QueryPos> queries, size_t n_heads, float scale,
                                const float* q) {
  const size_t group = n_heads / shape_.n_kv_heads, head_dim = shape_.head_dim;
  for (size_t t = 0; t < queries.size(); ++t) {
    if (queries[t].pos < first_pos_) continue;
    for (size_t kv_head = 0; kv_head < shape_.n_kv_heads; ++kv_head) {
      profile_group(cache, layer, queries[t], kv_head,
                    q + (t * n_heads + kv_head * group) * head_dim, scale);
    }
  }
}

void AttentionProfiler::profile_group(const KvCache& cache, size_t layer, const QueryPos& e,
                                      size_t kv_head, const float* q_group, float scale) {
  const size_t page_size = shape_.page_size, head_dim = shape_.head_dim;
  const size_t group = n_heads_ / shape_.n_kv_heads, n_ctx = size_t{e.pos} + 1;
  const std::span<const PageId> pages = cache.page_table(e.seq);
  const KvPool& pool = cache.pool();
  // Every key the query can see, decoded to f32: attention as the page precisions give it.
  keys_.resize(n_ctx * head_dim);
  for (size_t p = 0, start = 0; start < n_ctx; ++p, start += page_size) {
    kernels::kv_decode_block(shape_.layer_precision(pool.page(pages[p]).precision, layer),
                             kernels::KvRole::kKeys, pool.key_block(pages[p], layer, kv_head),
                             std::min(page_size, n_ctx - start), page_size, head_dim,
                             &keys_[start * head_dim]);
  }
  // What the selection reads: a region per page (0 sink, 1 window, 2 selected, 3 the rest).
  const PageRegions regions = page_regions(policy_, page_size, n_ctx);
  std::vector<uint8_t> region(regions.n_pages, 3);
  for (size_t p = 0; p < regions.sink_pages; ++p) region[p] = 0;
  for (size_t p = regions.window_begin; p < regions.n_pages; ++p) region[p] = 1;
  if (regions.dense()) {
    for (size_t p = regions.sink_pages; p < regions.window_begin; ++p) region[p] = 2;
  } else {
    select_pages(pool, pages, layer, kv_head, q_group, group, regions, selection_);
    for (uint32_t p : selection_.chosen) {
      if (region[p] == 3) region[p] = 2;
    }
  }
  // Per head of the group, its mass on each page; the stats once all heads are known, because
  // the best choice is the group's (one choice for the group, as selection makes it).
  page_mass_.assign(group * regions.n_pages, 0.0);
  for (size_t g = 0; g < group; ++g) {
    // p_t = softmax_t(scale * q·k_t), in double.
    const float* qh = q_group + g * head_dim;
    scores_.resize(n_ctx);
    double top = -HUGE_VAL;
    for (size_t t = 0; t < n_ctx; ++t) {
      double dot = 0;
      for (size_t d = 0; d < head_dim; ++d) dot += double{qh[d]} * keys_[t * head_dim + d];
      scores_[t] = scale * dot;
      top = std::max(top, scores_[t]);
    }
    double sum = 0;
    for (double& s : scores_) sum += (s = std::exp(s - top));
    double entropy = 0, mass[4] = {0, 0, 0, 0};
    for (size_t t = 0; t < n_ctx; ++t) {
      const double p = scores_[t] / sum;
      if (p > 0) entropy -= p * std::log(p);
      mass[region[t / page_size]] += p;
      page_mass_[g * regions.n_pages + t / page_size] += p;
    }
    HeadAttentionStats& s = stats_[layer * n_heads_ + kv_head * group + g];
    ++s.queries;
    s.entropy += entropy;
    s.sinks += mass[0];
    s.window += mass[1];
    s.selected += mass[2];
    s.rest += mass[3];
    s.recalls.push_back(1.0 - mass[3]);
  }
  record_best_recalls(layer, kv_head, regions);
}

// The best recall any choice of as many candidate pages could give: the group's pages of most
// summed mass (an upper bound for selection, which sees key bounds, not the softmax).
void AttentionProfiler::record_best_recalls(size_t layer, size_t kv_head,
                                            const PageRegions& regions) {
  const size_t group = n_heads_ / shape_.n_kv_heads;
  std::vector<uint32_t> best;
  for (size_t p = regions.sink_pages; p < regions.window_begin; ++p) {
    best.push_back(static_cast<uint32_t>(p));
  }
  const size_t k = std::min(regions.select, best.size());
  auto group_mass = [&](uint32_t p) {
    double m = 0;
    for (size_t g = 0; g < group; ++g) m += page_mass_[g * regions.n_pages + p];
    return m;
  };
  std::partial_sort(best.begin(), best.begin() + static_cast<ptrdiff_t>(k), best.end(),
                    [&](uint32_t a, uint32_t b) { return group_mass(a) > group_mass(b); });
  best.resize(k);
  for (size_t g = 0; g < group; ++g) {
    const double* m = &page_mass_[g * regions.n_pages];
    double read = 0;
    for (size_t p = 0; p < regions.n_pages; ++p) {
      if (p < regions.sink_pages || p >= regions.window_begin) read += m[p];
    }
    for (uint32_t p : best) read += m[p];
    stats_[layer * n_heads_ + kv_head * group + g].best_recalls.push_back(std::min(read, 1.0));
  }
}

}  // namespace strata::kv
