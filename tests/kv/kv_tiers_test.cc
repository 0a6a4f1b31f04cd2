// KV tiers: where each page goes by age, re-encoding as a sequence grows (shared pages once for
// all holders, nothing leaked), a rewrite into an aged page, and attention over a sequence of
// mixed precisions (rotated) against softmax attention over the values the pages hold.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kv_format.h"
#include "kv/attend.h"
#include "kv/kv_cache.h"

namespace strata::kv {
namespace {

constexpr size_t kPage = 32;

KvShape shape() { return {/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/64, kPage}; }

KvTiers three_tiers() {
  KvTiers t;
  t.sink_tokens = 4;
  t.hot_tokens = 64;
  t.warm = KvPrecision::kQ8_0;
  t.warm_tokens = 64;
  t.cold = KvPrecision::kR3;
  return t;
}

TEST(KvTiersTest, TargetFollowsAge) {
  const KvTiers t = three_tiers();
  const size_t length = 10 * kPage;                                   // pages 0..9, all full
  EXPECT_EQ(t.target(0, kPage, length), std::nullopt);                // holds the sinks
  EXPECT_EQ(t.target(9 * kPage, kPage, length), std::nullopt);        // age 0: hot
  EXPECT_EQ(t.target(8 * kPage, kPage, length), std::nullopt);        // age 32 < 64: hot
  EXPECT_EQ(t.target(7 * kPage, kPage, length), KvPrecision::kQ8_0);  // age 64: warm
  EXPECT_EQ(t.target(6 * kPage, kPage, length), KvPrecision::kQ8_0);  // age 96 < 128
  EXPECT_EQ(t.target(5 * kPage, kPage, length), KvPrecision::kR3);    // age 128: cold
  EXPECT_EQ(t.target(1 * kPage, kPage, length), KvPrecision::kR3);
  EXPECT_EQ(t.target(9 * kPage, kPage, length - 1), std::nullopt);  // not full
  KvTiers warm_only = t;
  warm_only.cold.reset();
  EXPECT_EQ(warm_only.target(1 * kPage, kPage, length), KvPrecision::kQ8_0);
}

std::vector<ArenaSpec> arenas() {
  return {{KvPrecision::kF16, 12}, {KvPrecision::kQ8_0, 6}, {KvPrecision::kR3, 16}};
}

// Random rows with a per-channel offset, as keys have.
std::vector<float> rows(size_t n, size_t width, uint32_t seed, float offset) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n * width);
  for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng) + offset * std::sin(float(i % width));
  return x;
}

TEST(KvTiersTest, PagesMoveDownAsTheSequenceGrowsAndEveryHolderFollows) {
  const KvShape s = shape();
  KvCache cache(s, arenas());
  cache.set_tiers(three_tiers());
  EXPECT_TRUE(cache.rotated());  // an r3 arena rotates every page
  EXPECT_FALSE(cache.reference_reads());
  const size_t width = s.n_kv_heads * s.head_dim, n = 10 * kPage;
  const std::vector<float> k = rows(n, width, 1, 3.0f), v = rows(n, width, 2, 0.0f);
  ASSERT_TRUE(cache.reserve(1, 8 * kPage).ok());
  for (size_t pos = 0; pos < 8 * kPage; ++pos) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      cache.write(1, pos, layer, &k[pos * width], &v[pos * width]);
    }
  }
  cache.fork(1, 2, 8 * kPage);  // sequence 2 shares all eight pages
  ASSERT_TRUE(cache.reserve(1, n).ok());
  for (size_t pos = 8 * kPage; pos < n; ++pos) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      cache.write(1, pos, layer, &k[pos * width], &v[pos * width]);
    }
  }
  // Length 320: page 0 sinks, 1-5 cold, 6-7 warm, 8-9 hot.
  EXPECT_EQ(cache.age(1), 7u);
  const std::vector<KvPrecision> want = {KvPrecision::kF16,  KvPrecision::kR3,   KvPrecision::kR3,
                                         KvPrecision::kR3,   KvPrecision::kR3,   KvPrecision::kR3,
                                         KvPrecision::kQ8_0, KvPrecision::kQ8_0, KvPrecision::kF16,
                                         KvPrecision::kF16};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(cache.pool().page(cache.page_table(1)[i]).precision, want[i]) << "page " << i;
  }
  // Sequence 2 holds the same re-encoded pages (one copy, two holders).
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(cache.page_table(2)[i], cache.page_table(1)[i]) << "page " << i;
    EXPECT_EQ(cache.pool().page(cache.page_table(1)[i]).ref_count, 2u);
  }
  EXPECT_EQ(cache.age(1), 0u);  // nothing more until the sequence grows
  cache.remove(1);
  cache.remove(2);
  EXPECT_EQ(cache.pool().free_pages(), cache.pool().n_pages());
}

// Softmax attention in double over the rows the cache holds (decoded and rotated back).
std::vector<double> attention_over_held(KvCache& cache, SeqId seq, size_t layer, size_t head,
                                        size_t n, const float* q, float scale) {
  const KvShape& s = cache.shape();
  std::vector<float> kb(s.page_size * s.head_dim), vb(s.page_size * s.head_dim);
  std::vector<double> scores, out(s.head_dim, 0.0);
  std::vector<std::vector<float>> values;
  double m = -INFINITY;
  for (size_t p = 0; p * s.page_size < n; ++p) {
    const KvHeadView view = cache.pool().head(cache.page_table(seq)[p], layer, head);
    const size_t rows = std::min(s.page_size, n - p * s.page_size);
    kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, rows, s.page_size,
                             s.head_dim, kb.data());
    kernels::kv_decode_block(view.precision, kernels::KvRole::kValues, view.values, rows,
                             s.page_size, s.head_dim, vb.data());
    for (size_t t = 0; t < rows; ++t) {
      kernels::unrotate_kv_head(&kb[t * s.head_dim], s.head_dim);
      kernels::unrotate_kv_head(&vb[t * s.head_dim], s.head_dim);
      double dot = 0.0;
      for (size_t d = 0; d < s.head_dim; ++d) dot += double{q[d]} * kb[t * s.head_dim + d];
      scores.push_back(dot * scale);
      m = std::max(m, scores.back());
      values.emplace_back(&vb[t * s.head_dim], &vb[(t + 1) * s.head_dim]);
    }
  }
  double sum = 0.0;
  for (size_t t = 0; t < scores.size(); ++t) {
    const double w = std::exp(scores[t] - m);
    sum += w;
    for (size_t d = 0; d < s.head_dim; ++d) out[d] += w * values[t][d];
  }
  for (double& o : out) o /= sum;
  return out;
}

TEST(KvTiersTest, AttentionOverMixedPrecisionsMatchesTheHeldValues) {
  const KvShape s = shape();
  KvCache cache(s, arenas());
  cache.set_tiers(three_tiers());
  const size_t width = s.n_kv_heads * s.head_dim, n = 9 * kPage + 5;
  const std::vector<float> k = rows(n, width, 3, 3.0f), v = rows(n, width, 4, 0.0f);
  for (size_t start = 0; start < n; start += 40) {  // chunks, aging between them as steps do
    const size_t end = std::min(n, start + 40);
    cache.age(1);
    ASSERT_TRUE(cache.reserve(1, end).ok());
    for (size_t pos = start; pos < end; ++pos) {
      for (size_t layer = 0; layer < s.n_layers; ++layer) {
        cache.write(1, pos, layer, &k[pos * width], &v[pos * width]);
      }
    }
  }
  cache.age(1);
  const size_t n_heads = 4;  // two query heads per KV head
  const std::vector<float> q = rows(1, n_heads * s.head_dim, 5, 0.0f);
  const float scale = 0.125f;
  ThreadPool pool(2);
  for (AttentionMode mode : {AttentionMode::kExact, AttentionMode::kFast}) {
    cache.set_attention_mode(mode);
    std::vector<float> out(n_heads * s.head_dim);
    const QueryPos query{1, static_cast<uint32_t>(n - 1)};
    attend(cache, 1, std::span(&query, 1), n_heads, scale, q.data(), out.data(), pool);
    for (size_t h = 0; h < n_heads; ++h) {
      const std::vector<double> want =
          attention_over_held(cache, 1, 1, h / 2, n, &q[h * s.head_dim], scale);
      for (size_t d = 0; d < s.head_dim; ++d) {
        ASSERT_NEAR(out[h * s.head_dim + d], want[d], 2e-4 * (1.0 + std::fabs(want[d])))
            << "head " << h << " dim " << d;
      }
    }
  }
}

TEST(KvTiersTest, ARewriteIntoAnAgedPageReencodesItFirst) {
  const KvShape s = shape();
  KvCache cache(s, arenas());
  KvTiers t;
  t.cold = KvPrecision::kR3;  // every full page
  cache.set_tiers(t);
  const size_t width = s.n_kv_heads * s.head_dim;
  const std::vector<float> k = rows(2 * kPage, width, 6, 1.0f), v = rows(2 * kPage, width, 7, 0);
  ASSERT_TRUE(cache.reserve(1, 2 * kPage).ok());
  for (size_t pos = 0; pos < 2 * kPage; ++pos) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      cache.write(1, pos, layer, &k[pos * width], &v[pos * width]);
    }
  }
  EXPECT_EQ(cache.age(1), 2u);
  cache.truncate(1, 10);  // a rolled-back tail: position 10 is written again
  ASSERT_TRUE(cache.reserve(1, 11).ok());
  for (size_t layer = 0; layer < s.n_layers; ++layer) cache.write(1, 10, layer, &k[0], &v[0]);
  const PageId page = cache.page_table(1)[0];
  EXPECT_EQ(cache.pool().page(page).precision, KvPrecision::kF16);
  std::vector<float> held(kPage * s.head_dim);
  const KvHeadView view = cache.pool().head(page, 0, 0);
  kernels::kv_decode_block(view.precision, kernels::KvRole::kValues, view.values, 11, kPage,
                           s.head_dim, held.data());
  kernels::unrotate_kv_head(&held[10 * s.head_dim], s.head_dim);
  for (size_t d = 0; d < s.head_dim; ++d) EXPECT_NEAR(held[10 * s.head_dim + d], v[d], 2e-2f);
}

// A precise layer (KvShape::precise_layers) of an r4 page is stored in r8 and of an r3 page in
// r4: the page is that much larger, the layer's keys err several times less than its
// neighbours', and attention over the mixed pages still matches the values they hold.
TEST(KvTiersTest, PreciseLayersKeepTheNextFormatUp) {
  KvShape s = shape();
  s.n_layers = 3;
  s.precise_layers = {false, true, false};
  const KvShape plain = {s.n_layers, s.n_kv_heads, s.head_dim, kPage};
  EXPECT_EQ(page_bytes(s, KvPrecision::kR4), page_bytes(plain, KvPrecision::kR4) +
                                                 s.layer_bytes(KvPrecision::kR8, 0) -
                                                 s.layer_bytes(KvPrecision::kR4, 0));
  EXPECT_EQ(s.layer_bytes(KvPrecision::kR3, 1), s.layer_bytes(KvPrecision::kR4, 0));
  EXPECT_EQ(page_bytes(s, KvPrecision::kF16), page_bytes(plain, KvPrecision::kF16));

  KvCache cache(s, std::vector<ArenaSpec>{
                       {KvPrecision::kF16, 4}, {KvPrecision::kR4, 4}, {KvPrecision::kR3, 8}});
  KvTiers tiers;
  tiers.hot_tokens = 32;
  tiers.warm = KvPrecision::kR4;
  tiers.warm_tokens = 64;
  tiers.cold = KvPrecision::kR3;
  cache.set_tiers(tiers);
  const size_t width = s.n_kv_heads * s.head_dim, n = 7 * kPage;
  // Each layer gets its own keys and values, so that a layer reading another's bytes shows.
  std::vector<std::vector<float>> k, v;
  for (size_t layer = 0; layer < s.n_layers; ++layer) {
    k.push_back(rows(n, width, 10 + static_cast<uint32_t>(layer), 3.0f));
    v.push_back(rows(n, width, 20 + static_cast<uint32_t>(layer), 0.0f));
  }
  for (size_t start = 0; start < n; start += kPage) {
    cache.age(1);
    ASSERT_TRUE(cache.reserve(1, start + kPage).ok());
    for (size_t pos = start; pos < start + kPage; ++pos) {
      for (size_t layer = 0; layer < s.n_layers; ++layer) {
        cache.write(1, pos, layer, &k[layer][pos * width], &v[layer][pos * width]);
      }
    }
  }
  cache.age(1);
  const std::span<const PageId> pages = cache.page_table(1);
  ASSERT_EQ(cache.pool().page(pages[0]).precision, KvPrecision::kR3);
  ASSERT_EQ(cache.pool().page(pages[4]).precision, KvPrecision::kR4);
  for (size_t p : {size_t{0}, size_t{4}}) {
    const KvPrecision page = cache.pool().page(pages[p]).precision;
    const KvPrecision up = page == KvPrecision::kR4 ? KvPrecision::kR8 : KvPrecision::kR4;
    double err[3] = {0.0, 0.0, 0.0};
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      const KvHeadView view = cache.pool().head(pages[p], layer, 0);
      EXPECT_EQ(view.precision, layer == 1 ? up : page) << "page " << p << " layer " << layer;
      std::vector<float> got(kPage * s.head_dim);
      kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, kPage, kPage,
                               s.head_dim, got.data());
      for (size_t t = 0; t < kPage; ++t) {
        kernels::unrotate_kv_head(&got[t * s.head_dim], s.head_dim);
        for (size_t d = 0; d < s.head_dim; ++d) {
          const double e = got[t * s.head_dim + d] - k[layer][(p * kPage + t) * width + d];
          err[layer] += e * e;
        }
      }
    }
    EXPECT_LT(err[1] * 4.0, err[0]) << "page " << p;
    EXPECT_LT(err[1] * 4.0, err[2]) << "page " << p;
  }
  const size_t n_heads = 4;
  const std::vector<float> q = rows(1, n_heads * s.head_dim, 5, 0.0f);
  ThreadPool pool(2);
  for (size_t layer = 0; layer < s.n_layers; ++layer) {
    std::vector<float> out(n_heads * s.head_dim);
    const QueryPos query{1, static_cast<uint32_t>(n - 1)};
    attend(cache, layer, std::span(&query, 1), n_heads, 0.125f, q.data(), out.data(), pool);
    for (size_t h = 0; h < n_heads; ++h) {
      const std::vector<double> want =
          attention_over_held(cache, 1, layer, h / 2, n, &q[h * s.head_dim], 0.125f);
      for (size_t d = 0; d < s.head_dim; ++d) {
        ASSERT_NEAR(out[h * s.head_dim + d], want[d], 2e-4 * (1.0 + std::fabs(want[d])))
            << "layer " << layer << " head " << h << " dim " << d;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kv
