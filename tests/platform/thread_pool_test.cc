#include "platform/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace strata {
namespace {

TEST(ThreadPoolTest, RunsEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (size_t n : {0u, 1u, 3u, 1000u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](size_t i, size_t thread_id) {
      EXPECT_LT(thread_id, pool.num_threads());
      hits[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << i;
  }
}

TEST(ThreadPoolTest, ManyShortJobsInARow) {
  ThreadPool pool(3);
  std::atomic<long> total{0};
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(7, [&](size_t i, size_t) { total.fetch_add(static_cast<long>(i)); });
  }
  EXPECT_EQ(total.load(), 2000L * 21);
}

TEST(ThreadPoolTest, SingleThreadRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1u);
  int sum = 0;  // no atomics needed: everything runs on the caller
  pool.parallel_for(10, [&](size_t i, size_t) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace strata
