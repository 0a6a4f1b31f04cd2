// kv::attend's fast path (tiles of queries, kernels/attention_tile.h) against its exact path on
// a mixed batch (a prompt chunk longer than a tile, and a decode entry of another sequence),
// and the same bits for any thread count.
#include "kv/attend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/kv_format.h"
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

// Position pos of layer 1's kv_head as stored (decoded from its page's format).
void read_position(KvCache& cache, SeqId seq, size_t pos, size_t kv_head, float* k, float* v) {
  const KvShape& s = cache.shape();
  const KvHeadView view = cache.pool().head(cache.page_table(seq)[pos / s.page_size], 1, kv_head);
  std::vector<float> keys(s.page_size * s.head_dim), values(keys.size());
  const size_t row = pos % s.page_size;
  kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, row + 1, s.page_size,
                           s.head_dim, keys.data());
  kernels::kv_decode_block(view.precision, kernels::KvRole::kValues, view.values, row + 1,
                           s.page_size, s.head_dim, values.data());
  std::copy_n(&keys[row * s.head_dim], s.head_dim, k);
  std::copy_n(&values[row * s.head_dim], s.head_dim, v);
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

// A few queries of one sequence (speculative decoding verifying its guesses) are too few rows
// to fill a tile: each gets the bits it would get alone, as a decode step, so that verifying a
// guess never changes what plain decoding would have computed.
TEST_P(AttendTest, AFewQueriesOfASequenceGetTheBitsOfDecodeSteps) {
  KvCache cache(KvShape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/16, /*page_size=*/8}, 32,
                GetParam());
  fill(cache);
  const size_t dim = kHeads * cache.shape().head_dim;
  Batch verify;
  for (uint32_t pos = 66; pos < 70; ++pos) verify.queries.push_back({1, pos});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  verify.q.resize(verify.queries.size() * dim);
  for (float& x : verify.q) x = 2.0f * normal(rng);
  const std::vector<float> together = run(cache, verify, AttentionMode::kFast, 2);
  for (size_t t = 0; t < verify.queries.size(); ++t) {
    Batch alone;
    alone.queries = {verify.queries[t]};
    alone.q.assign(verify.q.begin() + t * dim, verify.q.begin() + (t + 1) * dim);
    const std::vector<float> step = run(cache, alone, AttentionMode::kFast, 2);
    EXPECT_TRUE(std::equal(step.begin(), step.end(), together.begin() + t * dim))
        << "query at position " << verify.queries[t].pos;
  }
}

// Sliding windows and soft-capped scores (kv/window_attention.h) against softmax computed in
// double over exactly the positions the window admits, for every query of the batch.
TEST_P(AttendTest, WindowAndSoftCapMatchADirectSoftmax) {
  const KvShape shape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/16, /*page_size=*/8};
  KvCache cache(shape, 32, GetParam());
  const Batch b = fill(cache);
  for (ScoreOptions scores : {ScoreOptions{0.0f, 13}, ScoreOptions{1.5f, 0}, ScoreOptions{0.8f, 5},
                              ScoreOptions{2.0f, 1}}) {
    SCOPED_TRACE(::testing::Message() << "cap " << scores.softcap << " window " << scores.window);
    for (size_t threads : {size_t{1}, size_t{3}}) {
      ThreadPool pool(threads);
      std::vector<float> out(b.q.size());
      attend(cache, 1, b.queries, kHeads, 0.25f, b.q.data(), out.data(), pool, scores);
      const size_t group = kHeads / shape.n_kv_heads, d = shape.head_dim;
      for (size_t t = 0; t < b.queries.size(); ++t) {
        const QueryPos& e = b.queries[t];
        const size_t first =
            scores.window != 0 && e.pos + 1 > scores.window ? e.pos + 1 - scores.window : 0;
        for (size_t h = 0; h < kHeads; ++h) {
          const float* q = &b.q[(t * kHeads + h) * d];
          std::vector<float> k(d), v(d);
          std::vector<double> s, want(d, 0.0);
          std::vector<std::vector<float>> values;
          for (size_t pos = first; pos <= e.pos; ++pos) {
            read_position(cache, e.seq, pos, h / group, k.data(), v.data());
            double dot = 0;
            for (size_t i = 0; i < d; ++i) dot += double{q[i]} * k[i];
            dot *= 0.25;
            if (scores.softcap != 0) dot = scores.softcap * std::tanh(dot / scores.softcap);
            s.push_back(dot);
            values.push_back(v);
          }
          const double m = *std::max_element(s.begin(), s.end());
          double sum = 0;
          for (double& x : s) sum += (x = std::exp(x - m));
          for (size_t j = 0; j < s.size(); ++j) {
            for (size_t i = 0; i < d; ++i) want[i] += s[j] / sum * values[j][i];
          }
          for (size_t i = 0; i < d; ++i) {
            ASSERT_NEAR(out[(t * kHeads + h) * d + i], want[i], 2e-5 * (1 + std::abs(want[i])))
                << "query " << t << " head " << h;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, AttendTest,
                         ::testing::Values(KvPrecision::kF32, KvPrecision::kF16));

}  // namespace
}  // namespace strata::kv
