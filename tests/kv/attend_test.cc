// kv::attend's fast path (tiles of queries, kernels/attention_tile.h) against its exact path on
// a mixed batch (a prompt chunk longer than a tile, and a decode entry of another sequence),
// and the same bits for any thread count.
#include "kv/attend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace strata::kv {
namespace {

constexpr size_t kHeads = 4;

struct Batch {
  std::vector<QueryPos> queries;
  std::vector<float> q;
};

// Sequence 1 holds 70 positions and asks from its last 40 (a prompt chunk: three tiles);
// sequence 2 holds 51 and asks from its last (a decode step).
Batch fill(KvCache& cache) {
  const KvShape& s = cache.shape();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch b;
  for (auto [seq, n, asked] : {std::tuple<SeqId, size_t, size_t>{1, 70, 40}, {2, 51, 1}}) {
    EXPECT_TRUE(cache.reserve(seq, n).ok());
    for (size_t t = 0; t < n; ++t) {
      for (size_t layer = 0; layer < s.n_layers; ++layer) {
        std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
        for (float& x : k) x = normal(rng);
        for (float& x : v) x = normal(rng);
        cache.write(seq, t, layer, k.data(), v.data());
      }
    }
    for (size_t t = n - asked; t < n; ++t) b.queries.push_back({seq, static_cast<uint32_t>(t)});
  }
  b.q.resize(b.queries.size() * kHeads * s.head_dim);
  for (float& x : b.q) x = 2.0f * normal(rng);
  return b;
}

std::vector<float> run(KvCache& cache, const Batch& b, AttentionMode mode, size_t threads) {
  ThreadPool pool(threads);
  cache.set_attention_mode(mode);
  std::vector<float> out(b.q.size());
  attend(cache, 1, b.queries, kHeads, 0.25f, b.q.data(), out.data(), pool);
  return out;
}

class AttendTest : public ::testing::TestWithParam<KvPrecision> {};

TEST_P(AttendTest, FastPathAgreesWithTheExactPath) {
  KvCache cache(KvShape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/16, /*page_size=*/8}, 32,
                GetParam());
  const Batch b = fill(cache);
  const std::vector<float> exact = run(cache, b, AttentionMode::kExact, 2);
  const std::vector<float> fast = run(cache, b, AttentionMode::kFast, 2);
  // f16 pages: the exact path rounds the query and its accumulator to f16.
  const float tolerance = GetParam() == KvPrecision::kF32 ? 1e-5f : 1e-2f;
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_NEAR(fast[i], exact[i], tolerance * (1.0f + std::abs(exact[i]))) << "at " << i;
  }
}

TEST_P(AttendTest, FastPathGivesTheSameBitsOnAnyThreadCount) {
  KvCache cache(KvShape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/16, /*page_size=*/8}, 32,
                GetParam());
  const Batch b = fill(cache);
  const std::vector<float> one = run(cache, b, AttentionMode::kFast, 1);
  EXPECT_EQ(run(cache, b, AttentionMode::kFast, 2), one);
  EXPECT_EQ(run(cache, b, AttentionMode::kFast, 3), one);
}

INSTANTIATE_TEST_SUITE_P(Precisions, AttendTest,
                         ::testing::Values(KvPrecision::kF32, KvPrecision::kF16));

}  // namespace
}  // namespace strata::kv
