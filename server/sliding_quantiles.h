// Quantiles of the values recorded in the last N seconds, without keeping or sorting them: a ring
// of per-second histograms over fixed log-spaced buckets (16 per octave, so a bucket spans 4.4%
// of its value). A quantile sums the ring's live slots and interpolates linearly inside the
// bucket that holds the wanted rank, so its error is at most one bucket's width.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace strata::server {

class SlidingQuantiles {
 public:
  // Values below `min_value` count in the first bucket, above `max_value` in the last.
  explicit SlidingQuantiles(int window_seconds, double min_value = 1e-5, double max_value = 1e4);

  // `now_seconds`: any monotonic clock in seconds; the same clock must be passed to quantile().
  void record(double value, double now_seconds);

  // The q-quantile (0 < q <= 1) of the values recorded in (now - window, now]; 0 when there are
  // none. Nearest-rank definition: the value of rank ceil(q * count).
  double quantile(double q, double now_seconds) const;
  // How many values the window holds now.
  uint64_t count(double now_seconds) const;

  int window_seconds() const { return window_seconds_; }
  // The bucket [lower, upper) a value falls in, for tests of the resolution.
  void bucket_bounds(double value, double& lower, double& upper) const;

 private:
  struct Slot {
    int64_t second = -1;  // which second the counts belong to
    std::vector<uint32_t> counts;
  };
  size_t bucket_of(double value) const;
  double bucket_lower(size_t bucket) const;
  // Sums the live slots' counts into `merged`; returns the total.
  uint64_t merge(int64_t now, std::vector<uint64_t>& merged) const;

  int window_seconds_;
  double min_value_;
  size_t n_buckets_;
  mutable std::mutex mutex_;
  std::vector<Slot> ring_;
};

}  // namespace strata::server
