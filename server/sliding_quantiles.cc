#include "server/sliding_quantiles.h"

#include <algorithm>
#include <cmath>

namespace strata::server {
namespace {

constexpr double kBucketsPerOctave = 16.0;

}  // namespace

SlidingQuantiles::SlidingQuantiles(int window_seconds, double min_value, double max_value)
    : window_seconds_(std::max(1, window_seconds)), min_value_(min_value) {
  n_buckets_ = static_cast<size_t>(std::ceil(std::log2(max_value / min_value) * kBucketsPerOctave));
  ring_.resize(static_cast<size_t>(window_seconds_));
  for (Slot& s : ring_) s.counts.assign(n_buckets_, 0);
}

size_t SlidingQuantiles::bucket_of(double value) const {
  if (!(value > min_value_)) return 0;
  const double b = std::floor(std::log2(value / min_value_) * kBucketsPerOctave);
  return std::min(static_cast<size_t>(b), n_buckets_ - 1);
}

double SlidingQuantiles::bucket_lower(size_t bucket) const {
  return min_value_ * std::exp2(static_cast<double>(bucket) / kBucketsPerOctave);
}

void SlidingQuantiles::bucket_bounds(double value, double& lower, double& upper) const {
  const size_t b = bucket_of(value);
  lower = b == 0 ? 0.0 : bucket_lower(b);
  upper = bucket_lower(b + 1);
}

void SlidingQuantiles::record(double value, double now_seconds) {
  const auto second = static_cast<int64_t>(std::floor(now_seconds));
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = ring_[static_cast<size_t>(second % window_seconds_)];
  if (slot.second != second) {  // the slot last held a second that has left the window
    std::fill(slot.counts.begin(), slot.counts.end(), 0);
    slot.second = second;
  }
  ++slot.counts[bucket_of(value)];
}

uint64_t SlidingQuantiles::merge(int64_t now, std::vector<uint64_t>& merged) const {
  merged.assign(n_buckets_, 0);
  uint64_t total = 0;
  for (const Slot& slot : ring_) {
    if (slot.second < 0 || slot.second > now || now - slot.second >= window_seconds_) continue;
    for (size_t b = 0; b < n_buckets_; ++b) merged[b] += slot.counts[b];
  }
  for (uint64_t c : merged) total += c;
  return total;
}

uint64_t SlidingQuantiles::count(double now_seconds) const {
  std::vector<uint64_t> merged;
  std::lock_guard<std::mutex> lock(mutex_);
  return merge(static_cast<int64_t>(std::floor(now_seconds)), merged);
}

double SlidingQuantiles::quantile(double q, double now_seconds) const {
  std::vector<uint64_t> merged;
  uint64_t total;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    total = merge(static_cast<int64_t>(std::floor(now_seconds)), merged);
  }
  if (total == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total)));
  uint64_t below = 0;
  for (size_t b = 0; b < n_buckets_; ++b) {
    if (below + merged[b] >= rank) {
      // The rank-th value lies in bucket b; place it by its rank among the bucket's values,
      // each taken to sit at the middle of an equal share of the bucket.
      const double lower = b == 0 ? 0.0 : bucket_lower(b);
      const double upper = bucket_lower(b + 1);
      const double within =
          (static_cast<double>(rank - below) - 0.5) / static_cast<double>(merged[b]);
      return lower + (upper - lower) * within;
    }
    below += merged[b];
  }
  return bucket_lower(n_buckets_);
}

}  // namespace strata::server
