#include "kv/paged_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kv/kv_cache.h"

namespace strata::kv {
namespace {

// Dense attention in double precision over contiguous K, V: the oracle for the paged kernel.
std::vector<double> dense_attention(const std::vector<float>& q,
                                    const std::vector<std::vector<float>>& keys,
                                    const std::vector<std::vector<float>>& values, double scale) {
  std::vector<double> scores(keys.size());
  double max_s = -1e300;
  for (size_t t = 0; t < keys.size(); ++t) {
    double s = 0;
    for (size_t d = 0; d < q.size(); ++d) s += static_cast<double>(q[d]) * keys[t][d];
    scores[t] = s * scale;
    max_s = std::max(max_s, scores[t]);
  }
  double sum = 0;
  for (double& s : scores) sum += (s = std::exp(s - max_s));
  std::vector<double> out(q.size(), 0.0);
  for (size_t t = 0; t < keys.size(); ++t)
    for (size_t d = 0; d < q.size(); ++d) out[d] += scores[t] / sum * values[t][d];
  return out;
}

class PagedAttentionTest : public ::testing::TestWithParam<KvPrecision> {};

TEST_P(PagedAttentionTest, MatchesDenseAttentionAcrossPages) {
  const KvShape s{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/16, /*page_size=*/8};
  const size_t n_ctx = 29;  // 3 full pages and a partial one
  KvCache cache(s, 8, GetParam());
  ASSERT_TRUE(cache.reserve(5, n_ctx).ok());
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t layer = 1, head = 1;
  std::vector<std::vector<float>> keys(n_ctx), values(n_ctx);
  for (size_t t = 0; t < n_ctx; ++t) {
    std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    cache.write(5, t, layer, k.data(), v.data());
    keys[t].assign(k.begin() + head * s.head_dim, k.begin() + (head + 1) * s.head_dim);
    values[t].assign(v.begin() + head * s.head_dim, v.begin() + (head + 1) * s.head_dim);
    if (GetParam() == KvPrecision::kF16) {  // the oracle sees what an f16 page stores
      for (float& x : keys[t]) x = fp16_to_fp32(fp32_to_fp16(x));
      for (float& x : values[t]) x = fp16_to_fp32(fp32_to_fp16(x));
    }
  }
  std::vector<float> q(s.head_dim);
  for (float& x : q) x = normal(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  std::vector<float> out(s.head_dim), scratch(attend_kv_head_scratch_floats(s, 1));
  for (size_t ctx : {size_t{1}, size_t{8}, size_t{9}, n_ctx}) {
    attend_kv_head(cache.pool(), cache.page_table(5), layer, head, ctx, q.data(), 1, scale,
                   out.data(), scratch.data(), cache.reference_reads());
    std::vector<std::vector<float>> k_prefix(keys.begin(), keys.begin() + ctx);
    std::vector<std::vector<float>> v_prefix(values.begin(), values.begin() + ctx);
    std::vector<double> want = dense_attention(q, k_prefix, v_prefix, scale);
    // f16 pages round the query and the running accumulator to f16 (relative error ~2^-11 per
    // step); f32 pages are exact up to float rounding.
    const double tolerance = GetParam() == KvPrecision::kF32 ? 1e-5 : 5e-3;
    for (size_t d = 0; d < s.head_dim; ++d) {
      EXPECT_NEAR(out[d], want[d], tolerance) << "ctx " << ctx << " dim " << d;
    }
  }
}

// Values large enough that an f16 accumulator would overflow: the result must stay finite and
// accurate because accumulation falls back to f32.
TEST(PagedAttentionOverflowTest, LargeValuesDoNotOverflowTheF16Accumulator) {
  const KvShape s{/*n_layers=*/1, /*n_kv_heads=*/1, /*head_dim=*/4, /*page_size=*/16};
  const size_t n_ctx = 64;
  KvCache cache(s, 4, KvPrecision::kF16);
  ASSERT_TRUE(cache.reserve(1, n_ctx).ok());
  std::vector<std::vector<float>> keys(n_ctx, std::vector<float>(4, 0.0f));
  std::vector<std::vector<float>> values(n_ctx,
                                         std::vector<float>{30000.0f, -30000.0f, 1000.0f, 0.5f});
  for (size_t t = 0; t < n_ctx; ++t) cache.write(1, t, 0, keys[t].data(), values[t].data());
  std::vector<float> q(4, 0.0f), out(4), scratch(attend_kv_head_scratch_floats(s, 1));
  attend_kv_head(cache.pool(), cache.page_table(1), 0, 0, n_ctx, q.data(), 1, 0.5f, out.data(),
                 scratch.data(), cache.reference_reads());
  // Equal scores: the output is the mean of identical rows, i.e. the row itself.
  for (size_t d = 0; d < 4; ++d) {
    ASSERT_TRUE(std::isfinite(out[d]));
    EXPECT_NEAR(out[d], values[0][d], std::abs(values[0][d]) * 2e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, PagedAttentionTest,
                         ::testing::Values(KvPrecision::kF32, KvPrecision::kF16));

}  // namespace
}  // namespace strata::kv
