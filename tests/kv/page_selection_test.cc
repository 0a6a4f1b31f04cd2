// Query-aware sparse attention: bfloat16 bounds that stay bounds, where a query's pages fall,
// the pages it chooses (against a brute-force ranking by the scalar bound), and kv::attend
// reading only them: softmax attention over exactly those positions, the dense result when the
// budget covers everything, the same bits for any thread count, and the same choice after the
// tiers re-encode the pages; and the profiler's split of exact attention by region.
#include "kv/page_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/reference/key_bounds_ref.h"
#include "kv/attend.h"
#include "kv/attention_profile.h"
#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace strata::kv {
namespace {

constexpr size_t kPage = 16;
constexpr size_t kHeads = 4;  // two query heads per KV head

KvShape shape() { return {/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/32, kPage}; }

SparsePolicy policy(size_t budget) {
  SparsePolicy p;
  p.enabled = true;
  p.budget = budget;
  p.window = 32;
  p.sinks = 16;
  p.dense_layers = 1;
  return p;
}

TEST(PageSelectionTest, Bf16RoundingBracketsTheValue) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f, 3e38f, -3e38f};
  for (int i = 0; i < 10000; ++i) xs.push_back(normal(rng) * std::exp2(float(i % 40 - 20)));
  for (float x : xs) {
    const float down = bf16_to_float(bf16_round_down(x)), up = bf16_to_float(bf16_round_up(x));
    ASSERT_LE(down, x) << x;
    ASSERT_GE(up, x) << x;
    // Exact values round to themselves; others to the two neighbours bfloat16 has.
    if (down == x || up == x) {
      EXPECT_EQ(down, up) << x;
    } else {
      // Neighbours: one step apart in bfloat16's magnitude, on the side of x's sign.
      const uint32_t d = std::bit_cast<uint32_t>(down), u = std::bit_cast<uint32_t>(up);
      EXPECT_EQ(x > 0 ? u - d : d - u, 0x10000u) << x;
    }
  }
}

TEST(PageSelectionTest, RegionsSplitTheContext) {
  SparsePolicy p = policy(128);  // 8 pages: 1 sink, the window's 2 or 3, the rest chosen
  PageRegions r = page_regions(p, kPage, 1000);  // 63 pages, the last partial
  EXPECT_EQ(r.n_pages, 63u);
  EXPECT_EQ(r.sink_pages, 1u);
  EXPECT_EQ(r.window_begin, 60u);  // positions 968..999 lie in pages 60..62
  EXPECT_EQ(r.select, 4u);
  EXPECT_FALSE(r.dense());
  r = page_regions(p, kPage, 992);  // a page boundary: the window is pages 60 and 61
  EXPECT_EQ(r.window_begin, 60u);
  EXPECT_EQ(r.select, 5u);
  r = page_regions(p, kPage, 128);  // the budget covers it all
  EXPECT_TRUE(r.dense());
  r = page_regions(p, kPage, 20);  // shorter than the window
  EXPECT_EQ(r.window_begin, 1u);
  EXPECT_TRUE(r.dense());
  p.sinks = 0;
  r = page_regions(p, kPage, 1000);
  EXPECT_EQ(r.sink_pages, 0u);
  EXPECT_EQ(r.select, 5u);
}

// A cache of one sequence of n positions with random keys and values, f32 so that attention can
// be checked against softmax over the values written.
struct Filled {
  std::vector<float> k, v;  // [n][layer][kv_head][head_dim]
};

Filled fill(KvCache& cache, SeqId seq, size_t n, uint32_t seed) {
  const KvShape s = cache.shape();
  const size_t width = s.n_kv_heads * s.head_dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Filled f;
  f.k.resize(n * s.n_layers * width);
  f.v.resize(f.k.size());
  for (float& x : f.k) x = normal(rng);
  for (float& x : f.v) x = normal(rng);
  EXPECT_TRUE(cache.reserve(seq, n).ok());
  for (size_t t = 0; t < n; ++t) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      const size_t at = (t * s.n_layers + layer) * width;
      cache.write(seq, t, layer, &f.k[at], &f.v[at]);
    }
  }
  return f;
}

std::vector<float> random_q(size_t floats, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(floats);
  for (float& x : q) x = normal(rng);
  return q;
}

TEST(PageSelectionTest, SummaryBoundsEveryKeysScore) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF32);
  cache.set_sparse(policy(128));
  const size_t n = 200;
  const Filled f = fill(cache, 1, n, 5);
  const std::span<const PageId> pages = cache.page_table(1);
  const KeySummaries& sums = cache.pool().key_summaries();
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> q = random_q(s.head_dim, seed);
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      for (size_t h = 0; h < s.n_kv_heads; ++h) {
        for (size_t t = 0; t < n; ++t) {
          const float* k = &f.k[((t * s.n_layers + layer) * s.n_kv_heads + h) * s.head_dim];
          double score = 0;
          for (size_t d = 0; d < s.head_dim; ++d) score += double{q[d]} * k[d];
          const uint32_t page = pages[t / kPage];
          float bound = 0;
          kernels::reference::key_score_bounds_ref(q.data(), 1, s.head_dim, sums.base(layer, h),
                                                   sums.page_stride(), &page, 1, &bound);
          ASSERT_GE(double{bound}, score - 1e-5) << "position " << t;
        }
      }
    }
  }
}

// Rejected guesses (speculative decoding) are written and then rolled back: the cut page's
// bounds must be those of the keys it keeps, as if the guesses had never been written, or
// sparse attention would choose otherwise than decoding without them.
TEST(PageSelectionTest, ARollbackLeavesTheBoundsOfTheKeptKeysOnly) {
  const KvShape s = shape();
  const size_t kept = kPage + 8;
  KvCache plain(s, 64, KvPrecision::kF16), rolled(s, 64, KvPrecision::kF16);
  plain.set_sparse(policy(128));
  rolled.set_sparse(policy(128));
  fill(plain, 1, kept, 5);
  fill(rolled, 1, kept, 5);
  ASSERT_TRUE(rolled.reserve(1, kept + 4).ok());
  const std::vector<float> far(s.n_kv_heads * s.head_dim, 100.0f);
  for (size_t t = kept; t < kept + 4; ++t) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) rolled.write(1, t, layer, &far[0], &far[0]);
  }
  rolled.truncate(1, kept);
  const PageId a = plain.page_table(1)[1], b = rolled.page_table(1)[1];
  for (size_t layer = 0; layer < s.n_layers; ++layer) {
    for (size_t h = 0; h < s.n_kv_heads; ++h) {
      const uint16_t* want = plain.pool().key_summaries().of(a, layer, h);
      const uint16_t* got = rolled.pool().key_summaries().of(b, layer, h);
      EXPECT_TRUE(std::equal(want, want + 2 * s.head_dim, got))
          << "layer " << layer << " head " << h;
    }
  }
}

// The choice select_pages should make: the sinks, the window, and the `select` candidates with
// the highest group bound by the scalar twin, ties to the older page.
std::vector<uint32_t> brute_force_choice(const KvCache& cache, SeqId seq, size_t layer,
                                         size_t kv_head, const float* q, size_t group,
                                         const PageRegions& r) {
  const KeySummaries& sums = cache.pool().key_summaries();
  const std::span<const PageId> pages = cache.page_table(seq);
  std::vector<std::pair<float, uint32_t>> ranked;
  for (size_t i = r.sink_pages; i < r.window_begin; ++i) {
    const uint32_t page = pages[i];
    float bound = 0;
    kernels::reference::key_score_bounds_ref(q, group, cache.shape().head_dim,
                                             sums.base(layer, kv_head), sums.page_stride(), &page,
                                             1, &bound);
    ranked.push_back({-bound, static_cast<uint32_t>(i)});
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<uint32_t> chosen;
  for (size_t i = 0; i < r.sink_pages; ++i) chosen.push_back(static_cast<uint32_t>(i));
  for (size_t j = 0; j < std::min(r.select, ranked.size()); ++j) {
    chosen.push_back(ranked[j].second);
  }
  for (size_t i = r.window_begin; i < r.n_pages; ++i) chosen.push_back(static_cast<uint32_t>(i));
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

TEST(PageSelectionTest, ChoosesTheHighestBoundsAndAPlantedKey) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF32);
  cache.set_sparse(policy(128));
  const size_t n = 500;
  Filled f = fill(cache, 1, n, 9);
  const std::vector<float> q = random_q(2 * s.head_dim, 11);  // KV head 0's group
  // Position 250 (page 15) of layer 1, KV head 0 gets a key along the first query head.
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size(), 0.0f);
  for (size_t d = 0; d < s.head_dim; ++d) k[d] = 4.0f * q[d];
  cache.write(1, 250, 1, k.data(), v.data());
  const PageRegions r = page_regions(cache.sparse(), kPage, n);
  SelectionScratch scratch;
  select_pages(cache.pool(), cache.page_table(1), 1, 0, q.data(), 2, r, scratch);
  EXPECT_EQ(scratch.chosen, brute_force_choice(cache, 1, 1, 0, q.data(), 2, r));
  EXPECT_EQ(scratch.chosen.size(), r.sink_pages + r.select + (r.n_pages - r.window_begin));
  EXPECT_TRUE(std::is_sorted(scratch.chosen.begin(), scratch.chosen.end()));
  EXPECT_NE(std::find(scratch.chosen.begin(), scratch.chosen.end(), 15u), scratch.chosen.end());
}

TEST(PageSelectionTest, TiesGoToTheOlderPage) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF32);
  cache.set_sparse(policy(128));
  const size_t n = 500;
  const std::vector<float> k(s.n_kv_heads * s.head_dim, 1.0f), v(k.size(), 1.0f);
  ASSERT_TRUE(cache.reserve(1, n).ok());
  for (size_t t = 0; t < n; ++t) {
    for (size_t layer = 0; layer < s.n_layers; ++layer)
      cache.write(1, t, layer, k.data(), v.data());
  }
  const PageRegions r = page_regions(cache.sparse(), kPage, n);
  const std::vector<float> q = random_q(2 * s.head_dim, 1);
  SelectionScratch scratch;
  select_pages(cache.pool(), cache.page_table(1), 1, 0, q.data(), 2, r, scratch);
  std::vector<uint32_t> want = {0};
  for (uint32_t i = 1; i <= r.select; ++i) want.push_back(i);
  for (size_t i = r.window_begin; i < r.n_pages; ++i) want.push_back(static_cast<uint32_t>(i));
  EXPECT_EQ(scratch.chosen, want);
}

std::vector<float> attend_decode(KvCache& cache, SeqId seq, size_t pos, const float* q,
                                 size_t layer, size_t threads) {
  ThreadPool pool(threads);
  const QueryPos query{seq, static_cast<uint32_t>(pos), /*generated=*/true};
  std::vector<float> out(kHeads * cache.shape().head_dim);
  attend(cache, layer, {&query, 1}, kHeads, 0.2f, q, out.data(), pool);
  return out;
}

TEST(PageSelectionTest, DecodeAttendsOverTheChosenPagesOnly) {
  const KvShape s = shape();
  for (AttentionMode mode : {AttentionMode::kExact, AttentionMode::kFast}) {
    KvCache cache(s, 64, KvPrecision::kF32);
    cache.set_attention_mode(mode);
    cache.set_sparse(policy(128));
    const size_t n = 400, layer = 1;
    const Filled f = fill(cache, 1, n, 21);
    const std::vector<float> q = random_q(kHeads * s.head_dim, 22);
    const std::vector<float> out = attend_decode(cache, 1, n - 1, q.data(), layer, 2);
    const PageRegions r = page_regions(cache.sparse(), kPage, n);
    for (size_t h = 0; h < kHeads; ++h) {
      const size_t kv_head = h / 2;
      const float* qh = &q[h * s.head_dim];
      const std::vector<uint32_t> chosen =
          brute_force_choice(cache, 1, layer, kv_head, &q[kv_head * 2 * s.head_dim], 2, r);
      // Softmax over the chosen pages' positions, in double.
      std::vector<double> scores, want(s.head_dim, 0.0);
      std::vector<size_t> positions;
      for (uint32_t p : chosen) {
        for (size_t t = p * kPage; t < std::min(n, (p + 1) * kPage); ++t) positions.push_back(t);
      }
      double top = -1e300;
      for (size_t t : positions) {
        const float* k = &f.k[((t * s.n_layers + layer) * s.n_kv_heads + kv_head) * s.head_dim];
        double dot = 0;
        for (size_t d = 0; d < s.head_dim; ++d) dot += double{qh[d]} * k[d];
        scores.push_back(0.2 * dot);
        top = std::max(top, scores.back());
      }
      double sum = 0;
      for (size_t i = 0; i < positions.size(); ++i) {
        const double w = std::exp(scores[i] - top);
        sum += w;
        const float* v =
            &f.v[((positions[i] * s.n_layers + layer) * s.n_kv_heads + kv_head) * s.head_dim];
        for (size_t d = 0; d < s.head_dim; ++d) want[d] += w * v[d];
      }
      for (size_t d = 0; d < s.head_dim; ++d) {
        EXPECT_NEAR(out[h * s.head_dim + d], want[d] / sum, 1e-5) << "head " << h << ", " << d;
      }
    }
  }
}

TEST(PageSelectionTest, ABudgetCoveringTheContextOrADenseLayerReadsEveryPage) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF16);
  const size_t n = 300;
  fill(cache, 1, n, 31);
  const std::vector<float> q = random_q(kHeads * s.head_dim, 32);
  const std::vector<float> dense = attend_decode(cache, 1, n - 1, q.data(), 1, 2);
  const std::vector<float> dense0 = attend_decode(cache, 1, n - 1, q.data(), 0, 2);
  cache.set_sparse(policy(512));
  EXPECT_EQ(attend_decode(cache, 1, n - 1, q.data(), 1, 2), dense);
  cache.set_sparse(policy(64));
  EXPECT_NE(attend_decode(cache, 1, n - 1, q.data(), 1, 2), dense);
  EXPECT_EQ(attend_decode(cache, 1, n - 1, q.data(), 0, 2), dense0);  // dense_layers = 1
}

TEST(PageSelectionTest, SameBitsOnAnyThreadCount) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF16);
  cache.set_sparse(policy(96));
  const size_t n = 450;
  fill(cache, 1, n, 41);
  const std::vector<float> q = random_q(kHeads * s.head_dim, 42);
  for (AttentionMode mode : {AttentionMode::kExact, AttentionMode::kFast}) {
    cache.set_attention_mode(mode);
    const std::vector<float> one = attend_decode(cache, 1, n - 1, q.data(), 1, 1);
    EXPECT_EQ(attend_decode(cache, 1, n - 1, q.data(), 1, 2), one);
    EXPECT_EQ(attend_decode(cache, 1, n - 1, q.data(), 1, 3), one);
  }
}

TEST(PageSelectionTest, PromptChunksReadDenselyUnlessPrefillSelects) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF32);
  const size_t n = 400, asked = 20;
  fill(cache, 1, n, 51);
  std::vector<QueryPos> queries;
  for (size_t t = n - asked; t < n; ++t) queries.push_back({1, static_cast<uint32_t>(t)});
  const std::vector<float> q = random_q(asked * kHeads * s.head_dim, 52);
  auto run = [&] {
    ThreadPool pool(2);
    std::vector<float> out(q.size());
    attend(cache, 1, queries, kHeads, 0.2f, q.data(), out.data(), pool);
    return out;
  };
  cache.set_attention_mode(AttentionMode::kExact);
  const std::vector<float> dense = run();
  SparsePolicy p = policy(64);
  cache.set_sparse(p);
  EXPECT_EQ(run(), dense);
  p.prefill = true;
  cache.set_sparse(p);
  const std::vector<float> sparse = run();
  EXPECT_NE(sparse, dense);
  // Each query row reads what it would as a decode step.
  for (size_t i = 0; i < asked; ++i) {
    const std::vector<float> alone =
        attend_decode(cache, 1, queries[i].pos, &q[i * kHeads * s.head_dim], 1, 2);
    for (size_t j = 0; j < alone.size(); ++j) {
      EXPECT_NEAR(sparse[i * alone.size() + j], alone[j], 1e-6) << "row " << i;
    }
  }
  // Fast mode routes selecting chunks to the per-query path too (not to tiles), reading pages by
  // block with f32 accumulation: the same selection, to rounding.
  cache.set_attention_mode(AttentionMode::kFast);
  const std::vector<float> fast = run();
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_NEAR(fast[i], sparse[i], 1e-5) << i;
}

TEST(PageSelectionTest, AgedPagesKeepTheirSummaries) {
  const KvShape s = shape();
  KvCache cache(s, std::vector<ArenaSpec>{{KvPrecision::kF16, 40}, {KvPrecision::kQ8_0, 40}});
  KvTiers tiers;
  tiers.sink_tokens = 16;
  tiers.hot_tokens = 64;
  tiers.warm = KvPrecision::kQ8_0;
  cache.set_tiers(tiers);
  cache.set_sparse(policy(96));
  const size_t n = 500;
  const size_t width = s.n_kv_heads * s.head_dim;
  const std::vector<float> kv = random_q(n * width, 61);
  ASSERT_TRUE(cache.reserve(1, n).ok());
  const std::vector<float> q = random_q(2 * s.head_dim, 62);
  const PageRegions r = page_regions(cache.sparse(), kPage, n);
  for (size_t t = 0; t < n; ++t) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      cache.write(1, t, layer, &kv[t * width], &kv[(n - 1 - t) * width]);
    }
  }
  SelectionScratch scratch;
  select_pages(cache.pool(), cache.page_table(1), 1, 1, q.data(), 2, r, scratch);
  const std::vector<uint32_t> chosen = scratch.chosen;
  EXPECT_GT(cache.age(1), 0u);
  EXPECT_EQ(cache.pool().page(cache.page_table(1)[3]).precision, KvPrecision::kQ8_0);
  select_pages(cache.pool(), cache.page_table(1), 1, 1, q.data(), 2, r, scratch);
  EXPECT_EQ(scratch.chosen, chosen);
}

TEST(PageSelectionTest, ProfilerSplitsExactAttentionByRegion) {
  const KvShape s = shape();
  KvCache cache(s, 64, KvPrecision::kF32);
  const SparsePolicy p = policy(128);
  cache.set_sparse(p);
  const size_t n = 300, layer = 1;
  const Filled f = fill(cache, 1, n, 71);
  const std::vector<float> q = random_q(kHeads * s.head_dim, 72);
  AttentionProfiler profiler(s, kHeads, n - 1, p);
  cache.set_probe(&profiler);
  attend_decode(cache, 1, n - 1, q.data(), layer, 2);
  attend_decode(cache, 1, n - 2, q.data(), layer, 2);
  cache.set_probe(nullptr);
  const PageRegions r = page_regions(p, kPage, n);
  ASSERT_GT(r.select, 0u);
  ASSERT_LT(r.select, r.candidates());
  // Per head, its softmax mass per page; the best choice is the group's top pages by summed mass.
  std::vector<std::vector<double>> page_mass(kHeads, std::vector<double>(r.n_pages, 0.0));
  for (size_t h = 0; h < kHeads; ++h) {
    const size_t kv_head = h / 2;
    const std::vector<uint32_t> chosen =
        brute_force_choice(cache, 1, layer, kv_head, &q[kv_head * 2 * s.head_dim], 2, r);
    std::vector<double> w(n);
    double top = -1e300, sum = 0;
    for (size_t t = 0; t < n; ++t) {
      const float* k = &f.k[((t * s.n_layers + layer) * s.n_kv_heads + kv_head) * s.head_dim];
      double dot = 0;
      for (size_t d = 0; d < s.head_dim; ++d) dot += double{q[h * s.head_dim + d]} * k[d];
      top = std::max(top, w[t] = double{0.2f} * dot);  // the scale attend was given
    }
    for (double& x : w) sum += (x = std::exp(x - top));
    double sinks = 0, window = 0, selected = 0, entropy = 0;
    for (size_t t = 0; t < n; ++t) {
      const double pt = w[t] / sum;
      entropy -= pt * std::log(pt);
      const uint32_t page = static_cast<uint32_t>(t / kPage);
      if (page < r.sink_pages) {
        sinks += pt;
      } else if (page >= r.window_begin) {
        window += pt;
      } else if (std::find(chosen.begin(), chosen.end(), page) != chosen.end()) {
        selected += pt;
      }
    }
    for (size_t t = 0; t < n; ++t) page_mass[h][t / kPage] += w[t] / sum;
    const HeadAttentionStats& got = profiler.head(layer, h);
    ASSERT_EQ(got.queries, 1u);  // the query at n - 2 is before first_pos
    EXPECT_NEAR(got.entropy, entropy, 1e-9);
    EXPECT_NEAR(got.sinks, sinks, 1e-9);
    EXPECT_NEAR(got.window, window, 1e-9);
    EXPECT_NEAR(got.selected, selected, 1e-9);
    EXPECT_NEAR(got.rest, 1 - sinks - window - selected, 1e-9);
    ASSERT_EQ(got.recalls.size(), 1u);
    EXPECT_NEAR(got.recalls[0], sinks + window + selected, 1e-6);
    EXPECT_EQ(profiler.head(0, h).queries, 0u);  // layer 0 was not attended
  }
  for (size_t h = 0; h < kHeads; ++h) {
    const size_t mate = h ^ 1;  // the other query head of the KV head
    std::vector<std::pair<double, size_t>> by_mass;
    for (size_t page = r.sink_pages; page < r.window_begin; ++page) {
      by_mass.emplace_back(page_mass[h][page] + page_mass[mate][page], page);
    }
    std::sort(by_mass.rbegin(), by_mass.rend());
    double best = 0;
    for (size_t page = 0; page < r.n_pages; ++page) {
      if (page < r.sink_pages || page >= r.window_begin) best += page_mass[h][page];
    }
    for (size_t i = 0; i < r.select; ++i) best += page_mass[h][by_mass[i].second];
    const HeadAttentionStats& got = profiler.head(layer, h);
    ASSERT_EQ(got.best_recalls.size(), 1u);
    EXPECT_NEAR(got.best_recalls[0], best, 1e-9);
    // Summed over the pair, which shares one choice, no selection by key bounds reads more than
    // the pages of most mass.
    const HeadAttentionStats& other = profiler.head(layer, mate);
    EXPECT_LE(got.recalls[0] + other.recalls[0],
              got.best_recalls[0] + other.best_recalls[0] + 1e-9);
  }
}

}  // namespace
}  // namespace strata::kv
