// The SIMD online-softmax loop against its scalar twin on every target, and the twin against
// softmax attention computed directly.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "for_each_target.h"
#include "kernels/attention_scalar.h"

namespace strata::kernels {
namespace {

struct Rows {
  std::vector<float> q, k, v;      // f32 rows, q rounded to f16 values
  std::vector<uint16_t> k16, v16;  // the same rows as f16 bits
};

Rows random_rows(size_t n, size_t head_dim, uint32_t seed, float value_scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Rows r;
  for (size_t d = 0; d < head_dim; ++d)
    r.q.push_back(fp16_to_fp32(fp32_to_fp16((value_scale > 1.0f ? 0.01f : 3.0f) * dist(rng))));
  for (size_t i = 0; i < n * head_dim; ++i) {
    r.k16.push_back(fp32_to_fp16(dist(rng)));
    // Large scales use positive values and a small query (near-equal weights), so that acc grows
    // past the f16 range.
    const float value = dist(rng);
    r.v16.push_back(fp32_to_fp16(value_scale > 1.0f ? value_scale * std::abs(value) : value));
    r.k.push_back(fp16_to_fp32(r.k16.back()));
    r.v.push_back(fp16_to_fp32(r.v16.back()));
  }
  return r;
}

TEST(AttentionTest, SimdMatchesScalarTwinOnEveryTarget) {
  for (size_t head_dim : {64, 128, 40}) {
    for (float value_scale : {1.0f, 8000.0f}) {  // the second drives acc past the f16 range
      const size_t n = 77;
      const Rows r = random_rows(n, head_dim, 7 + head_dim, value_scale);
      const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      for (bool f16 : {true, false}) {
        OnlineSoftmax want_state;
        std::vector<float> want(head_dim, 0.0f);
        for (size_t s = 0; s < n; s += 32) {
          const size_t m = std::min<size_t>(32, n - s);
          if (f16) {
            attend_rows_f16_scalar(&r.k16[s * head_dim], &r.v16[s * head_dim], m, head_dim,
                                   r.q.data(), scale, want_state, want.data());
          } else {
            attend_rows_f32_scalar(&r.k[s * head_dim], &r.v[s * head_dim], m, head_dim, r.q.data(),
                                   scale, want_state, want.data());
          }
        }
        if (f16 && value_scale > 1.0f) {
          EXPECT_FALSE(want_state.f16_accumulator);
        }
        for_each_simd_target([&] {
          OnlineSoftmax st;
          std::vector<float> got(head_dim, 0.0f);
          for (size_t s = 0; s < n; s += 32) {
            const size_t m = std::min<size_t>(32, n - s);
            if (f16) {
              attend_rows_f16(&r.k16[s * head_dim], &r.v16[s * head_dim], m, head_dim, r.q.data(),
                              1, scale, &st, got.data());
            } else {
              attend_rows_f32(&r.k[s * head_dim], &r.v[s * head_dim], m, head_dim, r.q.data(), 1,
                              scale, &st, got.data());
            }
          }
          SCOPED_TRACE(::testing::Message() << "head_dim " << head_dim << " f16 " << f16
                                            << " value scale " << value_scale);
          // The double sums of q·k may differ in their last bits by summation order; everything
          // else is the same arithmetic, so the results agree to f32 rounding.
          EXPECT_NEAR(st.m, want_state.m, 1e-6f * std::abs(want_state.m));
          EXPECT_NEAR(st.sum, want_state.sum, 1e-5f * want_state.sum);
          EXPECT_EQ(st.f16_accumulator, want_state.f16_accumulator);
          for (size_t d = 0; d < head_dim; ++d) {
            EXPECT_NEAR(got[d], want[d], 1e-3f * std::abs(want[d]) + 1e-6f) << "dim " << d;
          }
        });
      }
    }
  }
}

// Grouped-query attention: four query heads folded together over the same key and value rows
// give each head exactly what it gets alone, on every target, f16 and f32, across pages.
TEST(AttentionTest, AGroupOfHeadsGivesEachHeadItsOwnBits) {
  const size_t n = 77, head_dim = 64, group = 4;
  const Rows r = random_rows(n, head_dim, 11, 1.0f);
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> q(group * head_dim);
  for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  const float scale = 0.125f;
  for_each_simd_target([&] {
    for (bool f16 : {true, false}) {
      auto run = [&](size_t first, size_t count, OnlineSoftmax* st, float* acc) {
        for (size_t s = 0; s < n; s += 32) {
          const size_t m = std::min<size_t>(32, n - s);
          if (f16) {
            attend_rows_f16(&r.k16[s * head_dim], &r.v16[s * head_dim], m, head_dim,
                            &q[first * head_dim], count, scale, st, acc);
          } else {
            attend_rows_f32(&r.k[s * head_dim], &r.v[s * head_dim], m, head_dim,
                            &q[first * head_dim], count, scale, st, acc);
          }
        }
      };
      std::vector<OnlineSoftmax> together(group);
      std::vector<float> acc(group * head_dim, 0.0f);
      run(0, group, together.data(), acc.data());
      for (size_t g = 0; g < group; ++g) {
        OnlineSoftmax alone;
        std::vector<float> own(head_dim, 0.0f);
        run(g, 1, &alone, own.data());
        EXPECT_EQ(together[g].m, alone.m) << "head " << g << " f16 " << f16;
        EXPECT_EQ(together[g].sum, alone.sum) << "head " << g << " f16 " << f16;
        EXPECT_EQ(std::vector<float>(acc.begin() + g * head_dim, acc.begin() + (g + 1) * head_dim),
                  own)
            << "head " << g << " f16 " << f16;
      }
    }
  });
}

TEST(AttentionTest, ScalarTwinComputesSoftmaxAttention) {
  const size_t n = 50, head_dim = 16;
  const Rows r = random_rows(n, head_dim, 3, 1.0f);
  const float scale = 0.25f;
  OnlineSoftmax st;
  std::vector<float> acc(head_dim, 0.0f);
  attend_rows_f32_scalar(r.k.data(), r.v.data(), n, head_dim, r.q.data(), scale, st, acc.data());
  std::vector<double> s(n);
  double max = -1e30, sum = 0;
  for (size_t t = 0; t < n; ++t) {
    double dot = 0;
    for (size_t d = 0; d < head_dim; ++d) dot += double(r.q[d]) * r.k[t * head_dim + d];
    s[t] = dot * scale;
    max = std::max(max, s[t]);
  }
  for (size_t t = 0; t < n; ++t) sum += std::exp(s[t] - max);
  for (size_t d = 0; d < head_dim; ++d) {
    double want = 0;
    for (size_t t = 0; t < n; ++t) want += std::exp(s[t] - max) / sum * r.v[t * head_dim + d];
    EXPECT_NEAR(acc[d] / st.sum, want, 1e-5) << "dim " << d;
  }
}

}  // namespace
}  // namespace strata::kernels
