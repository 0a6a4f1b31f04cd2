#include "sampling/candidates.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace strata::sampling {
namespace {

// Up to this k, top-k keeps a heap of the best k in one pass: almost every candidate loses a
// single comparison against the heap's worst, which beats nth_element's repeated partitioning.
constexpr size_t kHeapTopKLimit = 1024;

// Number of logit buckets top-p splits the candidates into.
constexpr size_t kTopPBuckets = 1024;

}  // namespace

void keep_top_k(std::vector<Candidate>& candidates, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= candidates.size()) return;
  const auto keep = static_cast<size_t>(k);
  const auto kth = candidates.begin() + static_cast<std::ptrdiff_t>(keep);
  if (keep <= kHeapTopKLimit) {
    // candidates[0, keep) is a heap whose front is the worst of the best seen so far.
    std::make_heap(candidates.begin(), kth, ranks_before);
    for (auto it = kth; it != candidates.end(); ++it) {
      if (!ranks_before(*it, candidates.front())) continue;
      std::pop_heap(candidates.begin(), kth, ranks_before);
      *(kth - 1) = *it;
      std::push_heap(candidates.begin(), kth, ranks_before);
    }
  } else {
    std::nth_element(candidates.begin(), kth, candidates.end(), ranks_before);
  }
  candidates.erase(kth, candidates.end());
  std::sort(candidates.begin(), candidates.end(), ranks_before);
}

void keep_top_p(std::vector<Candidate>& candidates, float top_p) {
  if (top_p >= 1.0f || candidates.size() <= 1) return;
  float max_logit = -INFINITY;
  float min_logit = INFINITY;
  for (const Candidate& c : candidates) {
    max_logit = std::max(max_logit, c.logit);
    min_logit = std::min(min_logit, c.logit);
  }
  // Buckets split [min_logit, max_logit] evenly, bucket 0 holding the highest logits. The
  // bucket index never decreases as the logit falls, so every candidate in a lower bucket ranks
  // before every candidate in a higher one. A zero or overflowing range puts all in bucket 0.
  const float range = max_logit - min_logit;
  const float scale =
      std::isfinite(range) && range > 0.0f ? static_cast<float>(kTopPBuckets - 1) / range : 0.0f;
  auto bucket_of = [&](float logit) -> size_t {
    if (scale == 0.0f) return 0;
    return std::min(kTopPBuckets - 1, static_cast<size_t>((max_logit - logit) * scale));
  };
  auto weight_of = [&](float logit) { return static_cast<double>(std::exp(logit - max_logit)); };

  // p_i = w_i / total with w_i = exp(logit_i - max): the softmax without dividing.
  std::array<double, kTopPBuckets> bucket_mass{};
  for (const Candidate& c : candidates) bucket_mass[bucket_of(c.logit)] += weight_of(c.logit);
  double total = 0.0;
  for (double mass : bucket_mass) total += mass;
  const double target = static_cast<double>(top_p) * total;

  // The boundary bucket is the one whose mass carries the running sum to the target.
  size_t boundary = 0;
  double mass_before = 0.0;
  while (boundary + 1 < kTopPBuckets && mass_before + bucket_mass[boundary] < target) {
    mass_before += bucket_mass[boundary++];
  }

  // Keep lower buckets whole (in input order) and the best prefix of the boundary bucket.
  std::vector<Candidate> boundary_candidates;
  size_t kept = 0;
  for (const Candidate& c : candidates) {
    const size_t bucket = bucket_of(c.logit);
    if (bucket < boundary) {
      candidates[kept++] = c;
    } else if (bucket == boundary) {
      boundary_candidates.push_back(c);
    }
  }
  std::sort(boundary_candidates.begin(), boundary_candidates.end(), ranks_before);
  double mass = mass_before;
  for (const Candidate& c : boundary_candidates) {
    candidates[kept++] = c;
    mass += weight_of(c.logit);
    if (mass >= target) break;
  }
  candidates.resize(kept);
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
