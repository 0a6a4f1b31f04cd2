// Where exact attention goes, and how much of it query-aware sparse attention would keep: for
// the probed queries of a prompt, per layer and query head, the entropy of the softmax over
// every position, and its mass in the sink pages, the recent window, the pages the selection
// chooses (kv/page_selection.h, for the group of query heads of the KV head) and the rest. The
// selection's recall is the mass it reads: sinks + window + selected = 1 - rest; beside it,
// the recall of the best possible choice of as many pages. `strata inspect` prints these
// numbers.
//
// The probe runs in the dense forward pass, so each layer's queries are those of dense
// attention: recall measures the selection alone, not errors compounded over sparse layers.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "kv/attention_probe.h"
#include "kv/page_selection.h"

namespace strata::kv {

// Sums over the queries probed; divide by `queries` for means.
struct HeadAttentionStats {
  size_t queries = 0;
  double entropy = 0;                                    // nats: -sum_t p_t ln p_t
  double sinks = 0, window = 0, selected = 0, rest = 0;  // attention mass
  std::vector<double> recalls;                           // per query: 1 - its rest
  // Per query: the recall of the best choice of as many pages for the KV head's group (the
  // pages of most attention mass), what any page selection could read at this budget. Where it
  // is low too, attention is spread too thin for the budget, and no scoring would help.
  std::vector<double> best_recalls;
};

class AttentionProfiler final : public AttentionProbe {
 public:
  // Profiles the queries at positions first_pos and later, in every layer of `shape`, with the
  // regions and budget of `policy` (whether enabled or not: what it would choose). The cache
  // must keep key summaries (KvCache::set_sparse with a policy enabled).
  AttentionProfiler(const KvShape& shape, size_t n_heads, size_t first_pos,
                    const SparsePolicy& policy);

  void observe(const KvCache& cache, size_t layer, std::span<const QueryPos> queries,
               size_t n_heads, float scale, const float* q) override;

  size_t n_heads() const { return n_heads_; }
  const HeadAttentionStats& head(size_t layer, size_t h) const {
    return stats_[layer * n_heads_ + h];
  }

 private:
  void profile_group(const KvCache& cache, size_t layer, const QueryPos& e, size_t kv_head,
                     const float* q_group, float scale);
  // Appends each head of the group's best_recalls from page_mass_.
  void record_best_recalls(size_t layer, size_t kv_head, const PageRegions& regions);

  KvShape shape_;
  size_t n_heads_, first_pos_;
  SparsePolicy policy_;
  std::vector<HeadAttentionStats> stats_;  // [layer][head]
  std::vector<float> keys_;                // [positions][head_dim], decoded
  std::vector<double> scores_;
  std::vector<double> page_mass_;  // [group][page]: one query head's softmax mass per page
  SelectionScratch selection_;
};

}  // namespace strata::kv
