#include "server/sliding_quantiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace strata::server {
namespace {

// The oracle: nearest-rank quantile of the sorted values.
double sorted_quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

// The estimate must lie in the bucket that holds the oracle's value.
void expect_same_bucket(const SlidingQuantiles& s, double estimate, double oracle) {
  double lower, upper;
  s.bucket_bounds(oracle, lower, upper);
  EXPECT_GE(estimate, lower) << "oracle " << oracle;
  EXPECT_LE(estimate, upper) << "oracle " << oracle;
  EXPECT_LE(std::abs(estimate - oracle) / oracle, 0.045) << "16 buckets per octave: 4.4%";
}

TEST(SlidingQuantiles, MatchesSortedOracleWithinOneBucket) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(std::log(0.02), 1.0);  // ~20 ms, wide spread
  for (int trial = 0; trial < 20; ++trial) {
    SlidingQuantiles s(60);
    std::vector<double> values;
    const int n = 1 + trial * 137;
    for (int i = 0; i < n; ++i) {
      const double v = latency(rng);
      values.push_back(v);
      s.record(v, 1000.0 + 50.0 * i / n);  // spread over 50 s, inside the window
    }
    ASSERT_EQ(s.count(1050.0), static_cast<uint64_t>(n));
    for (double q : {0.01, 0.25, 0.5, 0.9, 0.99, 1.0}) {
      expect_same_bucket(s, s.quantile(q, 1050.0), sorted_quantile(values, q));
    }
  }
}

TEST(SlidingQuantiles, OnlyTheLastWindowCounts) {
  SlidingQuantiles s(10);
  for (int i = 0; i < 100; ++i) s.record(5.0, 100.5);   // old: slow
  for (int i = 0; i < 10; ++i) s.record(0.001, 112.2);  // recent: fast
  EXPECT_EQ(s.count(112.9), 10u);                       // second 100 left the window at 110
  expect_same_bucket(s, s.quantile(0.99, 112.9), 0.001);
  EXPECT_EQ(s.count(109.9), 100u);  // from second 109 the old values are still live
  EXPECT_EQ(s.count(200.0), 0u);
  EXPECT_EQ(s.quantile(0.5, 200.0), 0.0);
}

TEST(SlidingQuantiles, ARingSlotIsReusedForItsNewSecond) {
  SlidingQuantiles s(4);
  s.record(1.0, 3.0);
  s.record(2.0, 7.0);  // same slot (7 % 4 == 3 % 4): second 3 is gone
  EXPECT_EQ(s.count(7.0), 1u);
  expect_same_bucket(s, s.quantile(0.5, 7.0), 2.0);
}

TEST(SlidingQuantiles, ValuesOutsideTheRangeAreClamped) {
  SlidingQuantiles s(60, 1e-3, 10.0);
  s.record(1e-9, 1.0);
  s.record(1e9, 1.0);
  EXPECT_LE(s.quantile(0.5, 1.0), 1e-3 * 1.05);
  EXPECT_GE(s.quantile(1.0, 1.0), 10.0 * 0.95);
}

}  // namespace
}  // namespace strata::server
