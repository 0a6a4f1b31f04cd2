#include "sampling/candidates.h"

#include <algorithm>
#include <cmath>

namespace strata::sampling {

void keep_top_k(std::vector<Candidate>& candidates, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= candidates.size()) return;
  auto kth = candidates.begin() + k;
  std::nth_element(candidates.begin(), kth, candidates.end(), ranks_before);
  candidates.erase(kth, candidates.end());
  std::sort(candidates.begin(), candidates.end(), ranks_before);
}

void keep_top_p(std::vector<Candidate>& candidates, float top_p) {
  if (top_p >= 1.0f || candidates.size() <= 1) return;
  float max_logit = -INFINITY;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  double total = 0.0;
  for (const Candidate& c : candidates) total += std::exp(static_cast<double>(c.logit - max_logit));
  const double target = static_cast<double>(top_p) * total;

  // Sort best-first one chunk at a time: everything past a sorted prefix ranks below it, so
  // each round only partial-sorts the rest. Chunks grow 8x to bound the rounds.
  size_t sorted = 0;
  size_t chunk_end = std::min<size_t>(candidates.size(), 256);
  double mass = 0.0;
  while (true) {
    std::partial_sort(candidates.begin() + static_cast<std::ptrdiff_t>(sorted),
                      candidates.begin() + static_cast<std::ptrdiff_t>(chunk_end), candidates.end(),
                      ranks_before);
    for (; sorted < chunk_end; ++sorted) {
      mass += std::exp(static_cast<double>(candidates[sorted].logit - max_logit));
      if (mass >= target) {
        candidates.resize(sorted + 1);
        return;
      }
    }
    // Rounding can leave the mass a hair short of target: then everything is kept.
    if (chunk_end == candidates.size()) return;
    chunk_end = std::min(candidates.size(), chunk_end * 8);
  }
}

void keep_min_p(std::vector<Candidate>& candidates, float min_p) {
  if (min_p <= 0.0f || candidates.empty()) return;
  float max_logit = -INFINITY;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  const float threshold = max_logit + std::log(min_p);
  // The best candidate always meets the threshold (ln(min_p) <= 0), so one always survives.
  std::erase_if(candidates, [threshold](const Candidate& c) { return c.logit < threshold; });
}

}  // namespace strata::sampling
